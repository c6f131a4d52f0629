// Threads: xattn's threaded build against onnxruntime-web's, at 1 and at 2 threads. This file, run as a script
// with --impl and --threads, is one process and prints one JSON line. onnxruntime-web sizes its thread pool once
// per process, and two pools in one process disturb each other (each keeps its threads polling for a while after
// a call, on the cores the other one needs), so each of its counts runs in a process of its own. xattn's helpers
// sleep between calls, so its counts share one process and are timed interleaved, call batch by call batch: its
// scaling is a ratio from the same seconds, as every other ratio of the bench. measureThreads, called by run.mjs,
// starts the processes one after the other, in rounds, and pairs the figures of each round. Same seeded inputs,
// every result checked against float64 before it is timed.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { makeProblem, parseShape, shapeText } from './inputs.mjs';
import { TOLERANCE, ortImpl, xattnImpl } from './peers.mjs';
import { agreement, referenceRows, sampleRows } from './reference.mjs';
import { interleave, median, warmUp } from './timing.mjs';
import { parallelPeakProbe } from './wasm-probes.mjs';

const self = fileURLToPath(import.meta.url);

// One process: every shape. 'xattn' times xattn at each of `counts` (the plain SIMD build at 1, the threaded
// build above) and the plain SIMD peak loop on as many threads at once, all interleaved: the arithmetic the
// host gave each count while the calls ran. 'ort' times onnxruntime-web at the one count it is given.
// Rows: { shape, gflops: { threads: GFLOP/s }, peakGflops: { threads: GFLOP/s }, errors }.
async function measureIn(which, counts, shapes, budgetMs) {
  // Keys name the count too (`xattn2`, `ortWeb1`): an error row then says which process and instance failed.
  const impls = which === 'xattn'
    ? counts.map((t) => ({ ...xattnImpl(true, t), key: `xattn${t}`, threads: t }))
    : [{ ...ortImpl(false, counts[0]), key: `ortWeb${counts[0]}`, threads: counts[0] }];
  const peaks = [];
  if (which === 'xattn') {
    for (const t of counts) {
      const probe = await parallelPeakProbe(t);
      peaks.push({ ...probe, key: `peak${t}`, threads: t, estimateMs: await warmUp(probe.run) });
    }
  }
  for (const impl of impls) {
    try {
      await impl.load();
    } catch (err) {
      impl.unavailable = String(err?.message ?? err).split('\n')[0];
    }
  }
  const rows = [];
  for (const dims of shapes) {
    const problem = makeProblem(dims);
    const sampled = sampleRows(problem.dims);
    const ref = referenceRows(problem, sampled);
    const entries = [];
    const errors = {};
    for (const impl of impls) {
      if (impl.unavailable) {
        errors[impl.key] = impl.unavailable;
        continue;
      }
      try {
        const run = await impl.prepare(problem);
        const check = agreement(await run(), problem, sampled, ref, impl.tolerance);
        if (!check.ok) throw new Error(`wrong result: ${check.why}`);
        entries.push({ key: impl.key, run, estimateMs: await warmUp(run) });
      } catch (err) {
        errors[impl.key] = String(err?.message ?? err).split('\n')[0];
      }
    }
    if (entries.length) entries.push(...peaks);
    const timings = await interleave(entries, { budgetMs });
    for (const impl of impls) await impl.release?.();
    const gflops = (key, flops) => (timings[key] ? flops / (timings[key].ms * 1e6) : null);
    rows.push({
      shape: [dims.BH, dims.L, dims.E],
      gflops: Object.fromEntries(impls.map((i) => [i.threads, gflops(i.key, problem.flops)])),
      peakGflops: Object.fromEntries(peaks.map((p) => [p.threads, gflops(p.key, p.flops)])),
      errors,
    });
  }
  for (const probe of peaks) await probe.close();
  return {
    which,
    threadsRun: Object.fromEntries(impls.map((i) => [i.threads, i.xa?.threads ?? null])),
    relaxedSimd: impls[0].xa?.relaxedSimd ?? null,
    rows,
  };
}

// Runs this file in each of `rounds` rounds: once for xattn at every count, once for onnxruntime-web at each count
// (the order reversed every other round), and pairs the rows:
// { counts, rounds, rows: [{ shape, xattn: { t: GFLOP/s }, ortWeb: { t: GFLOP/s }, scaling, vsOrtWeb, peak: { t: GFLOP/s },
// percentOfPeak: { t: % }, peakScaling, errors }] }: peak[t] is the peak loop on t threads at once, percentOfPeak[t]
// xattn's share of it, and peakScaling what the peak loop gained from the first count to the last (the scaling the
// host allowed, beside xattn's), all from xattn's process. Per shape, an onnxruntime-web process times its one
// call for budgetMs / rounds; xattn's process times a call and a peak loop per count, each for a third of that.
// Processes cannot be interleaved as the entries within one are, and a shared host's speed moves within a minute:
// with one process each, a slow minute fell on one side of a ratio only. So the GFLOP/s are the medians over
// the rounds, and the ratios the medians of each round's own ratio: xattn's scaling from one process, xattn ÷
// onnxruntime-web from processes minutes apart at most.
export function measureThreads(shapes, { log, counts = [1, 2], budgetMs = 6000, rounds = 3 }) {
  const runs = [];
  const flags = process.execArgv.filter((a) => a.startsWith('--experimental-wasm'));  // run.mjs's wasm flags carry over
  const perShape = budgetMs / rounds;
  for (let round = 0; round < rounds; round++) {
    const order = [{ which: 'xattn', counts, budget: (perShape * (2 * counts.length)) / 3 },
      ...counts.map((t) => ({ which: 'ort', counts: [t], budget: perShape }))];
    if (round % 2) order.reverse();
    for (const { which, counts: inProcess, budget } of order) {
      const what = which === 'xattn' ? `xattn SIMD at ${inProcess.join(' and ')} threads, interleaved` : `ort-web wasm at ${inProcess[0]} thread${inProcess[0] > 1 ? 's' : ''}`;
      log(`threads: round ${round + 1} of ${rounds}, ${what}, in a process of its own`);
      const out = execFileSync(process.execPath, [...flags, self, '--impl', which, '--threads', inProcess.join(','),
        '--budget-ms', String(Math.round(budget)), '--shapes', shapes.map(shapeText).join(',')],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      runs.push({ ...JSON.parse(out.trim().split('\n').pop()), round });
    }
  }
  const first = counts[0], last = counts[counts.length - 1];
  const rows = shapes.map((dims, i) => {
    const row = { shape: [dims.BH, dims.L, dims.E], xattn: {}, ortWeb: {}, errors: {} };
    // gflops[round][which][threads]; peaks[round][threads of the loop]
    const gflops = Array.from({ length: rounds }, () => ({ xattn: {}, ortWeb: {} }));
    const peaks = Array.from({ length: rounds }, () => ({}));
    for (const run of runs) {
      const r = run.rows[i];
      const which = run.which === 'xattn' ? 'xattn' : 'ortWeb';
      Object.assign(gflops[run.round][which], r.gflops);
      if (which === 'xattn') peaks[run.round] = r.peakGflops;
      Object.assign(row.errors, r.errors);
    }
    const medianOf = (values) => (values.every((v) => v != null) ? median(values) : null);
    for (const which of ['xattn', 'ortWeb']) {
      for (const t of counts) row[which][t] = medianOf(gflops.map((g) => g[which][t] ?? null));
    }
    const ratios = (f) => medianOf(gflops.map((g) => (g.xattn[last] != null && f(g) != null ? g.xattn[last] / f(g) : null)));
    row.scaling = ratios((g) => g.xattn[first]);
    row.vsOrtWeb = ratios((g) => g.ortWeb[last]);
    const share = (t) => (g, round) => (g.xattn[t] != null && peaks[round][t] ? (100 * g.xattn[t]) / peaks[round][t] : null);
    row.peak = Object.fromEntries(counts.map((t) => [t, medianOf(peaks.map((p) => p[t] ?? null))]));
    row.percentOfPeak = Object.fromEntries(counts.map((t) => [t, medianOf(gflops.map(share(t)))]));
    row.peakScaling = medianOf(peaks.map((p) => (p[last] && p[first] ? p[last] / p[first] : null)));
    return row;
  });
  const xattnRun = runs.find((r) => r.which === 'xattn' && r.round === 0);
  return {
    counts,
    rounds,
    xattnThreads: xattnRun?.threadsRun ?? {},
    xattnRelaxedSimd: xattnRun?.relaxedSimd ?? null,
    rows,
  };
}

if (process.argv[1] === self) {
  const { values } = parseArgs({
    options: { impl: { type: 'string' }, threads: { type: 'string' }, shapes: { type: 'string' }, 'budget-ms': { type: 'string' } },
  });
  const result = await measureIn(values.impl, values.threads.split(',').map(Number), values.shapes.split(',').map(parseShape), Number(values['budget-ms']));
  console.log(JSON.stringify(result));
  process.exit(0);  // onnxruntime keeps handles open
}
