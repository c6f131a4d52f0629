// Per-row measures of an attention matrix (L rows of S weights). Used beside the heatmap and by the
// "why scale by 1/√d_k" panel.

// Σ_j w_ij: 1 for every row the softmax normalised, 0 for a fully masked row.
export function rowSums(weights, L, S) {
  const out = new Float64Array(L);
  for (let i = 0; i < L; i++) {
    let s = 0;
    for (let j = 0; j < S; j++) s += weights[i * S + j];
    out[i] = s;
  }
  return out;
}

// Shannon entropy −Σ p log p in nats (0 log 0 = 0): log S for uniform attention, 0 for one-hot. A row
// holding NaN (overflowed scores) has NaN entropy, not the 0 of a one-hot row.
export function rowEntropy(weights, L, S) {
  const out = new Float64Array(L);
  for (let i = 0; i < L; i++) {
    let h = 0;
    for (let j = 0; j < S; j++) {
      const p = weights[i * S + j];
      if (p > 0) h -= p * Math.log(p);
      else if (p !== p) h = NaN;
    }
    out[i] = h;
  }
  return out;
}

// Frobenius norm of the softmax's Jacobian J = diag(p) − p pᵀ for one row p: how strongly the weights
// respond to the scores. ‖J‖² = Σ p² − 2 Σ p³ + (Σ p²)², which tends to 0 as p becomes one-hot
// (a saturated softmax passes almost no gradient back), and is largest for spread-out weights.
export function softmaxGradNorm(weights, offset, S) {
  let p2 = 0;
  let p3 = 0;
  for (let j = 0; j < S; j++) {
    const p = weights[offset + j];
    p2 += p * p;
    p3 += p * p * p;
  }
  return Math.sqrt(Math.max(0, p2 - 2 * p3 + p2 * p2));
}

// Means over `rows` rows of S weights: the largest weight, the entropy and the Jacobian norm.
export function saturationStats(weights, rows, S) {
  let maxSum = 0;
  let entSum = 0;
  let gradSum = 0;
  const ent = rowEntropy(weights, rows, S);
  for (let i = 0; i < rows; i++) {
    let m = 0;
    for (let j = 0; j < S; j++) m = Math.max(m, weights[i * S + j]);
    maxSum += m;
    entSum += ent[i];
    gradSum += softmaxGradNorm(weights, i * S, S);
  }
  return { maxWeight: maxSum / rows, entropy: entSum / rows, gradNorm: gradSum / rows };
}

// Mean and standard deviation of a set of numbers (the raw scores' spread grows like √E).
export function meanStd(values) {
  let mean = 0;
  for (let i = 0; i < values.length; i++) mean += values[i];
  mean /= values.length || 1;
  let v = 0;
  for (let i = 0; i < values.length; i++) v += (values[i] - mean) ** 2;
  return { mean, std: Math.sqrt(v / (values.length || 1)) };
}

// Euclidean norm of each of `rows` rows of `cols` numbers: ‖dQᵢ‖ for every query row i of a (L, E)
// gradient, ‖dKⱼ‖ for every key row j of an (S, E) one. Summed in float64.
export function rowNorms(matrix, rows, cols) {
  const out = new Float64Array(rows);
  for (let i = 0; i < rows; i++) {
    let s = 0;
    for (let j = 0; j < cols; j++) s += matrix[i * cols + j] ** 2;
    out[i] = Math.sqrt(s);
  }
  return out;
}

// Median (the mean of the two middle values for an even count): the typical row, which a few extreme
// rows cannot drag the way they drag the mean.
export function median(values) {
  const sorted = Float64Array.from(values).sort();
  const n = sorted.length;
  if (n === 0) return NaN;
  return n % 2 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

export function mean(values) {
  let s = 0;
  for (let i = 0; i < values.length; i++) s += values[i];
  return values.length ? s / values.length : NaN;
}
