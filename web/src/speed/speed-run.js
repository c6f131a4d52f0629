// The speed comparison, in the side worker: the attention on the lab's settings through the package's SIMD
// build on 1 thread and on every thread, its scalar build and the float64 reference in plain JavaScript,
// each checked against the first that runs, after the wasm SIMD mul+add peak of one thread (the chart's
// ceiling) is measured in this same thread. The inputs are generated again here, so the finished result
// stays where it is.
import { prepare } from '../lesson/attend.js';
import { attentionReference } from '../shared/attention-reference.js';
import { attentionFlops, gflopsPerSecond, maxAbsDiff, timeRuns } from '../shared/timing.js';
import { SPEED_RUNNERS, oneThreadReason, threadsName } from './speed-threads.js';
import { measureSimdPeak } from './simd-peak.js';

const now = () => performance.now();

// instance(kind) → Promise of the package instance for a runner's kind ('simd', 'threads', 'scalar').
// An engine without wasm SIMD, or a page without threads, gets a row saying why instead of a failed or
// duplicated comparison.
export async function runSpeed(payload, progress, instance) {
  const { dims } = payload;
  const { query, key, value, options } = prepare(payload);
  const flops = attentionFlops(dims);
  const steps = SPEED_RUNNERS.length + 1;
  progress(0, steps, 'measuring the wasm SIMD peak');
  const peak = measureSimdPeak({ clock: now });
  const results = [];
  let reference = null;
  for (let n = 0; n < SPEED_RUNNERS.length; n++) {
    const r = SPEED_RUNNERS[n];
    const step = (label) => progress(n + 1, steps, label);
    step(`timing ${r.name}`);
    let fn;
    let threads = 1;
    if (r.kind === 'js') {
      fn = () => attentionReference(query, key, value, { ...options, needWeights: false });
    } else {
      let lib;
      try {
        lib = await instance(r.kind);
      } catch (err) {
        results.push({ name: r.name, kind: r.kind, unavailable: err.message });
        continue;
      }
      if (r.kind === 'threads' && lib.threads === 1) {
        const why = oneThreadReason({ isolated: self.crossOriginIsolated === true, cores: navigator.hardwareConcurrency, simd: lib.simd });
        results.push({ name: r.name, kind: r.kind, threads: 1, unavailable: why });
        continue;
      }
      threads = lib.threads;
      const libOptions = { ...options, needWeights: false };
      fn = () => lib.scaledDotProductAttention(query, key, value, libOptions);
    }
    const name = r.kind === 'threads' ? threadsName(threads) : r.name;
    const out = fn().output.data;
    const maxDiff = reference ? maxAbsDiff(out, reference) : null;
    reference ??= out;
    const t = timeRuns(fn, { clock: now, onRun: (k) => step(`timing ${name}, batch ${k}`) });
    results.push({ name, kind: r.kind, threads, ms: t.median, calls: t.runs * t.calls, gflops: gflopsPerSecond(flops, t.median), maxDiff });
  }
  return { flops, dims, results, peak, cores: navigator.hardwareConcurrency ?? null };
}
