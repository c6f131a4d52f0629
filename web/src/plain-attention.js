// Scaled dot-product attention in plain JavaScript: the baseline the speed panel races against the
// package's SIMD and scalar WebAssembly builds, and the source of the raw scores the hover shows (the
// package returns weights and output only). Same semantics as the package (PyTorch's):
//   query (…, L, E), key (…, S, E), value (…, S, Ev) → output (…, L, Ev), weights (…, L, S)
//   boolean mask: non-zero = may attend; float mask: added to the scaled scores; fully masked row → zeros.

const product = (dims) => dims.reduce((n, d) => n * d, 1);

// Where mask element (m, i, j) lives, for a mask whose shape broadcasts to (…lead, L, S).
// Missing or size-1 dims get stride 0, which is what broadcasting means.
export function maskLayout(maskShape, lead, L, S) {
  const full = [...lead, L, S];
  if (maskShape.length > full.length) {
    throw new RangeError(`mask ${JSON.stringify(maskShape)} has more dims than the scores ${JSON.stringify(full)}`);
  }
  const padded = [...new Array(full.length - maskShape.length).fill(1), ...maskShape];
  const strides = new Array(full.length).fill(0);
  let s = 1;
  for (let d = full.length - 1; d >= 0; d--) {
    if (padded[d] !== 1 && padded[d] !== full[d]) {
      throw new RangeError(`mask dim ${d} is ${padded[d]} but the scores have ${full[d]} there`);
    }
    strides[d] = padded[d] === 1 ? 0 : s;
    s *= padded[d];
  }
  const leadStrides = strides.slice(0, lead.length);
  return {
    rowStride: strides[full.length - 2],
    colStride: strides[full.length - 1],
    // Offset of matrix m (a flat index over the lead dims, row-major).
    base(m) {
      let off = 0;
      for (let d = lead.length - 1; d >= 0; d--) {
        off += (m % lead[d]) * leadStrides[d];
        m = Math.floor(m / lead[d]);
      }
      return off;
    },
  };
}

// The (…, L, E)-shaped problem as numbers: how many matrices, and which K/V matrix each query matrix reads.
export function attentionGeometry(query, key, value, { enableGqa = false } = {}) {
  const rank = query.shape.length;
  const lead = query.shape.slice(0, -2);
  const [L, E] = query.shape.slice(-2);
  const S = key.shape[rank - 2];
  const Ev = value.shape[rank - 1];
  const Hq = rank >= 3 ? query.shape[rank - 3] : 1;
  const Hkv = rank >= 3 ? key.shape[rank - 3] : 1;
  if (key.shape.length !== rank || value.shape.length !== rank) throw new RangeError('query, key and value must have the same number of dims');
  if (key.shape[rank - 1] !== E) throw new RangeError(`key has ${key.shape[rank - 1]} features per position but query has ${E}`);
  if (value.shape[rank - 2] !== S) throw new RangeError(`value has ${value.shape[rank - 2]} positions but key has ${S}`);
  if (Hkv !== Hq && (!enableGqa || Hq % Hkv !== 0)) throw new RangeError(`query has ${Hq} heads but key has ${Hkv}`);
  const group = Hq / Hkv;
  return {
    lead,
    count: product(lead),
    L,
    S,
    E,
    Ev,
    // Query matrix m reads key/value matrix kvIndex(m): query head h uses kv head floor(h / group).
    kvIndex: (m) => Math.floor(m / Hq) * Hkv + Math.floor((m % Hq) / group),
  };
}

// Whether query i may see key j under a causal mask, for both of PyTorch's alignments.
export function causalAllows(i, j, L, S, alignment = 'top-left') {
  return alignment === 'bottom-right' ? j <= i + S - L : j <= i;
}

// Raw scores Q Kᵀ for query matrix m: (L, S), unscaled and unmasked, in float32 like the package.
export function rawScores(query, key, geometry, m) {
  const { L, S, E } = geometry;
  const q = query.data;
  const k = key.data;
  const qBase = m * L * E;
  const kBase = geometry.kvIndex(m) * S * E;
  const out = new Float32Array(L * S);
  for (let i = 0; i < L; i++) {
    const qi = qBase + i * E;
    for (let j = 0; j < S; j++) {
      const kj = kBase + j * E;
      let dot = 0;
      for (let e = 0; e < E; e++) dot += q[qi + e] * k[kj + e];
      out[i * S + j] = dot;
    }
  }
  return out;
}

// The whole attention. `onMatrix(m, count)` is called after each (L, S) matrix so callers can report progress.
export function plainAttention(query, key, value, options = {}, onMatrix = null) {
  const { attnMask = null, isCausal = false, causalAlignment = 'top-left', enableGqa = false } = options;
  if (attnMask && isCausal) throw new RangeError('attnMask and isCausal cannot be used together');
  const g = attentionGeometry(query, key, value, { enableGqa });
  const { L, S, E, Ev, count } = g;
  const scale = options.scale ?? 1 / Math.sqrt(E);
  const mask = attnMask ? maskLayout(attnMask.shape, g.lead, L, S) : null;
  const boolMask = attnMask && !(attnMask.data instanceof Float32Array);
  const output = new Float32Array(count * L * Ev);
  const weights = new Float32Array(count * L * S);
  const row = new Float64Array(S);
  const q = query.data;
  const k = key.data;
  const v = value.data;
  for (let m = 0; m < count; m++) {
    const kBase = g.kvIndex(m) * S * E;
    const vBase = g.kvIndex(m) * S * Ev;
    const maskBase = mask ? mask.base(m) : 0;
    for (let i = 0; i < L; i++) {
      // pass 1: scaled, masked scores and their max
      const qi = (m * L + i) * E;
      let max = -Infinity;
      for (let j = 0; j < S; j++) {
        let s;
        if (isCausal && !causalAllows(i, j, L, S, causalAlignment)) {
          s = -Infinity;
        } else {
          let dot = 0;
          const kj = kBase + j * E;
          for (let e = 0; e < E; e++) dot += q[qi + e] * k[kj + e];
          s = dot * scale;
          if (mask) {
            const mv = attnMask.data[maskBase + i * mask.rowStride + j * mask.colStride];
            if (boolMask) s = mv ? s : -Infinity;
            else s += mv;
          }
        }
        row[j] = s;
        if (s > max) max = s;
      }
      const wRow = (m * L + i) * S;
      const oRow = (m * L + i) * Ev;
      // A row with every key hidden has no softmax; it stays zeros (weights and output), as in PyTorch ≥ 2.5.
      if (max === -Infinity) continue;
      // pass 2: exp relative to the max (no overflow), and the sum
      let sum = 0;
      for (let j = 0; j < S; j++) {
        const e = Math.exp(row[j] - max);
        row[j] = e;
        sum += e;
      }
      // pass 3: normalise, and accumulate the weighted values
      const inv = 1 / sum;
      for (let j = 0; j < S; j++) {
        const w = row[j] * inv;
        weights[wRow + j] = w;
        if (w === 0) continue;
        const vj = vBase + j * Ev;
        for (let c = 0; c < Ev; c++) output[oRow + c] += w * v[vj + c];
      }
    }
    if (onMatrix) onMatrix(m + 1, count);
  }
  return {
    output: { data: output, shape: [...g.lead, L, Ev] },
    weights: { data: weights, shape: [...g.lead, L, S] },
  };
}
