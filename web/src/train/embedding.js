// The model's two embeddings, as plain loops over Float32Arrays: a token embedding (a lookup table of
// one E-vector per token, PyTorch's nn.Embedding) and a learned positional embedding (one E-vector per
// position, added to every sequence of the batch). Both are pure: gradients are returned (into
// the caller's arrays when it gives them), never stored.

// x[n, l, :] = table[tokens[n, l], :] + pos[l, :] for tokens (N·L integers) → (N·L·E) floats, into `out` when
// given (N·L·E values), else a fresh array.
export function embed(tokens, table, pos, { N, L, E }, out = new Float32Array(N * L * E)) {
  for (let n = 0; n < N; n++) {
    for (let l = 0; l < L; l++) {
      const row = (n * L + l) * E;
      const t = tokens[n * L + l] * E;
      const p = l * E;
      for (let e = 0; e < E; e++) out[row + e] = table[t + e] + pos[p + e];
    }
  }
  return out;
}

// The gradients of Σ grad ⊙ embed(…): a token's row collects the gradient of every place it appears
// (scatter-add), a position's row the gradient of that position in every sequence of the batch. `into`: arrays to
// write them to ({ dTable: vocab·E, dPos: at least L·E values, the rows past L left 0 }), else fresh ones.
export function embedBackward(tokens, grad, { N, L, E, vocab }, into = null) {
  const dTable = into ? into.dTable.fill(0) : new Float32Array(vocab * E);
  const dPos = into ? into.dPos.fill(0) : new Float32Array(L * E);
  for (let n = 0; n < N; n++) {
    for (let l = 0; l < L; l++) {
      const row = (n * L + l) * E;
      const t = tokens[n * L + l] * E;
      const p = l * E;
      for (let e = 0; e < E; e++) {
        dTable[t + e] += grad[row + e];
        dPos[p + e] += grad[row + e];
      }
    }
  }
  return { dTable, dPos };
}
