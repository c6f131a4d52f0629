// The JS API of xattn over one instantiated Emscripten module (either build).
// Inputs are copied into the wasm heap, results copied out into fresh Float32Arrays (views of
// wasm memory go stale when it grows), and every buffer is freed before returning, also on error.
import {
  MAX_RANK, checkBoolean, checkInteger, checkMask, checkNumber, checkOptions, checkTensor, shapeString,
} from './validate.js';

export const VERSION = '0.1.0';

const SDPA = 'scaledDotProductAttention';
const SDPA_GRAD = 'scaledDotProductAttentionGrad';
const CREATE_MHA = 'createMultiheadAttention';
const MAX_SEED = Number.MAX_SAFE_INTEGER;
// Heap room the dims area needs: up to five shapes of MAX_RANK dims, each with its rank.
const DIMS_BYTES = 4 * 5 * (MAX_RANK + 1);

// The core speaks C++ names; callers of this package know the camelCase ones.
const RENAMES = [
  ['scaled_dot_product_attention_backward', SDPA_GRAD], ['scaled_dot_product_attention', SDPA], ['grad_output', 'gradOutput'], ['multi_head_attention', 'MultiheadAttention'],
  ['attn_mask', 'attnMask'], ['is_causal', 'isCausal'], ['dropout_p', 'dropoutP'], ['enable_gqa', 'enableGqa'],
  ['key_padding_mask', 'keyPaddingMask'], ['embed_dim', 'embedDim'], ['num_heads', 'numHeads'],
  ['in_proj_weight', 'inProjWeight'], ['in_proj_bias', 'inProjBias'], ['q_proj_weight', 'qProjWeight'],
  ['k_proj_weight', 'kProjWeight'], ['v_proj_weight', 'vProjWeight'], ['out_proj.weight', 'outProjWeight'],
  ['out_proj.bias', 'outProjBias'], ['bias_k', 'biasK'], ['bias_v', 'biasV'],
];
const PARAMS = Object.fromEntries(RENAMES.slice(RENAMES.findIndex(([cpp]) => cpp === 'in_proj_weight'))
  .map(([cpp, js]) => [js, cpp]));

function jsMessage(message) {
  let m = message;
  for (const [cpp, js] of RENAMES) m = m.split(cpp).join(js);
  return m;
}

export function makeXattn(mod, simd) {
  let broken = null;  // set when the module aborted: it cannot be trusted again
  const dims = mod._malloc(DIMS_BYTES);
  const live = new Set();  // MHA handles not yet disposed

  function ensureUsable() {
    if (broken) throw new Error(`xattn: this instance stopped after an unrecoverable error (${broken}); create a new one with createXattn()`);
  }

  // Runs fn with wasm-side failures (an abort, e.g. a failed allocation inside the core) turned
  // into a clear error and the instance marked unusable.
  function guarded(fn) {
    ensureUsable();
    try {
      return fn();
    } catch (e) {
      if (e instanceof TypeError || e instanceof RangeError) throw e;
      broken = String(e?.message ?? e);
      throw new Error(`xattn: the WebAssembly module failed during the call (${broken}); this instance must be re-created with createXattn()`);
    }
  }

  function writeDims(shapes) {
    const u32 = new Uint32Array(mod.HEAPU8.buffer, dims, DIMS_BYTES / 4);
    let at = 0;
    for (const s of shapes) {
      u32[at++] = s.length;
      for (const d of s) u32[at++] = d;
    }
  }

  function readDims(count) {
    const u32 = new Uint32Array(mod.HEAPU8.buffer, dims, DIMS_BYTES / 4);
    const shapes = [];
    let at = 0;
    for (let i = 0; i < count; i++) {
      const rank = u32[at++];
      shapes.push(Array.from(u32.subarray(at, at + rank)));
      at += rank;
    }
    return shapes;
  }

  // Allocates every buffer of a call at once, or none: a failed malloc frees what was taken.
  function allocate(fn, requests) {
    const ptrs = [];
    let total = 0;
    for (const r of requests) total += r.bytes;
    for (const r of requests) {
      const p = r.bytes > 0 ? mod._malloc(r.bytes) : 0;
      if (r.bytes > 0 && p === 0) {
        ptrs.forEach((q) => q && mod._free(q));
        throw new RangeError(`${fn}: ${r.what} needs ${r.bytes} bytes and the call ${total} bytes in all, more than the WebAssembly memory can hold (now ${memoryBytes()} bytes, at most 2147483648)`);
      }
      ptrs.push(p);
    }
    return ptrs;
  }

  // Grows the heap for the core's own scratch before it runs: inside the core a failed allocation aborts.
  function reserve(fn, bytes) {
    if (bytes <= 0) return;
    const p = mod._malloc(bytes);
    if (p === 0) throw new RangeError(`${fn}: the computation needs about ${bytes} bytes of working memory, more than the WebAssembly memory can hold`);
    mod._free(p);
  }

  function copyIn(ptr, typed) {
    if (typed.length === 0) return;
    if (typed instanceof Float32Array) mod.HEAPF32.set(typed, ptr >>> 2);
    else mod.HEAPU8.set(typed, ptr);
  }

  function copyOut(ptr, count) {
    // slice copies: the caller owns the result, and it survives any later growth of the heap.
    return count === 0 ? new Float32Array(0) : mod.HEAPF32.slice(ptr >>> 2, (ptr >>> 2) + count);
  }

  const count = (shape) => shape.reduce((n, d) => n * d, 1);
  const freeAll = (ptrs) => ptrs.forEach((p) => p && mod._free(p));

  function memoryBytes() {
    return mod.memoryBytes();
  }

  // The options of scaledDotProductAttention (and of its gradient), checked and in binding order.
  function sdpaArgs(fn, options) {
    const o = checkOptions(fn, 'options', options,
      ['attnMask', 'isCausal', 'causalAlignment', 'scale', 'dropoutP', 'seed', 'enableGqa', 'needWeights']);
    const mask = checkMask(fn, 'attnMask', o.attnMask);
    const isCausal = checkBoolean(fn, 'isCausal', o.isCausal, false);
    const alignment = o.causalAlignment ?? 'top-left';
    if (alignment !== 'top-left' && alignment !== 'bottom-right') {
      throw new TypeError(`${fn}: causalAlignment must be 'top-left' or 'bottom-right', got ${JSON.stringify(alignment)}`);
    }
    const hasScale = o.scale !== undefined;
    const scale = hasScale ? checkNumber(fn, 'scale', o.scale) : 0;
    const dropoutP = o.dropoutP === undefined ? 0 : checkNumber(fn, 'dropoutP', o.dropoutP);
    const seed = o.seed === undefined ? 0 : checkInteger(fn, 'seed', o.seed, 0, MAX_SEED);
    const enableGqa = checkBoolean(fn, 'enableGqa', o.enableGqa, false);
    const needWeights = checkBoolean(fn, 'needWeights', o.needWeights, false);
    return {
      mask, needWeights,
      settings: [mask ? mask.kind : 0, isCausal, alignment === 'bottom-right' ? 1 : 0, hasScale, scale, dropoutP, seed, enableGqa],
    };
  }

  function scaledDotProductAttention(query, key, value, options) {
    return guarded(() => {
      checkTensor(SDPA, 'query', query);
      checkTensor(SDPA, 'key', key);
      checkTensor(SDPA, 'value', value);
      const { mask, needWeights, settings } = sdpaArgs(SDPA, options);
      const shapes = [query.shape, key.shape, value.shape, mask ? mask.shape : []];
      const args = [...settings, needWeights];
      writeDims(shapes);
      const error = mod.sdpaPlan(dims, ...args);
      if (error) throw new RangeError(jsMessage(error));
      const [outShape, weightsShape] = readDims(2);
      const outCount = count(outShape);
      const weightsCount = needWeights ? count(weightsShape) : 0;
      const S = key.shape[key.shape.length - 2];
      const E = query.shape[query.shape.length - 1];
      const Ev = value.shape[value.shape.length - 1];

      const ptrs = allocate(SDPA, [
        { what: `query ${shapeString(query.shape)}`, bytes: query.data.byteLength },
        { what: `key ${shapeString(key.shape)}`, bytes: key.data.byteLength },
        { what: `value ${shapeString(value.shape)}`, bytes: value.data.byteLength },
        { what: `attnMask ${mask ? shapeString(mask.shape) : ''}`, bytes: mask ? mask.data.byteLength : 0 },
        { what: `output ${shapeString(outShape)}`, bytes: 4 * outCount },
        { what: `weights ${shapeString(weightsShape)}`, bytes: 4 * weightsCount },
      ]);
      try {
        // The kernels' scratch: a row of scores and packed key/value panels.
        reserve(SDPA, 4 * (S * (E + Ev + 4) + 65536));
        const [q, k, v, m, out, w] = ptrs;
        copyIn(q, query.data);
        copyIn(k, key.data);
        copyIn(v, value.data);
        if (mask) copyIn(m, mask.data);
        writeDims(shapes);
        const runError = mod.sdpaRun(dims, ...args, q, k, v, m, out, w);
        if (runError) throw new RangeError(jsMessage(runError));
        const result = { output: { data: copyOut(out, outCount), shape: outShape } };
        if (needWeights) result.weights = { data: copyOut(w, weightsCount), shape: weightsShape };
        return result;
      } finally {
        freeAll(ptrs);
      }
    });
  }

  function scaledDotProductAttentionGrad(query, key, value, gradOutput, options) {
    return guarded(() => {
      checkTensor(SDPA_GRAD, 'query', query);
      checkTensor(SDPA_GRAD, 'key', key);
      checkTensor(SDPA_GRAD, 'value', value);
      checkTensor(SDPA_GRAD, 'gradOutput', gradOutput);
      const { mask, needWeights, settings } = sdpaArgs(SDPA_GRAD, options);
      const shapes = [query.shape, key.shape, value.shape, mask ? mask.shape : [], gradOutput.shape];
      writeDims(shapes);
      const error = mod.sdpaGradRun(dims, ...settings, false, 0, 0, 0, 0, 0, 0, 0, 0, 0);
      if (error) throw new RangeError(jsMessage(error).replace(`${SDPA}:`, `${SDPA_GRAD}:`));
      const ptrs = allocate(SDPA_GRAD, [
        { what: `query ${shapeString(query.shape)}`, bytes: query.data.byteLength },
        { what: `key ${shapeString(key.shape)}`, bytes: key.data.byteLength },
        { what: `value ${shapeString(value.shape)}`, bytes: value.data.byteLength },
        { what: 'attnMask', bytes: mask ? mask.data.byteLength : 0 },
        { what: `gradOutput ${shapeString(gradOutput.shape)}`, bytes: gradOutput.data.byteLength },
        { what: 'output', bytes: gradOutput.data.byteLength },
        { what: 'gradQuery', bytes: query.data.byteLength },
        { what: 'gradKey', bytes: key.data.byteLength },
        { what: 'gradValue', bytes: value.data.byteLength },
      ]);
      try {
        const S = key.shape[key.shape.length - 2];
        const L = query.shape[query.shape.length - 2];
        reserve(SDPA_GRAD, 4 * (2 * S + L + 65536));
        const [q, k, v, m, dO, out, dq, dk, dv] = ptrs;
        copyIn(q, query.data);
        copyIn(k, key.data);
        copyIn(v, value.data);
        if (mask) copyIn(m, mask.data);
        copyIn(dO, gradOutput.data);
        writeDims(shapes);
        const runError = mod.sdpaGradRun(dims, ...settings, true, q, k, v, m, dO, out, dq, dk, dv);
        if (runError) throw new RangeError(jsMessage(runError));
        const result = {
          output: { data: copyOut(out, gradOutput.data.length), shape: [...gradOutput.shape] },
          gradQuery: { data: copyOut(dq, query.data.length), shape: [...query.shape] },
          gradKey: { data: copyOut(dk, key.data.length), shape: [...key.shape] },
          gradValue: { data: copyOut(dv, value.data.length), shape: [...value.shape] },
        };
        if (needWeights) result.weights = scaledDotProductAttention(query, key, value, options).weights;
        return result;
      } finally {
        freeAll(ptrs);
      }
    });
  }

  function createMultiheadAttention(config) {
    return guarded(() => {
      const c = checkOptions(CREATE_MHA, 'config', config,
        ['embedDim', 'numHeads', 'kdim', 'vdim', 'bias', 'batchFirst', 'addBiasKv', 'addZeroAttn']);
      if (config === undefined) throw new TypeError(`${CREATE_MHA}: config { embedDim, numHeads, … } is required`);
      const LIMIT = 1 << 24;
      const embedDim = checkInteger(CREATE_MHA, 'embedDim', c.embedDim, 1, LIMIT);
      const numHeads = checkInteger(CREATE_MHA, 'numHeads', c.numHeads, 1, LIMIT);
      const kdim = c.kdim === undefined ? embedDim : checkInteger(CREATE_MHA, 'kdim', c.kdim, 1, LIMIT);
      const vdim = c.vdim === undefined ? embedDim : checkInteger(CREATE_MHA, 'vdim', c.vdim, 1, LIMIT);
      const bias = checkBoolean(CREATE_MHA, 'bias', c.bias, true);
      const batchFirst = checkBoolean(CREATE_MHA, 'batchFirst', c.batchFirst, false);
      const addBiasKv = checkBoolean(CREATE_MHA, 'addBiasKv', c.addBiasKv, false);
      const addZeroAttn = checkBoolean(CREATE_MHA, 'addZeroAttn', c.addZeroAttn, false);
      // The parameters themselves live in the heap: refuse what cannot fit before creating.
      const paramBytes = 4 * (embedDim * (embedDim + kdim + vdim) + embedDim * embedDim + 6 * embedDim);
      if (paramBytes > 1 << 30) {
        throw new RangeError(`${CREATE_MHA}: parameters for embedDim ${embedDim}, kdim ${kdim}, vdim ${vdim} need ${paramBytes} bytes, more than the limit of 1073741824 bytes`);
      }
      reserve(CREATE_MHA, 2 * paramBytes);
      const handleOut = mod._malloc(4);
      let handle;
      try {
        const error = mod.mhaCreate(embedDim, numHeads, kdim === embedDim ? 0 : kdim, vdim === embedDim ? 0 : vdim,
          bias, batchFirst, addBiasKv, addZeroAttn, handleOut);
        if (error) throw new RangeError(jsMessage(error).replace('MultiheadAttention:', `${CREATE_MHA}:`));
        handle = new Int32Array(mod.HEAPU8.buffer, handleOut, 1)[0];
      } finally {
        mod._free(handleOut);
      }
      live.add(handle);
      return makeMha(handle, { embedDim, numHeads, kdim, vdim, batchFirst });
    });
  }

  function makeMha(handle, cfg) {
    let disposed = false;
    const shapes = new Map(mod.mhaParameterShapes(handle).split(',').map((entry) => {
      const [name, dimsText] = entry.split(':');
      return [name, dimsText.split('x').map(Number)];
    }));
    const disposedError = (fn) => new Error(`MultiheadAttention.${fn}: this module was disposed`);

    function setParameters(p) {
      return guarded(() => {
        if (disposed) throw disposedError('setParameters');
        const FN = 'MultiheadAttention.setParameters';
        const params = checkOptions(FN, 'parameters', p, Object.keys(PARAMS));
        if (p === undefined) throw new TypeError(`${FN}: parameters object is required`);
        // Check every given parameter before setting any, so a refusal changes nothing.
        const entries = Object.entries(params).filter(([, v]) => v !== undefined);
        for (const [js, data] of entries) {
          const cpp = PARAMS[js];
          if (!(data instanceof Float32Array)) throw new TypeError(`${FN}: ${js} must be a Float32Array, got ${data?.constructor?.name ?? typeof data}`);
          const shape = shapes.get(cpp);
          if (!shape) {
            const known = [...shapes.keys()].map((n) => RENAMES.find(([c]) => c === n)[1]).join(', ');
            throw new TypeError(`${FN}: this configuration has no ${js} (it has ${known})`);
          }
          if (data.length !== count(shape)) {
            throw new RangeError(`${FN}: ${js} needs ${count(shape)} values for shape ${shapeString(shape)}, got ${data.length}`);
          }
        }
        for (const [js, data] of entries) {
          const [ptr] = allocate(FN, [{ what: js, bytes: data.byteLength }]);
          try {
            copyIn(ptr, data);
            const error = mod.mhaSetParameter(handle, PARAMS[js], ptr, data.length);
            if (error) throw new RangeError(jsMessage(error));
          } finally {
            if (ptr) mod._free(ptr);
          }
        }
      });
    }

    function forward(query, key, value, options) {
      return guarded(() => {
        const FN = 'MultiheadAttention.forward';
        if (disposed) throw disposedError('forward');
        const o = checkOptions(FN, 'options', options,
          ['keyPaddingMask', 'attnMask', 'needWeights', 'averageAttnWeights', 'isCausal']);
        checkTensor(FN, 'query', query);
        checkTensor(FN, 'key', key);
        checkTensor(FN, 'value', value);
        const kpm = checkMask(FN, 'keyPaddingMask', o.keyPaddingMask);
        const am = checkMask(FN, 'attnMask', o.attnMask);
        const needWeights = checkBoolean(FN, 'needWeights', o.needWeights, true);
        const average = checkBoolean(FN, 'averageAttnWeights', o.averageAttnWeights, true);
        const isCausal = checkBoolean(FN, 'isCausal', o.isCausal, false);
        const shapes = [query.shape, key.shape, value.shape, kpm ? kpm.shape : [], am ? am.shape : []];
        const args = [kpm ? kpm.kind : 0, am ? am.kind : 0, needWeights, average, isCausal];
        writeDims(shapes);
        const error = mod.mhaPlan(handle, dims, ...args);
        if (error) throw new RangeError(jsMessage(error).replace('MultiheadAttention:', `${FN}:`));
        const [outShape, weightsShape] = readDims(2);
        const outCount = count(outShape);
        const weightsCount = needWeights ? count(weightsShape) : 0;
        const ptrs = allocate(FN, [
          { what: `query ${shapeString(query.shape)}`, bytes: query.data.byteLength },
          { what: `key ${shapeString(key.shape)}`, bytes: key.data.byteLength },
          { what: `value ${shapeString(value.shape)}`, bytes: value.data.byteLength },
          { what: 'keyPaddingMask', bytes: kpm ? kpm.data.byteLength : 0 },
          { what: 'attnMask', bytes: am ? am.data.byteLength : 0 },
          { what: `output ${shapeString(outShape)}`, bytes: 4 * outCount },
          { what: `weights ${shapeString(weightsShape)}`, bytes: 4 * weightsCount },
        ]);
        try {
          // Working memory of the core: projected q, k, v, the merged mask and per-head weights.
          const batched = query.shape.length === 3;
          const N = batched ? query.shape[cfg.batchFirst ? 0 : 1] : 1;
          const L = query.shape[batched && cfg.batchFirst ? 1 : 0];
          const S = key.shape[batched && cfg.batchFirst ? 1 : 0] + 2;
          const E = cfg.embedDim;
          reserve(FN, 4 * (2 * N * L * E + 2 * N * S * E + 2 * N * cfg.numHeads * L * S + 4 * E + 65536 + S * E));
          const [q, k, v, kp, a, out, w] = ptrs;
          copyIn(q, query.data);
          copyIn(k, key.data);
          copyIn(v, value.data);
          if (kpm) copyIn(kp, kpm.data);
          if (am) copyIn(a, am.data);
          writeDims(shapes);
          const runError = mod.mhaRun(handle, dims, ...args, q, k, v, kp, a, out, w);
          if (runError) throw new RangeError(jsMessage(runError));
          const result = { output: { data: copyOut(out, outCount), shape: outShape } };
          if (needWeights) result.weights = { data: copyOut(w, weightsCount), shape: weightsShape };
          return result;
        } finally {
          freeAll(ptrs);
        }
      });
    }

    function dispose() {
      if (disposed) return;
      disposed = true;
      live.delete(handle);
      if (!broken) mod.mhaDestroy(handle);
    }

    return { setParameters, forward, dispose };
  }

  const api = {
    get simd() { return simd; },
    get version() { return VERSION; },
    memoryBytes() { ensureUsable(); return memoryBytes(); },
    scaledDotProductAttention,
    scaledDotProductAttentionGrad,
    createMultiheadAttention,
  };
  // Not part of the API: bytes malloc holds right now, for the package's own leak tests.
  Object.defineProperty(api, 'heapInUseForTests', { value: () => mod.heapInUse(), enumerable: false });
  return api;
}
