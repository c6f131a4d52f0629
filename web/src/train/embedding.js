// The model's two embeddings, as plain loops over Float32Arrays: a token embedding (a lookup table of
// one E-vector per token, PyTorch's nn.Embedding) and a learned positional embedding (one E-vector per
// position, added to every sequence of the batch). Both are pure: gradients are returned, never stored.

// x[n, l, :] = table[tokens[n, l], :] + pos[l, :] for tokens (N·L integers) → (N·L·E) floats.
export function embed(tokens, table, pos, { N, L, E }) {
  const out = new Float32Array(N * L * E);
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
// (scatter-add), a position's row the gradient of that position in every sequence of the batch.
export function embedBackward(tokens, grad, { N, L, E, vocab }) {
  const dTable = new Float32Array(vocab * E);
  const dPos = new Float32Array(L * E);
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
