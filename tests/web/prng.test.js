// The demo's seeded generator: known answers, determinism per seed and stream, and the distributions.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Prng, randomValues } from '../../web/src/shared/prng.js';

test('xoshiro128** from state {1, 2, 3, 4} gives the reference outputs', () => {
  // The first ten outputs of the reference C implementation from this state.
  const expected = [11520, 0, 5927040, 70819200, 2031721883, 1637235492, 1287239034, 3734860849, 3729100597, 4258142804];
  const g = Prng.fromState([1, 2, 3, 4]);
  assert.deepEqual(expected.map(() => g.nextUint32()), expected);
});

test('the same seed and stream give the same values; another seed or stream does not', () => {
  const a = randomValues(64, { seed: 42, stream: 0 });
  assert.deepEqual(randomValues(64, { seed: 42, stream: 0 }), a);
  assert.notDeepEqual(randomValues(64, { seed: 43, stream: 0 }), a);
  assert.notDeepEqual(randomValues(64, { seed: 42, stream: 1 }), a);
});

test('a longer draw starts with the shorter one (changing a dim does not reshuffle the prefix)', () => {
  const short = randomValues(10, { seed: 7 });
  const long = randomValues(1000, { seed: 7 });
  assert.deepEqual(long.subarray(0, 10), short);
});

test('normal values have mean ≈ 0 and standard deviation ≈ scale', () => {
  const n = 200_000;
  const x = randomValues(n, { seed: 1, distribution: 'normal', scale: 3 });
  let mean = 0;
  for (const v of x) mean += v;
  mean /= n;
  let variance = 0;
  for (const v of x) variance += (v - mean) ** 2;
  const std = Math.sqrt(variance / n);
  // Standard error of the mean is 3/√n ≈ 0.0067; these bounds are many standard errors wide.
  assert.ok(Math.abs(mean) < 0.05, `mean ${mean}`);
  assert.ok(Math.abs(std - 3) < 0.05, `std ${std}`);
});

test('uniform values stay within [-scale, scale) and fill it evenly', () => {
  const n = 100_000;
  const x = randomValues(n, { seed: 2, distribution: 'uniform', scale: 0.5 });
  const bins = new Array(10).fill(0);
  for (const v of x) {
    assert.ok(v >= -0.5 && v < 0.5, `value ${v} outside [-0.5, 0.5)`);
    bins[Math.floor((v + 0.5) * 10)]++;
  }
  for (const count of bins) assert.ok(Math.abs(count - n / 10) < 0.05 * (n / 10), `bins ${bins}`);
});

test('bad seeds and distributions are refused with a message', () => {
  assert.throws(() => new Prng(-1), /seed must be an integer/);
  assert.throws(() => new Prng(1.5), /seed must be an integer/);
  assert.throws(() => new Prng(2 ** 32), /seed must be an integer/);
  assert.throws(() => randomValues(3, { seed: 1, distribution: 'cauchy' }), /distribution must be 'normal' or 'uniform'/);
});
