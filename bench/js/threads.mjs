// Threads: xattn's threaded build against onnxruntime-web's, at 1 and at 2 threads. Each implementation and count
// runs in a process of its own (this file, run as a script with --impl and --threads, prints one JSON line):
// onnxruntime-web sizes its thread pool once per process, and two pools in one process disturb each other (each
// keeps its threads polling for a while after a call, on the cores the other one needs). measureThreads, called
// by run.mjs, starts them one after the other and pairs the figures. Same seeded inputs, every result checked
// against float64 before it is timed.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { makeProblem, parseShape, shapeText } from './inputs.mjs';
import { TOLERANCE, ortImpl, xattnImpl } from './peers.mjs';
import { agreement, referenceRows, sampleRows } from './reference.mjs';
import { interleave, warmUp } from './timing.mjs';

const self = fileURLToPath(import.meta.url);

// One process: every shape, one implementation ('xattn' or 'ort') at `threads`.
async function measureIn(which, threads, shapes, budgetMs) {
  const impls = [which === 'xattn' ? xattnImpl(true, threads) : ortImpl(false, threads)];
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
    const timings = await interleave(entries, { budgetMs });
    for (const impl of impls) await impl.release?.();
    const gflops = (key) => (timings[key] ? problem.flops / (timings[key].ms * 1e6) : null);
    rows.push({ shape: [dims.BH, dims.L, dims.E], gflops: gflops(impls[0].key), errors });
  }
  return { which, threads, xattnThreads: impls[0].xa?.threads ?? null, relaxedSimd: impls[0].xa?.relaxedSimd ?? null, rows };
}

// Runs this file once per implementation and thread count, and pairs the rows:
// { counts, rows: [{ shape, xattn: { t: GFLOP/s }, ortWeb: { t: GFLOP/s }, errors }] }.
export function measureThreads(shapes, { log, counts = [1, 2], budgetMs = 6000 }) {
  const runs = [];
  for (const threads of counts) {
    for (const which of ['xattn', 'ort']) {
      log(`threads: ${which === 'xattn' ? 'xattn SIMD' : 'ort-web wasm'} at ${threads} thread${threads > 1 ? 's' : ''}, in a process of its own`);
      // The engine's wasm flags carry over (run.mjs runs with --experimental-wasm-relaxed-simd).
      const flags = process.execArgv.filter((a) => a.startsWith('--experimental-wasm'));
      const out = execFileSync(process.execPath, [...flags, self, '--impl', which, '--threads', String(threads),
        '--budget-ms', String(budgetMs), '--shapes', shapes.map(shapeText).join(',')],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
      runs.push(JSON.parse(out.trim().split('\n').pop()));
    }
  }
  const rows = shapes.map((dims, i) => {
    const row = { shape: [dims.BH, dims.L, dims.E], xattn: {}, ortWeb: {}, errors: {} };
    for (const run of runs) {
      const r = run.rows[i];
      row[run.which === 'xattn' ? 'xattn' : 'ortWeb'][run.threads] = r.gflops;
      for (const [key, why] of Object.entries(r.errors)) row.errors[`${key} t=${run.threads}`] = why;
    }
    return row;
  });
  const xattnRuns = runs.filter((r) => r.which === 'xattn');
  return {
    counts,
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
