// Scaled dot-product attention in float64, written to be read: the oracle of the package's tests (tests/js,
// tests/package, tests/web), the float64 check of the benchmark (bench/js) and the plain-JavaScript row of
// the lab's speed comparison. PyTorch's semantics (torch.nn.functional.scaled_dot_product_attention):
//   query (…, H, L, E), key (…, Hkv, S, E), value (…, Hkv, S, Ev) → output (…, H, L, Ev), weights (…, H, L, S)
// with Hkv = H, or H a multiple of Hkv under enableGqa (query head h reads key/value head ⌊h / (H / Hkv)⌋).
// The lesson's four steps, for each query row i of each of the (…, H) matrices:
//   1. scores    s_j = q_i · k_j                                   (S)
//   2. scaled    s_j · scale, then the mask: −∞ where key j is hidden from query i (whatever k_j holds),
//                plus a float mask's value                           (S)
//   3. weights   w_j = softmax(scaled)_j; a row with every key hidden has no softmax: its weights stay 0 (S)
//   4. output    o_i = Σ_j w_j v_j                                  (Ev)
// Inputs are read as float64 (Float32Array or Float64Array data); results are Float64Arrays. No import, no
// Node or browser API: it runs in Node, in the page's workers and in a test page alike.

const product = (dims) => dims.reduce((n, d) => n * d, 1);

// The problem as numbers: how many (L, E) query matrices, and which key/value matrix each one reads.
export function attentionGeometry(query, key, value, { enableGqa = false } = {}) {
  const rank = query.shape.length;
  if (rank < 2 || key.shape.length !== rank || value.shape.length !== rank) {
    throw new RangeError(`query ${shapeText(query.shape)}, key ${shapeText(key.shape)} and value ${shapeText(value.shape)} must have the same number of dims, at least 2`);
  }
  const lead = query.shape.slice(0, -2);
  const [L, E] = query.shape.slice(-2);
  const S = key.shape[rank - 2];
  const Ev = value.shape[rank - 1];
  const H = rank >= 3 ? query.shape[rank - 3] : 1;
  const Hkv = rank >= 3 ? key.shape[rank - 3] : 1;
  if (key.shape[rank - 1] !== E) throw new RangeError(`key has ${key.shape[rank - 1]} features per position but query has ${E}`);
  if (value.shape[rank - 2] !== S) throw new RangeError(`value has ${value.shape[rank - 2]} positions but key has ${S}`);
  if (Hkv !== H && (!enableGqa || H % Hkv !== 0)) throw new RangeError(`query has ${H} heads but key has ${Hkv}`);
  const group = H / Hkv;
  return {
    lead,
    count: product(lead),
    L,
    S,
    E,
    Ev,
    // Query matrix m reads key/value matrix kvIndex(m).
    kvIndex: (m) => Math.floor(m / H) * Hkv + Math.floor((m % H) / group),
  };
}

const shapeText = (shape) => `(${shape.join(', ')})`;

// Whether query i may see key j under a causal mask, in both of PyTorch's alignments.
export function causalAllows(i, j, L, S, alignment = 'top-left') {
  return alignment === 'bottom-right' ? j <= i + S - L : j <= i;
}

// Where mask element (m, i, j) lives, for a mask whose shape broadcasts to (…lead, L, S): missing or size-1
// dims get stride 0, which is what broadcasting means.
export function maskLayout(maskShape, lead, L, S) {
  const full = [...lead, L, S];
  if (maskShape.length > full.length) throw new RangeError(`mask ${shapeText(maskShape)} has more dims than the scores ${shapeText(full)}`);
  const padded = [...new Array(full.length - maskShape.length).fill(1), ...maskShape];
  const strides = new Array(full.length).fill(0);
  let s = 1;
  for (let d = full.length - 1; d >= 0; d--) {
    if (padded[d] !== 1 && padded[d] !== full[d]) throw new RangeError(`mask dim ${d} is ${padded[d]} but the scores have ${full[d]} there`);
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

// The mask as one function (m, i, j) → what step 2 adds to the scaled score: 0, a float mask's value, or −∞
// for a hidden key. options: isCausal (+ causalAlignment); attnMask { data, shape } broadcasting to the
// scores, boolean (any typed array but Float32Array/Float64Array: non-zero = may attend) or float (added);
// maskValue(m, i, j), the same function given directly (the tests' masks).
function maskOf(g, { isCausal = false, causalAlignment = 'top-left', attnMask = null, maskValue = null }) {
  if (attnMask && isCausal) throw new RangeError('attnMask and isCausal cannot be used together');
  if (maskValue) return maskValue;
  if (isCausal) return (m, i, j) => (causalAllows(i, j, g.L, g.S, causalAlignment) ? 0 : -Infinity);
  if (!attnMask) return null;
  const layout = maskLayout(attnMask.shape, g.lead, g.L, g.S);
  const isFloat = attnMask.data instanceof Float32Array || attnMask.data instanceof Float64Array;
  return (m, i, j) => {
    const v = attnMask.data[layout.base(m) + i * layout.rowStride + j * layout.colStride];
    return isFloat ? v : v ? 0 : -Infinity;
  };
}

// Step 1 for one whole matrix: the raw scores Q Kᵀ of query matrix m, (L, S), unscaled and unmasked. The lab
// draws them beside the weights.
export function scoreMatrix(query, key, geometry, m) {
  const { L, S, E } = geometry;
  const out = new Float64Array(L * S);
  const kBase = geometry.kvIndex(m) * S * E;
  for (let i = 0; i < L; i++) {
    const qBase = (m * L + i) * E;
    for (let j = 0; j < S; j++) out[i * S + j] = dot(query.data, qBase, key.data, kBase + j * E, E);
  }
  return out;
}

function dot(a, aBase, b, bBase, n) {
  let sum = 0;
  for (let e = 0; e < n; e++) sum += a[aBase + e] * b[bBase + e];
  return sum;
}

// The whole attention. options: scale (default 1/√E), enableGqa, the masks of maskOf, needWeights (default
// true; false keeps only one row of weights at a time, for large problems and the speed comparison).
// Returns { output: { data, shape }, weights: { data, shape } | null } with Float64Array data.
export function attentionReference(query, key, value, options = {}) {
  const g = attentionGeometry(query, key, value, options);
  const { L, S, E, Ev, count } = g;
  const scale = options.scale ?? 1 / Math.sqrt(E);
  const maskValue = maskOf(g, options);
  const needWeights = options.needWeights ?? true;
  const output = new Float64Array(count * L * Ev); // (…, H, L, Ev)
  const weights = needWeights ? new Float64Array(count * L * S) : null; // (…, H, L, S)
  const row = new Float64Array(S); // one query row's scores, then its weights
  for (let m = 0; m < count; m++) {
    const kBase = g.kvIndex(m) * S * E;
    const vBase = g.kvIndex(m) * S * Ev;
    for (let i = 0; i < L; i++) {
      const qBase = (m * L + i) * E;
      // Steps 1 and 2: scaled, masked scores. A hidden key is −∞ without its dot product, so NaN in a key a
      // query may not see never reaches that query.
      let max = -Infinity;
      for (let j = 0; j < S; j++) {
        const added = maskValue ? maskValue(m, i, j) : 0;
        row[j] = added === -Infinity ? -Infinity : dot(query.data, qBase, key.data, kBase + j * E, E) * scale + added;
        max = Math.max(max, row[j]); // NaN if any score is NaN: the whole row is NaN then, as in PyTorch
      }
      // A row with every key hidden has no softmax: weights and output stay 0 (PyTorch ≥ 2.5).
      if (max === -Infinity) continue;
      // Step 3: the softmax, relative to the row's max so that no exp overflows.
      let sum = 0;
      for (let j = 0; j < S; j++) {
        row[j] = Math.exp(row[j] - max);
        sum += row[j];
      }
      for (let j = 0; j < S; j++) row[j] /= sum;
      if (weights) weights.set(row, (m * L + i) * S);
      // Step 4: the weighted sum of value rows. A zero weight adds nothing, even against ∞ or NaN values.
      const oBase = (m * L + i) * Ev;
      for (let j = 0; j < S; j++) {
        const w = row[j];
        if (w === 0) continue;
        for (let c = 0; c < Ev; c++) output[oBase + c] += w * value.data[vBase + j * Ev + c];
      }
    }
  }
  return {
    output: { data: output, shape: [...g.lead, L, Ev] },
    weights: weights && { data: weights, shape: [...g.lead, L, S] },
  };
}

// The gradients of Σ gradOutput ⊙ output with respect to query, key and value, by the textbook formulas on
// whole rows (P the weights, dO = gradOutput):
//   dV_j = Σ_i P_ij dO_i,  dP_ij = dO_i · V_j,  dS_ij = scale · P_ij (dP_ij − Σ_j' P_ij' dP_ij'),
//   dQ_i = Σ_j dS_ij K_j,  dK_j = Σ_i dS_ij Q_i.
// Under GQA a key/value head gathers the gradients of every query head that reads it. Rows with no key
// allowed pass 0. Same options as attentionReference (weights are always kept). Finite inputs only.
// Returns { output, weights, gradQuery, gradKey, gradValue } as { data: Float64Array, shape }.
export function attentionReferenceGrad(query, key, value, gradOutput, options = {}) {
  const g = attentionGeometry(query, key, value, options);
  const { L, S, E, Ev, count } = g;
  const scale = options.scale ?? 1 / Math.sqrt(E);
  const { output, weights } = attentionReference(query, key, value, { ...options, needWeights: true });
  const dq = new Float64Array(query.data.length); // (…, H, L, E)
  const dk = new Float64Array(key.data.length); // (…, Hkv, S, E)
  const dv = new Float64Array(value.data.length); // (…, Hkv, S, Ev)
  const dP = new Float64Array(S);
  for (let m = 0; m < count; m++) {
    const kBase = g.kvIndex(m) * S * E;
    const vBase = g.kvIndex(m) * S * Ev;
    for (let i = 0; i < L; i++) {
      const P = weights.data.subarray((m * L + i) * S, (m * L + i + 1) * S);
      const dOBase = (m * L + i) * Ev;
      let D = 0; // Σ_j P_ij dP_ij
      for (let j = 0; j < S; j++) {
        dP[j] = dot(gradOutput.data, dOBase, value.data, vBase + j * Ev, Ev);
        D += P[j] * dP[j];
      }
      for (let j = 0; j < S; j++) {
        if (P[j] === 0) continue;
        const dS = scale * P[j] * (dP[j] - D);
        for (let e = 0; e < E; e++) {
          dq[(m * L + i) * E + e] += dS * key.data[kBase + j * E + e];
          dk[kBase + j * E + e] += dS * query.data[(m * L + i) * E + e];
        }
        for (let c = 0; c < Ev; c++) dv[vBase + j * Ev + c] += P[j] * gradOutput.data[dOBase + c];
      }
    }
  }
  return {
    output,
    weights,
    gradQuery: { data: dq, shape: [...query.shape] },
    gradKey: { data: dk, shape: [...key.shape] },
    gradValue: { data: dv, shape: [...value.shape] },
  };
}
