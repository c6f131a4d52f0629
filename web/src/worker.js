// The lab's compute worker. Every computation of the lesson's chapters happens here, so the page never
// freezes; it loads the package as a user would ('xattn') and keeps the last result, so the page asks for
// one (b, h) slice at a time instead of receiving every weight. The page runs three of these
// (worker-pool.js): one holds the last finished result, one computes the next, one runs the side studies.
//
// Why a worker of the page's own rather than the package's createXattnWorker: it does more than package
// calls. It holds a result between requests and cuts slices, thumbnails and averaging steps out of it,
// generates the inputs next to the package (a transfer per call would copy them), reports progress inside
// long runs, and times calls where they run (a round trip per call would be timed too).
//
// Protocol (shared/jobs-serve.js): the page posts { id, type, payload }; the worker answers progress messages
// and then a result or an error. Cancelling is done by the page terminating this worker, so jobs need no
// cancellation checks.
import { createXattn } from 'xattn';
import { serve } from './shared/jobs-serve.js';
import { attend } from './lesson/attend.js';
import { sliceView } from './lesson/slice-view.js';
import { everyBatchThumbs } from './heads/head-thumbs.js';
import { runScalingStudy } from './scaling/scaling-study.js';
import { runSpeed } from './speed/speed-run.js';
import { timeDecodeSteps } from './decode/decode-timing.js';

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
const instances = {}; // kind → Promise<Xattn>
let held = null; // the last computed problem, its results and the instance that computed them

function instance(kind = 'auto') {
  instances[kind] ??= createXattn(OPTIONS[kind]()).catch((err) => {
    delete instances[kind]; // a later request tries again
    throw err;
  });
  return instances[kind];
}

const buildOf = (lib) => ({ simd: lib.simd, relaxedSimd: lib.relaxedSimd, version: lib.version, threads: lib.threads });

function requireHeld() {
  if (!held) throw new Error('nothing has been computed yet');
  return held;
}

const handlers = {
  // payload.threads: this worker's own thread count (its role's, from worker-pool.js); absent for the default.
  async init({ threads }) {
    autoOptions = threads === undefined ? undefined : { threads };
    return buildOf(await instance());
  },
  // One request per change of the controls: the attention and the (b, h) slice the page shows, together.
  async compute(payload, progress) {
    const lib = await instance();
    const r = attend(lib, payload, progress);
    held = r.held;
    return { ...r.summary, build: buildOf(lib), view: sliceView(held, payload.pick ?? { b: 0, h: 0 }) };
  },
  view: (pick) => sliceView(requireHeld(), pick),
  everyBatchThumbs: ({ count }) => everyBatchThumbs(requireHeld(), count),
  // A whole tensor, for export (and for tests reading the page's data).
  tensor({ name }) {
    const t = requireHeld()[name];
    if (!['query', 'key', 'value', 'output', 'weights'].includes(name) || !t) throw new RangeError(`no tensor named '${name}' (query, key, value, output, weights)`);
    return { data: t.data.slice(), shape: [...t.shape] };
  },
  // The holder's old result is dropped when it becomes the runner, so two big results never stay in memory.
  drop() {
    held = null;
    return true;
  },
  async scaling({ gen, L, S, draw }, progress) {
    const lib = await instance();
    return runScalingStudy({ grad: (q, k, v, dO, o) => lib.scaledDotProductAttentionGrad(q, k, v, dO, o), gen, L, S, draw, onProgress: progress });
  },
  speed: (payload, progress) => runSpeed(payload, progress, instance),
  // The decoding panel's step-time study: a decoder-sized KvCache and full copies, timed here in the side
  // worker, never on the page's thread.
  async decodeTiming(payload, progress) {
    return timeDecodeSteps(await instance(), { ...payload, clock: () => performance.now(), onProgress: progress });
  },
};

serve(handlers);
