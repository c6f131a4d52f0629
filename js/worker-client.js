// createXattnWorker's page side: the xattn API over a worker (js/worker-host.js), every method returning a
// Promise. Calls wait in a queue here and go to the worker one at a time, so a queued call can be cancelled
// (its AbortSignal) before it starts; a call that has started runs to its end in the worker, and an abort
// only settles its Promise early. Arguments are read when the call is made (js/worker-snapshot.js).
import { snapshot } from './worker-snapshot.js';
import { checkOptions, typeName } from './validate.js';
import { BUILDS, locator } from './wasm-paths.js';

const ERRORS = { TypeError, RangeError, Error };
const ASYNC_DISPOSE = Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose');

// An error from the worker, as the class it was thrown as.
function rebuild({ name, message }) {
  const Kind = ERRORS[name] ?? Error;
  return new Kind(message);
}

function abortReason(signal) {
  if (signal.reason !== undefined) return signal.reason;
  const e = new Error('the call was aborted');
  e.name = 'AbortError';
  return e;
}

// The per-call options every worker method takes last: { signal, transfer }.
function callOptions(fn, call) {
  const c = checkOptions(fn, 'call options', call, ['signal', 'transfer']);
  const { signal } = c;
  if (signal !== undefined && (signal === null || typeof signal !== 'object' || typeof signal.aborted !== 'boolean'
    || typeof signal.addEventListener !== 'function')) {
    throw new TypeError(`${fn}: signal must be an AbortSignal, got ${typeName(signal)}`);
  }
  if (c.transfer !== undefined && typeof c.transfer !== 'boolean') {
    throw new TypeError(`${fn}: transfer must be a boolean, got ${typeName(c.transfer)}`);
  }
  return { signal, transfer: c.transfer === true };
}

// `endpoint`: { post(message, transfer), listen(onMessage, onFailure), busy(isBusy), terminate() → Promise }.
function makeQueue(endpoint) {
  const waiting = [];
  let running = null;
  let stopped = null;  // the Error every later call rejects with
  let nextId = 1;

  function settle(job, outcome, value) {
    if (job.settled) return;
    job.settled = true;
    job.signal?.removeEventListener('abort', job.onAbort);
    if (outcome === 'resolve') job.resolve(value);
    else job.reject(value);
  }

  function pump() {
    if (running || stopped) return;
    running = waiting.shift() ?? null;
    endpoint.busy(running !== null);
    if (!running) return;
    try {
      endpoint.post({ ...running.message, id: running.id }, running.transfer);
    } catch (e) {
      const job = running;
      running = null;
      settle(job, 'reject', e);
      pump();
    }
  }

  function stop(error) {
    if (stopped) return;
    stopped = error;
    for (const job of [running, ...waiting.splice(0)]) if (job) settle(job, 'reject', error);
    running = null;
    endpoint.busy(false);
  }

  endpoint.listen((reply) => {
    if (!running || reply.id !== running.id) return;
    const job = running;
    running = null;
    if (job.settled) job.onLateReply?.(reply);  // aborted while it ran
    else if (reply.ok) settle(job, 'resolve', job.adopt ? job.adopt(reply.value) : reply.value);
    else settle(job, 'reject', rebuild(reply.error));
    pump();
  }, (error) => stop(new Error(`xattn worker stopped: ${error?.message ?? error}`, { cause: error })));

  // Queues `message`; `adopt` turns the reply's value into the result; `onLateReply` handles the reply of a
  // call that was aborted while it ran.
  function send(message, { transfer = [], signal, adopt, onLateReply } = {}) {
    if (stopped) return Promise.reject(stopped);
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    return new Promise((resolve, reject) => {
      const job = { id: nextId++, message, transfer, signal, adopt, onLateReply, resolve, reject, settled: false };
      job.onAbort = () => {
        const at = waiting.indexOf(job);
        if (at >= 0) waiting.splice(at, 1);
        settle(job, 'reject', abortReason(signal));
      };
      signal?.addEventListener('abort', job.onAbort, { once: true });
      waiting.push(job);
      pump();
    });
  }

  async function terminate() {
    stop(new Error('xattn worker: terminated'));
    await endpoint.terminate();
  }

  return { send, terminate, get pending() { return waiting.length + (running ? 1 : 0); } };
}

// The calls whose direct form takes options.out (the caller's array for the output, or a backward's arrays by
// result). The worker cannot write into this thread's arrays, so through it they refuse out rather than fill a
// copy the caller never sees. (Its linearGrad takes no options: its fifth argument is the call's.)
const TAKES_OUT = new Set(['scaledDotProductAttention', 'scaledDotProductAttentionGrad', 'MultiheadAttention.forward',
  'MultiheadAttention.backward', 'KvCache.attend', 'linear', 'layerNorm', 'layerNormGrad',
  'TransformerEncoderLayer.forward', 'TransformerEncoderLayer.backward']);

// Sends one API call: its options (the last argument) checked and its arguments snapshot now; a refusal
// rejects the returned Promise. `extra` goes to queue.send.
function caller(queue) {
  return function call(fn, message, args, names, options, extra = {}) {
    let packed;
    let signal;
    try {
      if (TAKES_OUT.has(fn) && args[names.indexOf('options')]?.out !== undefined) {
        throw new TypeError(`${fn}: options.out is not available through a worker: the worker cannot write into this thread's arrays, and its results come back as new arrays`);
      }
      const checked = callOptions(fn, options);
      signal = checked.signal;
      packed = snapshot(fn, args, names, checked.transfer);
    } catch (e) {
      return Promise.reject(e);
    }
    return queue.send({ ...message, args: packed.value }, { transfer: packed.transfer, signal, ...extra });
  };
}

// A module the worker keeps (MultiheadAttention, TransformerEncoderLayer): `methods` maps each method to its
// argument names (the call options come after them); `noun` is what its messages call it.
function remoteModule(queue, call, id, config, { className, noun, methods }) {
  let disposed = false;
  const method = (name, names) => (...given) => {
    const FN = `${className}.${name}`;
    if (disposed) return Promise.reject(new Error(`${FN}: this ${noun} was disposed`));
    const args = given.slice(0, names.length);
    return call(FN, { op: 'module', module: id, method: name }, args, names, given[names.length]).then((value) => keptToken(queue, value));
  };
  function dispose() {
    if (disposed) return Promise.resolve();
    disposed = true;
    return queue.send({ op: 'module', module: id, method: 'dispose', args: [] }).catch(() => {});
  }
  return {
    ...Object.fromEntries(Object.entries(methods).map(([name, names]) => [name, method(name, names)])),
    setParameters: method('setParameters', ['parameters']),
    loadStateDict: method('loadStateDict', ['source', 'options']),
    parameters: method('parameters', []),
    dispose,
    [ASYNC_DISPOSE]: dispose,
    get config() { return { ...config }; },
  };
}

// A layer forward's `saved`, kept in the worker: a token that crosses back as { kept: id } (its dispose is not
// enumerable, so it is not sent) and whose dispose() frees what the worker keeps.
function keptToken(queue, value) {
  if (!value?.saved) return value;
  const id = value.saved.kept;
  let released = false;
  const dispose = () => {
    if (released) return Promise.resolve();
    released = true;
    return queue.send({ op: 'module', module: id, method: 'dispose', args: [] }).catch(() => {});
  };
  const token = { kept: id };
  Object.defineProperty(token, 'dispose', { value: dispose });
  Object.defineProperty(token, ASYNC_DISPOSE, { value: dispose });
  return { ...value, saved: Object.freeze(token) };
}

const MHA = {
  className: 'MultiheadAttention', noun: 'module',
  methods: { forward: ['query', 'key', 'value', 'options'], backward: ['query', 'key', 'value', 'gradOutput', 'options'] },
};
const LAYER = { className: 'TransformerEncoderLayer', noun: 'layer', methods: { forward: ['src', 'options'], backward: ['src', 'gradOutput', 'options'] } };

function remoteCache(queue, call, id, config) {
  let disposed = false;
  const method = (name, names) => (...given) => {
    const FN = `KvCache.${name}`;
    if (disposed) return Promise.reject(new Error(`${FN}: this cache was disposed`));
    return call(FN, { op: 'module', module: id, method: name }, given.slice(0, names.length), names, given[names.length]);
  };
  function dispose() {
    if (disposed) return Promise.resolve();
    disposed = true;
    return queue.send({ op: 'module', module: id, method: 'dispose', args: [] }).catch(() => {});
  }
  return {
    append: method('append', ['key', 'value', 'options']),
    attend: method('attend', ['query', 'options']),
    truncate: method('truncate', ['length']),
    keys: method('keys', []),
    values: method('values', []),
    /** Positions held, as a Promise (the cache lives in the worker). */
    length: method('length', []),
    /** Positions held by each batch element, as a Promise. */
    lengths: method('lengths', []),
    /** The next position of each batch element, as a Promise. */
    positions: method('positions', []),
    get capacity() { return config.capacity; },
    get config() { return { ...config }; },
    dispose,
    [ASYNC_DISPOSE]: dispose,
  };
}

// The API over a started worker. `info` is what its createXattn reported.
function workerApi(queue, info) {
  const call = caller(queue);
  const method = (name, names) => (...given) => call(name, { op: 'xattn', method: name }, given.slice(0, names.length), names,
    given[names.length]);
  return Object.freeze({
    simd: info.simd,
    relaxedSimd: info.relaxedSimd,
    threads: info.threads,
    spinMicroseconds: info.spinMicroseconds,
    kernels: info.kernels,
    version: info.version,
    memoryBytes: (options) => call('memoryBytes', { op: 'xattn', method: 'memoryBytes' }, [], [], options),
    scaledDotProductAttention: method('scaledDotProductAttention', ['query', 'key', 'value', 'options']),
    scaledDotProductAttentionGrad: method('scaledDotProductAttentionGrad', ['query', 'key', 'value', 'gradOutput', 'options']),
    applyRotaryEmbedding: method('applyRotaryEmbedding', ['x', 'options']),
    applyRotaryEmbeddingGrad: method('applyRotaryEmbeddingGrad', ['gradOutput', 'options']),
    linear: method('linear', ['input', 'weight', 'bias', 'options']),
    linearGrad: method('linearGrad', ['input', 'weight', 'bias', 'gradOutput']),
    layerNorm: method('layerNorm', ['input', 'normalizedShape', 'options']),
    layerNormGrad: method('layerNormGrad', ['input', 'normalizedShape', 'gradOutput', 'options']),
    createTransformerEncoderLayer(config, options) {
      const FN = 'createTransformerEncoderLayer';
      return call(FN, { op: 'xattn', method: FN }, [config], ['config'], options, {
        adopt: (value) => remoteModule(queue, call, value.module, value.config, LAYER),
        onLateReply: (reply) => {
          if (reply.ok) queue.send({ op: 'module', module: reply.value.module, method: 'dispose', args: [] }).catch(() => {});
        },
      });
    },
    createMultiheadAttention(config, options) {
      const FN = 'createMultiheadAttention';
      return call(FN, { op: 'xattn', method: FN }, [config], ['config'], options, {
        adopt: (value) => remoteModule(queue, call, value.module, value.config, MHA),
        // Created after its caller gave up on it: free it in the worker.
        onLateReply: (reply) => {
          if (reply.ok) queue.send({ op: 'module', module: reply.value.module, method: 'dispose', args: [] }).catch(() => {});
        },
      });
    },
    createKvCache(config, options) {
      const FN = 'createKvCache';
      return call(FN, { op: 'xattn', method: FN }, [config], ['config'], options, {
        adopt: (value) => remoteCache(queue, call, value.module, value.config),
        onLateReply: (reply) => {
          if (reply.ok) queue.send({ op: 'module', module: reply.value.module, method: 'dispose', args: [] }).catch(() => {});
        },
      });
    },
    /** Calls made and not yet settled, the running one included. */
    get pendingCalls() { return queue.pending; },
    terminate: () => queue.terminate(),
    dispose: () => queue.terminate(),
    [ASYNC_DISPOSE]: () => queue.terminate(),
  });
}

// options.wasmPaths as the worker's createXattn takes it: a base as an absolute URL (a relative one means the
// page's base, not the worker script's), a function as the location of every file any build may load
// ({ fileName: URL }, since a function cannot be sent), which js/worker-host.js makes a function again.
function wasmPathsForWorker(FN, wasmPaths, { resolve, files }) {
  const locate = locator(FN, wasmPaths, resolve);
  if (!locate) return undefined;
  if (typeof wasmPaths !== 'function') return locate('').href;
  return { files: Object.fromEntries(BUILDS.flatMap(files).map((name) => [name, locate(name).href])) };
}

// createXattnWorker for an entry: `open()` starts the worker and returns its endpoint; `paths` is how the
// entry reads options.wasmPaths: { resolve(string) → URL, files(build) → names } (js/wasm-paths.js).
export async function connectWorker(options, open, paths) {
  const FN = 'createXattnWorker';
  const o = checkOptions(FN, 'options', options, ['simd', 'threads', 'relaxedSimd', 'spinMicroseconds', 'wasmPaths']);
  for (const key of ['simd', 'relaxedSimd']) {
    if (o[key] !== undefined && typeof o[key] !== 'boolean') throw new TypeError(`${FN}: options.${key} must be a boolean, got ${typeName(o[key])}`);
  }
  for (const key of ['threads', 'spinMicroseconds']) {
    if (o[key] !== undefined && typeof o[key] !== 'number') throw new TypeError(`${FN}: options.${key} must be a number, got ${typeName(o[key])}`);
  }
  const wasmPaths = wasmPathsForWorker(FN, o.wasmPaths, paths);
  const queue = makeQueue(open());
  try {
    // createXattn in the worker checks the rest (threads and spinMicroseconds in range, shared memory and relaxed
    // SIMD there).
    const given = Object.fromEntries(Object.entries({ simd: o.simd, threads: o.threads, relaxedSimd: o.relaxedSimd,
      spinMicroseconds: o.spinMicroseconds, wasmPaths })
      .filter(([, v]) => v !== undefined));
    const info = await queue.send({ op: 'init', options: Object.keys(given).length ? given : undefined });
    return workerApi(queue, info);
  } catch (e) {
    await queue.terminate().catch(() => {});
    throw new Error(`${FN}: the worker could not start xattn: ${e?.message ?? e}`, { cause: e });
  }
}
