// The lesson's point, measured: without the 1/√E factor the scores' spread grows like √E, the softmax
// saturates (one weight near 1, entropy near 0) and its gradient vanishes. For each E the study draws
// fresh Q (B, L, E) and K (B, S, E) from the page's seed and distribution, B = STUDY_TRIALS independent
// problems side by side, runs the package's backward pass (scaledDotProductAttentionGrad, which also gives
// the weights) with the default scale 1/√E and with scale 1, and measures both weight matrices and the
// gradients that reach Q and K, over all B·L query rows and B·S key rows.
//
// Why trials: unscaled at large E a row's gradient depends on the gap between its two largest scores, so
// it ranges over many orders of magnitude from row to row; with the lesson's 10 rows the median of one
// draw jumps around from one E to the next. Eight draws make the curves readable and stay quick.
//
// The backward pass needs a value tensor and an upstream gradient. Both keep the same shape for every E,
// so only Q and K change along the curve:
// - V (B, S, STUDY_EV): the page's seed and distribution, its own stream;
// - dO = ∂loss/∂output (B, L, STUDY_EV): GRAD_OUTPUT, independent standard normals from a fixed seed
//   (unit variance, whatever the page's settings), as if the output fed a loss with a random direction.
// The gradient norms grow like √Ev with the value dim for scaled and unscaled alike, so a fixed Ev
// changes their level, not the comparison.
import { randomValues } from '../shared/prng.js';
import { drawOptions } from '../shared/tensors.js';
import { meanStd, saturationStats, rowNorms, median, mean } from '../shared/row-stats.js';
import { attentionGeometry, scoreMatrix } from '../shared/attention-reference.js';

export const STUDY_ES = [4, 8, 16, 32, 64, 128, 256, 512, 1024];
export const STUDY_EV = 16;
export const STUDY_TRIALS = 8;

// Streams 10+ so the study never reuses the page's own Q, K, V streams (0, 1, 2). Draw d ≥ 1 of the study
// (the panel's "New draw" button) uses streams 12 + 4d to 14 + 4d (16, 17, 18 for the first), clear of dO's
// stream 13: fresh Q, K, V from the same seed and spread, so the learner sees which figures are noise.
const STUDY_STREAMS = { query: 10, key: 11, value: 12 };
export function studyStreams(draw = 0) {
  if (draw === 0) return STUDY_STREAMS;
  const base = 12 + 4 * draw;
  return { query: base, key: base + 1, value: base + 2 };
}
export const GRAD_OUTPUT = { seed: 20240607, stream: 13, distribution: 'normal', scale: 1 };

// Per-row gradient norms of a (B, n, E) gradient, rows = B·n: the median (the typical row) and the mean (which
// the few rows with large gradients pull up).
function gradStats(grad, rows, E) {
  const norms = rowNorms(grad.data, rows, E);
  return { median: median(norms), mean: mean(norms) };
}

// grad: the package's scaledDotProductAttentionGrad. Returns one row per E:
// { E, scoreStd, scaled: { maxWeight, entropy, gradNorm, gradQueryMedian, gradQueryMean, gradKeyMedian,
//   gradKeyMean }, unscaled: { … } }. gradNorm is the softmax Jacobian's norm (from the weights alone);
// maxWeight and entropy average over the B·L weight rows; gradQuery* are over the B·L norms ‖dQᵢ‖ of the
// query rows, gradKey* over the B·S norms ‖dKⱼ‖ of the key rows.
export function runScalingStudy({ grad, gen, L, S, draw = 0, Es = STUDY_ES, onProgress = () => {} }) {
  const B = STUDY_TRIALS;
  const streams = studyStreams(draw);
  const value = { data: randomValues(B * S * STUDY_EV, drawOptions(gen, streams.value)), shape: [B, S, STUDY_EV] };
  const gradOutput = { data: randomValues(B * L * STUDY_EV, GRAD_OUTPUT), shape: [B, L, STUDY_EV] };
  const rows = [];
  Es.forEach((E, n) => {
    const query = { data: randomValues(B * L * E, drawOptions(gen, streams.query)), shape: [B, L, E] };
    const key = { data: randomValues(B * S * E, drawOptions(gen, streams.key)), shape: [B, S, E] };
    const measure = (options) => {
      const r = grad(query, key, value, gradOutput, { ...options, needWeights: true });
      const dQ = gradStats(r.gradQuery, B * L, E);
      const dK = gradStats(r.gradKey, B * S, E);
      return {
        ...saturationStats(r.weights.data, B * L, S),
        gradQueryMedian: dQ.median,
        gradQueryMean: dQ.mean,
        gradKeyMedian: dK.median,
        gradKeyMean: dK.mean,
      };
    };
    // The raw scores' spread, from the first of the B problems (the others are drawn alike).
    const scores = scoreMatrix(query, key, attentionGeometry(query, key, value), 0);
    rows.push({
      E,
      scoreStd: meanStd(scores).std,
      scaled: measure({}),
      unscaled: measure({ scale: 1 }),
    });
    onProgress(n + 1, Es.length, `E = ${E}`);
  });
  return rows;
}
