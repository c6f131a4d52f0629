// The training panel's status line and the pattern found in the probe's weights, from what the worker sent
// (pure).
import { formatNumber } from '../shared/shapes.js';

const pct = (x) => `${(100 * x).toFixed(1)}%`;

// While training, the pace the worker's steps wait by (what it last said, so a change shows once it applies).
const paceWords = (pace) => (pace > 0 ? `at a pace of ${formatNumber(pace)} steps/s` : 'at full speed');

// state: { running, pace, step, stepsPerSecond, computeStepsPerSecond, evals }.
export function trainStatus(state) {
  const last = state.evals.at(-1);
  const speed = state.stepsPerSecond
    ? ` · ${formatNumber(state.stepsPerSecond)} steps/s` +
      (state.computeStepsPerSecond && state.computeStepsPerSecond > 1.5 * state.stepsPerSecond
        ? ` (full speed would be about ${formatNumber(state.computeStepsPerSecond)})`
        : '')
    : '';
  const held = last
    ? ` · held-out (${last.step === state.step ? 'now' : `step ${last.step}`}): exact sequences ${pct(last.sequence)}, tokens ${pct(last.token)}, loss ${formatNumber(last.loss)}`
    : '';
  const doing = state.running ? `Training ${paceWords(state.pace)}: step` : 'Paused at step';
  return `${doing} ${state.step}${speed}${held}.`;
}

// pattern: patternMatch's findings; L: the probe's length.
export function patternHtml(pattern, L) {
  const lines = (pattern ?? []).map(
    (m) =>
      `<li>${m.role}: head ${m.head} puts ${formatNumber(m.meanWeight)} of each row's weight there on average; ` +
      `it is the row's largest weight in ${m.rowsDominated} of ${L} rows.</li>`,
  );
  return lines.length ? `<p><strong>In the probe's weights now</strong></p><ul>${lines.join('')}</ul>` : '';
}
