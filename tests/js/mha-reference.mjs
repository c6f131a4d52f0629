// torch.nn.MultiheadAttention in float64, written plainly in JS: the oracle of tests/js/mha-kernels.test.mjs.
// Project every row, split the heads, attend (attention-reference.mjs: the four steps), merge the heads, project
// out; the backward by the chain rule through the same steps. Dims: N batch, L queries, S keys (St with the
// appended bias_k / zero keys), E embed dim, H heads, hd = E / H, kdim / vdim the key / value sizes.
// No dropout (the fixtures and the native fuzzer cover it); finite inputs only.
import { reference, referenceGrad } from './attention-reference.mjs';

// y = x Wᵀ + b: x (R, In), W (Out, In), b (Out) or undefined -> y (R, Out).
function linear(x, R, W, b, In, Out) {
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
// `params` (setParameters' camelCase names) on query (L, N, E) / (N, L, E) with batchFirst / (L, E) unbatched,
// key and value likewise, and gradOutput shaped like the query. options: keyPaddingMask (N, S) or (S,) and
// attnMask (L, S) or (N·H, L, S), boolean (Uint8Array, 1 = masked out) or float (added); isCausal (the top-left
// causal mask when no attnMask is given); averageAttnWeights. A row with every key masked gives 0.
// Returns { output, weights, gradQuery, gradKey, gradValue, gradParameters } as Float64Arrays in the API's layouts.
export function mhaReference(config, params, query, key, value, gradOutput, options = {}) {
  const { embedDim: E, numHeads: H, bias, batchFirst, addBiasKv, addZeroAttn } = config;
  const kd = config.kdim ?? E, vd = config.vdim ?? E, hd = E / H;
  const batched = query.shape.length === 3, bf = batched && batchFirst;
  const N = batched ? query.shape[bf ? 0 : 1] : 1, L = query.shape[bf ? 1 : 0], S = key.shape[bf ? 1 : 0];
  const St = S + (addBiasKv ? 1 : 0) + (addZeroAttn ? 1 : 0);
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

  const packed = params.in_proj_weight !== undefined;
  const Wq = packed ? params.in_proj_weight.subarray(0, E * E) : params.q_proj_weight;          // (E, E)
  const Wk = packed ? params.in_proj_weight.subarray(E * E, 2 * E * E) : params.k_proj_weight;  // (E, kdim)
  const Wv = packed ? params.in_proj_weight.subarray(2 * E * E) : params.v_proj_weight;         // (E, vdim)
  const [bq, bk, bv] = bias ? [0, 1, 2].map((p) => params.in_proj_bias.subarray(p * E, (p + 1) * E)) : [];
  const bo = bias ? params['out_proj.bias'] : undefined;

  // 1. Project every row.   (N·L, E), (N·S, kdim), (N·S, vdim) -> (N·L, E), (N·S, E), (N·S, E)
  const xq = toRows(query.data, L, E), xk = toRows(key.data, S, kd), xv = toRows(value.data, S, vd);
  const Q = linear(xq, N * L, Wq, bq, E, E), K = linear(xk, N * S, Wk, bk, kd, E), V = linear(xv, N * S, Wv, bv, vd, E);
  // Split into heads: (N·H, L, hd) and (N·H, St, hd), the appended bias_k / bias_v row, then the zero row.
  const Qh = new Float64Array(N * H * L * hd), Kh = new Float64Array(N * H * St * hd), Vh = new Float64Array(N * H * St * hd);
  for (let n = 0; n < N; n++) {
    for (let h = 0; h < H; h++) {
      for (let d = 0; d < hd; d++) {
        for (let i = 0; i < L; i++) Qh[((n * H + h) * L + i) * hd + d] = Q[(n * L + i) * E + h * hd + d];
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

  // 2. The masks, in MHA's polarity, for head problem b = n·H + h; the appended keys are never masked.
  const { keyPaddingMask: kpm, attnMask: am, isCausal = false, averageAttnWeights = true } = options;
  const perHead = am !== undefined && am.shape.length === 3;
  const read = (m, index) => (m.data instanceof Uint8Array ? (m.data[index] ? -Infinity : 0) : m.data[index]);
  const added = (b, i, j) => {
    if (j >= S) return 0;
    const n = Math.floor(b / H), h = b % H;
    let add = isCausal && am === undefined && j > i ? -Infinity : 0;
    if (am) add += read(am, ((perHead ? n * H + h : 0) * L + i) * S + j);
    if (kpm) add += read(kpm, n * S + j);
    return add;
  };
  const rule = { allowed: (b, i, j) => added(b, i, j) !== -Infinity, add: added, scale: 1 / Math.sqrt(hd) };

  // 3. Attention per head, then merge the heads.   (N·H, L, hd) -> (N·L, E)
  const q = { data: Qh, shape: [N * H, L, hd] }, k = { data: Kh, shape: [N * H, St, hd] }, v = { data: Vh, shape: [N * H, St, hd] };
  const { out: heads, weights: P } = reference(q, k, v, rule);
  const merged = new Float64Array(N * L * E);
  for (let n = 0; n < N; n++) for (let h = 0; h < H; h++) for (let i = 0; i < L; i++) for (let d = 0; d < hd; d++) merged[(n * L + i) * E + h * hd + d] = heads[((n * H + h) * L + i) * hd + d];
  // 4. Project out; 5. the weights per head (N, H, L, St) or averaged over the heads (N, L, St).
  const output = fromRows(linear(merged, N * L, params['out_proj.weight'], bo, E, E), L, E);
  const weights = averageAttnWeights ? new Float64Array(N * L * St) : P;
  if (averageAttnWeights) for (let x = 0; x < P.length; x++) weights[Math.floor(x / (H * L * St)) * L * St + (x % (L * St))] += P[x] / H;
  if (!gradOutput) return { output, weights };

  // The backward in reverse: out-projection, each head's attention, the appended keys, the in-projections.
  const dO = toRows(gradOutput.data, L, E);
  const out = linearBackward(dO, merged, N * L, params['out_proj.weight'], E, E);
  const dHeads = new Float64Array(N * H * L * hd);
  for (let n = 0; n < N; n++) for (let h = 0; h < H; h++) for (let i = 0; i < L; i++) for (let d = 0; d < hd; d++) dHeads[((n * H + h) * L + i) * hd + d] = out.dx[(n * L + i) * E + h * hd + d];
  const g = referenceGrad(q, k, v, { data: dHeads, shape: [N * H, L, hd] }, rule);
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
        if (addBiasKv) {  // summed over the batch; the zero key's gradient goes nowhere
          dBiasK[h * hd + d] += g.dk[((n * H + h) * St + S) * hd + d];
          dBiasV[h * hd + d] += g.dv[((n * H + h) * St + S) * hd + d];
        }
      }
    }
  }
  const gq = linearBackward(dQ, xq, N * L, Wq, E, E), gk = linearBackward(dK, xk, N * S, Wk, kd, E);
  const gv = linearBackward(dV, xv, N * S, Wv, vd, E);
  const joined = (...parts) => {
    const all = new Float64Array(parts.reduce((a, p) => a + p.length, 0));
    parts.reduce((offset, p) => (all.set(p, offset), offset + p.length), 0);
    return all;
  };
  const gradParameters = { 'out_proj.weight': out.dW };
  if (packed) gradParameters.in_proj_weight = joined(gq.dW, gk.dW, gv.dW);
  else Object.assign(gradParameters, { q_proj_weight: gq.dW, k_proj_weight: gk.dW, v_proj_weight: gv.dW });
  if (bias) Object.assign(gradParameters, { in_proj_bias: joined(gq.db, gk.db, gv.db), 'out_proj.bias': out.db });
  if (addBiasKv) Object.assign(gradParameters, { bias_k: dBiasK, bias_v: dBiasV });
  return {
    output, weights, gradQuery: fromRows(gq.dx, L, E), gradKey: fromRows(gk.dx, S, kd), gradValue: fromRows(gv.dx, S, vd),
    gradParameters,
  };
}
