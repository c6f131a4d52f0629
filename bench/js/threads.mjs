// Threads: xattn's threaded build against onnxruntime-web's, at 1 and at 2 threads. onnxruntime-web sizes its
// thread pool once per process, so each count runs in a process of its own (this file, run as a script with
// --threads N, prints one JSON line); measureThreads, called by run.mjs, starts them one after the other and
// pairs the figures. Same seeded inputs, every result checked against float64 before it is timed.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { makeProblem, parseShape, shapeText } from './inputs.mjs';
import { TOLERANCE, ortImpl, xattnImpl } from './peers.mjs';
import { agreement, referenceRows, sampleRows } from './reference.mjs';
import { interleave, warmUp } from './timing.mjs';

const self = fileURLToPath(import.meta.url);

// One process: every shape, xattn SIMD and ort-web at `threads`, interleaved per shape.
async function measureIn(threads, shapes, budgetMs) {
  const impls = [xattnImpl(true, threads), ortImpl(false, threads)];
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
    rows.push({ shape: [dims.BH, dims.L, dims.E], xattnGflops: gflops('xattnSimd'), ortWebGflops: gflops('ortWeb'), errors });
  }
  return { threads, xattnThreads: impls[0].xa?.threads ?? null, rows };
}

// Runs this file once per thread count and pairs the rows: { counts, rows: [{ shape, xattn: {t: GFLOP/s}, ortWeb: {…} }] }.
export function measureThreads(shapes, { log, counts = [1, 2], budgetMs = 6000 }) {
  const runs = counts.map((threads) => {
    log(`threads: xattn SIMD and ort-web wasm at ${threads} thread${threads > 1 ? 's' : ''}, in a process of their own`);
    const out = execFileSync(process.execPath, [self, '--threads', String(threads), '--budget-ms', String(budgetMs),
      '--shapes', shapes.map(shapeText).join(',')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    return JSON.parse(out.trim().split('\n').pop());
  });
  const rows = shapes.map((dims, i) => {
    const row = { shape: [dims.BH, dims.L, dims.E], xattn: {}, ortWeb: {}, errors: {} };
    for (const run of runs) {
      const r = run.rows[i];
      row.xattn[run.threads] = r.xattnGflops;
      row.ortWeb[run.threads] = r.ortWebGflops;
      for (const [key, why] of Object.entries(r.errors)) row.errors[`${key} t=${run.threads}`] = why;
    }
    return row;
  });
  return { counts, xattnThreads: Object.fromEntries(runs.map((r) => [r.threads, r.xattnThreads])), rows };
}

if (process.argv[1] === self) {
  const { values } = parseArgs({ options: { threads: { type: 'string' }, shapes: { type: 'string' }, 'budget-ms': { type: 'string' } } });
  const result = await measureIn(Number(values.threads), values.shapes.split(',').map(parseShape), Number(values['budget-ms']));
  console.log(JSON.stringify(result));
  process.exit(0);  // onnxruntime keeps handles open
}
