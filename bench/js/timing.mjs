// Interleaved timing. The machine is shared and noisy, and its noise comes in bursts of seconds, so every
// implementation's samples are spread evenly over the whole measurement of a shape instead of taken in a
// block: a burst then hits a few samples of each implementation alike, and the median discards them.
// Fast implementations get more samples than slow ones (plain JS takes seconds per call at the big shapes),
// all within one time budget per shape. Each sample is a batch of calls long enough for the clock (or one call
// after an untimed preparation, for entries that ask for it); results are the median per-call time.

export function median(values) {
  const s = [...values].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

// A warm-up's estimate: the median of its later half, when the JIT has settled.
const laterHalfMedian = (times) => median(times.slice(times.length >> 1));

// Per-call ms of `calls` back-to-back calls, wall clock and this process's CPU time (which a busy machine's
// other processes do not inflate: a call preempted for them is not charged for the wait; for implementations
// that compute on this thread alone). Awaiting a synchronous result costs a microtask, well under a
// microsecond: negligible against the smallest call here (~100 µs).
async function sampleBoth(run, calls) {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  for (let c = 0; c < calls; c++) await run();
  const wall = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  return { ms: wall / calls, cpuMs: (cpu.user + cpu.system) / 1000 / calls };
}
async function sample(run, calls) {
  return (await sampleBoth(run, calls)).ms;
}

// Warm-up before timing: JIT-compiled JS layers (tfjs's above all) run several times slower for their first
// few hundred calls, so each implementation runs for at least minMs and minCalls calls. Returns the
// per-call estimate (median of the later half of the calls) that sizes the batches.
export async function warmUp(run, { minMs = 400, minCalls = 2 } = {}) {
  const times = [];
  const t0 = performance.now();
  while (times.length < minCalls || performance.now() - t0 < minMs) times.push(await sample(run, 1));
  return laterHalfMedian(times);
}

// entries: [{ key, run, estimateMs, before?, beforeMs? }]. Each implementation gets an equal share of budgetMs, as
// samples of at least minSampleMs (never fewer than minSamples, never more than maxSamples); sample k of n is
// placed at (k + ½)/n of the way through, and all samples run in that order. An entry with `before` has samples
// of one call each, each after a call of before() that is not timed (taking beforeMs of the share): a step of a
// cache bigger than a core's L2 would otherwise read, from its second call on, what the first left in L3.
export async function interleave(entries, { budgetMs = 10000, minSampleMs = 15, minSamples = 5, maxSamples = 41 } = {}) {
  const share = budgetMs / Math.max(1, entries.length);
  const schedule = [];
  const plan = entries.map((e, i) => {
    const calls = e.before ? 1 : Math.max(1, Math.ceil(minSampleMs / Math.max(e.estimateMs, 1e-3)));
    const perSample = calls * e.estimateMs + (e.before ? e.beforeMs : 0);
    const n = Math.max(minSamples, Math.min(maxSamples, Math.floor(share / perSample)));
    // The tiny per-implementation offset breaks ties without always favouring the same one.
    for (let k = 0; k < n; k++) schedule.push({ at: (k + 0.5) / n + i * 1e-9, i });
    return { ...e, calls, samples: [] };
  });
  schedule.sort((a, b) => a.at - b.at);
  for (const { i } of schedule) {
    const p = plan[i];
    if (p.before) await p.before();
    p.samples.push(await sampleBoth(p.run, p.calls));
  }
  return Object.fromEntries(plan.map((p) => [p.key, {
    ms: median(p.samples.map((x) => x.ms)), cpuMs: median(p.samples.map((x) => x.cpuMs)),
    samples: p.samples.length, callsPerSample: p.calls,
  }]));
}

// interleave() for entries without estimates: each is warmed up first (warmUp, for at least warmUpMs), which also
// gives the estimate that sizes its batches.
export async function warmUpAndInterleave(entries, { budgetMs, warmUpMs = 400 } = {}) {
  const withEstimates = [];
  for (const e of entries) {
    if (!e.before) {
      withEstimates.push({ ...e, estimateMs: await warmUp(e.run, { minMs: warmUpMs }) });
      continue;
    }
    const beforeTimes = [], runTimes = [];  // warmed up as timed: each call after before()
    await warmUp(async () => {
      beforeTimes.push(await sample(e.before, 1));
      runTimes.push(await sample(e.run, 1));
    }, { minMs: warmUpMs });
    withEstimates.push({ ...e, estimateMs: laterHalfMedian(runTimes), beforeMs: laterHalfMedian(beforeTimes) });
  }
  return interleave(withEstimates, { budgetMs });
}
