// The speed panel's threads: the instances it times, why a page runs 1 thread only, and the sentence that
// compares 1 thread with all of them, from the figures alone.
import test from 'node:test';
import assert from 'node:assert/strict';
import { SPEED_RUNNERS, oneThreadReason, threadsName, threadsSummary } from '../../web/src/speed/speed-threads.js';
import { formatMs } from '../../web/src/shared/timing.js';

test('the SIMD build on 1 thread runs first (the reference), then on all threads, scalar, plain JS', () => {
  assert.deepEqual(SPEED_RUNNERS.map((r) => r.kind), ['simd', 'threads', 'scalar', 'js']);
  assert.equal(SPEED_RUNNERS[0].name, 'WebAssembly SIMD, 1 thread');
  assert.equal(threadsName(1), 'WebAssembly SIMD, 1 thread');
  assert.equal(threadsName(4), 'WebAssembly SIMD, 4 threads');
});

test('1 thread only: the first reason that applies, isolation first', () => {
  assert.match(oneThreadReason({ isolated: false, cores: 8, simd: true }), /^this page is not cross-origin isolated/);
  assert.match(oneThreadReason({ isolated: false, cores: 8, simd: true }), /Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp/);
  assert.match(oneThreadReason({ isolated: false, cores: 1, simd: false }), /not cross-origin isolated/);
  assert.match(oneThreadReason({ isolated: true, cores: 8, simd: false }), /no WebAssembly SIMD/);
  assert.equal(oneThreadReason({ isolated: true, cores: 1, simd: true }), 'this browser reports 1 core (navigator.hardwareConcurrency)');
  assert.equal(oneThreadReason({ isolated: true, cores: undefined, simd: true }), 'this browser reports no cores (navigator.hardwareConcurrency)');
  assert.equal(oneThreadReason({ isolated: true, cores: 4, simd: true }), 'the package chose 1 thread here');
});

const row = (kind, ms, threads = 1) => ({ kind, name: kind, ms, threads, gflops: 1, calls: 10, maxDiff: null });

test('N threads against 1: both times, the ratio and its ceiling', () => {
  const s = threadsSummary({ flops: 1e9, results: [row('simd', 10), row('threads', 4, 4), row('scalar', 30), row('js', 90)] });
  assert.equal(s.threads, 4);
  assert.equal(s.oneMs, 10);
  assert.equal(s.allMs, 4);
  assert.equal(s.ratio, 2.5);
  assert.equal(s.text, '4 threads: 4.00 ms per call, against 10.00 ms on 1 thread: 2.50× as fast (at most 4×).');
});

test('a slower threaded run is said as it is, and a small problem gets the hint', () => {
  const s = threadsSummary({ flops: 1e5, results: [row('simd', 0.02), row('threads', 0.025, 2)] });
  assert.equal(s.ratio, 0.02 / 0.025);
  assert.match(s.text, /^2 threads: 0\.025 ms per call, against 0\.02 ms on 1 thread: 0\.80× as fast \(at most 2×\)\./);
  assert.match(s.text, /little to share between threads; try L = S = 1024\.$/);
});

test('a page without threads says 1 thread only, and why; no ratio is made up', () => {
  const why = oneThreadReason({ isolated: false, cores: 2, simd: true });
  const s = threadsSummary({ flops: 1e9, results: [row('simd', 10), { kind: 'threads', name: 'x', threads: 1, unavailable: why }] });
  assert.equal(s.threads, 1);
  assert.equal(s.ratio, null);
  assert.equal(s.allMs, null);
  assert.match(s.text, /^1 thread only: this page is not cross-origin isolated/);
});

test('nothing to compare when the 1-thread SIMD row did not run', () => {
  assert.equal(threadsSummary({ flops: 1e9, results: [{ kind: 'simd', unavailable: 'no SIMD' }, row('scalar', 3)] }), null);
  assert.equal(threadsSummary({ flops: 1e9, results: [row('scalar', 3)] }), null);
});

test('times print whole from 100 ms, with two decimals from 1 ms, three significant digits below', () => {
  assert.equal(formatMs(1234.5), '1235');
  assert.equal(formatMs(12.345), '12.35');
  assert.equal(formatMs(0.012345), '0.0123');
});
