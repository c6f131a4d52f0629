// "From averaging to attention": three ways to mix the rows of the same V, on the first n positions of
// the live example's (b, h) slice, each with the output rows it gives.
//   1. causal uniform averaging: w_ij = 1 / (i + 1) for j ≤ i — a lower-triangular matrix of ones
//      divided by its row counts (plain JS: this is the definition);
//   2. the same weights as softmax of a zero matrix with −∞ above the diagonal: the package's attention
//      with Q = 0 (every score 0) and that additive mask;
//   3. data-dependent scores Q Kᵀ/√E under the same mask: the package's attention of the example itself.
// sdpa is the package's scaledDotProductAttention, so steps 2 and 3 are the package's own weights.

// Largest number of positions shown: the matrices stay readable with their values written in.
export const AVERAGING_MAX = 12;

const rows = (m, cols, n) => m.slice(0, n * cols);

// scale: the lab's, 1/√E unless the learner set another.
export function averagingSteps({ query, key, value, L, S, E, Ev, scale = 1 / Math.sqrt(E) }, sdpa) {
  const n = Math.min(L, S, AVERAGING_MAX);
  const V = rows(value, Ev, n);
  const Q = rows(query, E, n);
  const K = rows(key, E, n);
  const t = (data, cols) => ({ data, shape: [1, n, cols] });

  const uniform = new Float32Array(n * n);
  for (let i = 0; i < n; i++) for (let j = 0; j <= i; j++) uniform[i * n + j] = 1 / (i + 1);
  const uniformOut = new Float32Array(n * Ev);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) for (let e = 0; e < Ev; e++) uniformOut[i * Ev + e] += uniform[i * n + j] * V[j * Ev + e];
  }

  const minusInf = new Float32Array(n * n);
  for (let i = 0; i < n; i++) for (let j = i + 1; j < n; j++) minusInf[i * n + j] = -Infinity;
  const mask = { data: minusInf, shape: [n, n] };
  const zeroScores = sdpa(t(new Float32Array(n * E), E), t(K, E), t(V, Ev), { attnMask: mask, needWeights: true });
  const attention = sdpa(t(Q, E), t(K, E), t(V, Ev), { attnMask: mask, needWeights: true, scale });

  // The scaled scores of step 3, for the readout: q_i · k_j · scale (−∞ above the diagonal).
  const scores = new Float32Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j < n; j++) {
      let dot = 0;
      for (let e = 0; e < E; e++) dot += Q[i * E + e] * K[j * E + e];
      scores[i * n + j] = j > i ? -Infinity : dot * scale;
    }
  }
  return {
    n,
    E,
    Ev,
    scale,
    query: Q,
    key: K,
    value: V,
    scores,
    steps: [
      { weights: uniform, output: uniformOut },
      { weights: zeroScores.weights.data, output: zeroScores.output.data },
      { weights: attention.weights.data, output: attention.output.data },
    ],
  };
}

export function maxAbsDifference(a, b) {
  let worst = 0;
  for (let k = 0; k < a.length; k++) worst = Math.max(worst, Math.abs(a[k] - b[k]));
  return worst;
}
