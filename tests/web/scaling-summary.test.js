// The text under the scaling charts never claims what its own figures contradict.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createXattn } from 'xattn';
import { runScalingStudy } from '../../web/src/scaling/scaling-study.js';
import { scalingSummary } from '../../web/src/scaling/scaling-summary.js';

const lib = await createXattn();
const grad = (q, k, v, dO, o) => lib.scaledDotProductAttentionGrad(q, k, v, dO, o);
const study = (spread, draw = 0) => runScalingStudy({ grad, gen: { seed: 42, distribution: 'normal', spread }, L: 16, S: 16, draw, Es: [4, 64, 1024] });

test('at data spread 1 the unscaled softmax saturates and the text says so', () => {
  const { saturated, vanished, html } = scalingSummary(study(1), { spread: 1 });
  assert.equal(saturated, true);
  assert.equal(vanished, true);
  assert.match(html, /the softmax saturates and passes almost no gradient/);
});

test('at data spread 0.1 nothing saturates, and the text does not say it does', () => {
  const rows = study(0.1);
  const last = rows.at(-1);
  // The figures the old text contradicted: the unscaled gradient barely moves.
  assert.ok(last.unscaled.gradNorm / rows[0].unscaled.gradNorm > 0.8, `gradient ratio ${last.unscaled.gradNorm / rows[0].unscaled.gradNorm}`);
  const { saturated, vanished, html } = scalingSummary(rows, { spread: 0.1 });
  assert.equal(saturated, false);
  assert.equal(vanished, false);
  assert.doesNotMatch(html, /saturates and passes|the gradient vanishes/);
  assert.match(html, /at data spread 0\.1 the unscaled scores are still small at E = 1024/);
});

test('a new draw of the study gives other numbers from the same seed', () => {
  const a = study(1, 0);
  const b = study(1, 1);
  assert.notDeepEqual(a.map((r) => r.scoreStd), b.map((r) => r.scoreStd));
  assert.deepEqual(study(1, 1).map((r) => r.scoreStd), b.map((r) => r.scoreStd));
});
