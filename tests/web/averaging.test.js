// From averaging to attention, through the package: uniform causal averaging by hand equals softmax of a
// zero matrix with −∞ above the diagonal, and the data-dependent step is the example's own attention.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createXattn } from 'xattn';
import { AVERAGING_MAX, averagingSteps, maxAbsDifference } from '../../web/src/averaging/averaging.js';
import { randomValues } from '../../web/src/shared/prng.js';

const xa = await createXattn();
const sdpa = (q, k, v, o) => xa.scaledDotProductAttention(q, k, v, o);

function slice(L, S, E, Ev, seed = 3) {
  return { L, S, E, Ev, query: randomValues(L * E, { seed }), key: randomValues(S * E, { seed: seed + 1 }), value: randomValues(S * Ev, { seed: seed + 2 }) };
}

test('uniform averaging is a lower-triangular matrix divided by its row counts', () => {
  const r = averagingSteps(slice(4, 4, 3, 2), sdpa);
  const w = r.steps[0].weights;
  assert.deepEqual([...w.subarray(0, 4)], [1, 0, 0, 0]);
  assert.deepEqual([...w.subarray(8, 12)].map((x) => Math.fround(x)), [1 / 3, 1 / 3, 1 / 3, 0].map(Math.fround));
  // Output row 1 is the mean of V rows 0 and 1.
  const V = r.value;
  assert.ok(Math.abs(r.steps[0].output[2] - (V[0] + V[2]) / 2) < 1e-6);
});

test('softmax of zeros with −∞ above the diagonal gives the same weights and the same outputs', () => {
  const r = averagingSteps(slice(10, 10, 8, 5), sdpa);
  assert.ok(maxAbsDifference(r.steps[0].weights, r.steps[1].weights) < 1e-6);
  assert.ok(maxAbsDifference(r.steps[0].output, r.steps[1].output) < 1e-5);
  // The data-dependent weights are not the uniform ones, but they keep the mask and sum to 1 per row.
  const w = r.steps[2].weights;
  assert.ok(maxAbsDifference(w, r.steps[0].weights) > 0.05);
  for (let i = 0; i < 10; i++) {
    let sum = 0;
    for (let j = 0; j < 10; j++) {
      if (j > i) assert.equal(w[i * 10 + j], 0);
      sum += w[i * 10 + j];
    }
    assert.ok(Math.abs(sum - 1) < 1e-5);
  }
});

test('the data-dependent step is softmax(Q Kᵀ/√E) under the mask, as its scores say', () => {
  const r = averagingSteps(slice(6, 9, 4, 3), sdpa);
  assert.equal(r.n, 6); // the first min(L, S) positions
  const { scores } = r;
  for (let i = 0; i < r.n; i++) {
    let z = 0;
    for (let j = 0; j <= i; j++) z += Math.exp(scores[i * 6 + j]);
    for (let j = 0; j <= i; j++) assert.ok(Math.abs(r.steps[2].weights[i * 6 + j] - Math.exp(scores[i * 6 + j]) / z) < 1e-5);
  }
});

test('long examples show their first AVERAGING_MAX positions', () => {
  assert.equal(averagingSteps(slice(64, 64, 4, 4), sdpa).n, AVERAGING_MAX);
});
