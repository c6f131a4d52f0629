// The decoding panel's pure pieces: the sequence's slices, the weight triangle, the comparison with full
// attention, the bytes a step copies, and the settings.
import test from 'node:test';
import assert from 'node:assert/strict';
import { decodeInputs, positions } from '../../web/src/decode/decode-sequence.js';
import { WeightTriangle, cellKind, matchesFull, stepAgainstFull, stepCopyBytes } from '../../web/src/decode/decode-rows.js';
import { readDecodeSettings } from '../../web/src/decode/decode-settings.js';

test('positions copies the same run of positions from every head', () => {
  // (1, 2 heads, 4 positions, D = 3): element (h, t, d) = 100h + 10t + d.
  const data = Float32Array.from({ length: 24 }, (_, k) => 100 * Math.floor(k / 12) + 10 * Math.floor((k % 12) / 3) + (k % 3));
  const t = { data, shape: [1, 2, 4, 3] };
  const p = positions(t, 1, 3);
  assert.deepEqual(p.shape, [1, 2, 2, 3]);
  assert.deepEqual([...p.data], [10, 11, 12, 20, 21, 22, 110, 111, 112, 120, 121, 122]);
  assert.deepEqual([...positions(t, 3, 4).data], [30, 31, 32, 130, 131, 132]);
  assert.notEqual(positions(t, 0, 4).data.buffer, data.buffer); // a copy, never a view
  assert.throws(() => positions(t, 2, 2), RangeError);
  assert.throws(() => positions(t, 0, 5), RangeError);
});

test('decodeInputs: seeded, one stream per tensor, the shapes of the settings', () => {
  const s = { H: 4, Hkv: 2, E: 8, Ev: 8, T: 6, seed: 42 };
  const a = decodeInputs(s);
  assert.deepEqual([a.query.shape, a.key.shape, a.value.shape], [[1, 4, 6, 8], [1, 2, 6, 8], [1, 2, 6, 8]]);
  assert.deepEqual(decodeInputs(s).key.data, a.key.data);
  assert.notDeepEqual(a.key.data, a.value.data);
  assert.notDeepEqual(decodeInputs({ ...s, seed: 43 }).key.data, a.key.data);
});

test('cellKind: weights on and below the diagonal of decoded rows; later keys did not exist yet', () => {
  assert.equal(cellKind(0, 0, 1), 'weight');
  assert.equal(cellKind(0, 1, 1), 'future-key');
  assert.equal(cellKind(2, 1, 3), 'weight');
  assert.equal(cellKind(2, 3, 3), 'future-key');
  assert.equal(cellKind(3, 0, 3), 'not-decoded');
});

test('WeightTriangle: row t of each head from a (1, H, 1, t + 1) step, in order', () => {
  const tri = new WeightTriangle(2, 3);
  tri.addRow(0, Float32Array.of(1, 1));
  tri.addRow(1, Float32Array.of(0.25, 0.75, 0.5, 0.5));
  assert.throws(() => tri.addRow(1, Float32Array.of(0, 0, 0, 0)), /row 1 arrived when row 2 was due/);
  assert.throws(() => tri.addRow(2, Float32Array.of(1, 0)), /not H·\(t \+ 1\) = 6/);
  assert.deepEqual(tri.row(0, 1), [0.25, 0.75, null]);
  assert.deepEqual(tri.row(1, 1), [0.5, 0.5, null]);
  assert.deepEqual(tri.row(1, 0), [1, null, null]);
  assert.deepEqual(tri.row(0, 2), [null, null, null]);
  assert.equal(tri.rows, 2);
});

test('stepAgainstFull: weights and output against the full row; a weight on a future key counts', () => {
  const dims = { H: 1, T: 3, Ev: 2, t: 1 };
  const full = {
    weights: Float32Array.of(1, 0, 0, 0.4, 0.6, 0, 0.2, 0.3, 0.5),
    output: Float32Array.of(0, 0, 1, 2, 0, 0),
  };
  const same = stepAgainstFull({ weights: Float32Array.of(0.4, 0.6), output: Float32Array.of(1, 2) }, full, dims);
  assert.deepEqual(same, { weights: 0, output: 0 });
  const off = stepAgainstFull({ weights: Float32Array.of(0.5, 0.5), output: Float32Array.of(1, 2.25) }, full, dims);
  assert.ok(Math.abs(off.weights - 0.1) < 1e-6 && off.output === 0.25, JSON.stringify(off));
  // A full "reference" that leaks weight onto key 2 (not causal) disagrees with the cache, which has no key 2.
  const leaky = { ...full, weights: Float32Array.of(1, 0, 0, 0.4, 0.5, 0.1, 0.2, 0.3, 0.5) };
  assert.ok(stepAgainstFull({ weights: Float32Array.of(0.4, 0.6), output: Float32Array.of(1, 2) }, leaky, dims).weights >= 0.1 - 1e-6);
  assert.ok(Number.isNaN(stepAgainstFull({ weights: Float32Array.of(NaN, 0.6), output: Float32Array.of(1, 2) }, full, dims).weights));
});

test('stepCopyBytes: the cache copies one token; the full copy grows with the length', () => {
  const shape = { H: 32, Hkv: 8, E: 128, Ev: 128 };
  const b = stepCopyBytes(shape, 4096);
  assert.equal(b.cache, 4 * (32 * 128 + 8 * 256)); // 24 KiB
  assert.equal(b.full, 4 * (32 * 128 + 4096 * 8 * 256)); // 32 MiB of K and V, plus the query
  assert.equal(stepCopyBytes(shape, 1).full, b.cache);
});

test('readDecodeSettings: menus, the seed, and H a multiple of Hkv', () => {
  assert.deepEqual(readDecodeSettings({ H: '4', Hkv: '2', E: '16', T: '12', seed: '42' }), {
    settings: { H: 4, Hkv: 2, E: 16, Ev: 16, T: 12, seed: 42 },
    problems: [],
  });
  assert.deepEqual(readDecodeSettings({ H: '2', Hkv: '4', E: '16', T: '12', seed: '1' }).problems, [
    'H = 2 query heads cannot share Hkv = 4 key/value heads: H must be a multiple of Hkv',
  ]);
  assert.match(readDecodeSettings({ H: '4', Hkv: '2', E: '16', T: '12', seed: '-1' }).problems[0], /seed must be a whole number from 0 to 4294967295; got −1/);
  assert.match(readDecodeSettings({ H: '3', Hkv: '1', E: '16', T: '12', seed: '1' }).problems[0], /H must be one of 1, 2, 4, 8; got 3/);
});

test('matchesFull: within a few float32 roundings, on both the weights and the output', () => {
  assert.equal(matchesFull({ weights: 0, output: 0 }), true);
  assert.equal(matchesFull({ weights: 5e-6, output: 1e-5 }), true);
  assert.equal(matchesFull({ weights: 1e-3, output: 0 }), false);
  assert.equal(matchesFull({ weights: 0, output: 2e-5 }), false);
  assert.equal(matchesFull({ weights: NaN, output: 0 }), false);
});
