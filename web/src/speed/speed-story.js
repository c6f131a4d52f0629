// What the speed comparison's figures say, in sentences that follow them (pure): how far each implementation
// is from the peak and from the others, and why the order is what it is at this size: SIMD ahead of the scalar
// build, level with it or behind it (level or behind, with plain JavaScript ahead too, where each call's fixed
// cost outweighs its arithmetic), and more threads faster than one, level or slower.
import { formatNumber } from '../shared/shapes.js';

const fmtG = (g) => (g >= 10 ? g.toFixed(1) : g.toFixed(2));
// Timings on a shared machine move by a few percent from one run to the next: two figures within this factor of
// each other are said to be about the same, never one "faster" than the other.
export const EVEN = 1.05;
// Below this many flops a call's fixed cost (entering WebAssembly, copying Q, K, V in and the output out,
// setting up the kernels) is a large part of its time.
const SMALL_FLOPS = 1e8;

// result: the worker's speed answer { flops, results, peak, cores }; threads: threadsSummary's line (or null).
// Returns { html, notes }: notes names the cases explained, in order: 'scalar' (the scalar build ahead of SIMD),
// 'simd' (SIMD ahead of it) or 'even' (neither); 'js' (plain JavaScript ahead of SIMD); 'threads' (more threads
// slower than 1), 'threads-help' (faster) or 'threads-even' (neither).
export function speedStory({ flops, results, peak, cores }, threads) {
  const by = Object.fromEntries(results.filter((r) => !r.unavailable).map((r) => [r.kind, r]));
  if (!by.simd) return { html: '<p>The SIMD build did not run here, so there is nothing to compare it with.</p>', notes: [] };
  const told = [figures(by, flops, peak), simdAgainstScalar(by, flops), javascriptAhead(by, flops), threadsStory(threads, cores, flops)]
    .filter(Boolean);
  return { html: told.map((t) => `<p>${t.text}</p>`).join(''), notes: told.map((t) => t.note).filter(Boolean) };
}

// Each implementation's GFLOP/s, SIMD's as a share of the peak.
function figures(by, flops, peak) {
  const share = peak ? `, ${((100 * by.simd.gflops) / peak).toFixed(0)}% of this browser's peak` : '';
  return {
    text:
      `The SIMD build on 1 thread ran at <strong>${fmtG(by.simd.gflops)} GFLOP/s</strong>${share}` +
      (by.scalar ? `; the scalar build at ${fmtG(by.scalar.gflops)}` : '') +
      (by.js ? `; plain JavaScript (the float64 reference) at ${fmtG(by.js.gflops)}` : '') +
      ` on ${formatNumber(flops)} flops per call.`,
  };
}

// Why SIMD does not lead: on a short call, what every call pays whatever its size; on a long one, where the
// arithmetic dominates, nothing about the call itself.
const whySimdDoesNotLead = (flops) =>
  flops < SMALL_FLOPS
    ? `At ${formatNumber(flops)} flops a call is short, and much of its time is what every call costs whatever its size: ` +
      `entering WebAssembly, copying Q, K and V in and the output out, setting up the kernels. SIMD makes only the arithmetic faster, ` +
      `so it has little to speed up here; where the arithmetic dominates (try L = S = 1024) it leads.`
    : `At ${formatNumber(flops)} flops per call the arithmetic dominates, and SIMD, which makes it faster, should lead; ` +
      `something else running on the machine while this was timed can upset the order: run it again when the machine is idle.`;

// The SIMD build against the scalar one, whichever is ahead.
function simdAgainstScalar({ simd, scalar }, flops) {
  if (!scalar) return null;
  const figures = `(${fmtG(scalar.gflops)} against ${fmtG(simd.gflops)} GFLOP/s)`;
  if (scalar.gflops > EVEN * simd.gflops) {
    return { note: 'scalar', text: `The scalar build was faster than SIMD here ${figures}. ${whySimdDoesNotLead(flops)}` };
  }
  if (simd.gflops <= EVEN * scalar.gflops) {
    return { note: 'even', text: `The scalar build ran about as fast as SIMD here ${figures}. ${whySimdDoesNotLead(flops)}` };
  }
  const times = simd.gflops / scalar.gflops;
  return {
    note: 'simd',
    text:
      `SIMD was ${times.toFixed(1)}× the scalar build: each of its multiplications and additions works on four float32 numbers ` +
      `at once (wasm's f32x4) where the scalar build's work on one.` +
      (times < 4
        ? ` It stays short of 4× because not every step is such arithmetic: the softmax's exponentials, reading Q, K and V ` +
          `from memory and each call's fixed cost gain less or nothing.`
        : ''),
  };
}

// Plain JavaScript ahead of the SIMD build: it copies nothing.
function javascriptAhead({ simd, scalar, js }, flops) {
  if (!js || js.gflops <= EVEN * simd.gflops) return null;
  const saidWhy = scalar && EVEN * scalar.gflops >= simd.gflops;
  return {
    note: 'js',
    text:
      `Plain JavaScript was faster than the SIMD build here (${fmtG(js.gflops)} against ${fmtG(simd.gflops)} GFLOP/s): it works on the page's ` +
      `arrays where they are and copies nothing.` + (saidWhy ? '' : ` ${whySimdDoesNotLead(flops)}`),
  };
}

// All threads against 1, whichever is ahead; nothing when the page ran 1 thread only (threadsSummary says why).
function threadsStory(threads, cores, flops) {
  if (!threads?.ratio) return null;
  const { ratio, threads: n } = threads;
  if (ratio > EVEN) return threadsHelp(n, ratio, cores);
  const slower = ratio < 1 / EVEN;
  const said = slower ? `were slower than 1 thread here (${ratio.toFixed(2)}× as fast)` : `ran about as fast as 1 thread here (${ratio.toFixed(2)}×)`;
  return {
    note: slower ? 'threads' : 'threads-even',
    text:
      `${n} threads ${said}. A thread helps only with a core to itself: ${sharedCores(cores)}, and every call also pays for waking ` +
      `the other threads and waiting for the last of them.` +
      (flops < SMALL_FLOPS ? ' On a call this small that cost is most of the time.' : ' Run it again when the machine is idle.'),
  };
}

const sharedCores = (cores) =>
  `this browser reports ${cores ?? 'an unknown number of'} core${cores === 1 ? '' : 's'}, shared with everything else running on the machine`;

function threadsHelp(n, ratio, cores) {
  return {
    note: 'threads-help',
    text:
      `${n} threads were ${ratio.toFixed(2)}× as fast as 1 thread: the call's work is cut into tasks that the threads take in turn, ` +
      `each on a core of its own.` +
      (ratio < n
        ? ` It stays short of ${n}× because every call pays for waking the other threads and waiting for the last of them, and ` +
          `${sharedCores(cores)}.`
        : ''),
  };
}
