// Timing for the speed panel: the same attention through the package's SIMD build (on 1 thread and on all),
// its scalar build and plain JS. Arithmetic: Q Kᵀ is 2·L·S·E flops and weights·V is 2·L·S·Ev per (batch,
// head), so flops = 2·B·H·L·S·(E + Ev), which is the familiar 4·B·H·L·S·E when Ev = E. Softmax is not counted.

export function attentionFlops({ B, H = 1, L, S, E, Ev, useHeads = false }) {
  return 2 * B * (useHeads ? H : 1) * L * S * (E + Ev);
}

export function gflopsPerSecond(flops, ms) {
  return ms > 0 ? flops / (ms * 1e6) : NaN;
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

// Runs fn once to warm up (compilation, first allocation), then times batches of `calls` calls each.
// Browsers round performance.now() to 0.1 ms or coarser (without cross-origin isolation), so a fast call
// is repeated, doubling `calls` until one batch takes minBatchMs. Batches repeat until there are minRuns
// of them and minMs of total time, or maxRuns. A warm-up longer than minMs is the only measurement, so a
// slow case does not repeat for minutes. Returns { median (ms per call), runs, calls, times }.
export function timeRuns(fn, { clock, minBatchMs = 20, minRuns = 5, minMs = 300, maxRuns = 50, onRun = () => {} }) {
  const batch = (calls) => {
    const start = clock();
    for (let k = 0; k < calls; k++) fn();
    return clock() - start;
  };
  const warm = batch(1);
  if (warm >= minMs) return { median: warm, runs: 1, calls: 1, times: [warm] };
  let calls = 1;
  let t = warm;
  while (t < minBatchMs) {
    calls *= 2;
    t = batch(calls);
  }
  const times = [];
  let total = 0;
  while (times.length < maxRuns && (times.length < minRuns || total < minMs)) {
    const b = batch(calls);
    times.push(b / calls);
    total += b;
    onRun(times.length);
  }
  return { median: median(times), runs: times.length, calls, times };
}

// A time in ms as the panel prints it: whole from 100 ms, two decimals from 1 ms, three significant digits below.
export const formatMs = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(2) : String(Number(ms.toPrecision(3))));

// Largest |a − b| over two equally long arrays: how far an implementation is from the reference.
export function maxAbsDiff(a, b) {
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]);
    if (d > m || Number.isNaN(d)) m = d;
  }
  return m;
}
