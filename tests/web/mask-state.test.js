// Masks survive dimension edits: typing S = 20 passes through S = 2, and nothing the learner set is lost.
import test from 'node:test';
import assert from 'node:assert/strict';
import { MaskState } from '../../web/src/masks/mask-state.js';

test('key padding typed by the learner is clipped to S while S is small and comes back with it', () => {
  const m = new MaskState();
  [10, 8, 6, 4].forEach((v, b) => m.setKept(b, v));
  assert.deepEqual(m.padding(4, 10), [10, 8, 6, 4]);
  assert.deepEqual(m.padding(4, 2), [2, 2, 2, 2]); // "20" typed: first S = 2…
  assert.deepEqual(m.padding(4, 20), [10, 8, 6, 4]); // …then S = 20: the values are the learner's again
});

test('batch elements never set follow the default S − 2b; B shrinking and growing keeps values', () => {
  const m = new MaskState();
  m.setKept(1, 3);
  assert.deepEqual(m.padding(3, 10), [10, 3, 6]);
  assert.deepEqual(m.padding(1, 10), [10]);
  assert.deepEqual(m.padding(3, 12), [12, 3, 8]);
});

test('drawn cells outside L × S are left out while it is small and restored when it grows', () => {
  const m = new MaskState();
  m.paint([[4, 6], [9, 9]], true);
  const at = (mask, S, i, j) => mask[i * S + j];
  const c10 = m.custom(10, 10);
  assert.equal(at(c10, 10, 4, 6), 1);
  assert.equal(at(c10, 10, 9, 9), 1);
  assert.equal(c10.reduce((a, b) => a + b, 0), 2);
  const c1 = m.custom(10, 1); // "12" typed passes through S = 1
  assert.equal(c1, null);
  assert.equal(m.countIn(10, 1), 0);
  const c12 = m.custom(10, 12);
  assert.equal(at(c12, 12, 4, 6), 1);
  assert.equal(at(c12, 12, 9, 9), 1);
  assert.equal(m.countIn(10, 12), 2);
  m.paint([[4, 6]], false);
  assert.equal(m.countIn(10, 12), 1);
});

test('a snapshot is independent of later edits', () => {
  const m = new MaskState();
  m.setKept(0, 5);
  m.paint([[1, 1]], true);
  const snap = m.snapshot();
  m.setKept(0, 2);
  m.clearCells();
  assert.deepEqual(snap.padding(1, 10), [5]);
  assert.equal(snap.isHidden(1, 1), true);
});
