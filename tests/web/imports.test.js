// Dims taken from imported .npy files, and the disagreements the page must name.
import test from 'node:test';
import assert from 'node:assert/strict';
import { dimsFromImports, normaliseImport } from '../../web/src/lesson/imports.js';

const dims = { B: 4, H: 4, Hkv: 4, useHeads: false, L: 10, S: 10, E: 64, Ev: 64 };
const t = (...shape) => ({ data: new Float32Array(shape.reduce((a, b) => a * b, 1)), shape });

test('an imported Q fixes B, L and E and locks them; the rest stays', () => {
  const { dims: next, locked, problems } = dimsFromImports(dims, { query: t(2, 5, 8) });
  assert.deepEqual(problems, []);
  assert.deepEqual({ B: next.B, L: next.L, E: next.E, S: next.S, Ev: next.Ev }, { B: 2, L: 5, E: 8, S: 10, Ev: 64 });
  assert.equal(locked.L, 'Q');
  assert.equal(locked.S, undefined);
});

test('4-dim files turn heads on; K with fewer heads than Q means GQA', () => {
  const { dims: next, problems } = dimsFromImports(dims, { query: t(1, 8, 5, 4), key: t(1, 2, 6, 4) });
  assert.deepEqual(problems, []);
  assert.equal(next.useHeads, true);
  assert.equal(next.H, 8);
  assert.equal(next.Hkv, 2);
  assert.equal(next.S, 6);
});

test('files that disagree are named with the dim and both shapes', () => {
  const { problems } = dimsFromImports(dims, { query: t(2, 5, 8), key: t(2, 7, 6) });
  assert.deepEqual(problems, ['E is 8 in Q (2, 5, 8) but 6 in K (2, 7, 6)']);
  const mixed = dimsFromImports(dims, { query: t(2, 5, 8), key: t(2, 1, 7, 8) }).problems;
  assert.match(mixed[0], /mix 3-dim and 4-dim/);
});

test('a 2-dim file is one batch element; other ranks are refused', () => {
  assert.deepEqual(normaliseImport('query', t(5, 8)).tensor.shape, [1, 5, 8]);
  assert.match(normaliseImport('value', t(8)).error, /V must have 3 dims/);
  assert.match(normaliseImport('key', t(2, 0, 8)).error, /empty dim/);
});

test('a file whose dims the lab cannot hold is refused at import, naming the file, the dim and the bound', () => {
  const long = { data: new Float32Array(5000 * 8), shape: [1, 5000, 8], label: 'long.npy' };
  const { problems } = dimsFromImports({ B: 4, L: 10, S: 10, E: 64, Ev: 64, useHeads: false }, { query: long });
  assert.deepEqual(problems, ['long.npy: L = 5000 in Q (1, 5000, 8) is more than the lab takes: L is at most 4096']);
  const heads = { data: new Float32Array(1), shape: [1, 33, 1, 1], label: 'h.npy' };
  assert.match(dimsFromImports({ B: 1, L: 1, S: 1, E: 1, Ev: 1 }, { key: heads }).problems[0], /h\.npy: Hkv = 33 .* Hkv is at most 32/);
});
