// The decoding session and the step-time study on the package itself (Node: both builds, and the worker entry
// the panel uses):
// every cached step's row is full causal attention's row, and the study times the same step both ways.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createXattn } from 'xattn';
import { createXattnWorker } from 'xattn/worker';
import { DecodeSession } from '../../web/src/decode/decode-session.js';
import { decodeInputs } from '../../web/src/decode/decode-sequence.js';
import { timeDecodeSteps } from '../../web/src/decode/decode-timing.js';
import { timingSummary } from '../../web/src/decode/decode-timing-summary.js';
import { attentionReference } from '../../web/src/shared/attention-reference.js';

const settings = { H: 4, Hkv: 2, E: 8, Ev: 8, T: 7, seed: 42 };

// The panel runs the session on the package's worker entry; the tests run it there and on both builds directly.
const APIS = [
  ['SIMD build', () => createXattn({ simd: true })],
  ['scalar build', () => createXattn({ simd: false })],
  ['createXattnWorker, as the panel', () => createXattnWorker({ threads: 1 })],
];

for (const [label, open] of APIS) {
  test(`each step's row is full causal attention's row (${label})`, async () => {
    const lib = await open();
    const session = await DecodeSession.create(lib, settings);
    const { H, T, Ev } = settings;
    // An independent reference: the float64 reference, causal, with each query head's k/v head.
    const { query, key, value } = decodeInputs(settings);
    const plain = attentionReference(query, key, value, { isCausal: true, enableGqa: true });
    for (let t = 0; t < T; t++) {
      const s = await session.step();
      assert.equal(s.t, t);
      assert.equal(s.length, t + 1);
      assert.deepEqual(s.weightsShape, [1, H, 1, t + 1]);
      assert.deepEqual(s.outputShape, [1, H, 1, Ev]);
      assert.ok(s.diff.weights < 1e-6 && s.diff.output < 1e-5, `step ${t}: ${JSON.stringify(s.diff)}`);
      for (let h = 0; h < H; h++) {
        let sum = 0;
        for (let j = 0; j <= t; j++) {
          const w = s.weights[h * (t + 1) + j];
          sum += w;
          assert.ok(Math.abs(w - plain.weights.data[(h * T + t) * T + j]) < 1e-5, `step ${t}, head ${h}, key ${j}`);
        }
        assert.ok(Math.abs(sum - 1) < 1e-5);
      }
    }
    await assert.rejects(session.step(), /all 7 positions are decoded: Reset starts again/);
    await session.reset();
    assert.equal(session.t, 0);
    const again = await session.step();
    assert.equal(again.t, 0);
    assert.deepEqual([...again.weights], [1, 1, 1, 1]); // one key: all of every head's weight
    await session.dispose();
    await lib.terminate?.();
  });
}

test('the step-time study: both ways at each length, the same output, times per step', async () => {
  const lib = await createXattn();
  const progress = [];
  const r = timeDecodeSteps(lib, {
    shape: { H: 4, Hkv: 2, E: 16, Ev: 8 },
    lengths: [32, 8, 16],
    clock: () => performance.now(),
    runs: { minRuns: 2, minMs: 1, minBatchMs: 1 },
    onProgress: (done, total, label) => progress.push([done, total, label]),
  });
  assert.deepEqual(r.rows.map((row) => row.length), [8, 16, 32]);
  for (const row of r.rows) {
    for (const ms of [row.full, row.cache.float32, row.cache.float16]) assert.ok(ms > 0 && Number.isFinite(ms), JSON.stringify(row));
    assert.ok(row.diff.float32 < 1e-5, `float32 cache vs full copy at ${row.length}: ${row.diff.float32}`);
    // float16 storage rounds keys and values (11 significant bits): close, not equal.
    assert.ok(row.diff.float16 > 0 && row.diff.float16 < 1e-2, `float16 cache vs full copy at ${row.length}: ${row.diff.float16}`);
  }
  assert.deepEqual(progress[0], [0, 3, 'decoding steps at cache length 8']);
  assert.equal(progress.at(-1)[2], 'done');
});

test('timingSummary says which way is faster from the figures, never assuming', () => {
  const shape = { H: 32, Hkv: 8, E: 128, Ev: 128 };
  const row = (length, c32, c16, full) => ({ length, cache: { float32: c32, float16: c16 }, full, diff: { float32: 0, float16: 0.001 } });
  const fast = timingSummary({ shape, dtypes: ['float32', 'float16'], rows: [row(256, 0.3, 0.5, 0.9), row(4096, 4, 7, 14)] });
  assert.equal(fast.cacheFaster, true);
  assert.equal(fast.ratio, 3.5);
  assert.match(fast.html, /<strong>4 ms<\/strong> with the cache and <strong>14 ms<\/strong> recomputing from a full copy: the cache is <strong>3.5× faster/);
  assert.match(fast.html, /32\.0 MiB \(Hkv · n · \(E \+ Ev\) · 4 bytes\) at n = 4096, against 24\.0 KiB/);
  assert.match(fast.html, /slower than float32 here \(1\.75×\)/);
  const slow = timingSummary({ shape, dtypes: ['float32', 'float16'], rows: [row(256, 1, 0.5, 0.9), row(4096, 16, 8, 14)] });
  assert.equal(slow.cacheFaster, false);
  assert.match(slow.html, /the cache is <strong>not faster here<\/strong>/);
  assert.match(slow.html, /2× faster than float32/);
  assert.doesNotMatch(slow.html, /slower than float32/);
});
