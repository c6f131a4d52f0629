// The lesson's point, measured: without the 1/√E factor the scores' spread grows like √E, the softmax
// saturates (one weight near 1, entropy near 0) and its gradient vanishes. For each E the study draws
// fresh Q (1, L, E) and K (1, S, E) from the page's seed and distribution, runs the package's attention
// with the default scale 1/√E and with scale 1, and measures both weight matrices.
import { randomValues } from './prng.js';
import { meanStd, saturationStats } from './row-stats.js';
import { attentionGeometry, rawScores } from './plain-attention.js';

export const STUDY_ES = [4, 8, 16, 32, 64, 128, 256, 512, 1024];

// Streams 10+ so the study never reuses the page's own Q, K, V streams (0, 1, 2).
const STUDY_STREAMS = { query: 10, key: 11 };

// sdpa: the package's scaledDotProductAttention. Returns one row per E:
// { E, scoreStd, scaled: { maxWeight, entropy, gradNorm }, unscaled: { … } }.
export function runScalingStudy({ sdpa, gen, L, S, Es = STUDY_ES, onProgress = () => {} }) {
  const rows = [];
  Es.forEach((E, n) => {
    const query = { data: randomValues(L * E, { ...gen, stream: STUDY_STREAMS.query }), shape: [1, L, E] };
    const key = { data: randomValues(S * E, { ...gen, stream: STUDY_STREAMS.key }), shape: [1, S, E] };
    // The output is not studied; a single value column keeps the call cheap.
    const value = { data: new Float32Array(S), shape: [1, S, 1] };
    const scaled = sdpa(query, key, value, { needWeights: true }).weights.data;
    const unscaled = sdpa(query, key, value, { needWeights: true, scale: 1 }).weights.data;
    const scores = rawScores(query, key, attentionGeometry(query, key, value), 0);
    rows.push({
      E,
      scoreStd: meanStd(scores).std,
      scaled: saturationStats(scaled, L, S),
      unscaled: saturationStats(unscaled, L, S),
    });
    onProgress(n + 1, Es.length, `E = ${E}`);
  });
  return rows;
}
