// The speed panel's arithmetic and its timing loop, driven by a fake clock so nothing depends on real time.
import test from 'node:test';
import assert from 'node:assert/strict';
import { attentionFlops, gflopsPerSecond, maxAbsDiff, median, timeRuns } from '../../web/src/shared/timing.js';

test('flops are 4·B·H·L·S·E when Ev = E, and 2·B·H·L·S·(E + Ev) in general', () => {
  assert.equal(attentionFlops({ B: 4, L: 10, S: 10, E: 64, Ev: 64 }), 4 * 4 * 10 * 10 * 64);
  assert.equal(attentionFlops({ B: 2, H: 8, useHeads: true, L: 3, S: 5, E: 16, Ev: 32 }), 2 * 2 * 8 * 3 * 5 * 48);
  assert.equal(gflopsPerSecond(2e9, 1000), 2);
});

test('a fast call is batched until a batch outlasts a coarse clock, then batches repeat to the minimum runs and time', () => {
  let t = 0;
  let calls = 0;
  const r = timeRuns(
    () => {
      t += 1;
      calls++;
    },
    { clock: () => t, minBatchMs: 20, minRuns: 5, minMs: 300 },
  );
  // Calibration: 1 (warm-up), 2, 4, 8, 16, 32 calls (32 ms ≥ 20); then 10 batches of 32 (320 ms ≥ 300).
  assert.equal(r.calls, 32);
  assert.equal(r.runs, 10);
  assert.equal(r.median, 1);
  assert.equal(calls, 1 + 2 + 4 + 8 + 16 + 32 + 10 * 32);
});

test('the median is per call and ignores an outlier batch', () => {
  let t = 0;
  const batches = [];
  let n = 0;
  const durations = [25, 50, 30, 20, 40, 500, 30];
  const r = timeRuns(
    () => {
      t += durations[n++];
    },
    { clock: () => t, minBatchMs: 20, minRuns: 5, minMs: 100, onRun: (k) => batches.push(k) },
  );
  // Warm-up 25 ms ≥ 20, so one call per batch: 50, 30, 20, 40, 500 (5 runs, 640 ms).
  assert.equal(r.calls, 1);
  assert.deepEqual(r.times, [50, 30, 20, 40, 500]);
  assert.equal(r.median, 40);
  assert.deepEqual(batches, [1, 2, 3, 4, 5]);
});

test('a run slower than minMs is measured once, not repeated', () => {
  let t = 0;
  let calls = 0;
  const r = timeRuns(() => {
    t += 5000;
    calls++;
  }, { clock: () => t, minMs: 300 });
  assert.equal(calls, 1);
  assert.deepEqual(r.times, [5000]);
});

test('median and max |Δ|', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(maxAbsDiff(Float32Array.of(1, 2, 3), Float32Array.of(1, 2.5, 2)), 1);
  assert.ok(Number.isNaN(maxAbsDiff([NaN], [0])));
});
