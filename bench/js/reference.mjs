// The agreement check: the float64 reference (web/src/shared/attention-reference.js) on a sample of output rows,
// and a tolerance test against it. The plain-JS column times that same reference over every row, so its check
// is the reference agreeing with itself on the sample; check 2 (agreementAll) compares it with the scalar build.
import { attentionReference } from '../../web/src/shared/attention-reference.js';

// Rows to check, as [m, i] (matrix m of the BH, query row i), spread over every head and the whole length,
// within a budget of reference FLOPs so the check stays a small part of the run.
export function sampleRows({ BH, L, S, E, Ev }, flopBudget = 3e8) {
  const perRow = 2 * S * (E + Ev);
  const total = BH * L;
  const want = Math.max(BH, Math.min(total, Math.floor(flopBudget / perRow)));
  const rows = [];
  if (want >= total) {
    for (let m = 0; m < BH; m++) for (let i = 0; i < L; i++) rows.push([m, i]);
    return rows;
  }
  const perHead = Math.max(1, Math.floor(want / BH));
  for (let m = 0; m < BH; m++) {
    // Evenly spaced, always including the first and last row (edges are where tiling bugs live).
    for (let r = 0; r < perHead; r++) rows.push([m, perHead === 1 ? (m * 7919) % L : Math.round((r * (L - 1)) / (perHead - 1))]);
  }
  return rows;
}

// Output rows in float64 for each sampled (m, i): the float64 reference on that one query row against its
// matrix's keys and values.
export function referenceRows(problem, rows) {
  const { dims: { L, S, E, Ev }, query, key, value, scale } = problem;
  const out = new Float64Array(rows.length * Ev);
  rows.forEach(([m, i], r) => {
    const q = { data: query.data.subarray((m * L + i) * E, (m * L + i + 1) * E), shape: [1, E] };
    const k = { data: key.data.subarray(m * S * E, (m + 1) * S * E), shape: [S, E] };
    const v = { data: value.data.subarray(m * S * Ev, (m + 1) * S * Ev), shape: [S, Ev] };
    out.set(attentionReference(q, k, v, { scale, needWeights: false }).output.data, r * Ev);
  });
  return out;
}

// Passes when every sampled element has |got − ref| ≤ atol + rtol·|ref|. Also reports the worst absolute
// difference and the worst ratio to the allowance (≤ 1 passes), which the run prints for every implementation.
export function agreement(output, problem, rows, ref, { atol, rtol }) {
  const { L, Ev } = problem.dims;
  const expected = problem.dims.BH * L * Ev;
  // float32 from every implementation but the plain-JS reference, whose float64 rows are its own.
  if (!(output instanceof Float32Array || output instanceof Float64Array) || output.length !== expected) {
    return { ok: false, why: `output is ${output?.constructor?.name} of length ${output?.length}, expected Float32Array(${expected})` };
  }
  let maxAbs = 0;
  let worst = 0;
  let where = null;
  rows.forEach(([m, i], r) => {
    for (let e = 0; e < Ev; e++) {
      const want = ref[r * Ev + e];
      const got = output[(m * L + i) * Ev + e];
      const diff = Math.abs(got - want);
      const ratio = Number.isNaN(diff) ? Infinity : diff / (atol + rtol * Math.abs(want));
      maxAbs = Math.max(maxAbs, diff);
      if (ratio > worst) { worst = ratio; where = { m, i, e, got, want }; }
    }
  });
  const ok = worst <= 1;
  const why = ok ? '' : `at head ${where.m}, row ${where.i}, col ${where.e}: ${where.got} vs reference ${where.want}`;
  return { ok, maxAbs, worst, checked: rows.length, why };
}

// The second, complete check: every element against another implementation's whole output (the xattn scalar
// build's, itself checked against float64 above), so a fault in a row the sample missed is caught too.
export function agreementAll(output, expected, { atol, rtol }) {
  let worst = 0;
  let at = -1;
  for (let n = 0; n < expected.length; n++) {
    const diff = Math.abs(output[n] - expected[n]);
    const ratio = Number.isNaN(diff) ? Infinity : diff / (atol + rtol * Math.abs(expected[n]));
    if (ratio > worst) { worst = ratio; at = n; }
  }
  const ok = worst <= 1;
  return { ok, why: ok ? '' : `element ${at}: ${output[at]} vs the scalar build's ${expected[at]}` };
}
