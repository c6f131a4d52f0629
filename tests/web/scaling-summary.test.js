// The text under the scaling charts never claims what its own figures contradict.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createXattn } from 'xattn';
import { runScalingStudy } from '../../web/src/scaling/scaling-study.js';
import { ALMOST_NONE_RATIO, finiteRow, scalingSummary } from '../../web/src/scaling/scaling-summary.js';

const lib = await createXattn();
const grad = (q, k, v, dO, o) => lib.scaledDotProductAttentionGrad(q, k, v, dO, o);
const study = (spread, draw = 0) => runScalingStudy({ grad, gen: { seed: 42, distribution: 'normal', spread }, L: 16, S: 16, draw, Es: [4, 64, 1024] });

test('at data spread 1 the unscaled softmax saturates and the text says so, with the ratio it measured', () => {
  const rows = study(1);
  const { saturated, vanished, html } = scalingSummary(rows, { spread: 1 });
  const ratio = rows.at(-1).unscaled.gradNorm / rows[0].unscaled.gradNorm;
  assert.equal(saturated, true);
  assert.equal(vanished, true);
  assert.match(html, /the softmax saturates/);
  assert.ok(html.includes(`${Number(ratio.toPrecision(3))}×`));
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

test('scores that overflow float32 are said to, and no NaN is quoted as a figure', () => {
  for (const spread of [1e19, 1e20]) {
    const rows = study(spread);
    const { overflow, html } = scalingSummary(rows, { spread });
    const bad = rows.filter((r) => !finiteRow(r)).map((r) => r.E);
    assert.equal(overflow, bad.length === 0 ? 'none' : bad.length === rows.length ? 'all' : 'some', `spread ${spread}`);
    // NaN is named once, as what the softmax computes; never quoted as a measured figure.
    assert.doesNotMatch(html, /NaN×|<strong>NaN|deviation NaN|‖ = NaN|gets NaN/, `spread ${spread}`);
    if (bad.length) assert.match(html, /overflow float32/);
    if (overflow === 'some') assert.match(html, new RegExp(`at E = ${bad.join(', ')}`));
  }
  assert.equal(scalingSummary(study(1e20), { spread: 1e20 }).overflow, 'all');
});

test('"almost no gradient" only where the gradient fell below a tenth; otherwise the ratio is given', () => {
  const rows = runScalingStudy({ grad, gen: { seed: 42, distribution: 'uniform', spread: 1 }, L: 16, S: 16, Es: [4, 64, 1024] });
  const ratio = rows.at(-1).unscaled.gradNorm / rows[0].unscaled.gradNorm;
  const { html } = scalingSummary(rows, { spread: 1 });
  assert.ok(html.includes(`${Number(ratio.toPrecision(3))}×`), html);
  assert.equal(/almost no gradient/.test(html), ratio <= ALMOST_NONE_RATIO, `ratio ${ratio}`);
});
