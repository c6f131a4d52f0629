// bench/results.json in the speed panel: a chart of GFLOP/s per shape and implementation, one line of
// metadata, and a table whose columns a reader can name and whose counts are exact.
import test from 'node:test';
import assert from 'node:assert/strict';
import { formatCell, humanise, metaLine, newestRun, parseBench } from '../../web/src/bench-results.js';

// The benchmark's layout, cut down to two shapes.
const bench = {
  date: '2026-11-29T20:31:44.044Z',
  machine: 'AMD EPYC',
  cpus: 2,
  node: 'v20.20.2',
  threads: 1,
  legend: 'shape = [B·H, L, E]',
  results: [
    { shape: [1, 128, 64], flops: 4194304, xattnSimd: { ms: 0.125, gflops: 33.62 }, plainJs: { ms: 2.166, gflops: 1.94 }, bestPeer: 'ortWeb' },
    { shape: [8, 256, 64], flops: 134217728, xattnSimd: { ms: 3.873, gflops: 34.65 }, plainJs: { ms: 70.28, gflops: 1.91 }, bestPeer: 'ortWeb' },
  ],
};

test('counts are exact: 4194304 FLOPs is not shown as 4194000', () => {
  assert.equal(formatCell(4194304), '4,194,304');
  assert.equal(formatCell(134217728), '134,217,728');
  assert.equal(formatCell(33.6249), '33.62');
  assert.equal(formatCell('ortWeb'), 'onnxruntime-web');
  assert.equal(formatCell('something else'), 'something else');
  const { table } = parseBench(bench);
  assert.equal(table.rows[0].flops, '4,194,304');
});

test('the chart has one group per shape and one series per implementation, in the file\'s order', () => {
  const { chart } = parseBench(bench);
  assert.deepEqual(chart.groups, ['1×128×64', '8×256×64']);
  assert.deepEqual(chart.series.map((s) => [s.key, s.label, s.values]), [
    ['xattnSimd', 'xattn SIMD', [33.62, 34.65]],
    ['plainJs', 'plain JS', [1.94, 1.91]],
  ]);
  // The file records no peak: the chart draws none rather than inventing one.
  assert.equal(chart.peak, null);
  assert.deepEqual(parseBench({ ...bench, wasmSimdPeakGflops: 43.1 }).chart.peak, { value: 43.1, label: 'wasm SIMD peak of 1 thread in that run' });
});

test('column names are words, each implementation named once over its columns; the metadata is one line', () => {
  const { table, metaLine: line } = parseBench(bench);
  assert.deepEqual(
    table.cols.map((c) => [c.group, c.name]),
    [[null, 'shape'], [null, 'FLOPs'], ['xattn SIMD', 'ms'], ['xattn SIMD', 'GFLOP/s'], ['plain JS', 'ms'], ['plain JS', 'GFLOP/s'], [null, 'best peer']],
  );
  assert.equal(table.rows[1].shape, '(8, 256, 64)');
  assert.equal(table.rows[1]['xattnSimd.gflops'], '34.65');
  assert.equal(line, 'AMD EPYC · 2 CPUs · 1 thread · 2026-11-29 · Node v20.20.2');
  assert.equal(humanise('loadAverageAtStart'), 'load average at start');
  assert.equal(metaLine({ date: 'last Tuesday' }), 'last Tuesday');
});

test('a shape\'s share of the peak measured beside it is a column; that peak itself is left to the chart', () => {
  const withPeaks = { ...bench, results: bench.results.map((r, i) => ({ ...r, simdPeakGflops: 40 + i, simdPercentOfPeak: 84.1 + i })) };
  const { table } = parseBench(withPeaks);
  const names = table.cols.map((c) => c.name);
  assert.ok(names.includes('SIMD % of peak'), names.join(', '));
  assert.equal(table.rows[1].simdPercentOfPeak, '85.1');
  assert.ok(!table.cols.some((c) => c.id === 'simdPeakGflops'), 'the per-shape peak is not a column');
});

test('a file of runs, one per machine kind, shows the newest run', () => {
  const older = { ...bench, machine: 'Intel Xeon', results: bench.results.slice(0, 1) };
  const file = { runs: [bench, older] };
  assert.equal(newestRun(file), bench);
  assert.deepEqual(parseBench(file), parseBench(bench));
  assert.equal(parseBench({ runs: [older, bench] }).chart.groups.length, 1);
  assert.equal(newestRun({ runs: [] }).runs.length, 0, 'an empty file of runs is left as it is');
  assert.equal(parseBench({ runs: [] }), null);
});

test('other layouts still make a table; nothing to show gives null', () => {
  const bare = parseBench([{ a: 1 }, { b: 'x' }]);
  assert.deepEqual(bare.table.cols.map((c) => c.name), ['a', 'b']);
  assert.equal(bare.chart, null);
  assert.equal(parseBench([]), null);
  assert.equal(parseBench({ only: 'scalars' }), null);
  assert.equal(parseBench(42), null);
});
