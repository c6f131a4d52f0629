// The demo's module Worker: every computation happens here so the page never freezes. It loads the
// package exactly as a user would, through its public API, and keeps the last result so the page can ask
// for one (b, h) slice at a time instead of receiving every weight. The page runs three of these
// (worker-pool.js): one holds the last finished result, one computes the next, one runs the side studies.
//
// Protocol (worker-serve.js): the page posts { id, type, payload }; the worker answers { id, kind: 'progress',
// done, total, label } while it works and then { id, kind: 'result', value } or { id, kind: 'error', message }.
// Cancelling is done by the page terminating this worker, so jobs need no cancellation checks.
import { createXattn } from 'xattn';
import { generateInputs, matrixOf, checkFootprint } from './tensors.js';
import { inputShapes } from './shapes.js';
import { sdpaMaskOptions, allowedMatrix, fullyMaskedRows } from './masks.js';
import { attentionGeometry, plainAttention } from './plain-attention.js';
import { rowEntropy, rowSums } from './row-stats.js';
import { downsampleAll, downsampleMax } from './downsample.js';
import { runScalingStudy } from './scaling-study.js';
import { attentionFlops, gflopsPerSecond, maxAbsDiff, timeRuns } from './speed.js';
import { SPEED_RUNNERS, oneThreadReason, threadsName } from './speed-threads.js';
import { measureSimdPeak } from './simd-peak.js';
import { averagingSteps } from './averaging.js';
import { timeDecodeSteps } from './decode/decode-timing.js';
import { serve } from './worker-serve.js';

// The page's own float32 data (Q, K, V, output, weights) is capped here; the package refuses any single
// tensor past 1 GiB itself, with its own message. Two workers of one tab can hold a result at once (the
// finished one and the one being computed), so each gets 1 GiB.
const FOOTPRINT_LIMIT = 2 ** 30;
// Above this many flops the attention runs one batch element per call, so progress can be reported.
const CHUNK_FLOPS = 5e7;
const THUMB = 48;
const SMALL_THUMB = 32;

// The package instances this worker makes, each on first use and then kept:
// - 'auto': the worker's own, for everything but the speed comparison. Its thread count is its role's
//   (worker-pool.js), sent with 'init', the first request; undefined is the package's default.
// - 'simd' (the SIMD build on 1 thread) and 'threads' (the package's default: every thread when the page is
//   cross-origin isolated, else 1): the speed comparison's two SIMD rows.
// - 'scalar': the scalar build, which has no threads.
// The promise is kept, so requests that arrive while one loads share it rather than make a second instance
// (a threaded one starts its own pool of Workers).
let autoOptions;
const OPTIONS = {
  auto: () => autoOptions,
  simd: () => ({ simd: true, threads: 1 }),
  threads: () => undefined,
  scalar: () => ({ simd: false }),
};
const modules = {}; // kind → Promise<Xattn>
let current = null; // the last computed problem and its results (and the instance that computed them)

function xattn(kind = 'auto') {
  modules[kind] ??= createXattn(OPTIONS[kind]()).catch((err) => {
    delete modules[kind]; // a later request tries again
    throw err;
  });
  return modules[kind];
}

const now = () => performance.now();

// The tensors of batch element b of a (B, …) tensor: a view, which the package accepts (non-zero byteOffset).
function batchSlice(t, b) {
  const per = t.data.length / t.shape[0];
  return { data: t.data.subarray(b * per, (b + 1) * per), shape: [1, ...t.shape.slice(1)] };
}

function maskSlice(options, b) {
  const mask = options.attnMask;
  if (!mask || mask.shape.length < 3 || mask.shape[0] === 1) return options;
  return { ...options, attnMask: batchSlice(mask, b) };
}

// The inputs and the package's options for one set of settings (also what the speed comparison times).
function prepare({ dims, gen, mask, imported }) {
  const { query, key, value } = generateInputs(dims, gen, imported ?? {});
  const { options: maskOptions, maskShape } = sdpaMaskOptions(dims, mask);
  const options = { ...maskOptions, enableGqa: dims.useHeads && dims.Hkv !== dims.H };
  return { query, key, value, options, maskShape };
}

// One request per change of the controls: the attention and the (b, h) slice the page shows, together.
async function compute(payload, progress) {
  const summary = await attend(payload, progress);
  return { ...summary, view: view(payload.pick ?? { b: 0, h: 0 }) };
}

async function attend({ dims, gen, mask, imported }, progress) {
  const shapes = inputShapes(dims);
  const H = dims.useHeads ? dims.H : 1;
  const lead = dims.useHeads ? [dims.B, H] : [dims.B];
  const tooBig = checkFootprint(
    {
      Q: shapes.query.shape,
      K: shapes.key.shape,
      V: shapes.value.shape,
      output: [...lead, dims.L, dims.Ev],
      weights: [...lead, dims.L, dims.S],
    },
    FOOTPRINT_LIMIT,
  );
  if (tooBig) throw new RangeError(tooBig);
  const lib = await xattn();
  progress(0, 3, 'generating Q, K, V');
  const t0 = now();
  const prepared = prepare({ dims, gen, mask, imported });
  const { query, key, value, maskShape } = prepared;
  const tGen = now() - t0;
  const options = { ...prepared.options, needWeights: true };
  const t1 = now();
  let output;
  let weights;
  if (attentionFlops(dims) <= CHUNK_FLOPS || dims.B === 1) {
    progress(1, 3, 'attention');
    ({ output, weights } = lib.scaledDotProductAttention(query, key, value, options));
  } else {
    // One call per batch element, written into the full result, so a long run reports progress.
    output = { data: new Float32Array(dims.B * H * dims.L * dims.Ev), shape: [...lead, dims.L, dims.Ev] };
    weights = { data: new Float32Array(dims.B * H * dims.L * dims.S), shape: [...lead, dims.L, dims.S] };
    for (let b = 0; b < dims.B; b++) {
      progress(b, dims.B, `attention, batch element ${b + 1} of ${dims.B}`);
      const r = lib.scaledDotProductAttention(
        batchSlice(query, b),
        batchSlice(key, b),
        batchSlice(value, b),
        maskSlice(options, b),
      );
      output.data.set(r.output.data, b * r.output.data.length);
      weights.data.set(r.weights.data, b * r.weights.data.length);
    }
  }
  const tAttn = now() - t1;
  current = { dims, gen, mask, query, key, value, output, weights, options, lib };
  return {
    shapes: { query: query.shape, key: key.shape, value: value.shape, output: output.shape, weights: weights.shape, mask: maskShape },
    ms: { generate: tGen, attention: tAttn },
    build: buildOf(lib),
  };
}

function requireCurrent() {
  if (!current) throw new Error('nothing has been computed yet');
  return current;
}

// One (b, h) slice: everything the heatmaps, hover and row statistics need, as transferable arrays. The
// hover's raw score q·k is one dot product of a row of `query` and a row of `key`, computed on the page
// when the pointer moves, so no (L, S) score matrix is computed for every change.
function view({ b, h }) {
  const c = requireCurrent();
  const { dims } = c;
  const H = dims.useHeads ? dims.H : 1;
  const m = b * H + h;
  const { L, S } = dims;
  const geometry = attentionGeometry(c.query, c.key, c.value, { enableGqa: c.options.enableGqa });
  const weights = matrixOf(c.weights, m);
  const allowed = allowedMatrix(dims, c.mask, b);
  const query = matrixOf(c.query, m);
  const key = matrixOf(c.key, geometry.kvIndex(m));
  const value = matrixOf(c.value, geometry.kvIndex(m));
  const thumbs = dims.useHeads ? headThumbs(c, b, allowed, THUMB) : [];
  return {
    b,
    h,
    L,
    S,
    E: dims.E,
    Ev: dims.Ev,
    scale: 1 / Math.sqrt(dims.E),
    weights,
    allowed,
    fullyMasked: fullyMaskedRows(allowed, L, S),
    rowSums: Float32Array.from(rowSums(weights, L, S)),
    rowEntropy: Float32Array.from(rowEntropy(weights, L, S)),
    query,
    key,
    value,
    output: matrixOf(c.output, m),
    thumbs,
    // From averaging to attention, on this slice's first positions (the package is loaded: it computed c).
    averaging: averagingSteps({ query, key, value, L, S, E: dims.E, Ev: dims.Ev }, (q, k, v, o) =>
      c.lib.scaledDotProductAttention(q, k, v, o),
    ),
  };
}

// Every head's weights of batch element b, max-pooled to at most size × size, with the mask's hidden cells.
function headThumbs(c, b, allowed, size) {
  const { L, S } = c.dims;
  const H = c.dims.H;
  const whole = { r0: 0, c0: 0, rows: L, cols: S };
  const hidden = allowed.map((a) => (a ? 0 : 1));
  const thumbs = [];
  for (let head = 0; head < H; head++) {
    const d = downsampleMax(c.weights.data.subarray((b * H + head) * L * S), S, whole, size, size);
    // Every head of b shares the mask, but each thumbnail is transferred, so each gets its own copy.
    thumbs.push({ head, data: d.data, rows: d.rows, cols: d.cols, hidden: downsampleAll(hidden, S, whole, d.blockR, d.blockC) });
  }
  return thumbs;
}

// The heads grid's "every batch element": the thumbnails of batch elements 0 … count − 1 (the page caps
// how many it shows), smaller than the single row's.
function everyBatchThumbs({ count }) {
  const c = requireCurrent();
  if (!c.dims.useHeads) return [];
  const n = Math.min(c.dims.B, count);
  return Array.from({ length: n }, (_, b) => ({ b, thumbs: headThumbs(c, b, allowedMatrix(c.dims, c.mask, b), SMALL_THUMB) }));
}

// A whole tensor, for export (and for tests reading the page's data).
function tensor({ name }) {
  const c = requireCurrent();
  const t = c[name];
  if (!t) throw new RangeError(`no tensor named '${name}' (query, key, value, output, weights)`);
  return { data: t.data.slice(), shape: [...t.shape] };
}

async function scaling({ gen, L, S, draw }, progress) {
  const lib = await xattn();
  return runScalingStudy({
    grad: (q, k, v, dO, o) => lib.scaledDotProductAttentionGrad(q, k, v, dO, o),
    gen,
    L,
    S,
    draw,
    onProgress: (done, total, label) => progress(done, total, label),
  });
}

// The SIMD build on 1 thread and on every thread, the scalar build and plain JS on the page's settings (the
// same inputs the attention used, generated again here: this runs in the side worker, so the finished result
// stays where it is); each checked against the first that runs. An engine without wasm SIMD, or a page
// without threads, gets a row saying why instead of a failed or duplicated comparison. The wasm SIMD mul+add
// peak (of one thread) is measured first, in this same thread, as the chart's ceiling.
async function speed(payload, progress) {
  const { dims } = payload;
  const { query, key, value, options } = prepare(payload);
  const flops = attentionFlops(dims);
  progress(0, SPEED_RUNNERS.length + 1, 'measuring the wasm SIMD peak');
  const peak = measureSimdPeak({ clock: now });
  const results = [];
  let reference = null;
  for (let n = 0; n < SPEED_RUNNERS.length; n++) {
    const r = SPEED_RUNNERS[n];
    const step = (label) => progress(n + 1, SPEED_RUNNERS.length + 1, label);
    step(`timing ${r.name}`);
    let fn;
    let threads = 1;
    if (r.kind === 'js') {
      fn = () => plainAttention(query, key, value, options);
    } else {
      let lib;
      try {
        lib = await xattn(r.kind);
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
  return { flops, dims, results, peak };
}

const buildOf = (lib) => ({ simd: lib.simd, relaxedSimd: lib.relaxedSimd, version: lib.version, threads: lib.threads });

// payload.threads: this worker's own thread count (its role's, from worker-pool.js); absent for the default.
async function init({ threads }) {
  autoOptions = threads === undefined ? undefined : { threads };
  return buildOf(await xattn());
}

// The holder's old result is dropped when it becomes the runner, so two big results never stay in memory.
function drop() {
  current = null;
  return true;
}

// The decoding panel's step-time study (decode/decode-timing.js): a decoder-sized KvCache and full copies,
// timed here in the side worker, never on the page's thread.
async function decodeTiming(payload, progress) {
  const lib = await xattn();
  return timeDecodeSteps(lib, { ...payload, clock: now, onProgress: progress });
}

const handlers = { init, compute, view, tensor, scaling, speed, drop, everyBatchThumbs, decodeTiming };

serve(handlers);
