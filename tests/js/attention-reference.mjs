// A float64 attention written plainly in JS, the oracle of the kernel suites in Node (tests/js/kernels.test.mjs)
// and Chromium (tests/package/browser-suites.js), with seeded inputs. No Node import. Dimension legend: B·H
// folded into one leading dim BH, L queries, S keys, E query/key dim, Ev value dim.

// mulberry32: the same inputs on every run.
export function uniform(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
export const randomTensor = (shape, seed) => {
  const next = uniform(seed);
  return { data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => 2 * next() - 1), shape };
};
// The same with standard normal values (Box–Muller over uniform(seed)).
export const normalTensor = (shape, seed) => {
  const next = uniform(seed);
  const data = Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) },
    () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next()));
  return { data, shape };
};

// float64 attention of (BH, L, E), (BH, S, E), (BH, S, Ev). allowed(b, i, j) → false forbids key j to query i
// (its score is -inf whatever K holds); add(b, i, j) is a float mask's value. A row with no key allowed gives 0.
export function reference(q, k, v, { allowed = () => true, add = () => 0, scale }) {
  const [BH, L, E] = q.shape, S = k.shape[1], Ev = v.shape[2];
  const out = new Float64Array(BH * L * Ev), weights = new Float64Array(BH * L * S);
  for (let b = 0; b < BH; b++) {
    for (let i = 0; i < L; i++) {
      const s = new Float64Array(S);
      let max = -Infinity;
      for (let j = 0; j < S; j++) {
        if (!allowed(b, i, j)) { s[j] = -Infinity; continue; }
        let dot = 0;
        for (let e = 0; e < E; e++) dot += q.data[(b * L + i) * E + e] * k.data[(b * S + j) * E + e];
        s[j] = dot * scale + add(b, i, j);
        max = Math.max(max, s[j]);
      }
      if (max === -Infinity) continue;
      let sum = 0;
      for (let j = 0; j < S; j++) sum += (s[j] = Math.exp(s[j] - max));
      for (let j = 0; j < S; j++) {
        const w = s[j] / sum;
        weights[(b * L + i) * S + j] = w;
        if (w === 0) continue;  // a zero weight contributes nothing, even against inf or NaN values
        for (let c = 0; c < Ev; c++) out[(b * L + i) * Ev + c] += w * v.data[(b * S + j) * Ev + c];
      }
    }
  }
  return { out, weights };
}

// The gradients of Σ dO ⊙ output with respect to q, k and v for dO (BH, L, Ev), in float64 by the textbook
// formulas on whole rows: dV_j = Σ_i P_ij dO_i, dP_ij = dO_i·V_j, dS_ij = scale·P_ij (dP_ij − Σ_j' P_ij' dP_ij'),
// dQ_i = Σ_j dS_ij K_j, dK_j = Σ_i dS_ij Q_i. Rows with no key allowed pass 0. Finite inputs only.
export function referenceGrad(q, k, v, dO, rule) {
  const [BH, L, E] = q.shape, S = k.shape[1], Ev = v.shape[2];
  const { out, weights } = reference(q, k, v, rule);
  const dq = new Float64Array(BH * L * E), dk = new Float64Array(BH * S * E), dv = new Float64Array(BH * S * Ev);
  const dP = new Float64Array(S);
  for (let b = 0; b < BH; b++) {
    for (let i = 0; i < L; i++) {
      const P = weights.subarray((b * L + i) * S, (b * L + i + 1) * S), g = dO.data.subarray((b * L + i) * Ev, (b * L + i + 1) * Ev);
      let D = 0;
      for (let j = 0; j < S; j++) {
        let dot = 0;
        for (let c = 0; c < Ev; c++) dot += g[c] * v.data[(b * S + j) * Ev + c];
        dP[j] = dot;
        D += P[j] * dot;
      }
      for (let j = 0; j < S; j++) {
        if (P[j] === 0) continue;
        const ds = rule.scale * P[j] * (dP[j] - D);
        for (let e = 0; e < E; e++) {
          dq[(b * L + i) * E + e] += ds * k.data[(b * S + j) * E + e];
          dk[(b * S + j) * E + e] += ds * q.data[(b * L + i) * E + e];
        }
        for (let c = 0; c < Ev; c++) dv[(b * S + j) * Ev + c] += P[j] * g[c];
      }
    }
  }
  return { out, dq, dk, dv };
}

// Whether two typed arrays hold the same bytes (float results equal bit for bit, NaN payloads and -0 included).
export function sameBits(a, b) {
  if (a.byteLength !== b.byteLength) return false;
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

// '' when |got - want| <= atol + rtol·|want| everywhere (by default the golden tolerance, 1e-5 + 1e-4·|want|; the
// gradients' is golden-cases.mjs GRAD_TOLERANCE), NaN only where NaN; else the first element that is not, named
// by `label`.
export function farFrom(got, want, label, { atol = 1e-5, rtol = 1e-4 } = {}) {
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (Number.isNaN(w) ? !Number.isNaN(g) : !(Math.abs(g - w) <= atol + rtol * Math.abs(w))) return `${label}[${i}]: ${g}, want ${w}`;
  }
  return got.length === want.length ? '' : `${label}: ${got.length} values, want ${want.length}`;
}
