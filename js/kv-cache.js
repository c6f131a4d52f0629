// createKvCache over the boundary (js/boundary.js): keys and values held in wasm memory between calls,
// appended a few positions at a time and attended without being copied in again (src/xattn/kv_cache.hpp).
// Like MultiheadAttention modules, caches are freed by dispose(), `using` (Symbol.dispose), or garbage
// collection of a cache never disposed.
import { checkBoolean, checkInteger, checkMask, checkNumber, checkOptions, checkOut, checkTensor } from './validate.js';

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
  const { boundary, handle } = state;
  boundary.withBuffers(FN, [k.data, v.data], ([kp, vp]) => {
    const error = boundary.callWithRecord('kvAppend', { key: k.shape, value: v.shape }, handle, kp, vp);
    if (error) throw new RangeError(jsName(error, FN));
  });
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
  const layout = boundary.plan('kvAttendPlan', {
    cache: state.handle, query: q.shape, attnMask: mask ? mask.shape : null,
    maskKind: mask ? mask.kind : 0, isCausal: checkBoolean(FN, 'isCausal', o.isCausal, false),
    hasScale: o.scale !== undefined, scale: o.scale === undefined ? 0 : checkNumber(FN, 'scale', o.scale), needWeights,
  });
  if (layout.error) layout.error = jsName(layout.error, FN);
  const inputs = { query: q.data };
  if (mask) inputs.attnMask = mask.data;
  return boundary.invokeForward(FN, layout, inputs, needWeights, out);
}

// The core says "kv_cache: append: …" or "kv_cache: attend: …": the JS method's name instead.
function jsName(message, fn) {
  return message.replace(/^kv_cache: (append|attend|truncate): /, `${fn}: `).replace(/^kv_cache: /, `${fn}: `)
    .replaceAll('attn_mask', 'attnMask').replaceAll('is_causal', 'isCausal');
}

// keys() / values(): copies of what is held, widened to float32.
function held(state, which) {
  const FN = `KvCache.${which === 0 ? 'keys' : 'values'}`;
  ensureLive(state, which === 0 ? 'keys' : 'values');
  const { boundary, handle, config } = state;
  const length = boundary.mod.kvLength(handle);
  const shape = [config.batch, config.kvHeads, length, which === 0 ? config.headDim : config.valueDim];
  const count = boundary.count(shape);
  const data = boundary.withBuffers(FN, [count], ([at]) => {
    boundary.mod.kvCopy(handle, which, at);
    return boundary.copyOut(at, count);
  });
  return { data, shape };
}

export function kvFunctions(boundary) {
  const { mod, guarded } = boundary;
  const registry = new FinalizationRegistry((handle) => {
    if (!boundary.broken) mod.kvDestroy(handle);
  });

  function createKvCache(config) {
    return guarded(() => {
      const c = checkConfig(config);
      const created = mod.kvCreate({ ...c, float16: c.dtype === 'float16' });
      if (created.error) throw new RangeError(created.error.replace(/^kv_cache: /, `${CREATE}: `).replace('head_dim and value_dim', 'headDim and valueDim').replace('batch, kv_heads, head_dim and capacity', 'batch, kvHeads, headDim and capacity'));
      return makeCache(cacheState(boundary, created.handle, c));
    });
  }

  function makeCache(state) {
    function dispose() {
      if (state.disposed) return;
      state.disposed = true;
      registry.unregister(cache);
      if (!boundary.broken) mod.kvDestroy(state.handle);
    }
    const cache = {
      /** Positions held. */
      get length() {
        ensureLive(state, 'length');
        return mod.kvLength(state.handle);
      },
      /** Positions it can hold. */
      get capacity() { return state.config.capacity; },
      /** The configuration, every default filled in. */
      get config() { return { ...state.config }; },
      append: (key, value) => guarded(() => append(state, key, value)),
      attend: (query, options) => guarded(() => attend(state, query, options)),
      truncate: (length) => guarded(() => {
        ensureLive(state, 'truncate');
        checkInteger('KvCache.truncate', 'length', length, 0, DIM_LIMIT);
        const error = mod.kvTruncate(state.handle, length);
        if (error) throw new RangeError(jsName(error, 'KvCache.truncate'));
      }),
      keys: () => guarded(() => held(state, 0)),
      values: () => guarded(() => held(state, 1)),
      dispose,
      [DISPOSE]: dispose,
    };
    registry.register(cache, state.handle, cache);
    return cache;
  }

  return { createKvCache };
}
