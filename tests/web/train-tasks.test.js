// The training tasks: their targets by hand, held-out sequences that training never draws, and the
// pattern check the panel and the browser test read.
import test from 'node:test';
import assert from 'node:assert/strict';
import { SequenceSource, TASKS, classLabel, patternMatch, probeSequence, targetsOf } from '../../web/src/train/tasks.js';

const x = Int32Array.of(0, 1, 2, 3, 4, 5); // A B C D E F

test('reverse, shift by 3 and the (first, previous) pairs, by hand', () => {
  const dims = { N: 1, L: 6, vocab: 6 };
  assert.deepEqual([...targetsOf('reverse', x, dims)], [5, 4, 3, 2, 1, 0]);
  assert.deepEqual([...targetsOf('shift', x, dims)], [3, 4, 5, 0, 1, 2]);
  const pairs = [...targetsOf('pair', x, dims)].map((c) => classLabel('pair', c, 6));
  assert.deepEqual(pairs, ['AF', 'AA', 'AB', 'AC', 'AD', 'AE']);
  assert.equal(TASKS.pair.classes(6), 36);
  assert.throws(() => targetsOf('sort', x, dims), /no task named 'sort'/);
});

test('batches are seeded and never contain a held-out sequence', () => {
  // A tiny space (3 tokens, L = 3: 27 sequences) with 10 held out, so collisions are certain to be tried.
  const a = new SequenceSource({ seed: 5, L: 3, vocab: 3, heldOut: 10 });
  const b = new SequenceSource({ seed: 5, L: 3, vocab: 3, heldOut: 10 });
  const held = new Set();
  for (let n = 0; n < 10; n++) held.add(a.heldOut.subarray(n * 3, n * 3 + 3).join());
  const batchA = a.batch(200);
  assert.deepEqual(batchA, b.batch(200));
  for (let n = 0; n < 200; n++) assert.ok(!held.has(batchA.subarray(n * 3, n * 3 + 3).join()), `sequence ${n} is held out`);
  assert.ok(a.skipped > 0, 'the source had to skip held-out draws');
  assert.ok(held.size > 5);
});

test('the probe holds distinct letters when the vocabulary allows', () => {
  assert.deepEqual([...probeSequence(5, 8)], [0, 1, 2, 3, 4]);
  assert.deepEqual([...probeSequence(5, 3)], [0, 1, 2, 0, 1]);
});

// Weights (H, L, L) with all of each row on key `pick(i)` of each head.
function oneHot(H, L, picks) {
  const w = new Float32Array(H * L * L);
  for (let h = 0; h < H; h++) for (let i = 0; i < L; i++) w[(h * L + i) * L + picks[h](i)] = 1;
  return w;
}

test('patternMatch finds the head that takes each role', () => {
  const L = 4;
  const [rev] = patternMatch('reverse', oneHot(2, L, [(i) => i, (i) => L - 1 - i]), { H: 2, L });
  assert.deepEqual(rev, { role: TASKS.reverse.roleNames[0], head: 1, meanWeight: 1, rowsDominated: 4 });
  const pair = patternMatch('pair', oneHot(2, L, [(i) => (i + L - 1) % L, () => 0]), { H: 2, L });
  assert.deepEqual(pair.map((r) => [r.head, r.rowsDominated]), [[1, 4], [0, 4]]);
  // Uniform weights dominate no row: a tie is not a pattern.
  const [flat] = patternMatch('reverse', new Float32Array(L * L).fill(1 / L), { H: 1, L });
  assert.equal(flat.rowsDominated, 0);
  assert.equal(flat.meanWeight, 1 / L);
});
