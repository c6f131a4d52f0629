// Reads the PyTorch-made fixtures in tests/golden/*.txt (format: tests/golden/make_golden.py)
// and turns them into calls of the JS API (golden-cases.mjs), and names the builds the suites run on.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';

import { relaxedSimdSupported } from '../../js/detect.js';

import { mismatch, parseCases, sdpaOptions, tensor } from './golden-cases.mjs';

export {
  flag, GRAD_TOLERANCE, gradMismatch, gradValuesMismatch, mask, mhaConfig, mhaOptions, mhaParameters, mismatch, sdpaGradOptions, sdpaOptions, tensor,
  withRules,
} from './golden-cases.mjs';

const GOLDEN = new URL('../golden/', import.meta.url);

export function loadCases(file) {
  return parseCases(readFileSync(new URL(file, GOLDEN), 'utf8'), file);
}

// The builds every fixture suite runs on: SIMD on one thread, the threaded SIMD build on three (the tasks split
// over more threads than this machine may have cores), the relaxed-SIMD variants of both, and scalar. The
// relaxed ones need an engine with relaxed SIMD: npm test runs Node with --experimental-wasm-relaxed-simd
// (relaxed.test.mjs fails if that flag did not turn it on); a run without it leaves them out.
export const BUILDS = [
  { options: { simd: true, relaxedSimd: false, threads: 1 }, label: 'SIMD' },
  { options: { simd: true, relaxedSimd: false, threads: 3 }, label: 'threaded SIMD (3 threads)' },
  ...(relaxedSimdSupported() ? [
    { options: { simd: true, relaxedSimd: true, threads: 1 }, label: 'relaxed SIMD' },
    { options: { simd: true, relaxedSimd: true, threads: 3 }, label: 'threaded relaxed SIMD (3 threads)' },
  ] : []),
  { options: { simd: false }, label: 'scalar' },
];

// Runs the SDPA fixture `name` of sdpa.txt on `xa` and asserts its output (and weights, where it has them) match
// PyTorch's: the check that an instance still computes right after whatever a test put it through.
export function checkSdpaFixture(xa, name = 'lesson_example_4x10x64') {
  const c = loadCases('sdpa.txt').find((f) => f.name === name);
  const t = c.tensors;
  const r = xa.scaledDotProductAttention(tensor(t.query), tensor(t.key), tensor(t.value), sdpaOptions(c));
  assert.equal(mismatch(r.output, t.output), '', name);
  if (t.weights) assert.equal(mismatch(r.weights, t.weights), '', name);
}
