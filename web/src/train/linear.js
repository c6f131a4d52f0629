// The output projection to logits, PyTorch's nn.Linear: y = x Wᵀ + b with W (out, in), b (out), applied
// to each of `rows` input rows. Pure loops; accumulation in float64 for the gradients, which sum over
// every row of a batch.

export function linear(x, weight, bias, { rows, inDim, outDim }) {
  const y = new Float32Array(rows * outDim);
  for (let r = 0; r < rows; r++) {
    const xr = r * inDim;
    for (let o = 0; o < outDim; o++) {
      const wo = o * inDim;
      let s = bias[o];
      for (let i = 0; i < inDim; i++) s += x[xr + i] * weight[wo + i];
      y[r * outDim + o] = s;
    }
  }
  return y;
}

// The gradients of Σ dy ⊙ linear(x): dx = dy W, dW = dyᵀ x, db = Σ_rows dy.
export function linearBackward(x, weight, dy, { rows, inDim, outDim }) {
  const dx = new Float32Array(rows * inDim);
  const dW = new Float64Array(outDim * inDim);
  const db = new Float64Array(outDim);
  for (let r = 0; r < rows; r++) {
    const xr = r * inDim;
    for (let o = 0; o < outDim; o++) {
      const g = dy[r * outDim + o];
      if (g === 0) continue;
      db[o] += g;
      const wo = o * inDim;
      for (let i = 0; i < inDim; i++) {
        dx[xr + i] += g * weight[wo + i];
        dW[wo + i] += g * x[xr + i];
      }
    }
  }
  return { dx, dWeight: Float32Array.from(dW), dBias: Float32Array.from(db) };
}
