// Decoding steps: append one position to a KV cache and attend one query row per head, against the bound of
// this process (the cache's bytes read once at the measured read bandwidth, or the step's FLOPs at the
// measured SIMD peak, whichever is larger), against scaledDotProductAttention with the whole K and V copied
// in each step (the only way without a cache), and against onnxruntime-web running the same step as a graph
// with past key/value inputs (Concat, MatMul, Softmax, MatMul: the cheapest form for it, no present outputs
// to copy back). One thread each, then xattn's cache again at 2 threads (the threaded build: a step's key/value
// heads, or chunks of its keys, spread over both) and onnxruntime-web at 2 threads in a process of its own (this
// file run as a script: its thread count is fixed once per process, and a second pool polling beside xattn's
// would slow both); every result is checked against the full-copy SDPA before it is timed.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { normals } from './inputs.mjs';
import { decodeModel } from './onnx-model.mjs';
import { loadXattn } from './peers.mjs';
import { median } from './timing.mjs';
import { measureReadBandwidth, measureSimdPeak } from './wasm-probes.mjs';

export const DECODE_CONFIGS = [
  { Hq: 32, Hkv: 8, E: 128 },  // grouped-query attention: about 2 FLOPs per byte read, either bound can bind
  { Hq: 12, Hkv: 12, E: 64 },  // multi-head: memory-bound
];
export const DECODE_LENGTHS = [512, 2048, 8192];

const self = fileURLToPath(import.meta.url);

const tensor = (shape, seed) => ({ data: normals(shape.reduce((n, d) => n * d, 1), seed), shape });

// Median ms of `run` over calls spread across about budgetMs (at least minRuns).
function timeSteps(run, { budgetMs = 1200, minRuns = 7 } = {}) {
  run();
  const times = [];
  const t0 = performance.now();
  while (times.length < minRuns || performance.now() - t0 < budgetMs) {
    const s = performance.now();
    run();
    times.push(performance.now() - s);
    if (times.length >= 400) break;
  }
  return median(times);
}

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

// onnxruntime-web's step, checked against `want` (the full-copy SDPA's output), then timed: { ortWebMs } or
// { ortWebError }.
async function timeOrt(ort, cfg, length, K, V, q, k, v, want) {
  const o = await ortStep(ort, cfg, length, K, V, q, k, v);
  try {
    if (maxRelativeGap(await o.run(), want) > 1) return { ortWebError: 'wrong result' };
    await o.run();
    const times = [];
    const t0 = performance.now();
    while (times.length < 7 || performance.now() - t0 < 1200) {
      const s = performance.now();
      await o.run();
      times.push(performance.now() - s);
      if (times.length >= 400) break;
    }
    return { ortWebMs: median(times) };
  } finally {
    await o.release();
  }
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

export async function measureDecode({ log = () => {} } = {}) {
  const xa = await loadXattn(true);
  const xa2 = await loadXattn(true, 2);
  const bandwidth = measureReadBandwidth();
  const peak = measureSimdPeak();
  log(`decode: read bandwidth ${(bandwidth / 1e9).toFixed(1)} GB/s, SIMD peak ${(peak / 1e9).toFixed(1)} GFLOP/s (this process)`);
  let ort = null;
  try {
    ort = await import('onnxruntime-web');
    ort.env.wasm.numThreads = 1;
  } catch (e) {
    log(`  onnxruntime-web unavailable: ${e?.message ?? e}`);
  }
  const rows = [];
  for (const cfg of DECODE_CONFIGS) {
    const { Hq, Hkv, E } = cfg;
    for (const length of DECODE_LENGTHS) {
      const { K, V, q, k, v } = stepInputs(cfg, length);
      const full = () => xa.scaledDotProductAttention(q, K, V, { enableGqa: true }).output.data;
      const want = full();
      const row = { ...cfg, length, flops: 4 * Hq * length * E };
      row.fullCopyMs = timeSteps(full);
      for (const dtype of ['float32', 'float16']) {
        const bytes = 2 * Hkv * length * E * (dtype === 'float16' ? 2 : 4);
        const boundMs = Math.max(bytes / bandwidth, row.flops / peak) * 1e3;
        for (const [instance, key] of [[xa, dtype], [xa2, `${dtype}Threads2`]]) {
          const s = cacheStep(instance, cfg, length, dtype, K, V, q, k, v);
          const { got, want: held } = s.check();
          if (maxRelativeGap(got, dtype === 'float32' ? want : held) > 1) {
            throw new Error(`decode ${Hq}/${Hkv}/${E} at ${length} (${dtype}, ${instance.threads} threads): the cache's step disagrees with SDPA`);
          }
          row[key] = { ms: timeSteps(s.step), boundMs };
          s.dispose();
        }
      }
      if (ort) Object.assign(row, await timeOrt(ort, cfg, length, K, V, q, k, v, want));
      const f32 = row.float32, f16 = row.float16;
      log(`  Hq ${Hq}, Hkv ${Hkv}, E ${E}, ${length} positions: cache ${f32.ms.toFixed(3)} ms (bound ${f32.boundMs.toFixed(3)}, ${(f32.ms / f32.boundMs).toFixed(2)}×), ` +
        `float16 ${f16.ms.toFixed(3)} ms (${(f16.ms / f32.ms).toFixed(2)}× float32), full copy ${row.fullCopyMs.toFixed(3)} ms ` +
        `(${(row.fullCopyMs / f32.ms).toFixed(1)}× the cache)` +
        (row.ortWebMs ? `, ort-web ${row.ortWebMs.toFixed(3)} ms (${(row.ortWebMs / f32.ms).toFixed(1)}× the cache)` : '') +
        `; 2 threads: float32 ${row.float32Threads2.ms.toFixed(3)} ms (${(f32.ms / row.float32Threads2.ms).toFixed(2)}× faster), ` +
        `float16 ${row.float16Threads2.ms.toFixed(3)} ms`);
      rows.push(row);
    }
  }
  // onnxruntime-web at 2 threads, in a process of its own (the engine's wasm flags carry over).
  log('decode: onnxruntime-web at 2 threads, in a process of its own');
  try {
    const flags = process.execArgv.filter((a) => a.startsWith('--experimental-wasm'));
    const out = execFileSync(process.execPath, [...flags, self, '--ort-threads', '2'],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
    const ort2 = JSON.parse(out.trim().split('\n').pop());
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
  return { readBandwidthBytesPerSecond: bandwidth, simdPeakFlops: peak, threads: [1, 2], rows };
}

// Run as a script (`--ort-threads N`): onnxruntime-web's steps alone at N threads, every configuration and length
// in measureDecode's order, checked against xattn's full-copy SDPA (one thread); prints one JSON line.
if (process.argv[1] === self) {
  const { values } = parseArgs({ options: { 'ort-threads': { type: 'string' } } });
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = Number(values['ort-threads']);
  const xa = await loadXattn(true);
  const results = [];
  for (const cfg of DECODE_CONFIGS) {
    for (const length of DECODE_LENGTHS) {
      const { K, V, q, k, v } = stepInputs(cfg, length);
      const want = xa.scaledDotProductAttention(q, K, V, { enableGqa: true }).output.data;
      results.push(await timeOrt(ort, cfg, length, K, V, q, k, v, want));
    }
  }
  console.log(JSON.stringify(results));
  process.exit(0);  // onnxruntime keeps handles open
}
