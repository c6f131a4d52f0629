// Tiny WebAssembly modules, written out byte by byte, measuring in this process what bounds the kernels: the
// memory read bandwidth (v128 loads summed over a buffer larger than the caches) and the SIMD arithmetic peak:
// for plain SIMD128 the page's own loop (web/src/speed/simd-peak.js: 7 chains of f32x4 multiplies beside 7 chains of
// f32x4 adds, as bench/peak.hpp has them), for relaxed SIMD 12 chains of one f32x4.relaxed_madd each (Node 20
// needs --experimental-wasm-relaxed-simd, Chromium runs it as is).
//
// The plain loop must not be 12 chains of acc = acc + a·b with a and b fixed: V8 computes a loop-invariant a·b
// once, before the loop, and what is left measures adds alone. That reads the same as the true peak on a core
// with separate multiply and add pipes (AMD's Zen), but twice the true peak wherever the two share pipes
// (Intel's cores, Arm's), and every "% of peak" there half what it is.
import { FLOPS_PER_ITERATION as PEAK_FLOPS_PER_ITERATION, measureSimdPeak as measurePagePeak, peakModuleBytes } from '../../web/src/speed/simd-peak.js';
import { HEADER, OP, f32, name, section, sleb, uleb } from '../../web/src/speed/wasm-bytes.js';

// (memory (export "memory") pages) (func (export "sum") (param $bytes i32) (param $passes i32) (result f32)):
// reads bytes [0, $bytes) $passes times, 64 bytes (4 v128 loads into 4 accumulators) per iteration.
function bandwidthModule(pages) {
  const BYTES = 0, PASSES = 1, I = 2, ACC = (k) => 3 + k;
  const body = [OP.loop, OP.voidBlock, OP.i32Const, 0, OP.localSet, I, OP.loop, OP.voidBlock];
  for (let k = 0; k < 4; k++) {
    body.push(OP.localGet, ACC(k), OP.localGet, I, ...OP.load, 4, ...uleb(16 * k), ...OP.add, OP.localSet, ACC(k));
  }
  body.push(OP.localGet, I, OP.i32Const, ...sleb(64), OP.i32Add, OP.localTee, I, OP.localGet, BYTES, OP.i32LtU, OP.brIf, 0,
    OP.end, OP.localGet, PASSES, OP.i32Const, 1, OP.i32Sub, OP.localTee, PASSES, OP.brIf, 0, OP.end);
  body.push(OP.localGet, ACC(0));
  for (let k = 1; k < 4; k++) body.push(OP.localGet, ACC(k), ...OP.add);
  body.push(...OP.extractLane, 0, OP.end);
  const func = [2, 1, 0x7f, 4, 0x7b, ...body];  // locals: one i32, four v128
  return Uint8Array.from([
    ...HEADER,
    ...section(1, [1, 0x60, 2, 0x7f, 0x7f, 1, 0x7d]),          // (i32, i32) -> f32
    ...section(3, [1, 0]),
    ...section(5, [1, 0x00, ...uleb(pages)]),                 // one memory of `pages` pages
    ...section(7, [2, ...name('memory'), 0x02, 0, ...name('sum'), 0x00, 0]),
    ...section(10, [1, ...uleb(func.length), ...func]),
  ]);
}

// (func (export "peak") (param $n i32) (result f32)): $n iterations of 12 chains acc = relaxed_madd(a, b, acc):
// 12 fused (or, on a CPU without FMA, mul and add) operations, 96 flops, none of them loop-invariant.
function relaxedPeakModule() {
  const CHAINS = 12, N = 0, ACC = (k) => 1 + k, A = 1 + CHAINS, B = A + 1;
  const splatTo = (value, local) => [OP.f32Const, ...f32(value), ...OP.splat, OP.localSet, local];
  const body = [];
  for (let k = 0; k < CHAINS; k++) body.push(...splatTo(k / 10, ACC(k)));
  body.push(...splatTo(0.999, A), ...splatTo(1e-7, B), OP.loop, OP.voidBlock);
  for (let k = 0; k < CHAINS; k++) body.push(OP.localGet, A, OP.localGet, B, OP.localGet, ACC(k), ...OP.madd, OP.localSet, ACC(k));
  body.push(OP.localGet, N, OP.i32Const, 1, OP.i32Sub, OP.localTee, N, OP.brIf, 0, OP.end, OP.localGet, ACC(0));
  for (let k = 1; k < CHAINS; k++) body.push(OP.localGet, ACC(k), ...OP.add);
  body.push(...OP.extractLane, 0, OP.end);
  const func = [1, ...uleb(CHAINS + 2), 0x7b, ...body];
  return Uint8Array.from([
    ...HEADER,
    ...section(1, [1, 0x60, 1, 0x7f, 1, 0x7d]),
    ...section(3, [1, 0]),
    ...section(7, [1, ...name('peak'), 0x00, 0]),
    ...section(10, [1, ...uleb(func.length), ...func]),
  ]);
}

// The read probe: `run()` reads a `mib` MiB buffer (past any CPU's caches) once; `bytes` per run. For sections that
// interleave it with what they compare against it (bench/js/decode.mjs), so that both see the same host.
export function readBandwidthProbe({ mib = 256 } = {}) {
  const bytes = mib * 2 ** 20;
  const { exports } = new WebAssembly.Instance(new WebAssembly.Module(bandwidthModule(bytes / 65536 + 1)));
  new Float32Array(exports.memory.buffer, 0, bytes / 4).fill(1);  // touch every page: untouched ones read as one zero page
  exports.sum(2 ** 20, 1);  // optimise the loop before timing it
  return { bytes, run: () => exports.sum(bytes, 1) };
}

// The arithmetic probe: `run()` runs the plain peak loop (the page's) or, with `relaxed`, the relaxed_madd chains
// for `iterations` iterations; `flops` per run. V8's code for the plain loop differs a little between
// compilations: the fastest of `compiles` is kept.
export function simdPeakProbe({ iterations = 2_000_000, relaxed = false, compiles = 4 } = {}) {
  if (relaxed) {
    const { exports } = new WebAssembly.Instance(new WebAssembly.Module(relaxedPeakModule()));
    exports.peak(10000);
    return { flops: iterations * 12 * 8, run: () => exports.peak(iterations) };  // 12 madds of 4 lanes
  }
  let fastest = null;
  for (let c = 0; c < compiles; c++) {
    const { peak } = new WebAssembly.Instance(new WebAssembly.Module(peakModuleBytes())).exports;
    peak(1000);
    const t0 = performance.now();
    peak(iterations);
    const ms = performance.now() - t0;
    if (!fastest || ms < fastest.ms) fastest = { ms, peak };
  }
  return { flops: iterations * PEAK_FLOPS_PER_ITERATION, run: () => fastest.peak(iterations) };
}

const best = (runs, f) => {
  let top = 0;
  for (let r = 0; r < runs; r++) top = Math.max(top, f());
  return top;
};

// FLOP/s of the multiply and add chains (the page's measurement, over several compilations of its loop), or with
// `relaxed` of the relaxed_madd chains: the best of several runs.
export function measureSimdPeak({ iterations = 5_000_000, runs = 7, relaxed = false } = {}) {
  if (!relaxed) return measurePagePeak({ clock: () => performance.now(), iterations, repeats: 4 * runs }) * 1e9;
  const probe = simdPeakProbe({ iterations, relaxed: true });
  return best(runs, () => {
    const t0 = performance.now();
    probe.run();
    return probe.flops / ((performance.now() - t0) / 1000);
  });
}

// The plain peak loop on `threads` threads at once: this thread and threads - 1 worker threads, each with a
// simdPeakProbe of its own. `run()` starts the workers' loops, runs
// its own, and returns when all have finished; `flops` per run counts every thread's. What two threads give on
// a host whose second vCPU is shared with other guests (or is the first one's SMT sibling) is not twice what
// one gives: read beside a threaded kernel, it tells what scaling the host allowed at that moment.
// Blocks this thread while it waits (Node's main thread may); close() ends the workers.
export async function parallelPeakProbe(threads, { iterations = 4_000_000, compiles = 4 } = {}) {
  const { Worker } = await import('node:worker_threads');
  const control = new Int32Array(new SharedArrayBuffer(8));  // [0]: job number (-1: stop), [1]: loops finished
  const own = simdPeakProbe({ iterations, compiles });
  // Each worker imports this module for its probe.
  const workerSource = `
    const { workerData, parentPort } = require('node:worker_threads');
    const { control, module, iterations, compiles } = workerData;
    import(module).then(({ simdPeakProbe }) => {
      const probe = simdPeakProbe({ iterations, compiles });
      parentPort.postMessage('ready');
      for (let seen = 0; ; ) {
        Atomics.wait(control, 0, seen);
        seen = Atomics.load(control, 0);
        if (seen < 0) break;
        probe.run();
        Atomics.add(control, 1, 1);
        Atomics.notify(control, 1);
      }
    });`;
  const workers = await Promise.all(Array.from({ length: threads - 1 }, () => new Promise((resolve, reject) => {
    const w = new Worker(workerSource, { eval: true, workerData: { control, module: import.meta.url, iterations, compiles } });
    w.once('message', () => resolve(w));
    w.once('error', reject);
  })));
  return {
    flops: threads * own.flops,
    run() {
      Atomics.store(control, 1, 0);
      Atomics.add(control, 0, 1);
      Atomics.notify(control, 0);
      own.run();
      for (let done; (done = Atomics.load(control, 1)) < threads - 1; ) Atomics.wait(control, 1, done);
    },
    async close() {
      Atomics.store(control, 0, -1);
      Atomics.notify(control, 0);
      await Promise.all(workers.map((w) => w.terminate()));
    },
  };
}

// The plain wasm SIMD peak on n threads in GFLOP/s, timed now: on one, measureSimdPeak; on more, the median of 7
// timings of the peak loop on every thread at once.
export async function simdPeakGflops(n) {
  if (n === 1) return measureSimdPeak() / 1e9;
  const probe = await parallelPeakProbe(n);
  try {
    probe.run();
    const rates = [];
    for (let k = 0; k < 7; k++) {
      const t0 = performance.now();
      probe.run();
      rates.push(probe.flops / ((performance.now() - t0) / 1000) / 1e9);
    }
    return rates.sort((a, b) => a - b)[3];
  } finally {
    await probe.close();
  }
}
