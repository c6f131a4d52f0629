// Output reuse: xattn SIMD with options.out (the output written into one array kept across calls) against fresh
// result arrays, at 1 and at 2 threads, all four interleaved in one process. Every other column of the bench
// hands each call a fresh array, as every peer does; this section shows what that costs: the new pages of a
// multi-MiB result, faulted in by the calling thread alone after the run. Results are checked against float64
// first, and the reused array against the fresh result bit for bit.
import { makeProblem } from './inputs.mjs';
import { TOLERANCE, loadXattn } from './peers.mjs';
import { agreement, referenceRows, sampleRows } from './reference.mjs';
import { interleave, warmUp } from './timing.mjs';

const sameBits = (a, b) => a.length === b.length && a.every((x, i) => Object.is(x, b[i]));

// Rows: { shape, gflops: { fresh1, out1, fresh2, out2 } } or { shape, error }.
export async function measureOutReuse(shapes, { log = () => {}, budgetMs = 8000 } = {}) {
  const builds = { 1: await loadXattn(true, 1), 2: await loadXattn(true, 2) };
  const rows = [];
  for (const dims of shapes) {
    log(`output reuse: ${dims.BH}×${dims.L}×${dims.E}, fresh arrays and options.out, 1 and 2 threads`);
    const problem = makeProblem(dims);
    const { query, key, value } = problem;
    const sampled = sampleRows(problem.dims);
    const ref = referenceRows(problem, sampled);  // float64, once for both builds
    try {
      const entries = [];
      for (const [threads, xa] of Object.entries(builds)) {
        const fresh = () => xa.scaledDotProductAttention(query, key, value).output.data;
        const out = new Float32Array(dims.BH * dims.L * dims.Ev);
        const reuse = () => xa.scaledDotProductAttention(query, key, value, { out }).output.data;
        const check = agreement(fresh(), problem, sampled, ref, TOLERANCE);
        if (!check.ok) throw new Error(`wrong result at ${threads} threads: ${check.why}`);
        if (reuse() !== out || !sameBits(out, fresh())) throw new Error(`options.out differs from a fresh result at ${threads} threads`);
        entries.push({ key: `fresh${threads}`, run: fresh, estimateMs: await warmUp(fresh) });
        entries.push({ key: `out${threads}`, run: reuse, estimateMs: await warmUp(reuse) });
      }
      const timings = await interleave(entries, { budgetMs });
      rows.push({
        shape: [dims.BH, dims.L, dims.E],
        gflops: Object.fromEntries(entries.map((e) => [e.key, problem.flops / (timings[e.key].ms * 1e6)])),
      });
    } catch (err) {
      rows.push({ shape: [dims.BH, dims.L, dims.E], error: String(err?.message ?? err).split('\n')[0] });
    }
  }
  return { rows };
}

// One line per shape: GFLOP/s fresh and with out at each count, what out gains, and the scaling of each.
export function formatOutReuse({ rows }) {
  return rows.map((r) => {
    const at = r.shape.join('×');
    if (r.error) return `  ${at}: ${r.error}`;
    const g = r.gflops;
    const x = (a, b) => `${(a / b).toFixed(2)}×`;
    return `  ${at}: 1 thread ${g.fresh1.toFixed(1)} fresh, ${g.out1.toFixed(1)} with out (${x(g.out1, g.fresh1)}); ` +
      `2 threads ${g.fresh2.toFixed(1)} fresh, ${g.out2.toFixed(1)} with out (${x(g.out2, g.fresh2)}); ` +
      `t=1 → t=2 ${x(g.fresh2, g.fresh1)} fresh, ${x(g.out2, g.out1)} with out`;
  }).join('\n');
}
