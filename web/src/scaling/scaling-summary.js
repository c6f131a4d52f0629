// The sentences under the "why scale by 1/√E" charts, from the measured rows. Every claim is conditional on
// the figures it sits beside: with a small data spread the unscaled scores stay small even at E = 1024, the
// softmax does not saturate, and saying it does would contradict the charts; with a huge one the scores
// overflow float32, there is nothing to plot, and the text says that instead of quoting NaN.
import { formatNumber as f } from '../shared/shapes.js';
import { FLOAT32_MAX } from '../shared/finite.js';

// Unscaled at the largest E, the softmax counts as saturated when the typical row's largest weight is near
// one-hot and its gradient (the Jacobian norm) has fallen to at most half its value at the smallest E.
export const SATURATED_MAX_WEIGHT = 0.8;
export const SATURATED_GRAD_RATIO = 0.5;
// "Almost no gradient" only when the gradient has fallen below a tenth of its value at the smallest E.
export const ALMOST_NONE_RATIO = 0.1;
// The median ‖dQᵢ‖ unscaled counts as vanished below a tenth of the scaled one.
export const VANISHED_RATIO = 0.1;

const FIGURES = ['maxWeight', 'entropy', 'gradNorm', 'gradQueryMedian', 'gradQueryMean', 'gradKeyMedian', 'gradKeyMean'];

// Whether every figure of a study row is a number: with the scores overflowed (±∞) they are NaN.
export function finiteRow(r) {
  return Number.isFinite(r.scoreStd) && FIGURES.every((k) => Number.isFinite(r.scaled[k]) && Number.isFinite(r.unscaled[k]));
}

function overflowSentence(spread, where) {
  return (
    `At data spread ${f(spread)} the raw scores q·k overflow float32 ${where}: each is a sum of E products of values of about ${f(spread)}, ` +
    `past float32's largest number (${f(FLOAT32_MAX)}), so they become ±∞, the softmax computes ∞ − ∞ = NaN, and there is no weight ` +
    `or gradient to plot there.`
  );
}

const ratio = (a, b) => (b > 0 ? a / b : NaN);

// rows: runScalingStudy's output; spread: the data spread the study drew with. Returns
// { saturated, vanished, overflow, html }: overflow is 'none', 'some' (the figures stop at the last E whose
// scores are finite) or 'all' (one paragraph, no figures).
export function scalingSummary(rows, { spread }) {
  const finite = rows.filter(finiteRow);
  if (finite.length === 0) {
    return {
      saturated: false,
      vanished: false,
      overflow: 'all',
      html: `<p>${overflowSentence(spread, 'at every E studied')} Make the data spread smaller (the lesson's is 1).</p>`,
    };
  }
  const overflow = finite.length === rows.length ? 'none' : 'some';
  const first = finite[0];
  const last = finite[finite.length - 1];
  const s0 = first.scaled;
  const s1 = last.scaled;
  const u0 = first.unscaled;
  const u1 = last.unscaled;
  const gradRatio = ratio(u1.gradNorm, u0.gradNorm);
  const saturated = u1.maxWeight >= SATURATED_MAX_WEIGHT && gradRatio <= SATURATED_GRAD_RATIO;
  const verdict = saturated
    ? gradRatio <= ALMOST_NONE_RATIO
      ? 'the softmax saturates and passes almost no gradient.'
      : `the softmax saturates (most of each row's weight is on one key) and passes ${f(gradRatio)}× the gradient it passed at E = ${first.E}.`
    : `at data spread ${f(spread)} the unscaled scores are still small at E = ${last.E} (standard deviation ${f(last.scoreStd)}), ` +
      `so the softmax does not saturate and the gradient survives; the 1/√E factor matters once the scores spread over several ` +
      `units (try data spread 1).`;
  const softmax =
    `Raw scores q·k spread out as E grows: standard deviation ${f(first.scoreStd)} at E = ${first.E}, ` +
    `${f(last.scoreStd)} at E = ${last.E} (√E grows ×${f(Math.sqrt(last.E / first.E))}). ` +
    `Unscaled, at E = ${last.E} the largest weight averages <strong>${f(u1.maxWeight)}</strong> ` +
    `and the softmax gradient is ${f(gradRatio)}× its value at E = ${first.E}: ${verdict} ` +
    `Scaled by 1/√E the same rows keep a largest weight of <strong>${f(s1.maxWeight)}</strong> and a gradient ` +
    `${f(ratio(s1.gradNorm, s0.gradNorm))}× the E = ${first.E} value.`;
  const qRatio = ratio(u1.gradQueryMedian, s1.gradQueryMedian);
  const vanished = qRatio < VANISHED_RATIO;
  const spiky = vanished && u1.gradQueryMean > 10 * u1.gradQueryMedian;
  const gradients =
    `What reaches Q and K: scaled, the median query row gets ‖dQᵢ‖ = ${f(s0.gradQueryMedian)} at E = ${first.E} and ` +
    `${f(s1.gradQueryMedian)} at E = ${last.E} (keys: ‖dKⱼ‖ = ${f(s0.gradKeyMedian)} and ${f(s1.gradKeyMedian)}). ` +
    `Unscaled, the median query row gets ${f(u0.gradQueryMedian)} at E = ${first.E} and <strong>${f(u1.gradQueryMedian)}</strong> ` +
    `at E = ${last.E}, <strong>${f(qRatio)}×</strong> the scaled value${vanished ? ': for most rows the gradient vanishes' : ''}. ` +
    `The mean over query rows is ${f(u1.gradQueryMean)} (scaled ${f(s1.gradQueryMean)})` +
    (spiky
      ? `, pulled up by the few rows whose two largest scores nearly tie, which still get large gradients. ` +
        `So the learning signal is not merely smaller: most rows get almost none and a few get a lot. `
      : '. ') +
    `Keys gather gradient from every query row${spiky ? ', those few included' : ''}: their median is ${f(u1.gradKeyMedian)}, ` +
    `${f(ratio(u1.gradKeyMedian, s1.gradKeyMedian))}× the scaled value.`;
  const stops = rows.filter((r) => !finiteRow(r)).map((r) => r.E);
  const note = overflow === 'some' ? `<p>${overflowSentence(spread, `at E = ${stops.join(', ')}`)} The figures below are for E = ${first.E} … ${last.E}.</p>` : '';
  return { saturated, vanished, overflow, html: `${note}<p>${softmax}</p><p>${gradients}</p>` };
}
