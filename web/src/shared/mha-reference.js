// torch.nn.MultiheadAttention in float64, written plainly in JS: the oracle of tests/js/mha-kernels.test.mjs, and
// the steps the lab's multi-head walk shows. Project every row, split the heads, attend (attention-reference.js:
// the lesson's four steps), merge the heads, project out; the backward by the chain rule through the same steps.
// Dims: N batch, L queries, S keys (St with the appended bias_k / zero keys), E embed dim, H heads, hd = E / H,
// kdim / vdim the key / value sizes. No dropout (the fixtures and the native fuzzer cover it); finite inputs only.
import { attentionReference, attentionReferenceGrad } from './attention-reference.js';

// y = x Wᵀ + b: x (R, In), W (Out, In), b (Out) or undefined -> y (R, Out).
export function linear(x, R, W, b, In, Out) {
  const y = new Float64Array(R * Out);
  for (let r = 0; r < R; r++) {
    for (let o = 0; o < Out; o++) {
      let acc = b ? b[o] : 0;
      for (let i = 0; i < In; i++) acc += x[r * In + i] * W[o * In + i];
      y[r * Out + o] = acc;
    }
  }
  return y;
}

// The head split: x (N, T, H·hd) -> (N, H, T, hd), i.e. x.view(N, T, H, hd).transpose(1, 2).
export function splitHeads(x, N, T, H, hd) {
  const out = new Float64Array(N * H * T * hd);
  for (let n = 0; n < N; n++) for (let h = 0; h < H; h++) for (let t = 0; t < T; t++) for (let d = 0; d < hd; d++) out[((n * H + h) * T + t) * hd + d] = x[(n * T + t) * H * hd + h * hd + d];
  return out;
}

// The concatenation, the split undone: heads (N, H, T, hd) -> (N, T, H·hd).
export function mergeHeads(heads, N, T, H, hd) {
  const out = new Float64Array(N * T * H * hd);
  for (let n = 0; n < N; n++) for (let h = 0; h < H; h++) for (let t = 0; t < T; t++) for (let d = 0; d < hd; d++) out[(n * T + t) * H * hd + h * hd + d] = heads[((n * H + h) * T + t) * hd + d];
  return out;
}

// Through y = x Wᵀ + b given dy (R, Out): dx (R, In), dW (Out, In), db (Out).
function linearBackward(dy, x, R, W, In, Out) {
  const dx = new Float64Array(R * In), dW = new Float64Array(Out * In), db = new Float64Array(Out);
  for (let r = 0; r < R; r++) {
    for (let o = 0; o < Out; o++) {
      const d = dy[r * Out + o];
      db[o] += d;
      for (let i = 0; i < In; i++) {
        dx[r * In + i] += d * W[o * In + i];
        dW[o * In + i] += d * x[r * In + i];
      }
    }
  }
  return { dx, dW, db };
}

// The forward and backward of a module with `config` (createMultiheadAttention's, defaults filled in) and
// `params` (setParameters' names, PyTorch's) on query (L, N, E) / (N, L, E) with batchFirst / (L, E) unbatched,
// key and value likewise, and gradOutput shaped like the query. options: keyPaddingMask (N, S) or (S,) and
// attnMask (L, S) or (N·H, L, S), boolean (Uint8Array, 1 = masked out) or float (added); isCausal (the top-left
// causal mask when no attnMask is given); averageAttnWeights. A row with every key masked gives 0.
// Returns { output, weights, gradQuery, gradKey, gradValue, gradParameters } as Float64Arrays in the API's layouts.
export function mhaReference(config, params, query, key, value, gradOutput, options = {}) {
  const { embedDim: E, numHeads: H, bias, addBiasKv, addZeroAttn } = config;
  const kd = config.kdim ?? E, vd = config.vdim ?? E, hd = E / H;
  const layout = inputLayout(query, key, config.batchFirst);
  const { N, L, S } = layout;
  const St = S + (addBiasKv ? 1 : 0) + (addZeroAttn ? 1 : 0);
  const dims = { N, H, L, S, St, E, hd, addBiasKv };
  const proj = inProjections(params, E, bias);

  // 1. Project every row.   (N·L, E), (N·S, kdim), (N·S, vdim) -> (N·L, E), (N·S, E), (N·S, E)
  const xq = layout.toRows(query.data, L, E), xk = layout.toRows(key.data, S, kd), xv = layout.toRows(value.data, S, vd);
  const Q = linear(xq, N * L, proj.Wq, proj.bq, E, E), K = linear(xk, N * S, proj.Wk, proj.bk, kd, E), V = linear(xv, N * S, proj.Wv, proj.bv, vd, E);
  // Split into heads: (N·H, L, hd) and (N·H, St, hd).
  const Qh = splitHeads(Q, N, L, H, hd);
  const { Kh, Vh } = keyValueHeads(K, V, params, dims);
  // 2. The masks, in MHA's polarity, for head problem b = n·H + h.
  const rule = { maskValue: maskAdder(options, dims), scale: 1 / Math.sqrt(hd) };

  // 3. Attention per head, then merge the heads.   (N·H, L, hd) -> (N·L, E)
  const q = { data: Qh, shape: [N * H, L, hd] }, k = { data: Kh, shape: [N * H, St, hd] }, v = { data: Vh, shape: [N * H, St, hd] };
  const heads = attentionReference(q, k, v, rule);
  const merged = mergeHeads(heads.output.data, N, L, H, hd);
  // 4. Project out; 5. the weights per head (N, H, L, St) or averaged over the heads (N, L, St).
  const output = layout.fromRows(linear(merged, N * L, params['out_proj.weight'], proj.bo, E, E), L, E);
  const { averageAttnWeights = true } = options;
  const weights = averageAttnWeights ? averageHeads(heads.weights.data, dims) : heads.weights.data;
  if (!gradOutput) return { output, weights };

  // The backward in reverse: out-projection, each head's attention, the appended keys, the in-projections.
  const dO = layout.toRows(gradOutput.data, L, E);
  const out = linearBackward(dO, merged, N * L, params['out_proj.weight'], E, E);
  const dHeads = splitHeads(out.dx, N, L, H, hd);
  const grad = attentionReferenceGrad(q, k, v, { data: dHeads, shape: [N * H, L, hd] }, rule);
  const { dQ, dK, dV, dBiasK, dBiasV } = mergeHeadGrads(grad, dims);
  const gq = linearBackward(dQ, xq, N * L, proj.Wq, E, E), gk = linearBackward(dK, xk, N * S, proj.Wk, kd, E);
  const gv = linearBackward(dV, xv, N * S, proj.Wv, vd, E);
  const gradParameters = { 'out_proj.weight': out.dW };
  if (proj.packed) gradParameters.in_proj_weight = joined(gq.dW, gk.dW, gv.dW);
  else Object.assign(gradParameters, { q_proj_weight: gq.dW, k_proj_weight: gk.dW, v_proj_weight: gv.dW });
  if (bias) Object.assign(gradParameters, { in_proj_bias: joined(gq.db, gk.db, gv.db), 'out_proj.bias': out.db });
  if (addBiasKv) Object.assign(gradParameters, { bias_k: dBiasK, bias_v: dBiasV });
  return {
    output, weights, gradQuery: layout.fromRows(gq.dx, L, E), gradKey: layout.fromRows(gk.dx, S, kd), gradValue: layout.fromRows(gv.dx, S, vd),
    gradParameters,
  };
}

// The inputs' sizes N, L, S, and the moves between the API's layout, (L, N, C) / (N, L, C) with batchFirst /
// (L, C) unbatched, and rows by batch element, (N, T, C), which every step below works on.
function inputLayout(query, key, batchFirst) {
  const batched = query.shape.length === 3, bf = batched && batchFirst;
  const N = batched ? query.shape[bf ? 0 : 1] : 1, L = query.shape[bf ? 1 : 0], S = key.shape[bf ? 1 : 0];
  // Row t of batch element n in an input of T rows per element.
  const at = (n, t, T) => (!batched ? t : bf ? n * T + t : t * N + n);
  const toRows = (x, T, C) => {  // the input's layout -> (N, T, C)
    const rows = new Float64Array(N * T * C);
    for (let n = 0; n < N; n++) for (let t = 0; t < T; t++) for (let c = 0; c < C; c++) rows[(n * T + t) * C + c] = x[at(n, t, T) * C + c];
    return rows;
  };
  const fromRows = (rows, T, C) => {  // (N, T, C) -> the input's layout
    const x = new Float64Array(N * T * C);
    for (let n = 0; n < N; n++) for (let t = 0; t < T; t++) for (let c = 0; c < C; c++) x[at(n, t, T) * C + c] = rows[(n * T + t) * C + c];
    return x;
  };
  return { N, L, S, toRows, fromRows };
}

// The in-projections, from the packed in_proj_weight (3E, E) or the three separate ones, and the biases.
function inProjections(params, E, bias) {
  const packed = params.in_proj_weight !== undefined;
  const Wq = packed ? params.in_proj_weight.subarray(0, E * E) : params.q_proj_weight;          // (E, E)
  const Wk = packed ? params.in_proj_weight.subarray(E * E, 2 * E * E) : params.k_proj_weight;  // (E, kdim)
  const Wv = packed ? params.in_proj_weight.subarray(2 * E * E) : params.v_proj_weight;         // (E, vdim)
  const [bq, bk, bv] = bias ? [0, 1, 2].map((p) => params.in_proj_bias.subarray(p * E, (p + 1) * E)) : [];
  const bo = bias ? params['out_proj.bias'] : undefined;
  return { packed, Wq, Wk, Wv, bq, bk, bv, bo };
}

// K, V split into heads with the keys MHA appends: (N·S, E) -> (N·H, St, hd), rows S … St − 1 the bias_k /
// bias_v row (addBiasKv), then the zero row (addZeroAttn), left at 0.
function keyValueHeads(K, V, params, { N, H, S, St, E, hd, addBiasKv }) {
  const Kh = new Float64Array(N * H * St * hd), Vh = new Float64Array(N * H * St * hd);
  for (let n = 0; n < N; n++) {
    for (let h = 0; h < H; h++) {
      for (let d = 0; d < hd; d++) {
        for (let j = 0; j < S; j++) {
          Kh[((n * H + h) * St + j) * hd + d] = K[(n * S + j) * E + h * hd + d];
          Vh[((n * H + h) * St + j) * hd + d] = V[(n * S + j) * E + h * hd + d];
        }
        if (addBiasKv) {
          Kh[((n * H + h) * St + S) * hd + d] = params.bias_k[h * hd + d];
          Vh[((n * H + h) * St + S) * hd + d] = params.bias_v[h * hd + d];
        }
      }
    }
  }
  return { Kh, Vh };
}

// (b, i, j) -> what the masks add to score (i, j) of head problem b = n·H + h: −∞ where masked out, a float
// mask's value, 0 for the appended keys (j ≥ S), which are never masked.
function maskAdder({ keyPaddingMask: kpm, attnMask: am, isCausal = false }, { H, L, S }) {
  const perHead = am !== undefined && am.shape.length === 3;
  const read = (m, index) => (m.data instanceof Uint8Array ? (m.data[index] ? -Infinity : 0) : m.data[index]);
  return (b, i, j) => {
    if (j >= S) return 0;
    const n = Math.floor(b / H), h = b % H;
    let add = isCausal && am === undefined && j > i ? -Infinity : 0;
    if (am) add += read(am, ((perHead ? n * H + h : 0) * L + i) * S + j);
    if (kpm) add += read(kpm, n * S + j);
    return add;
  };
}

// The weights averaged over the heads: P (N, H, L, St) -> (N, L, St).
function averageHeads(P, { N, H, L, St }) {
  const weights = new Float64Array(N * L * St);
  for (let x = 0; x < P.length; x++) weights[Math.floor(x / (H * L * St)) * L * St + (x % (L * St))] += P[x] / H;
  return weights;
}

// Each head's gradients merged back into the projections' rows: dq (N·H, L, hd) -> dQ (N·L, E); dk, dv
// (N·H, St, hd) -> dK, dV (N·S, E), and the appended bias row's into dBiasK, dBiasV (E), summed over the batch;
// the zero key's gradient goes nowhere.
function mergeHeadGrads(grad, { N, H, L, S, St, E, hd, addBiasKv }) {
  const g = { dq: grad.gradQuery.data, dk: grad.gradKey.data, dv: grad.gradValue.data };
  const dQ = new Float64Array(N * L * E), dK = new Float64Array(N * S * E), dV = new Float64Array(N * S * E);
  const dBiasK = new Float64Array(E), dBiasV = new Float64Array(E);
  for (let n = 0; n < N; n++) {
    for (let h = 0; h < H; h++) {
      for (let d = 0; d < hd; d++) {
        for (let i = 0; i < L; i++) dQ[(n * L + i) * E + h * hd + d] = g.dq[((n * H + h) * L + i) * hd + d];
        for (let j = 0; j < S; j++) {
          dK[(n * S + j) * E + h * hd + d] = g.dk[((n * H + h) * St + j) * hd + d];
          dV[(n * S + j) * E + h * hd + d] = g.dv[((n * H + h) * St + j) * hd + d];
        }
        if (addBiasKv) {
          dBiasK[h * hd + d] += g.dk[((n * H + h) * St + S) * hd + d];
          dBiasV[h * hd + d] += g.dv[((n * H + h) * St + S) * hd + d];
        }
      }
    }
  }
  return { dQ, dK, dV, dBiasK, dBiasV };
}

// The arrays one after another, as the packed in_proj_weight / in_proj_bias hold q's, k's and v's.
function joined(...parts) {
  const all = new Float64Array(parts.reduce((a, p) => a + p.length, 0));
  parts.reduce((offset, p) => (all.set(p, offset), offset + p.length), 0);
  return all;
}
