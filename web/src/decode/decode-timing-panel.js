// The decoding card's step-time study: its button, its introduction, the chart and its sentences. The study
// runs in the page's side worker (runTiming), so the page's progress bar and Cancel apply to it.
import { DecodeChart } from './decode-chart.js';
import { TIMING_LENGTHS, TIMING_SHAPE } from './decode-timing.js';
import { timingSummary } from './decode-timing-summary.js';

// runTiming() → a promise of timeDecodeSteps's result (rejects with an error named CancelledError on Cancel).
export function setupTimingPanel(root, runTiming) {
  const $ = (id) => root.querySelector(`#${id}`);
  const chart = new DecodeChart($('decode-chart'));
  const state = { result: null, summary: null };
  const { H, Hkv, E, Ev } = TIMING_SHAPE;
  $('decode-timing-intro').textContent =
    `B = 1, H = ${H} query heads over Hkv = ${Hkv} key/value heads, E = ${E}, Ev = ${Ev}, at cache lengths n = ${TIMING_LENGTHS[0]} … ` +
    `${TIMING_LENGTHS.at(-1)}, in a Worker: (a) the cache, append one position and attend one query row; (b) scaledDotProductAttention ` +
    `with all n keys and values, copied in from JavaScript (the copy from the page's own arrays into that call's tensor is not counted, ` +
    `which favours it). Each point is the median time of repeated steps at that length.`;

  async function time() {
    $('decode-time').disabled = true;
    $('decode-timing-note').hidden = true;
    try {
      state.result = await runTiming();
      chart.setData(state.result);
      state.summary = timingSummary(state.result);
      $('decode-timing-summary').innerHTML = state.summary.html;
    } catch (err) {
      $('decode-timing-note').hidden = false;
      $('decode-timing-note').textContent = err.name === 'CancelledError' ? 'Timing cancelled.' : `Timing: ${err.message}`;
    } finally {
      $('decode-time').disabled = false;
    }
  }
  $('decode-time').addEventListener('click', () => time());

  return {
    get timing() {
      return state.result ? { result: state.result, summary: state.summary, plotted: chart.plotted() } : null;
    },
  };
}
