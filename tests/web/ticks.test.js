// Axis ticks: round steps, at least two ticks on any range, and bar axes from zero past the largest bar.
import test from 'node:test';
import assert from 'node:assert/strict';
import { ticksBetween, ticksFromZero } from '../../web/src/shared/ticks.js';

test('a narrow range still gets several labelled ticks', () => {
  // The softmax-gradient chart's scaled series spans about 0.41 … 0.43: one tick was all it had.
  const t = ticksBetween(0.411, 0.428);
  assert.ok(t.length >= 3, String(t));
  for (const v of t) assert.ok(v >= 0.411 && v <= 0.428, String(t));
  assert.deepEqual(ticksBetween(0, 1), [0, 0.5, 1]);
});

test('bar axes start at 0 and end at or above the largest value', () => {
  assert.deepEqual(ticksFromZero(151.9), [0, 50, 100, 150, 200]);
  assert.deepEqual(ticksFromZero(4.2), [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(ticksFromZero(0), [0, 1]);
});
