// createKvCache over the boundary (js/boundary.js): keys and values held in wasm memory between calls,
// appended a few positions at a time and attended without being copied in again (src/xattn/kv_cache.hpp).
// Like MultiheadAttention modules, caches are freed by dispose(), `using` (Symbol.dispose), or garbage
// collection of a cache never disposed.
import { handleOwner } from './life.js';
import { integerList, ruleFields } from './rules.js';
import {
  checkBoolean, checkInteger, checkMask, checkNumber, checkOptions, checkOut, checkOutLength, checkTensors,
} from './validate.js';

const CREATE = 'createKvCache';
const CONFIG = ['batch', 'kvHeads', 'headDim', 'valueDim', 'capacity', 'dtype', 'rolling', 'rotary'];
const ROTARY = ['base', 'rotaryDim', 'interleaved'];
const ATTEND_OPTIONS = ['scale', 'isCausal', 'attnMask', 'needWeights', 'out', 'softcap', 'window', 'alibiSlopes'];
const APPEND_OPTIONS = ['counts'];
const DIM_LIMIT = 0x7fffffff;

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
  // rotary: true (every feature, base 10000, rotate_half pairs) or { base, rotaryDim, interleaved }.
  let rotary = null;
  if (c.rotary !== undefined && c.rotary !== false) {
    const r = c.rotary === true ? {} : checkOptions(CREATE, 'rotary', c.rotary, ROTARY);
    rotary = {
      base: r.base === undefined ? 10000 : checkNumber(CREATE, 'rotary.base', r.base),
      rotaryDim: r.rotaryDim === undefined ? 0 : checkInteger(CREATE, 'rotary.rotaryDim', r.rotaryDim, 0, DIM_LIMIT),
      interleaved: checkBoolean(CREATE, 'rotary.interleaved', r.interleaved, false),
    };
  }
  return {
    batch: dim('batch', 1), kvHeads: dim('kvHeads'), headDim, valueDim: dim('valueDim', headDim),
    capacity: dim('capacity'), dtype, rolling: checkBoolean(CREATE, 'rolling', c.rolling, false), rotary,
  };
}

function cacheState(boundary, handle, config) {
  return { boundary, handle, config, disposed: false };
}

function ensureLive(state, method) {
  state.boundary.ensureUsable();
  if (state.disposed) throw new Error(`KvCache.${method}: this cache was disposed`);
}

// options.counts: how many of the n positions given each batch element appends (its first ones), B integers.
function append(state, key, value, options) {
  const FN = 'KvCache.append';
  ensureLive(state, 'append');
  const { half, tensors: [k, v] } = checkTensors(FN, [['key', key], ['value', value]]);
  const o = checkOptions(FN, 'options', options, APPEND_OPTIONS);
  const counts = integerList(FN, 'counts', o.counts, DIM_LIMIT);
  const { boundary } = state;
  const reply = boundary.prepare('kvAppend', { module: state.handle, key: k.shape, value: v.shape, counts, float16: half !== null }, FN);
  boundary.copyIn(reply.key, k.data);
  boundary.copyIn(reply.value, v.data);
  boundary.execute(FN);
}

function attend(state, query, options) {
  const FN = 'KvCache.attend';
  ensureLive(state, 'attend');
  const { boundary } = state;
  const o = checkOptions(FN, 'options', options, ATTEND_OPTIONS);
  const { half, tensors: [q] } = checkTensors(FN, [['query', query]]);
  const mask = checkMask(FN, 'attnMask', o.attnMask);
  const needWeights = checkBoolean(FN, 'needWeights', o.needWeights, false);
  const rules = ruleFields(FN, o, ATTEND_OPTIONS);
  const out = checkOut(FN, o.out);
  if (out && half) throw new TypeError(`${FN}: out must be a Float32Array, and float16 calls return their own arrays`);
  const reply = boundary.prepare('kvAttend', {
    module: state.handle, query: q.shape, attnMask: mask ? mask.shape : null,
    maskKind: mask ? mask.kind : 0, isCausal: checkBoolean(FN, 'isCausal', o.isCausal, false),
    hasScale: o.scale !== undefined, scale: o.scale === undefined ? 0 : checkNumber(FN, 'scale', o.scale), needWeights,
    softcap: rules.softcap, windowLeft: rules.windowLeft, windowRight: rules.windowRight, alibiSlopes: rules.alibiSlopes,
    float16: half !== null,
  }, FN);
  checkOutLength(FN, out, reply.outputShape);
  boundary.copyIn(reply.query, q.data);
  if (mask) boundary.copyIn(reply.attnMask, mask.data);
  boundary.execute(FN);
  const take = (field, shape, into) => (half ? boundary.copyOutHalves(reply[field], boundary.count(shape), half)
    : boundary.copyOut(reply[field], boundary.count(shape), into));
  const result = { output: { data: take('output', reply.outputShape, out), shape: reply.outputShape } };
  if (needWeights) result.weights = { data: take('weights', reply.weightsShape), shape: reply.weightsShape };
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
  const own = handleOwner(boundary, life);

  function createKvCache(config) {
    return guarded(() => {
      const c = checkConfig(config);
      const reply = boundary.prepare('kvCreate', {
        ...c, float16: c.dtype === 'float16', rotary: c.rotary !== null, rotaryBase: c.rotary?.base ?? 0,
        rotaryDim: c.rotary?.rotaryDim ?? 0, rotaryInterleaved: c.rotary?.interleaved ?? false,
      }, CREATE);
      return makeCache(cacheState(boundary, reply.handle, c));
    });
  }

  function makeCache(state) {
    return own(state, {
      /** Positions held: the most any batch element holds. */
      get length() {
        ensureLive(state, 'length');
        return boundary.module.cacheLength(state.handle);
      },
      /** Positions each batch element holds (an Int32Array of B). */
      get lengths() {
        ensureLive(state, 'lengths');
        return Int32Array.from({ length: state.config.batch }, (_, n) => boundary.module.cacheElement(state.handle, n, 0));
      },
      /** Positions each batch element has appended in all, its next position (past the held ones in a rolled cache). */
      get positions() {
        ensureLive(state, 'positions');
        return Int32Array.from({ length: state.config.batch }, (_, n) => boundary.module.cacheElement(state.handle, n, 1));
      },
      /** Positions it can hold. */
      get capacity() { return state.config.capacity; },
      /** The configuration, every default filled in. */
      get config() { return { ...state.config }; },
      append: (key, value, options) => guarded(() => append(state, key, value, options)),
      attend: (query, options) => guarded(() => attend(state, query, options)),
      // length: every element back to that many positions appended; or B of them (an Int32Array or Array).
      truncate: (length) => guarded(() => {
        const FN = 'KvCache.truncate';
        ensureLive(state, 'truncate');
        const each = typeof length !== 'number' && length !== undefined;
        const lengths = each ? integerList(FN, 'length', length, DIM_LIMIT) : null;
        if (!each) checkInteger(FN, 'length', length, 0, DIM_LIMIT);
        boundary.prepare('kvTruncate', { module: state.handle, length: each ? 0 : length, lengths }, FN);
      }),
      keys: () => guarded(() => held(state, false)),
      values: () => guarded(() => held(state, true)),
    });
  }

  return { createKvCache };
}
