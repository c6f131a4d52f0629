// NaN and ±∞ in results are counted, kept visible through max-pooling, and explained.
import test from 'node:test';
import assert from 'node:assert/strict';
import { badRows, countNonFinite, describeNonFinite, finiteAbsMax, overflowExplanation } from '../../web/src/shared/finite.js';
import { downsampleMax } from '../../web/src/shared/downsample.js';
import { rowSummaryHtml } from '../../web/src/lesson/weights-side.js';
import { rowEntropy, rowSums } from '../../web/src/shared/row-stats.js';

test('non-finite values are counted by kind and said in words', () => {
  const c = countNonFinite(Float32Array.of(1, NaN, Infinity, -Infinity, NaN, 0));
  assert.deepEqual(c, { nan: 2, posInf: 1, negInf: 1, bad: 4 });
  assert.equal(describeNonFinite(c), '2 NaN, 1 +∞, 1 −∞');
  assert.equal(describeNonFinite(countNonFinite(Float32Array.of(1, 2))), '');
  assert.equal(finiteAbsMax(Float32Array.of(-3, NaN, Infinity, 2)), 3);
  assert.equal(badRows(Float32Array.of(1, 0, NaN, 0.5), 2, 2), 1);
});

test('max-pooling keeps a NaN visible instead of folding it into a dark small weight', () => {
  const m = Float32Array.of(0.1, NaN, 0.2, 0.3);
  const d = downsampleMax(m, 2, { r0: 0, c0: 0, rows: 2, cols: 2 }, 1, 1);
  assert.ok(Number.isNaN(d.data[0]));
  const fine = downsampleMax(Float32Array.of(0.1, 0.4, 0.2, 0.3), 2, { r0: 0, c0: 0, rows: 2, cols: 2 }, 1, 1);
  assert.ok(Math.abs(fine.data[0] - 0.4) < 1e-7);
});

// An overflowed (2, 2) slice as the worker sends it: scores past float32's range made every weight NaN.
function overflowedView(spread) {
  const weights = Float32Array.of(NaN, NaN, NaN, NaN);
  return {
    L: 2,
    S: 2,
    E: 64,
    weights,
    query: Float32Array.of(spread, -spread),
    key: Float32Array.of(spread, spread),
    fullyMasked: Uint8Array.of(0, 0),
    rowSums: Float32Array.from(rowSums(weights, 2, 2)),
    rowEntropy: Float32Array.from(rowEntropy(weights, 2, 2)),
  };
}

test('the explanation names the overflow of the scores, with the figures that cause it', () => {
  const text = overflowExplanation(overflowedView(1e20));
  assert.match(text, /^2 of 2 rows hold weights that are not numbers \(4 NaN\)/);
  assert.match(text, /a score q·k \(a sum of E = 64 products\) can reach about 6\.4e41/);
  assert.match(text, /beyond float32's largest number, 3\.4e38/);
  assert.match(text, /∞ − ∞ = NaN/);
  assert.equal(overflowExplanation({ ...overflowedView(1), weights: Float32Array.of(0.5, 0.5, 0.5, 0.5) }), null);
});

test('NaN that came with an imported file is said as such, never blamed on the data spread; the verb agrees', () => {
  const weights = Float32Array.of(0.5, 0.5, NaN, NaN);
  const view = {
    ...overflowedView(1),
    weights,
    query: Float32Array.of(1, NaN),
    value: Float32Array.of(1, 2),
    sources: { query: 'nan.npy' },
  };
  const text = overflowExplanation(view);
  assert.match(text, /^1 of 2 rows holds weights that are not numbers \(2 NaN\)/);
  assert.match(text, /Q \(imported from nan\.npy\) holds 1 NaN/);
  assert.doesNotMatch(text, /data spread|overflow/);
});

test('the row summary says NaN rows hold NaN instead of "sum to 1 (largest error NaN)"', () => {
  const html = rowSummaryHtml(overflowedView(1e20));
  assert.doesNotMatch(html, /sum to 1|largest error NaN/);
  assert.match(html, /no row sums to a number; <span class="nan-text">2 rows hold NaN \(not a number\)/);
});

test('one row, one fully masked row: the verbs agree with their counts', () => {
  const weights = Float32Array.of(0.5, 0.5, 0, 0);
  const html = rowSummaryHtml({
    L: 2,
    S: 2,
    weights,
    fullyMasked: Uint8Array.of(0, 1),
    rowSums: Float32Array.from(rowSums(weights, 2, 2)),
    rowEntropy: Float32Array.from(rowEntropy(weights, 2, 2)),
  });
  assert.match(html, /1 row sums to 1 \(largest error 0\.0e\+0\)/);
  assert.match(html, /1 fully masked row sums to 0/);
});
