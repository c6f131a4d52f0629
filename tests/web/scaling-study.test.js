// The "why scale by 1/√E" measurements, run with the package as the page's worker runs them.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createXattn } from 'xattn';
import { GRAD_OUTPUT, runScalingStudy, STUDY_ES, STUDY_EV, STUDY_TRIALS } from '../../web/src/scaling/scaling-study.js';
import { meanStd } from '../../web/src/shared/row-stats.js';

const lib = await createXattn();
const grad = (q, k, v, dO, o) => lib.scaledDotProductAttentionGrad(q, k, v, dO, o);
const gen = { seed: 42, distribution: 'normal', spread: 1 };

// Over all E, the largest value of a measure divided by its smallest.
const spread = (values) => Math.max(...values) / Math.min(...values);

test('without 1/√E the softmax saturates as E grows; with it, it does not', () => {
  const progress = [];
  const rows = runScalingStudy({ grad, gen, L: 32, S: 32, onProgress: (done, total) => progress.push(`${done}/${total}`) });
  assert.deepEqual(rows.map((r) => r.E), STUDY_ES);
  assert.equal(progress.at(-1), `${STUDY_ES.length}/${STUDY_ES.length}`);
  const first = rows[0];
  const last = rows.at(-1);
  // Score spread grows like √E: ×16 from E = 4 to 1024 (within sampling noise).
  const growth = last.scoreStd / first.scoreStd;
  assert.ok(growth > 12 && growth < 20, `std growth ${growth}`);
  // Unscaled at E = 1024: nearly one-hot rows, almost no entropy, a vanished softmax gradient.
  assert.ok(last.unscaled.maxWeight > 0.8, `max weight ${last.unscaled.maxWeight}`);
  assert.ok(last.unscaled.entropy < 0.3, `entropy ${last.unscaled.entropy}`);
  assert.ok(last.unscaled.gradNorm < 0.5 * first.unscaled.gradNorm);
  // Scaled: the same statistics stay where they were at E = 4.
  assert.ok(last.scaled.maxWeight < 0.5, `scaled max weight ${last.scaled.maxWeight}`);
  assert.ok(Math.abs(last.scaled.entropy - first.scaled.entropy) < 0.5);
});

test('the gradient reaching Q vanishes for the typical row without 1/√E, and stays steady with it', () => {
  const rows = runScalingStudy({ grad, gen, L: 32, S: 32 });
  const first = rows[0];
  const last = rows.at(-1);
  const q = (r, which) => r[which].gradQueryMedian;
  const k = (r, which) => r[which].gradKeyMedian;
  for (const r of rows) {
    for (const which of ['scaled', 'unscaled']) {
      for (const name of ['gradQueryMedian', 'gradQueryMean', 'gradKeyMedian', 'gradKeyMean']) {
        assert.ok(Number.isFinite(r[which][name]) && r[which][name] >= 0, `${which} ${name} at E = ${r.E}: ${r[which][name]}`);
      }
    }
  }
  // Scaled: the median row norms of dQ and dK move by less than ×2 over E = 4 … 1024 (1/√E cancels the √E
  // growth of ‖k‖ and ‖q‖, and the softmax does not saturate).
  assert.ok(spread(rows.map((r) => q(r, 'scaled'))) < 2, `scaled ‖dQᵢ‖ ${rows.map((r) => q(r, 'scaled'))}`);
  assert.ok(spread(rows.map((r) => k(r, 'scaled'))) < 2, `scaled ‖dKⱼ‖ ${rows.map((r) => k(r, 'scaled'))}`);
  // Unscaled: the typical query row's gradient at E = 1024 is a small fraction of the scaled one, and of
  // its own value at E = 4.
  assert.ok(q(last, 'unscaled') < 0.1 * q(last, 'scaled'), `unscaled ${q(last, 'unscaled')} vs scaled ${q(last, 'scaled')}`);
  assert.ok(q(last, 'unscaled') < 0.1 * q(first, 'unscaled'), `unscaled at E = 1024 ${q(last, 'unscaled')}, at E = 4 ${q(first, 'unscaled')}`);
  // …while the mean is far above the median: a few rows (near ties) still get large gradients. Scaled rows
  // are alike, so their mean and median are close.
  assert.ok(last.unscaled.gradQueryMean > 10 * q(last, 'unscaled'), `unscaled mean ${last.unscaled.gradQueryMean}`);
  assert.ok(last.scaled.gradQueryMean < 1.5 * q(last, 'scaled'), `scaled mean ${last.scaled.gradQueryMean}`);
});

test('the study calls the grad API with the documented tensors: default scale, then scale 1, one fixed dO', () => {
  const L = 6;
  const S = 5;
  const calls = [];
  runScalingStudy({
    grad: (query, key, value, gradOutput, options) => {
      calls.push({ query: query.shape, key: key.shape, value: value.shape, gradOutput, options });
      return grad(query, key, value, gradOutput, options);
    },
    gen,
    L,
    S,
    Es: [4, 64],
  });
  const B = STUDY_TRIALS;
  assert.deepEqual(
    calls.map((c) => [c.query, c.key, c.value, c.gradOutput.shape, c.options]),
    [4, 4, 64, 64].map((E, n) => [[B, L, E], [B, S, E], [B, S, STUDY_EV], [B, L, STUDY_EV], n % 2 ? { scale: 1, needWeights: true } : { needWeights: true }]),
  );
  // One upstream gradient for every E and both scales, standard normal from its own fixed seed: changing
  // the page's seed does not change it.
  for (const c of calls) assert.deepEqual([...c.gradOutput.data], [...calls[0].gradOutput.data]);
  const other = [];
  runScalingStudy({ grad: (q, k, v, dO, o) => (other.push(dO.data), grad(q, k, v, dO, o)), gen: { ...gen, seed: 7 }, L, S, Es: [4] });
  assert.deepEqual([...other[0]], [...calls[0].gradOutput.data]);
  assert.equal(GRAD_OUTPUT.distribution, 'normal');
  assert.equal(GRAD_OUTPUT.scale, 1);
  const { mean, std } = meanStd(calls[0].gradOutput.data);
  assert.ok(Math.abs(mean) < 0.2 && Math.abs(std - 1) < 0.2, `dO mean ${mean}, std ${std}`);
});
