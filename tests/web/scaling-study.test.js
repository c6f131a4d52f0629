// The "why scale by 1/√E" measurements, run with the package as the page runs them.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createXattn } from 'xattn';
import { runScalingStudy, STUDY_ES } from '../../web/src/scaling-study.js';

test('without 1/√E the softmax saturates as E grows; with it, it does not', async () => {
  const lib = await createXattn();
  const progress = [];
  const rows = runScalingStudy({
    sdpa: (q, k, v, o) => lib.scaledDotProductAttention(q, k, v, o),
    gen: { seed: 42, distribution: 'normal', scale: 1 },
    L: 32,
    S: 32,
    onProgress: (done, total) => progress.push(`${done}/${total}`),
  });
  assert.deepEqual(rows.map((r) => r.E), STUDY_ES);
  assert.equal(progress.at(-1), `${STUDY_ES.length}/${STUDY_ES.length}`);
  const first = rows[0];
  const last = rows.at(-1);
  // Score spread grows like √E: ×16 from E = 4 to 1024 (within sampling noise).
  const growth = last.scoreStd / first.scoreStd;
  assert.ok(growth > 12 && growth < 20, `std growth ${growth}`);
  // Unscaled at E = 1024: nearly one-hot rows, almost no entropy, a vanished gradient.
  assert.ok(last.unscaled.maxWeight > 0.8, `max weight ${last.unscaled.maxWeight}`);
  assert.ok(last.unscaled.entropy < 0.3, `entropy ${last.unscaled.entropy}`);
  assert.ok(last.unscaled.gradNorm < 0.5 * first.unscaled.gradNorm);
  // Scaled: the same statistics stay where they were at E = 4.
  assert.ok(last.scaled.maxWeight < 0.5, `scaled max weight ${last.scaled.maxWeight}`);
  assert.ok(Math.abs(last.scaled.entropy - first.scaled.entropy) < 0.5);
});
