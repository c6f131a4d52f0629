// The decoding panel's weight triangle, and how one step's row compares with full causal attention (pure).
// Step t attends query t over keys 0 … t, the whole cache: its weights are (1, H, 1, t + 1). Row t of the
// triangle holds them; the cells j > t of that row are keys that did not exist yet at step t.

// What cell (i, j) of the triangle is once `rows` rows have been decoded: a weight, a key that was not in the
// cache yet when query i was decoded, or a row not decoded yet.
export function cellKind(i, j, rows) {
  if (i >= rows) return 'not-decoded';
  return j <= i ? 'weight' : 'future-key';
}

// Every head's (T, T) weight matrix, filled one row per step. Cells with no weight hold 0 in `weights`;
// cellKind says which cells are real.
export class WeightTriangle {
  constructor(H, T) {
    Object.assign(this, { H, T, rows: 0 });
    this.weights = new Float32Array(H * T * T);
  }

  // Row t from a step's weights (1, H, 1, t + 1): rows arrive in order, one per step.
  addRow(t, stepWeights) {
    const { H, T } = this;
    if (t !== this.rows) throw new RangeError(`row ${t} arrived when row ${this.rows} was due`);
    if (stepWeights.length !== H * (t + 1)) throw new RangeError(`step ${t} has ${stepWeights.length} weights, not H·(t + 1) = ${H * (t + 1)}`);
    for (let h = 0; h < H; h++) this.weights.set(stepWeights.subarray(h * (t + 1), (h + 1) * (t + 1)), (h * T + t) * T);
    this.rows = t + 1;
  }

  // Head h's row i as an array of T cells, null where cellKind is not 'weight'.
  row(h, i) {
    const { T } = this;
    return Array.from({ length: T }, (_, j) => (cellKind(i, j, this.rows) === 'weight' ? this.weights[(h * T + i) * T + j] : null));
  }
}

// Largest |Δ| between step t and row t of full causal attention on the whole sequence: every head's weights
// (the full row's cells j > t, which the causal mask zeroes, count against the cache's absent keys as 0) and
// output row. step: { weights (H·(t + 1)), output (H·Ev) }; full: { weights (H·T·T), output (H·T·Ev) }.
export function stepAgainstFull(step, full, { H, T, Ev, t }) {
  let weights = 0;
  let output = 0;
  const worse = (m, a, b) => {
    const d = Math.abs(a - b);
    return d > m || Number.isNaN(d) ? d : m;
  };
  for (let h = 0; h < H; h++) {
    for (let j = 0; j < T; j++) {
      const cached = j <= t ? step.weights[h * (t + 1) + j] : 0;
      weights = worse(weights, cached, full.weights[(h * T + t) * T + j]);
    }
    for (let e = 0; e < Ev; e++) output = worse(output, step.output[h * Ev + e], full.output[(h * T + t) * Ev + e]);
  }
  return { weights, output };
}

// A row matches when it is within a few float32 roundings of full attention's (weights are ≤ 1; outputs of
// N(0, 1) values are O(1)). The package computes both the same way, and on this page they come out equal.
export const MATCH_TOLERANCE = 1e-5;

export function matchesFull(diff) {
  return diff.weights <= MATCH_TOLERANCE && diff.output <= MATCH_TOLERANCE;
}

// Bytes copied into WebAssembly memory by one decoding step at cache length n (n positions attended over,
// the new one included), float32: with a cache, the new token's query (H, E), key (Hkv, E) and value
// (Hkv, Ev); recomputing from a full copy, the query and all n keys and values.
export function stepCopyBytes({ H, Hkv, E, Ev }, n) {
  return { cache: 4 * (H * E + Hkv * (E + Ev)), full: 4 * (H * E + n * Hkv * (E + Ev)) };
}
