// The performance tables in README.md and docs/performance.md are what bench/results.json gives, rendered by
// bench/js/perf-docs.mjs (npm run docs:perf); a run of the bench replaces only its own machine kind's run.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';

import { FILES, RESULTS, renderRun, renderTables, replaceBetween, tableIn } from '../../bench/js/perf-docs.mjs';
import { mergeRun } from '../../bench/js/report.mjs';
import { gptSection, trainingFlopsPerStep, withGptSection } from '../../bench/gpt/gpt-results.mjs';

const results = JSON.parse(readFileSync(RESULTS, 'utf8'));

for (const [key, url] of Object.entries(FILES)) {
  test(`${key === 'readme' ? 'README.md' : 'docs/performance.md'} carries the table bench/results.json gives`, () => {
    const text = readFileSync(url, 'utf8');
    const table = tableIn(text);
    assert.notEqual(table, null, 'no <!-- perf:start --> … <!-- perf:end --> markers');
    assert.equal(table, renderTables(results)[key], 'stale: npm run docs:perf rewrites it from bench/results.json');
  });
}

const run = {
  date: '2027-01-02T03:04:05.000Z', machine: 'Some CPU', machineKind: 'Some CPU (family 6)', cpus: 2, node: 'v20.20.2',
  command: 'npm run bench', xattnVersion: '0.1.0', wasmSimdPeakGflops: 50,
  results: [
    { shape: [1, 128, 64], xattnSimd: { gflops: 30 }, ortWeb: { gflops: 20 }, tfjsWasm: { error: 'failed: no' }, plainJs: { gflops: 2 }, ortNode: { gflops: 60 } },
    { shape: [8, 256, 64], xattnSimd: { gflops: 40 }, simdPercentOfPeak: 79.6, ortWeb: { gflops: 25 } },
  ],
  threadScaling: { counts: [1, 2], rows: [{ shape: [8, 256, 64], xattn: { 1: 40, 2: 70 }, ortWeb: { 1: 25, 2: 40 }, vsOrtWeb: 1.8, percentOfPeak: { 2: 71 } }] },
};

test('a run renders one row per shape and thread count; what was not measured reads —', () => {
  const rows = renderRun(run).split('\n').filter((l) => /^\| \d/.test(l));
  assert.deepEqual(rows, [
    '| 1×128×64 | 1 | 30.0 | 60% | 1.50× | — | 15.00× | 0.50× |',
    '| 1×128×64 | 2 | — | — | — | — | — | — |',
    '| 8×256×64 | 1 | 40.0 | 80% | 1.60× | — | — | — |',
    '| 8×256×64 | 2 | 70.0 | 71% | 1.80× | — | — | — |',
  ]);
  assert.match(renderRun(run), /on Some CPU \(family 6\), 2 CPUs, Node v20\.20\.2, xattn 0\.1\.0, 2027-01-02\./);
});

test('README gets the newest run, docs/performance.md every machine kind\'s', () => {
  const other = { ...run, machineKind: 'Other CPU (family 25)', date: '2026-01-01T00:00:00.000Z' };
  const tables = renderTables({ runs: [run, other] });
  assert.equal(tables.readme, renderRun(run));
  assert.equal(tables.performance, `${renderRun(run)}\n\n${renderRun(other)}`);
});

test('the markers are required and what lies outside them is kept', () => {
  assert.throws(() => replaceBetween('no markers here', 'x', 'file.md'), /file\.md: no <!-- perf:start -->/);
  const text = 'before\n<!-- perf:start -->\nold\n<!-- perf:end -->\nafter\n';
  const next = replaceBetween(text, '| new |', 'file.md');
  assert.ok(next.startsWith('before\n<!-- perf:start -->\n') && next.endsWith('\n<!-- perf:end -->\nafter\n'), next);
  assert.equal(tableIn(next), '| new |');
});

test('a bench run replaces the previous run of its machine kind and keeps the others, newest first', () => {
  const a1 = { machineKind: 'A', date: '1' };
  const b1 = { machineKind: 'B', date: '1' };
  const a2 = { machineKind: 'A', date: '2' };
  assert.deepEqual(mergeRun(null, a1), { runs: [a1] });
  assert.deepEqual(mergeRun({ runs: [a1] }, b1), { runs: [b1, a1] });
  assert.deepEqual(mergeRun({ runs: [b1, a1] }, a2), { runs: [a2, b1] });
  assert.deepEqual(mergeRun({ date: 'an old single-run file' }, a1), { runs: [a1] });
  // The GPT benchmark's section, written by a bench of its own, stays with its machine kind's run.
  const gpt = { steps: 2000 };
  assert.deepEqual(mergeRun({ runs: [{ ...a1, gpt }, b1] }, a2), { runs: [{ ...a2, gpt }, b1] });
  assert.deepEqual(mergeRun({ runs: [{ ...b1, gpt }] }, a2), { runs: [a2, { ...b1, gpt }] });
});

test("the performance page says the sliding window's share of the time beside its share of the cells", () => {
  const windowed = {
    ...run,
    slidingWindow: { fullMs: 400, windowedMs: 30, oneKeyMs: 2, cellShare: 0.0606, timeShare: 0.075, ratio: 1.2376, kernelRatio: 1.1 },
  };
  const page = renderTables({ runs: [windowed] }).performance;
  assert.match(page, /took 30\.00 ms against 400\.0 ms over every cell/);
  assert.match(page, /0\.0750 of the time for 0\.0606 of the cells, 1\.24× the cells' share \(1\.10× less/);
  assert.doesNotMatch(renderTables({ runs: [windowed] }).readme, /Sliding window/);
  assert.doesNotMatch(renderTables({ runs: [run] }).performance, /Sliding window/);
});

test("a training step's products for nanoGPT's model, counted by hand", () => {
  // 4 layers × (768 tokens × 24 · 128² + 2 · 12 · 64² · 128) + 768 · 2 · 128 · 65, times 3 for the backward.
  const forward = 4 * (768 * 24 * 128 * 128 + 2 * 12 * 64 * 64 * 128) + 768 * 2 * 128 * 65;
  assert.equal(trainingFlopsPerStep({ nLayer: 4, nEmbd: 128, blockSize: 64, batchSize: 12, vocab: 65 }), 3 * forward);
});

test('the GPT benchmark: its section, filed under its machine kind, and its paragraph on the performance page', () => {
  const config = { nLayer: 4, nEmbd: 128, blockSize: 64, batchSize: 12, vocab: 65 };
  const flops = trainingFlopsPerStep(config);
  const section = gptSection({
    steps: 2000, threads: 2, config, peakGflops: 100, date: '2026-01-02T00:00:00Z',
    browser: { elapsedMs: 2000 * 200, evals: { 500: 2.3, 2000: 1.9 } },
    torch: { elapsedMs: 2000 * 100, evals: { 500: 2.2, 2000: 1.88 } },
  });
  assert.equal(section.xattn.msPerStep, 200);
  assert.equal(section.xattn.gflops, Number((flops / 0.2 / 1e9).toFixed(1)));
  assert.equal(section.speedVsPytorch, 0.5);
  assert.equal(section.twiceTorchPercentOfPeak, Math.round((2 * flops) / 0.1 / 1e9));
  // Filed in its kind's run, in place; a kind without an attention run gets a run of its own, last.
  const withIt = withGptSection({ runs: [run, { machineKind: 'other', results: [] }] }, run.machineKind, section);
  assert.deepEqual(withIt.runs.map((r) => r.machineKind), [run.machineKind, 'other']);
  assert.equal(withIt.runs[0].gpt, section);
  assert.deepEqual(withGptSection({ runs: [run] }, 'new kind', section).runs.map((r) => r.machineKind), [run.machineKind, 'new kind']);
  const tables = renderTables(withGptSection({ runs: [run] }, 'new kind', section));
  assert.equal(tables.readme, renderRun(run), "the README keeps the newest attention run's table");
  assert.match(tables.performance, /`npm run bench:gpt`, 2000 steps, 2 threads\), new kind, 2026-01-02/);
  assert.match(tables.performance, /400\.0 s \(200\.0 ms a step, .* GFLOP\/s, \d+% of the 100\.0 GFLOP\/s wasm SIMD peak on 2 threads\); validation loss 2\.300 at 500, 1\.900 at 2000\./);
  assert.match(tables.performance, /xattn trains at 0\.50× PyTorch's speed; twice PyTorch's speed would take \d+% of the wasm SIMD peak/);
  assert.doesNotMatch(renderTables({ runs: [run] }).performance, /bench:gpt/);
});
