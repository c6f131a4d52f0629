// The speed comparison's threads: which instances it times, their names, why a page runs 1 thread only,
// and the sentence comparing 1 thread with all of them. Pure: worker.js times, speed-view.js shows.
import { formatMs } from '../shared/timing.js';

// In the order they run; the first that runs is the reference the others' max |Δ| is measured from.
// 'simd' is createXattn({ simd: true, threads: 1 }); 'threads' is createXattn() (every thread when the page is
// cross-origin isolated, at most 4); 'scalar' is createXattn({ simd: false }), which has no threads.
export const SPEED_RUNNERS = [
  { name: threadsName(1), kind: 'simd' },
  { name: 'WebAssembly SIMD, all threads', kind: 'threads' },
  { name: 'WebAssembly scalar', kind: 'scalar' },
  { name: 'plain JavaScript', kind: 'js' },
];

export function threadsName(threads) {
  return `WebAssembly SIMD, ${threads} thread${threads === 1 ? '' : 's'}`;
}

// Why createXattn() gave 1 thread here. isolated: crossOriginIsolated; cores: navigator.hardwareConcurrency;
// simd: whether the engine has wasm SIMD (the threaded build is SIMD only).
export function oneThreadReason({ isolated, cores, simd }) {
  if (!isolated) {
    return 'this page is not cross-origin isolated (threads need the headers Cross-Origin-Opener-Policy: same-origin ' +
      'and Cross-Origin-Embedder-Policy: require-corp)';
  }
  if (!simd) return 'this browser has no WebAssembly SIMD, which the threaded build needs';
  if (!(cores > 1)) return `this browser reports ${cores ?? 'no'} core${cores === 1 ? '' : 's'} (navigator.hardwareConcurrency)`;
  return 'the package chose 1 thread here';
}

// Below this many flops a call is mostly its fixed cost, and there is little to share between threads.
const SMALL_FLOPS = 1e8;

// The 1-thread row against the all-threads row of a speed answer ({ flops, results }): null when the 1-thread
// row did not run; else { text, threads, oneMs, allMs, ratio }, where ratio = oneMs / allMs (null, with the
// reason in the text, when the page runs 1 thread only).
export function threadsSummary({ flops, results }) {
  const one = results.find((r) => r.kind === 'simd');
  const all = results.find((r) => r.kind === 'threads');
  if (!one || one.unavailable || !all) return null;
  if (all.unavailable) {
    return { text: `1 thread only: ${all.unavailable}.`, threads: 1, oneMs: one.ms, allMs: null, ratio: null };
  }
  const ratio = one.ms / all.ms;
  const small = flops < SMALL_FLOPS ? ' At this size there is little to share between threads; try L = S = 1024.' : '';
  return {
    text:
      `${all.threads} threads: ${formatMs(all.ms)} ms per call, against ${formatMs(one.ms)} ms on 1 thread: ` +
      `${ratio.toFixed(2)}× as fast (at most ${all.threads}×).${small}`,
    threads: all.threads,
    oneMs: one.ms,
    allMs: all.ms,
    ratio,
  };
}
