// Softmax cross-entropy over classes, averaged over rows (PyTorch's F.cross_entropy with its default
// reduction='mean'), its gradient with respect to the logits, and the predictions' accuracy.

// logits (rows·classes), targets (rows integers) → { loss, dLogits }: the mean over rows of
// −log softmax(logits)[target], and its gradient (softmax − one-hot) / rows, into `dLogits` when given
// (rows·classes values), else a fresh array.
export function crossEntropy(logits, targets, { rows, classes }, dLogits = new Float32Array(rows * classes)) {
  const exps = new Float64Array(classes);  // one row's exp(logit − max)
  let total = 0;
  for (let r = 0; r < rows; r++) {
    const o = r * classes;
    // Subtracting the row's max keeps exp() finite for any logits.
    let max = -Infinity;
    for (let c = 0; c < classes; c++) max = Math.max(max, logits[o + c]);
    // Each exp once, kept in float64 until it is divided by the row's sum.
    let sum = 0;
    for (let c = 0; c < classes; c++) {
      const e = Math.exp(logits[o + c] - max);
      exps[c] = e;
      sum += e;
    }
    const t = targets[r];
    total += Math.log(sum) - (logits[o + t] - max);
    for (let c = 0; c < classes; c++) dLogits[o + c] = exps[c] / sum / rows;
    dLogits[o + t] -= 1 / rows;
  }
  return { loss: total / rows, dLogits };
}

// The index of each row's largest logit (the first on ties).
export function argmaxRows(logits, { rows, classes }) {
  const out = new Int32Array(rows);
  for (let r = 0; r < rows; r++) {
    const o = r * classes;
    let best = 0;
    for (let c = 1; c < classes; c++) if (logits[o + c] > logits[o + best]) best = c;
    out[r] = best;
  }
  return out;
}

// Token accuracy (the share of positions predicted right) and exact-sequence accuracy (the share of
// sequences with every position right) of predictions against targets, both (N·L).
export function accuracy(predicted, targets, { N, L }) {
  let tokens = 0;
  let sequences = 0;
  for (let n = 0; n < N; n++) {
    let all = true;
    for (let l = 0; l < L; l++) {
      if (predicted[n * L + l] === targets[n * L + l]) tokens++;
      else all = false;
    }
    if (all) sequences++;
  }
  return { token: tokens / (N * L), sequence: sequences / N };
}
