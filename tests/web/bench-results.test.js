// bench/results.json in the speed panel: whatever the benchmark writes becomes a readable table.
import test from 'node:test';
import assert from 'node:assert/strict';
import { benchTable } from '../../web/src/bench-results.js';

test('an object with one array of records: scalar fields become notes, nested fields dotted columns', () => {
  const t = benchTable({
    machine: 'x86-64',
    date: '2025-01-01',
    results: [
      { build: 'simd', shape: [4, 10, 64], gflops: { median: 12.3456, best: 13 } },
      { build: 'scalar', shape: [4, 10, 64], gflops: { median: 3.21 }, note: 'no weights' },
    ],
  });
  assert.deepEqual(t.meta, { machine: 'x86-64', date: '2025-01-01' });
  assert.deepEqual(t.cols, ['build', 'shape', 'gflops.median', 'gflops.best', 'note']);
  assert.deepEqual(t.rows[0], { build: 'simd', shape: '(4, 10, 64)', 'gflops.median': 12.35, 'gflops.best': 13 });
  assert.equal(t.rows[1].note, 'no weights');
});

test('a bare array of records is a table; nothing to show gives null', () => {
  assert.deepEqual(benchTable([{ a: 1 }, { b: 'x' }]).cols, ['a', 'b']);
  assert.equal(benchTable([]), null);
  assert.equal(benchTable({ only: 'scalars' }), null);
  assert.equal(benchTable(42), null);
});
