// A sliding window's time against the full call's: scaledDotProductAttention at B·H = 1, L = S = 8192, E = 64,
// causal with a window of 512 keys a row (window: { left: 511 }) against the call with no rule (every cell),
// xattn's SIMD build, one thread.
// The kernels skip the key tiles no row of a query tile sees, so the windowed call's share of the full call's time
// should follow its share of visible cells; printed as that ratio (the target is at most 1.3). A call from JS also
// copies its 8 MiB of inputs and output, whatever the window: timed as a window of one key, and printed as the
// ratio of the two calls less that part (what the kernels take).
//
//   node bench/js/window.mjs [--budget-ms 6000]     (also a section of bench/js/run.mjs)
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { normals } from './inputs.mjs';
import { loadXattn } from './peers.mjs';
import { warmUpAndInterleave } from './timing.mjs';

export const WINDOW_DIMS = { L: 8192, E: 64, width: 512 };

export async function measureWindow({ log, budgetMs = 6000 } = {}) {
  const { L, E, width } = WINDOW_DIMS;
  const xa = await loadXattn(true, 1, false);
  const x = { data: normals(L * E, 11), shape: [1, L, E] };
  const full = {};
  const windowed = { isCausal: true, window: { left: width - 1 } };
  const times = await warmUpAndInterleave([
    { key: 'full', run: () => xa.scaledDotProductAttention(x, x, x, full) },
    { key: 'windowed', run: () => xa.scaledDotProductAttention(x, x, x, windowed) },
    { key: 'oneKey', run: () => xa.scaledDotProductAttention(x, x, x, { isCausal: true, window: { left: 0 } }) },
  ], { budgetMs, warmUpMs: 200 });
  let visible = 0;  // cells a row's window covers: min(i + 1, width) keys of row i
  for (let i = 0; i < L; i++) visible += Math.min(i + 1, width);
  const cells = visible / (L * L);
  const time = times.windowed.ms / times.full.ms;
  const fixed = times.oneKey.ms;
  const kernels = (times.windowed.ms - fixed) / (times.full.ms - fixed);
  log?.(`sliding window, xattn SIMD, 1×${L}×${E}, causal, ${width} keys a row: every cell ${times.full.ms.toFixed(1)} ms, `
    + `windowed ${times.windowed.ms.toFixed(2)} ms (medians): ${time.toFixed(4)} of the time for ${cells.toFixed(4)} `
    + `of the cells, ${(time / cells).toFixed(2)}× the cells' share; less the part a one-key window takes too `
    + `(${fixed.toFixed(2)} ms: copies, planning), ${(kernels / cells).toFixed(2)}×`);
  xa.dispose?.();
  return {
    fullMs: times.full.ms, windowedMs: times.windowed.ms, oneKeyMs: fixed, cellShare: cells, timeShare: time,
    ratio: time / cells, kernelRatio: kernels / cells,
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({ options: { 'budget-ms': { type: 'string', default: '6000' } } });
  await measureWindow({ log: console.log, budgetMs: Number(values['budget-ms']) });
}
