// The training panel's small JS layers: the embeddings, the output projection, softmax cross-entropy.
// Each forward against a worked example, each backward against central differences of its forward.
import test from 'node:test';
import assert from 'node:assert/strict';
import { embed, embedBackward } from '../../web/src/train/embedding.js';
import { linear, linearBackward } from '../../web/src/train/linear.js';
import { accuracy, argmaxRows, crossEntropy } from '../../web/src/train/cross-entropy.js';
import { randomValues } from '../../web/src/shared/prng.js';
import { centralDifference, dot } from './train-gradcheck.js';

const near = (a, b, tol, what) => assert.ok(Math.abs(a - b) <= tol * (1 + Math.abs(b)), `${what}: ${a} vs ${b}`);

test('embed adds the token row and the position row', () => {
  const table = Float32Array.of(1, 2, 10, 20, 100, 200); // vocab 3, E 2
  const pos = Float32Array.of(0.5, 0.25, -1, -2); // L 2
  const out = embed(Int32Array.of(2, 0, 1, 1), table, pos, { N: 2, L: 2, E: 2 });
  assert.deepEqual([...out], [100.5, 200.25, 0, 0, 10.5, 20.25, 9, 18]);
});

test('embedBackward scatters into token rows and sums positions over the batch, as central differences say', () => {
  const dims = { N: 3, L: 4, E: 5, vocab: 6 };
  const tokens = Int32Array.of(0, 5, 5, 2, 1, 1, 1, 1, 3, 0, 4, 5); // token 1 four times, token 5 three
  const table = randomValues(dims.vocab * dims.E, { seed: 1 });
  const pos = randomValues(dims.L * dims.E, { seed: 2 });
  const upstream = randomValues(dims.N * dims.L * dims.E, { seed: 3 });
  const f = () => dot(upstream, embed(tokens, table, pos, dims));
  const { dTable, dPos } = embedBackward(tokens, upstream, dims);
  for (let k = 0; k < table.length; k++) near(dTable[k], centralDifference(f, table, k), 1e-3, `dTable[${k}]`);
  for (let k = 0; k < pos.length; k++) near(dPos[k], centralDifference(f, pos, k), 1e-3, `dPos[${k}]`);
});

test('linear is x Wᵀ + b', () => {
  const y = linear(Float32Array.of(1, 2, 3, -1), Float32Array.of(1, 0, 0, 1, 2, 3), Float32Array.of(0.5, 0, -1), { rows: 2, inDim: 2, outDim: 3 });
  assert.deepEqual([...y], [1.5, 2, 7, 3.5, -1, 2]);
});

test('linearBackward matches central differences for x, W and b', () => {
  const dims = { rows: 5, inDim: 4, outDim: 3 };
  const x = randomValues(20, { seed: 4 });
  const w = randomValues(12, { seed: 5 });
  const b = randomValues(3, { seed: 6 });
  const upstream = randomValues(15, { seed: 7 });
  const f = () => dot(upstream, linear(x, w, b, dims));
  const g = linearBackward(x, w, upstream, dims);
  for (let k = 0; k < x.length; k++) near(g.dx[k], centralDifference(f, x, k), 1e-3, `dx[${k}]`);
  for (let k = 0; k < w.length; k++) near(g.dWeight[k], centralDifference(f, w, k), 1e-3, `dW[${k}]`);
  for (let k = 0; k < b.length; k++) near(g.dBias[k], centralDifference(f, b, k), 1e-3, `db[${k}]`);
});

test('cross-entropy of equal logits is log C; of a confident right answer, near 0', () => {
  assert.equal(crossEntropy(new Float32Array(8), Int32Array.of(1, 3), { rows: 2, classes: 4 }).loss, Math.log(4));
  const sure = crossEntropy(Float32Array.of(0, 30, 0), Int32Array.of(1), { rows: 1, classes: 3 });
  assert.ok(sure.loss > 0 && sure.loss < 1e-12, String(sure.loss));
  // Huge logits stay finite (the row's max is subtracted before exp).
  const huge = crossEntropy(Float32Array.of(1e30, 0), Int32Array.of(1), { rows: 1, classes: 2 });
  assert.equal(huge.loss, Math.fround(1e30)); // log(1 + e^−1e30) − (0 − 1e30), the logit as float32 holds it
});

test('cross-entropy gradient matches central differences, and each row of it sums to 0', () => {
  const dims = { rows: 4, classes: 5 };
  const logits = randomValues(20, { seed: 8, scale: 2 });
  const targets = Int32Array.of(0, 4, 2, 2);
  const { dLogits } = crossEntropy(logits, targets, dims);
  const f = () => crossEntropy(logits, targets, dims).loss;
  for (let k = 0; k < logits.length; k++) near(dLogits[k], centralDifference(f, logits, k, 1e-2), 2e-3, `dLogits[${k}]`);
  for (let r = 0; r < 4; r++) assert.ok(Math.abs(dot(dLogits.subarray(r * 5, r * 5 + 5), new Float32Array(5).fill(1))) < 1e-7);
});

test('argmax and accuracy: token share and whole-sequence share', () => {
  const predicted = argmaxRows(Float32Array.of(0, 1, 5, 2, 3, 3), { rows: 3, classes: 2 });
  assert.deepEqual([...predicted], [1, 0, 0]); // a tie picks the first class
  const acc = accuracy(Int32Array.of(1, 2, 3, 1, 2, 0), Int32Array.of(1, 2, 3, 1, 2, 3), { N: 2, L: 3 });
  assert.equal(acc.token, 5 / 6);
  assert.equal(acc.sequence, 1 / 2);
});
