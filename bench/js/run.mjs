// npm run bench: xattn's wasm builds (plain SIMD, relaxed SIMD, scalar) against onnxruntime-web, tfjs-backend-wasm
// and plain JS (onnxruntime-node as a native reference), one Node process, one thread each, identical seeded
// inputs, every result checked against a float64 reference before anything is timed. Prints a table, the
// relaxed build against the plain one per shape, and writes this run into bench/results.json (in place of the
// last run on the same machine kind).
//
//   node bench/js/run.mjs [--shapes 1x128x64,8x256x64] [--no-streaming] [--no-training] [--no-decode] [--no-threads]
//                         [--no-out-reuse] [--no-window] [--out file] [--budget-ms 10000]
//
// The training section (bench/js/training.mjs) adds the SDPA backward against the forward per shape,
// MultiheadAttention's forward and backward beside PyTorch's, and masked against unmasked MHA. The decoding
// section (bench/js/decode.mjs) times KV-cache steps against their bound, a full copy and onnxruntime-web. The
// threads section (bench/js/threads.mjs) runs xattn's threaded build and onnxruntime-web at 1 and at 2 threads,
// xattn's counts interleaved in one process beside the peak loop on as many threads, onnxruntime-web's each in a
// process of its own. The output-reuse section (bench/js/out-reuse.mjs) times xattn with options.out against
// fresh result arrays, from L = 512 up. The window section (bench/js/window.mjs) times a causal call with a sliding
// window of 512 keys against the full one at L = S = 8192, as a share of the cells it sees.
//
// Shapes are B·H × L × E with S = L and Ev = E (legend: B batch, H heads, L query length, S key length,
// E query/key dim, Ev value dim). FLOPs = 4·B·H·L·S·E. With --shapes the JSON is written only when --out is given,
// so a partial run never replaces the published results.
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { makeProblem, parseShape, shapeText } from './inputs.mjs';
import { TOLERANCE, loadImplementations } from './peers.mjs';
import { agreement, agreementAll, referenceRows, sampleRows } from './reference.mjs';
import { formatRefusals, formatRelaxed, formatTable, formatThreads, shapeRecord, streamingSummary, writeResults } from './report.mjs';
import { formatOutReuse, measureOutReuse } from './out-reuse.mjs';
import { STREAMING_DIMS, measureStreaming } from './streaming.mjs';
import { measureTraining } from './training.mjs';
import { measureDecode } from './decode.mjs';
import { measureThreads } from './threads.mjs';
import { measureWindow } from './window.mjs';
import { interleave, warmUp } from './timing.mjs';
import { measureSimdPeak, simdPeakProbe } from './wasm-probes.mjs';
import { cpuIdentity } from './machine.mjs';
import { relaxedSimdSupported } from '../../js/detect.js';

const SHAPES = ['1x128x64', '8x256x64', '12x197x64', '32x512x64', '8x1024x64', '1x2048x64'];
const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const { values: args } = parseArgs({
  options: {
    shapes: { type: 'string' },
    'no-streaming': { type: 'boolean', default: false },
    'no-training': { type: 'boolean', default: false },
    'no-decode': { type: 'boolean', default: false },
    'no-threads': { type: 'boolean', default: false },
    'no-out-reuse': { type: 'boolean', default: false },
    'no-window': { type: 'boolean', default: false },
    out: { type: 'string' },
    'budget-ms': { type: 'string', default: '10000' },
  },
});

// How this process's allocator treats freed memory (scripts/bench.sh sets it for every process of the bench): with
// glibc's defaults, fresh multi-MiB results cost page faults in some processes and not in others.
function allocatorSetting() {
  const tunables = process.env.GLIBC_TUNABLES ?? '';
  return tunables.includes('glibc.malloc.trim_threshold')
    ? `freed memory kept in the heap, for every implementation (GLIBC_TUNABLES=${tunables}; ignored outside glibc)`
    : 'the C library\'s defaults (on glibc, a freed heap top may go back to the system)';
}

const log = (line) => console.log(line);
const round1 = (x) => Number(x.toFixed(1));
const fmtTol = ({ atol, rtol }) => `|Δ| ≤ ${atol.toExponential()} + ${rtol.toExponential()}·|ref|`;
const errorText = (err) => String(err?.message ?? err).split('\n')[0];

// Checks every available implementation on this problem, then times the ones that agree, interleaved.
// Check 1: sampled rows (all of them for small shapes) against float64. Check 2: every element against the
// xattn scalar build's output, once that build has passed check 1.
// The peak loops (probes: { simd, relaxed? }) are timed among them, so that a shape's "% peak" compares its speed
// with the peak over the same seconds: on a shared host the peak moves within the minute a run takes.
async function benchShape(problem, impls, budgetMs, probes) {
  const rows = sampleRows(problem.dims);
  const ref = referenceRows(problem, rows);
  const refusals = {};
  const passed = [];
  const notes = [];
  for (const impl of impls.filter((i) => !i.unavailable)) {
    try {
      const run = await impl.prepare(problem);
      const output = await run();
      const check = agreement(output, problem, rows, ref, impl.tolerance);
      notes.push(`${impl.label} ${check.ok ? `max|Δ| ${check.maxAbs.toExponential(1)}` : 'WRONG'}`);
      if (check.ok) passed.push({ impl, run, output });
      else refusals[impl.key] = `wrong result (${fmtTol(impl.tolerance)}): ${check.why}`;
    } catch (err) {
      refusals[impl.key] = `failed: ${errorText(err)}`;
      notes.push(`${impl.label} FAILED`);
    }
  }
  log(`  check (${rows.length} of ${problem.dims.BH * problem.dims.L} rows vs float64): ${notes.join(', ')}`);
  const scalar = passed.find((p) => p.impl.key === 'xattnScalar')?.output;
  const entries = [];
  for (const { impl, run, output } of passed) {
    const all = scalar ? agreementAll(output, scalar, impl.tolerance) : { ok: true };
    if (!all.ok) {
      refusals[impl.key] = `wrong result (${fmtTol(impl.tolerance)}): ${all.why}`;
      log(`  ${impl.label} disagrees with the scalar build: ${all.why}`);
      continue;
    }
    entries.push({ key: impl.key, run, estimateMs: await warmUp(run) });
  }
  for (const [key, probe] of Object.entries(probes)) entries.push({ key: `${key}Peak`, run: probe.run, estimateMs: await warmUp(probe.run) });
  const timings = await interleave(entries, { budgetMs });
  for (const impl of impls) await impl.release?.();
  // Wall-clock medians for the plain peak (xattn SIMD's share is by wall clock), CPU-time ones for the relaxed
  // peak (the relaxed build is compared by CPU time).
  const peaks = {
    simdGflops: probes.simd.flops / (timings.simdPeak.ms * 1e6),
    relaxedGflops: probes.relaxed ? probes.relaxed.flops / (timings.relaxedPeak.cpuMs * 1e6) : null,
  };
  log(`  peaks beside it: mul + add ${peaks.simdGflops.toFixed(1)} GFLOP/s${probes.relaxed ? `, relaxed_madd ${peaks.relaxedGflops.toFixed(1)}` : ''}`);
  return shapeRecord(problem, impls, timings, refusals, peaks);
}

async function main() {
  const shapes = (args.shapes ? args.shapes.split(',') : SHAPES).map(parseShape);
  const budgetMs = Number(args['budget-ms']);
  if (!(budgetMs > 0)) throw new RangeError(`--budget-ms must be a positive number of milliseconds, got '${args['budget-ms']}'`);
  const out = args.out ? path.resolve(args.out) : args.shapes ? null : path.join(repo, 'bench', 'results.json');
  const started = new Date();
  const { model: machine, kind: machineKind } = cpuIdentity();
  // Other processes on this machine skew every column; say so up front rather than let it pass unnoticed.
  const loadAtStart = Number(os.loadavg()[0].toFixed(2));
  const allocator = allocatorSetting();

  const impls = await loadImplementations();
  const xattn = impls.find((i) => i.key === 'xattnSimd');
  if (xattn.unavailable) throw new Error(`xattn SIMD build: ${xattn.unavailable} (build it with npm run build:wasm)`);
  log(`xattn benchmark · ${started.toISOString()} · ${machine} · Node ${process.version} · 1 thread`);
  log(`implementations: ${impls.map((i) => `${i.label} ${i.unavailable ? '(unavailable)' : i.version}`).join(', ')}`);
  log(`allocator: ${allocator}`);
  if (loadAtStart > 0.5) log(`note: 1-minute load average ${loadAtStart} before starting: other processes are busy, expect noise`);
  // The ceiling every figure is read against: machines differ, so it is measured here, not quoted. The relaxed
  // build's is the relaxed_madd one (the same on CPUs whose add and multiply pipes are separate, up to twice
  // the mul + add one where an FMA takes the issue slot of an add or a multiply).
  const peakGflops = round1(measureSimdPeak() / 1e9);
  log(`wasm SIMD peak in this process: ${peakGflops} GFLOP/s (7 f32x4 multiply chains beside 7 add chains)`);
  const relaxedPeakGflops = relaxedSimdSupported() ? round1(measureSimdPeak({ relaxed: true }) / 1e9) : null;
  log(relaxedPeakGflops
    ? `wasm relaxed SIMD peak in this process: ${relaxedPeakGflops} GFLOP/s (12 independent f32x4.relaxed_madd chains)`
    : 'wasm relaxed SIMD: not in this engine (Node 20 needs --experimental-wasm-relaxed-simd, which npm run bench passes)');

  const probes = { simd: simdPeakProbe(), ...(relaxedPeakGflops ? { relaxed: simdPeakProbe({ relaxed: true }) } : {}) };
  const records = [];
  for (const dims of shapes) {
    const problem = makeProblem(dims);
    log(`${shapeText(dims)} (B·H×L×E, S = L, Ev = E), ${(problem.flops / 1e9).toFixed(3)} GFLOP`);
    const t0 = performance.now();
    records.push(await benchShape(problem, impls, budgetMs, probes));
    log(`  done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }

  let streaming = null;
  if (!args['no-streaming']) {
    log(`streaming: xattn SIMD, needWeights false, B·H = 1, L = S = ${STREAMING_DIMS.L}, E = Ev = ${STREAMING_DIMS.E}`);
    streaming = await measureStreaming({ log });
  }

  let training = null;
  if (!args['no-training']) training = await measureTraining(shapes, { log, budgetMs: Math.min(budgetMs, 6000) });

  let decode = null;
  if (!args['no-decode']) decode = await measureDecode({ log });

  let threads = null;
  if (!args['no-threads']) threads = measureThreads(shapes, { log, budgetMs: Math.min(budgetMs, 6000) });

  let outReuse = null;
  const large = shapes.filter((d) => d.L >= 512);
  if (!args['no-out-reuse'] && large.length) outReuse = await measureOutReuse(large, { log, budgetMs: Math.min(budgetMs, 8000) });

  let slidingWindow = null;
  if (!args['no-window']) slidingWindow = await measureWindow({ log, budgetMs: Math.min(budgetMs, 6000) });

  const finished = new Date();
  log('');
  log(`Results · ${started.toISOString()} · ${machine} · Node ${process.version} · single thread, one process`);
  log('Shapes B·H×L×E with S = L, Ev = E (B batch, H heads, L query length, S key length, E query/key dim, Ev value dim).');
  log('Cells: GFLOP/s (median ms per call), FLOPs = 4·B·H·L·S·E, end to end Float32Array in → Float32Array out.');
  log(formatTable(records, impls));
  log(`best peer = the faster of ort-web wasm, tfjs-wasm and plain JS; ort-node (native, 1 thread) is for reference.`);
  log(`Checked before timing, ${fmtTol(TOLERANCE)}: sampled rows (every row of the smaller shapes) against float64, and every element against the scalar build.`);
  const relaxedLines = formatRelaxed(records);
  if (relaxedLines) {
    log('Relaxed SIMD build against the plain SIMD build, same process, interleaved (its share: of the relaxed_madd peak beside it):');
    log(relaxedLines);
  }
  const refused = formatRefusals(records, impls);
  if (refused) log(`Not reported:\n${refused}`);

  const meta = {
    date: started.toISOString(),
    machine,
    machineKind,
    cpus: os.cpus().length,
    node: process.version,
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    threads: 1,
    wasmSimdPeakGflops: peakGflops,
    wasmRelaxedSimdPeakGflops: relaxedPeakGflops,
    legend: 'shape = [B·H, L, E] with S = L, Ev = E; FLOPs = 4·B·H·L·S·E; ms = median per call, end to end',
    tolerance: `${fmtTol(TOLERANCE)} against a float64 reference, for every implementation`,
    xattnVersion: xattn.version,
    onnxruntimeWebVersion: impls.find((i) => i.key === 'ortWeb').version ?? 'unavailable',
    tfjsBackendWasmVersion: impls.find((i) => i.key === 'tfjsWasm').version ?? 'unavailable',
    onnxruntimeNodeVersion: impls.find((i) => i.key === 'ortNode').version ?? 'unavailable',
    allocator,
    loadAverageAtStart: loadAtStart,
    loadAverageAtEnd: Number(os.loadavg()[0].toFixed(2)),
    durationSeconds: Math.round((finished - started) / 1000),
  };
  if (streaming) {
    const summary = streamingSummary(streaming, records);
    Object.assign(meta, summary.fields);
    log(summary.line);
  }
  if (training) {
    meta.training = training;
    log('Training (xattn SIMD): backward GFLOP/s with FLOPs = 12·B·H·L·S·E, forward 4·B·H·L·S·E:');
    for (const r of training.backward) {
      log(`  ${r.shape.join('×')}: forward ${r.forward.gflops.toFixed(1)}, backward ${r.backward.gflops.toFixed(1)} (${r.ratio.toFixed(2)}× the forward)`);
    }
  }
  if (decode) {
    meta.decode = decode;
    const range = (f) => {
      const v = decode.rows.map(f);
      return `${Math.min(...v).toFixed(1)}–${Math.max(...v).toFixed(1)}`;
    };
    log(`Decoding (xattn SIMD, KV cache, 1 and 2 threads; onnxruntime-web at 1 and 2 threads, its 2-thread steps in a process of their own): step = append one position + attend one query row per head, each timed alone right after a 256 MiB read (as after the other layers of a decoder); bound = max(bytes read / read bandwidth, FLOPs / SIMD peak), both measured beside each row's steps, interleaved (${range((r) => r.readBandwidthBytesPerSecond / 1e9)} GB/s, ${range((r) => r.simdPeakFlops / 1e9)} GFLOP/s):`);
    for (const r of decode.rows) {
      const relaxed = r.float32Relaxed ? `, relaxed SIMD ${r.float32Relaxed.ms.toFixed(3)} ms (${(r.float32Relaxed.ms / r.float32Relaxed.boundMs).toFixed(2)}× its bound, with the relaxed peak, ${(r.float32.ms / r.float32Relaxed.ms).toFixed(2)}× faster)` : '';
      log(`  Hq ${r.Hq} Hkv ${r.Hkv} E ${r.E}, ${r.length}: ${r.float32.ms.toFixed(3)} ms (${(r.float32.ms / r.float32.boundMs).toFixed(2)}× bound), float16 ${(r.float16.ms / r.float32.ms).toFixed(2)}× float32, full copy ${(r.fullCopyMs / r.float32.ms).toFixed(1)}×, ort-web ${r.ortWebMs ? (r.ortWebMs / r.float32.ms).toFixed(1) + '×' : r.ortWebError ?? 'n/a'}${relaxed}; 2 threads ${r.float32Threads2.ms.toFixed(3)} ms (${(r.float32.ms / r.float32Threads2.ms).toFixed(2)}×, ${(r.float32Threads2.ms / r.float32.boundMs).toFixed(2)}× the 1-thread bound), float16 ${r.float16Threads2.ms.toFixed(3)} ms, full copy ${r.fullCopyThreads2Ms ? (r.fullCopyThreads2Ms / r.float32Threads2.ms).toFixed(1) + '×' : 'n/a'}, ort-web ${r.ortWebThreads2Ms ? (r.ortWebThreads2Ms / r.float32Threads2.ms).toFixed(1) + '×' : r.ortWebThreads2Error ?? 'n/a'}` +
        (r.float32Threads2Polling ? `; 2 threads, helper polling ${r.float32Threads2Polling.ms.toFixed(3)} ms (${(r.float32.ms / r.float32Threads2Polling.ms).toFixed(2)}×` +
          (r.ortWebThreads2Ms ? `, ort-web ${(r.ortWebThreads2Ms / r.float32Threads2Polling.ms).toFixed(1)}×` : '') + ')' : ''));
    }
  }
  if (threads) {
    meta.threadScaling = threads;
    log(`Threads (xattn plain SIMD, threaded build at t > 1; onnxruntime-web wasm; xattn at 1 and 2 threads interleaved in one process, beside the peak loop run on 1 and on 2 threads at once; onnxruntime-web at each count in a process of its own; ${threads.rounds} rounds), GFLOP/s medians over the rounds, ratios and shares the medians of each round's own:`);
    log(formatThreads(threads));
  }
  if (outReuse) {
    meta.outReuse = outReuse;
    log('Output reuse (xattn plain SIMD; threaded build at 2 threads; GFLOP/s, fresh result arrays against options.out, one array kept across calls, all four interleaved in one process):');
    log(formatOutReuse(outReuse));
  }
  if (slidingWindow) meta.slidingWindow = slidingWindow;
  log(`Took ${meta.durationSeconds} s; 1-minute load average ${loadAtStart} at the start, ${meta.loadAverageAtEnd} at the end (${os.cpus().length} CPUs; this run keeps one busy).`);
  if (out) {
    writeResults(out, meta, records);
    log(`Wrote ${out.startsWith(repo + path.sep) ? path.relative(repo, out) : out}`);
  }
}

main().then(
  () => process.exit(0),  // tfjs and onnxruntime keep handles open; the run is over
  (err) => {
    console.error(`bench: ${err?.stack ?? err}`);
    process.exit(1);
  },
);
