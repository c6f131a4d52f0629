// Careful plain JavaScript attention, the baseline a user without WebAssembly would write: typed arrays,
// one row of scores at a time (never the whole (L, S) matrix), offsets hoisted out of the inner loops,
// arithmetic in JS doubles. The inner loops are unrolled by four with independent accumulators: V8 does not
// vectorise, and breaking the single add chain makes this markedly faster, a fairer baseline.
// Inputs (BH, L, E), (BH, S, E), (BH, S, Ev); output (BH, L, Ev).
export function plainAttention({ BH, L, S, E, Ev }, q, k, v, scale) {
  const out = new Float32Array(BH * L * Ev);
  const row = new Float64Array(S);
  const acc = new Float64Array(Ev);
  const E4 = E & ~3;
  const Ev4 = Ev & ~3;
  for (let m = 0; m < BH; m++) {
    const kBase = m * S * E;
    const vBase = m * S * Ev;
    for (let i = 0; i < L; i++) {
      const qBase = (m * L + i) * E;
      // Scores of this query row against every key, and their maximum (for a stable softmax).
      let max = -Infinity;
      for (let j = 0, kRow = kBase; j < S; j++, kRow += E) {
        let d0 = 0;
        let d1 = 0;
        let d2 = 0;
        let d3 = 0;
        let e = 0;
        for (; e < E4; e += 4) {
          d0 += q[qBase + e] * k[kRow + e];
          d1 += q[qBase + e + 1] * k[kRow + e + 1];
          d2 += q[qBase + e + 2] * k[kRow + e + 2];
          d3 += q[qBase + e + 3] * k[kRow + e + 3];
        }
        for (; e < E; e++) d0 += q[qBase + e] * k[kRow + e];
        const s = (d0 + d1 + d2 + d3) * scale;
        row[j] = s;
        if (s > max) max = s;
      }
      // exp, the running sum and the weighted sum of value rows in one pass; normalise once at the end.
      acc.fill(0);
      let sum = 0;
      for (let j = 0, vRow = vBase; j < S; j++, vRow += Ev) {
        const p = Math.exp(row[j] - max);
        sum += p;
        let e = 0;
        for (; e < Ev4; e += 4) {
          acc[e] += p * v[vRow + e];
          acc[e + 1] += p * v[vRow + e + 1];
          acc[e + 2] += p * v[vRow + e + 2];
          acc[e + 3] += p * v[vRow + e + 3];
        }
        for (; e < Ev; e++) acc[e] += p * v[vRow + e];
      }
      const inv = 1 / sum;
      const oBase = (m * L + i) * Ev;
      for (let e = 0; e < Ev; e++) out[oBase + e] = acc[e] * inv;
    }
  }
  return out;
}
