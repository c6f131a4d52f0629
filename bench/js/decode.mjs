// Decoding steps: append one position to a KV cache and attend one query row per head, against the bound (the
// cache's bytes read once at the read bandwidth, or the step's FLOPs at the SIMD peak, whichever is larger; both
// measured in this process, beside the steps), against scaledDotProductAttention with the whole K and V copied
// in each step (the only way without a cache), and against onnxruntime-web running the same step as a graph
// with past key/value inputs (Concat, MatMul, Softmax, MatMul: the cheapest form for it, no present outputs
// to copy back). One thread each (and xattn's relaxed-SIMD build, which Chromium runs), then xattn's cache and
// full copy again at 2 threads (the threaded build: a step's key/value heads, or chunks of its keys, spread over
// both; the full copy's copying in stays on the calling thread) and onnxruntime-web at 2 threads in a process of
// its own (this file run as a script: its thread count is fixed once per process, and a second pool polling
// beside xattn's would slow both); every result is checked against the full-copy SDPA before it is timed.
// Last, in a process of its own too, xattn's float32 steps at 2 threads with the helper polling through the gap
// between steps (createXattn's spinMicroseconds, set past the 256 MiB read each step comes after): what a
// decoder that keeps its helpers polling gets, where the default lets them sleep after 200 µs. (In the main
// process a polling helper would keep the second core from the other instances' two-thread steps.)
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { normals } from './inputs.mjs';
import { decodeModel } from './onnx-model.mjs';
import { loadXattn } from './peers.mjs';
import { warmUpAndInterleave } from './timing.mjs';
import { readBandwidthProbe, simdPeakProbe } from './wasm-probes.mjs';
import { relaxedSimdSupported } from '../../js/detect.js';
import { createXattn } from '../../js/node.js';

export const DECODE_CONFIGS = [
  { Hq: 32, Hkv: 8, E: 128 },  // grouped-query attention: about 2 FLOPs per byte read, either bound can bind
  { Hq: 12, Hkv: 12, E: 64 },  // multi-head: memory-bound
];
export const DECODE_LENGTHS = [512, 2048, 8192];

const self = fileURLToPath(import.meta.url);

const tensor = (shape, seed) => ({ data: normals(shape.reduce((n, d) => n * d, 1), seed), shape });

// Each configuration and length is timed as one interleaved set (warmUpAndInterleave, timing.mjs): the cache's
// steps, the full copy, onnxruntime-web and the probes the bound comes from (a read of a buffer past the caches,
// the SIMD peak loop), their samples spread over the same seconds. A bound measured once at the start drifts
// from the steps it is set against: on a shared host the read bandwidth moves within minutes.
const timeTogether = (entries, budgetMs) => warmUpAndInterleave(entries, { budgetMs, warmUpMs: 150 });

// Every step is timed alone, right after a read of 256 MiB (the read probe's, untimed there), as a decoder's step
// of one layer comes after the other layers' weights and caches have passed through the CPU's caches. Steps timed
// back to back read what the first left in L3 instead: a 48 MiB cache fits the L3 of a large server CPU, and its
// steps came in under the bound the issue sets from memory bandwidth. (A second thread's own L2 may keep up to its
// size of the previous step.)
const cold = (readProbe, entry) => ({ ...entry, before: readProbe.run });

function maxRelativeGap(got, want) {
  let worst = 0;
  want.forEach((w, i) => { worst = Math.max(worst, Math.abs(got[i] - w) / (1e-5 + 1e-4 * Math.abs(w))); });
  return worst;  // <= 1 passes the benchmark's tolerance
}

// The inputs of one configuration and cache length: K, V (1, Hkv, length, E), the step's query (1, Hq, 1, E) and its
// new position k, v (1, Hkv, 1, E); the same seeds in every process.
function stepInputs({ Hq, Hkv, E }, length) {
  const K = tensor([1, Hkv, length, E], 1), V = tensor([1, Hkv, length, E], 2);
  const q = tensor([1, Hq, 1, E], 3);
  const last = (t) => ({ data: t.data.filter((_, i) => Math.floor(i / E) % length === length - 1), shape: [1, Hkv, 1, E] });
  return { K, V, q, k: last(K), v: last(V) };
}

// onnxruntime-web's step, checked against `want` (the full-copy SDPA's output): { run, release } or { error }.
async function checkedOrtStep(ort, cfg, length, K, V, q, k, v, want) {
  const o = await ortStep(ort, cfg, length, K, V, q, k, v);
  if (maxRelativeGap(await o.run(), want) > 1) {
    await o.release();
    return { error: 'wrong result' };
  }
  return o;
}

async function ortStep(ort, { Hq, Hkv, E }, length, K, V, q, k, v) {
  const G = Hq / Hkv;
  const session = await ort.InferenceSession.create(decodeModel({ Hkv, G, past: length - 1, E }, 1 / Math.sqrt(E)),
    { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
  const past = (t) => {  // positions [0, length-1) of each head
    const data = new Float32Array(Hkv * (length - 1) * E);
    for (let h = 0; h < Hkv; h++) data.set(t.data.subarray(h * length * E, (h * length + length - 1) * E), h * (length - 1) * E);
    return new ort.Tensor('float32', data, [1, Hkv, length - 1, E]);
  };
  const feeds = {
    query: new ort.Tensor('float32', q.data, [1, Hkv, G, E]),
    pastKey: past(K), pastValue: past(V),
    key: new ort.Tensor('float32', k.data, [1, Hkv, 1, E]), value: new ort.Tensor('float32', v.data, [1, Hkv, 1, E]),
  };
  const run = async () => (await session.run(feeds)).output.data;
  return { run, release: () => session.release() };
}

// A decoding step on `instance`'s cache holding positions [0, length-1) of K, V: append the last position, attend,
// truncate back. Returns { step, check, dispose }: check() gives the step's output and what SDPA gives on the
// keys and values the cache holds (rounded, for float16).
function cacheStep(instance, { Hkv, E }, length, dtype, K, V, q, k, v) {
  const cache = instance.createKvCache({ kvHeads: Hkv, headDim: E, capacity: length, dtype });
  const prefix = (t) => ({ data: t.data.filter((_, i) => Math.floor(i / E) % length < length - 1), shape: [1, Hkv, length - 1, E] });
  cache.append(prefix(K), prefix(V));
  const step = () => {
    cache.append(k, v);
    const out = cache.attend(q).output.data;
    cache.truncate(length - 1);
    return out;
  };
  const check = () => {
    const got = step();
    cache.append(k, v);
    const want = instance.scaledDotProductAttention(q, cache.keys(), cache.values(), { enableGqa: true }).output.data;
    cache.truncate(length - 1);
    return { got, want };
  };
  return { step, check, dispose: () => cache.dispose() };
}

export async function measureDecode({ log = () => {}, budgetMs = 10000 } = {}) {
  const xa = await loadXattn(true);
  const xa2 = await loadXattn(true, 2);
  const xr = relaxedSimdSupported() ? await loadXattn(true, 1, true) : null;
  const readProbe = readBandwidthProbe(), peakProbe = simdPeakProbe();
  const relaxedPeakProbe = xr ? simdPeakProbe({ relaxed: true }) : null;  // the relaxed step's bound
  if (!xr) log('  relaxed SIMD unavailable in this engine: no relaxed column');
  let ort = null;
  try {
    ort = await import('onnxruntime-web');
    ort.env.wasm.numThreads = 1;
  } catch (e) {
    log(`  onnxruntime-web unavailable: ${e?.message ?? e}`);
  }
  // Cache steps timed per row: [instance, dtype, key]; the relaxed build in float32 only (what Chromium runs).
  const variants = [[xa, 'float32', 'float32'], [xa, 'float16', 'float16'], [xa2, 'float32', 'float32Threads2'],
    [xa2, 'float16', 'float16Threads2'], ...(xr ? [[xr, 'float32', 'float32Relaxed']] : [])];
  const rows = [];
  for (const cfg of DECODE_CONFIGS) {
    const { Hq, Hkv, E } = cfg;
    for (const length of DECODE_LENGTHS) {
      const { K, V, q, k, v } = stepInputs(cfg, length);
      const full = () => xa.scaledDotProductAttention(q, K, V, { enableGqa: true }).output.data;
      const full2 = () => xa2.scaledDotProductAttention(q, K, V, { enableGqa: true }).output.data;
      const want = full();
      if (maxRelativeGap(full2(), want) > 1) throw new Error(`decode ${Hq}/${Hkv}/${E} at ${length}: SDPA at 2 threads disagrees`);
      const row = { ...cfg, length, flops: 4 * Hq * length * E };
      const entries = [cold(readProbe, { key: 'fullCopy', run: full }), cold(readProbe, { key: 'fullCopyThreads2', run: full2 }),
        { key: 'readProbe', run: readProbe.run },
        { key: 'peakProbe', run: peakProbe.run }, ...(xr ? [{ key: 'relaxedPeakProbe', run: relaxedPeakProbe.run }] : [])];
      const caches = [];
      for (const [instance, dtype, key] of variants) {
        const s = cacheStep(instance, cfg, length, dtype, K, V, q, k, v);
        caches.push(s);
        const { got, want: held } = s.check();
        if (maxRelativeGap(got, dtype === 'float32' ? want : held) > 1) {
          throw new Error(`decode ${Hq}/${Hkv}/${E} at ${length} (${key}): the cache's step disagrees with SDPA`);
        }
        entries.push(cold(readProbe, { key, run: s.step }));
      }
      const o = ort ? await checkedOrtStep(ort, cfg, length, K, V, q, k, v, want) : null;
      if (o?.error) row.ortWebError = o.error;
      else if (o) entries.push(cold(readProbe, { key: 'ortWeb', run: o.run }));
      let t;
      try {
        t = await timeTogether(entries, budgetMs);
      } finally {
        caches.forEach((c) => c.dispose());
        if (o?.release) await o.release();
      }
      row.readBandwidthBytesPerSecond = readProbe.bytes / (t.readProbe.ms / 1e3);
      row.simdPeakFlops = peakProbe.flops / (t.peakProbe.ms / 1e3);
      if (xr) row.relaxedSimdPeakFlops = relaxedPeakProbe.flops / (t.relaxedPeakProbe.ms / 1e3);
      row.fullCopyMs = t.fullCopy.ms;
      row.fullCopyThreads2Ms = t.fullCopyThreads2.ms;
      if (t.ortWeb) row.ortWebMs = t.ortWeb.ms;
      for (const [, dtype, key] of variants) {
        const bytes = 2 * Hkv * length * E * (dtype === 'float16' ? 2 : 4);
        const peak = key === 'float32Relaxed' ? row.relaxedSimdPeakFlops : row.simdPeakFlops;
        const boundMs = Math.max(bytes / row.readBandwidthBytesPerSecond, row.flops / peak) * 1e3;
        row[key] = { ms: t[key].ms, boundMs };
      }
      const f32 = row.float32, f16 = row.float16;
      log(`  Hq ${Hq}, Hkv ${Hkv}, E ${E}, ${length} positions (read ${(row.readBandwidthBytesPerSecond / 1e9).toFixed(1)} GB/s, ` +
        `peak ${(row.simdPeakFlops / 1e9).toFixed(1)} GFLOP/s beside it): cache ${f32.ms.toFixed(3)} ms (bound ${f32.boundMs.toFixed(3)}, ${(f32.ms / f32.boundMs).toFixed(2)}×), ` +
        `float16 ${f16.ms.toFixed(3)} ms (${(f16.ms / f32.ms).toFixed(2)}× float32), full copy ${row.fullCopyMs.toFixed(3)} ms ` +
        `(${(row.fullCopyMs / f32.ms).toFixed(1)}× the cache)` +
        (row.ortWebMs ? `, ort-web ${row.ortWebMs.toFixed(3)} ms (${(row.ortWebMs / f32.ms).toFixed(1)}× the cache)` : '') +
        (row.float32Relaxed ? `, relaxed SIMD ${row.float32Relaxed.ms.toFixed(3)} ms (${(row.float32Relaxed.ms / row.float32Relaxed.boundMs).toFixed(2)}× its bound)` : '') +
        `; 2 threads: float32 ${row.float32Threads2.ms.toFixed(3)} ms (${(f32.ms / row.float32Threads2.ms).toFixed(2)}× faster), ` +
        `float16 ${row.float16Threads2.ms.toFixed(3)} ms, full copy ${row.fullCopyThreads2Ms.toFixed(3)} ms ` +
        `(${(row.fullCopyThreads2Ms / row.float32Threads2.ms).toFixed(1)}× the cache)`);
      rows.push(row);
    }
  }
  // onnxruntime-web at 2 threads, in a process of its own.
  log('decode: onnxruntime-web at 2 threads, in a process of its own');
  try {
    const ort2 = inOwnProcess('--ort-threads', '2');
    rows.forEach((row, i) => {
      const r = ort2[i];
      if (r.ortWebMs) row.ortWebThreads2Ms = r.ortWebMs;
      else row.ortWebThreads2Error = r.ortWebError;
      log(`  Hq ${row.Hq}, Hkv ${row.Hkv}, E ${row.E}, ${row.length} positions, 2 threads: ` +
        (r.ortWebMs ? `ort-web ${r.ortWebMs.toFixed(3)} ms (${(r.ortWebMs / row.float32Threads2.ms).toFixed(1)}× xattn's cache at 2 threads)` : r.ortWebError));
    });
  } catch (e) {
    log(`  onnxruntime-web at 2 threads unavailable: ${String(e?.message ?? e).split('\n')[0]}`);
  }
  log(`decode: xattn at 2 threads with the helper polling between steps (spinMicroseconds ${POLLING_SPIN_US}), in a process of its own`);
  try {
    const polling = inOwnProcess('--polling-threads', '2');
    rows.forEach((row, i) => {
      const ms = polling[i].ms;
      row.float32Threads2Polling = { ms, spinMicroseconds: POLLING_SPIN_US };
      log(`  Hq ${row.Hq}, Hkv ${row.Hkv}, E ${row.E}, ${row.length} positions: ${ms.toFixed(3)} ms ` +
        `(${(row.float32.ms / ms).toFixed(2)}× the one-thread step, ${(ms / row.float32.boundMs).toFixed(2)}× its bound, ` +
        `${(row.float32Threads2.ms / ms).toFixed(2)}× faster than with the default polling` +
        (row.ortWebThreads2Ms ? `; ort-web at 2 threads ${(row.ortWebThreads2Ms / ms).toFixed(1)}× this` : '') + ')');
    });
  } catch (e) {
    log(`  polling helpers unavailable: ${String(e?.message ?? e).split('\n')[0]}`);
  }
  return { threads: [1, 2], rows };
}

// This file run as a script with `args`, in a process of its own (the engine's wasm flags carry over): the JSON
// line it prints last.
function inOwnProcess(...args) {
  const flags = process.execArgv.filter((a) => a.startsWith('--experimental-wasm'));
  const out = execFileSync(process.execPath, [...flags, self, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  return JSON.parse(out.trim().split('\n').pop());
}

// How long the helper polls between steps in the --polling-threads process: past the 256 MiB read that comes
// before each step (a few milliseconds at a memory's speed), with room for a slow phase of the host.
const POLLING_SPIN_US = 50_000;

// For every configuration and length in measureDecode's order: time(cfg, length, inputs, want), with the step's
// inputs and the full-copy SDPA's output on `xa`; their results, in a list.
async function forEachStep(xa, time) {
  const results = [];
  for (const cfg of DECODE_CONFIGS) {
    for (const length of DECODE_LENGTHS) {
      const inputs = stepInputs(cfg, length);
      const want = xa.scaledDotProductAttention(inputs.q, inputs.K, inputs.V, { enableGqa: true }).output.data;
      results.push(await time(cfg, length, inputs, want));
    }
  }
  return results;
}

// `--polling-threads N`: xattn's float32 cache steps alone at N threads, the helpers polling between steps, each
// checked against the same instance's full-copy SDPA.
async function pollingSteps(threads) {
  const xa = await createXattn({ simd: true, relaxedSimd: false, threads, spinMicroseconds: POLLING_SPIN_US });
  const readProbe = readBandwidthProbe();
  return forEachStep(xa, async (cfg, length, { K, V, q, k, v }, want) => {
    const s = cacheStep(xa, cfg, length, 'float32', K, V, q, k, v);
    try {
      if (maxRelativeGap(s.check().got, want) > 1) throw new Error(`decode ${cfg.Hq}/${cfg.Hkv}/${cfg.E} at ${length}: the polling step disagrees with SDPA`);
      return { ms: (await timeTogether([cold(readProbe, { key: 'step', run: s.step })], 3000)).step.ms };
    } finally {
      s.dispose();
    }
  });
}

// `--ort-threads N`: onnxruntime-web's steps alone at N threads, checked against xattn's full-copy SDPA (one
// thread).
async function ortSteps(threads) {
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = threads;
  const readProbe = readBandwidthProbe();
  return forEachStep(await loadXattn(true), async (cfg, length, { K, V, q, k, v }, want) => {
    const o = await checkedOrtStep(ort, cfg, length, K, V, q, k, v, want);
    if (o.error) return { ortWebError: o.error };
    try {
      return { ortWebMs: (await timeTogether([cold(readProbe, { key: 'ortWeb', run: o.run })], 1500)).ortWeb.ms };
    } finally {
      await o.release();
    }
  });
}

// Run as a script (`--ort-threads N` or `--polling-threads N`): prints one JSON line, a result per configuration
// and length in measureDecode's order.
if (process.argv[1] === self) {
  const { values } = parseArgs({ options: { 'ort-threads': { type: 'string' }, 'polling-threads': { type: 'string' } } });
  const results = values['polling-threads'] ? await pollingSteps(Number(values['polling-threads']))
    : await ortSteps(Number(values['ort-threads']));
  console.log(JSON.stringify(results));
  process.exit(0);  // onnxruntime keeps handles open
}
