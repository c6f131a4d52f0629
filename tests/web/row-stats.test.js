// Row measures beside the heatmap and in the scaling panel.
import test from 'node:test';
import assert from 'node:assert/strict';
import { mean, median, rowEntropy, rowNorms, rowSums, saturationStats, softmaxGradNorm } from '../../web/src/shared/row-stats.js';

test('row sums are 1 for softmax rows and 0 for a zeroed row', () => {
  assert.deepEqual([...rowSums(Float32Array.of(0.25, 0.75, 0, 0), 2, 2)], [1, 0]);
});

test('entropy is log S for uniform rows and 0 for one-hot rows', () => {
  const h = rowEntropy(Float64Array.of(0.25, 0.25, 0.25, 0.25, 0, 1, 0, 0), 2, 4);
  assert.ok(Math.abs(h[0] - Math.log(4)) < 1e-12);
  assert.equal(h[1], 0);
});

test('a row holding NaN has NaN entropy, not the 0 of a one-hot row', () => {
  const h = rowEntropy(Float64Array.of(NaN, NaN, 0, 1), 2, 2);
  assert.ok(Number.isNaN(h[0]));
  assert.equal(h[1], 0);
});

test('the softmax Jacobian norm matches ‖diag(p) − p pᵀ‖ computed entry by entry', () => {
  const p = [0.1, 0.2, 0.3, 0.4];
  let sq = 0;
  for (let i = 0; i < 4; i++) for (let j = 0; j < 4; j++) sq += ((i === j ? p[i] : 0) - p[i] * p[j]) ** 2;
  assert.ok(Math.abs(softmaxGradNorm(Float64Array.from(p), 0, 4) - Math.sqrt(sq)) < 1e-12);
  assert.equal(softmaxGradNorm(Float64Array.of(0, 1, 0), 0, 3), 0);
});

test('saturation statistics average over rows', () => {
  const s = saturationStats(Float64Array.of(0.5, 0.5, 1, 0), 2, 2);
  assert.equal(s.maxWeight, 0.75);
  assert.ok(Math.abs(s.entropy - Math.log(2) / 2) < 1e-12);
  assert.ok(Math.abs(s.gradNorm - 0.25) < 1e-12); // ‖J‖ = 0.5 for (½, ½), 0 for (1, 0)
});

test('row norms are the Euclidean norm of each row', () => {
  assert.deepEqual([...rowNorms(Float32Array.of(3, 4, 0, 0, -5, 12), 3, 2)], [5, 0, 13]);
});

test('the median is the middle value, or the mean of the two middle ones; the mean averages', () => {
  assert.equal(median([5, 1, 100]), 5);
  assert.equal(median(Float64Array.of(4, 1, 3, 100)), 3.5);
  assert.ok(Number.isNaN(median([])));
  assert.equal(mean([1, 2, 6]), 3);
});
