// Threads: xattn's threaded build against onnxruntime-web's, at 1 and at 2 threads. Each implementation and count
// runs in a process of its own (this file, run as a script with --impl and --threads, prints one JSON line):
// onnxruntime-web sizes its thread pool once per process, and two pools in one process disturb each other (each
// keeps its threads polling for a while after a call, on the cores the other one needs). measureThreads, called
// by run.mjs, starts them one after the other, in rounds, and pairs the figures of each round. Same seeded inputs,
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

// One process: every shape, one implementation ('xattn' or 'ort') at `threads`. xattn's processes also time the
// plain SIMD peak loop on one thread and on `threads` threads at once, as entries of each shape's interleave:
// the arithmetic the host gave each count while the calls ran.
async function measureIn(which, threads, shapes, budgetMs) {
  const impls = [which === 'xattn' ? xattnImpl(true, threads) : ortImpl(false, threads)];
  const counts = [...new Set([1, threads])];
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
    const peakGflops = Object.fromEntries(peaks.map((p) => [p.threads, gflops(p.key, p.flops)]));
    rows.push({ shape: [dims.BH, dims.L, dims.E], gflops: gflops(impls[0].key, problem.flops), peakGflops, errors });
  }
  for (const probe of peaks) await probe.close();
  return { which, threads, xattnThreads: impls[0].xa?.threads ?? null, relaxedSimd: impls[0].xa?.relaxedSimd ?? null, rows };
}

// Runs this file once per implementation and thread count in each of `rounds` rounds (the order reversed every other
// round), each process with budgetMs / rounds per shape, and pairs the rows:
// { counts, rounds, rows: [{ shape, xattn: { t: GFLOP/s }, ortWeb: { t: GFLOP/s }, scaling, vsOrtWeb, peak: { t: GFLOP/s },
// percentOfPeak: { t: % }, peakScaling, errors }] }: peak[t] is the peak loop on t threads at once in xattn's
// process at t threads, percentOfPeak[t] xattn's share of it, and peakScaling what the peak loop gained from the
// first count to the last inside the last count's process (the scaling the host allowed, beside xattn's).
// Processes cannot be interleaved as the implementations within one are, and this host's speed moved by up to 2×
// within a minute: with one process each, a slow minute fell on one side of a ratio only. So the GFLOP/s are the
// medians over the rounds, and the ratios (xattn at the last count ÷ xattn at the first, ÷ onnxruntime-web at the
// last) the medians of each round's own ratio, from processes minutes apart at most.
export function measureThreads(shapes, { log, counts = [1, 2], budgetMs = 6000, rounds = 3 }) {
  const runs = [];
  const flags = process.execArgv.filter((a) => a.startsWith('--experimental-wasm'));  // run.mjs's wasm flags carry over
  for (let round = 0; round < rounds; round++) {
    const order = counts.flatMap((threads) => ['xattn', 'ort'].map((which) => ({ which, threads })));
    if (round % 2) order.reverse();
    for (const { which, threads } of order) {
      log(`threads: round ${round + 1} of ${rounds}, ${which === 'xattn' ? 'xattn SIMD' : 'ort-web wasm'} at ${threads} thread${threads > 1 ? 's' : ''}, in a process of its own`);
      const out = execFileSync(process.execPath, [...flags, self, '--impl', which, '--threads', String(threads),
        '--budget-ms', String(Math.round(budgetMs / rounds)), '--shapes', shapes.map(shapeText).join(',')],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      runs.push({ ...JSON.parse(out.trim().split('\n').pop()), round });
    }
  }
  const first = counts[0], last = counts[counts.length - 1];
  const rows = shapes.map((dims, i) => {
    const row = { shape: [dims.BH, dims.L, dims.E], xattn: {}, ortWeb: {}, errors: {} };
    // gflops[round][which][threads]; peaks[round][threads of the process][threads of the loop]
    const gflops = Array.from({ length: rounds }, () => ({ xattn: {}, ortWeb: {} }));
    const peaks = Array.from({ length: rounds }, () => ({}));
    for (const run of runs) {
      const r = run.rows[i];
      gflops[run.round][run.which === 'xattn' ? 'xattn' : 'ortWeb'][run.threads] = r.gflops;
      if (run.which === 'xattn') peaks[run.round][run.threads] = r.peakGflops ?? {};
      for (const [key, why] of Object.entries(r.errors)) row.errors[`${key} t=${run.threads}`] = why;
    }
    const medianOf = (values) => (values.every((v) => v != null) ? median(values) : null);
    for (const which of ['xattn', 'ortWeb']) {
      for (const t of counts) row[which][t] = medianOf(gflops.map((g) => g[which][t]));
    }
    const ratios = (f) => medianOf(gflops.map((g) => (g.xattn[last] != null && f(g) != null ? g.xattn[last] / f(g) : null)));
    row.scaling = ratios((g) => g.xattn[first]);
    row.vsOrtWeb = ratios((g) => g.ortWeb[last]);
    const share = (t) => (g, round) => (g.xattn[t] != null && peaks[round][t]?.[t] ? (100 * g.xattn[t]) / peaks[round][t][t] : null);
    row.peak = Object.fromEntries(counts.map((t) => [t, medianOf(peaks.map((p) => p[t]?.[t] ?? null))]));
    row.percentOfPeak = Object.fromEntries(counts.map((t) => [t, medianOf(gflops.map(share(t)))]));
    row.peakScaling = medianOf(peaks.map((p) => (p[last]?.[last] && p[last]?.[first] ? p[last][last] / p[last][first] : null)));
    return row;
  });
  const xattnRuns = runs.filter((r) => r.which === 'xattn' && r.round === 0);
  return {
    counts,
    rounds,
    xattnThreads: Object.fromEntries(xattnRuns.map((r) => [r.threads, r.xattnThreads])),
    xattnRelaxedSimd: xattnRuns[0]?.relaxedSimd ?? null,
    rows,
  };
}

if (process.argv[1] === self) {
  const { values } = parseArgs({
    options: { impl: { type: 'string' }, threads: { type: 'string' }, shapes: { type: 'string' }, 'budget-ms': { type: 'string' } },
  });
  const result = await measureIn(values.impl, Number(values.threads), values.shapes.split(',').map(parseShape), Number(values['budget-ms']));
  console.log(JSON.stringify(result));
  process.exit(0);  // onnxruntime keeps handles open
}
