// createKvCache over the boundary (js/boundary.js): keys and values held in wasm memory between calls,
// appended a few positions at a time and attended without being copied in again (src/xattn/kv_cache.hpp).
// Like MultiheadAttention modules, caches are freed by dispose(), `using` (Symbol.dispose), or garbage
// collection of a cache never disposed.
import { LIFE } from './life.js';
import {
  checkBoolean, checkInteger, checkMask, checkNumber, checkOptions, checkOut, checkOutLength, checkTensor,
} from './validate.js';

const CREATE = 'createKvCache';
const CONFIG = ['batch', 'kvHeads', 'headDim', 'valueDim', 'capacity', 'dtype'];
const ATTEND_OPTIONS = ['scale', 'isCausal', 'attnMask', 'needWeights', 'out'];
const DIM_LIMIT = 0x7fffffff;
const DISPOSE = Symbol.dispose ?? Symbol.for('Symbol.dispose');

function checkConfig(config) {
  if (config === undefined) throw new TypeError(`${CREATE}: config { kvHeads, headDim, capacity, … } is required`);
  const c = checkOptions(CREATE, 'config', config, CONFIG);
  const dim = (name, fallback) => (c[name] === undefined && fallback !== undefined
    ? fallback : checkInteger(CREATE, name, c[name], 1, DIM_LIMIT));
  const headDim = dim('headDim');
  const dtype = c.dtype ?? 'float32';
  if (dtype !== 'float32' && dtype !== 'float16') {
    throw new TypeError(`${CREATE}: dtype must be 'float32' or 'float16', got ${JSON.stringify(dtype)}`);
  }
  return {
    batch: dim('batch', 1), kvHeads: dim('kvHeads'), headDim, valueDim: dim('valueDim', headDim),
    capacity: dim('capacity'), dtype,
  };
}

function cacheState(boundary, handle, config) {
  return { boundary, handle, config, disposed: false };
}

function ensureLive(state, method) {
  state.boundary.ensureUsable();
  if (state.disposed) throw new Error(`KvCache.${method}: this cache was disposed`);
}

function append(state, key, value) {
  const FN = 'KvCache.append';
  ensureLive(state, 'append');
  const k = checkTensor(FN, 'key', key);
  const v = checkTensor(FN, 'value', value);
  const { boundary } = state;
  const reply = boundary.prepare('kvAppend', { module: state.handle, key: k.shape, value: v.shape }, FN);
  boundary.copyIn(reply.key, k.data);
  boundary.copyIn(reply.value, v.data);
  boundary.execute(FN);
}

function attend(state, query, options) {
  const FN = 'KvCache.attend';
  ensureLive(state, 'attend');
  const { boundary } = state;
  const o = checkOptions(FN, 'options', options, ATTEND_OPTIONS);
  const q = checkTensor(FN, 'query', query);
  const mask = checkMask(FN, 'attnMask', o.attnMask);
  const needWeights = checkBoolean(FN, 'needWeights', o.needWeights, false);
  const out = checkOut(FN, o.out);
  const reply = boundary.prepare('kvAttend', {
    module: state.handle, query: q.shape, attnMask: mask ? mask.shape : null,
    maskKind: mask ? mask.kind : 0, isCausal: checkBoolean(FN, 'isCausal', o.isCausal, false),
    hasScale: o.scale !== undefined, scale: o.scale === undefined ? 0 : checkNumber(FN, 'scale', o.scale), needWeights,
  }, FN);
  checkOutLength(FN, out, reply.outputShape);
  boundary.copyIn(reply.query, q.data);
  if (mask) boundary.copyIn(reply.attnMask, mask.data);
  boundary.execute(FN);
  const result = { output: { data: boundary.copyOut(reply.output, boundary.count(reply.outputShape), out), shape: reply.outputShape } };
  if (needWeights) result.weights = { data: boundary.copyOut(reply.weights, boundary.count(reply.weightsShape)), shape: reply.weightsShape };
  return result;
}

// keys() / values(): copies of what is held, widened to float32 (one crossing: the module gathers them).
function held(state, values) {
  const FN = `KvCache.${values ? 'values' : 'keys'}`;
  ensureLive(state, values ? 'values' : 'keys');
  const { boundary } = state;
  const reply = boundary.prepare('kvRead', { module: state.handle, values }, FN);
  return { data: boundary.copyOut(reply.output, boundary.count(reply.outputShape)), shape: reply.outputShape };
}

export function kvFunctions(boundary, life) {
  const { guarded } = boundary;
  const registry = new FinalizationRegistry((handle) => boundary.destroy(handle));

  function createKvCache(config) {
    return guarded(() => {
      const c = checkConfig(config);
      const reply = boundary.prepare('kvCreate', { ...c, float16: c.dtype === 'float16' }, CREATE);
      return makeCache(cacheState(boundary, reply.handle, c));
    });
  }

  function makeCache(state) {
    function dispose() {
      if (state.disposed) return;
      state.disposed = true;
      registry.unregister(cache);
      boundary.destroy(state.handle);
    }
    const cache = {
      /** Positions held. */
      get length() {
        ensureLive(state, 'length');
        return boundary.module.cacheLength(state.handle);
      },
      /** Positions it can hold. */
      get capacity() { return state.config.capacity; },
      /** The configuration, every default filled in. */
      get config() { return { ...state.config }; },
      append: (key, value) => guarded(() => append(state, key, value)),
      attend: (query, options) => guarded(() => attend(state, query, options)),
      truncate: (length) => guarded(() => {
        const FN = 'KvCache.truncate';
        ensureLive(state, 'truncate');
        checkInteger(FN, 'length', length, 0, DIM_LIMIT);
        boundary.prepare('kvTruncate', { module: state.handle, length }, FN);
      }),
      keys: () => guarded(() => held(state, false)),
      values: () => guarded(() => held(state, true)),
      dispose,
      [DISPOSE]: dispose,
      // The instance lives as long as any of its caches.
      [LIFE]: life,
    };
    registry.register(cache, state.handle, cache);
    return cache;
  }

  return { createKvCache };
}
