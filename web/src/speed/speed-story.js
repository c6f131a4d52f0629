// What the speed comparison's figures say, in sentences that follow them (pure): how far each implementation
// is from the peak and from the others, and, when the figures go against what a learner expects (the scalar
// build or plain JavaScript ahead of SIMD, more threads slower than one), why that happens at this size.
import { formatNumber } from '../shared/shapes.js';

const fmtG = (g) => (g >= 10 ? g.toFixed(1) : g.toFixed(2));
// Below this many flops a call's fixed cost (entering WebAssembly, copying Q, K, V in and the output out,
// setting up the kernels) is a large part of its time.
const SMALL_FLOPS = 1e8;

// result: the worker's speed answer { flops, results, peak, cores }; threads: threadsSummary's line (or null).
// Returns { html, notes }: notes names the cases explained ('scalar', 'js', 'threads').
export function speedStory({ flops, results, peak, cores }, threads) {
  const by = Object.fromEntries(results.filter((r) => !r.unavailable).map((r) => [r.kind, r]));
  const simd = by.simd;
  const parts = [];
  const notes = [];
  if (!simd) return { html: '<p>The SIMD build did not run here, so there is nothing to compare it with.</p>', notes };
  const share = peak ? `, ${((100 * simd.gflops) / peak).toFixed(0)}% of this browser's peak` : '';
  parts.push(
    `The SIMD build on 1 thread ran at <strong>${fmtG(simd.gflops)} GFLOP/s</strong>${share}` +
      (by.scalar ? `; the scalar build at ${fmtG(by.scalar.gflops)}` : '') +
      (by.js ? `; plain JavaScript (the float64 reference) at ${fmtG(by.js.gflops)}` : '') +
      ` on ${formatNumber(flops)} flops per call.`,
  );
  const fixedCost =
    `At ${formatNumber(flops)} flops a call is short, and much of its time is what every call costs whatever its size: ` +
    `entering WebAssembly, copying Q, K and V in and the output out, setting up the kernels. SIMD makes only the arithmetic faster, ` +
    `so it has little to speed up here; where the arithmetic dominates (try L = S = 1024) it leads.`;
  if (by.scalar && by.scalar.gflops > simd.gflops) {
    notes.push('scalar');
    parts.push(`The scalar build was faster than SIMD here (${fmtG(by.scalar.gflops)} against ${fmtG(simd.gflops)} GFLOP/s). ${fixedCost}`);
  }
  if (by.js && by.js.gflops > simd.gflops) {
    notes.push('js');
    parts.push(
      `Plain JavaScript was faster than the SIMD build here (${fmtG(by.js.gflops)} against ${fmtG(simd.gflops)} GFLOP/s): it works on the page's ` +
        `arrays where they are and copies nothing.` + (notes.includes('scalar') ? '' : ` ${fixedCost}`),
    );
  }
  if (threads?.ratio && threads.ratio < 1) {
    notes.push('threads');
    parts.push(
      `${threads.threads} threads were slower than 1 thread here (${threads.ratio.toFixed(2)}× as fast). A thread helps only with a core to ` +
        `itself: this browser reports ${cores ?? 'an unknown number of'} core${cores === 1 ? '' : 's'}, shared with everything else running on ` +
        `the machine, and every call also pays for waking the other threads and waiting for the last of them.` +
        (flops < SMALL_FLOPS ? ' On a call this small that cost is most of the time.' : ' Run it again when the machine is idle.'),
    );
  }
  if (!notes.length && by.scalar) {
    parts.push(`SIMD was ${(simd.gflops / by.scalar.gflops).toFixed(1)}× the scalar build` + (by.js ? ` and ${(simd.gflops / by.js.gflops).toFixed(1)}× plain JavaScript.` : '.'));
  }
  return { html: parts.map((p) => `<p>${p}</p>`).join(''), notes };
}
