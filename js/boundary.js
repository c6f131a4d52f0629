// The one path every operation takes across the JS ↔ C++ boundary (src/bindings/embind.cpp):
//   plan  → the core checks the call and answers with the exact layout of one block: where each input,
//           output and scratch buffer sits, and the block's size;
//   alloc → one malloc of that size, or a RangeError naming the bytes (nothing was allocated or grown);
//   copy in → run (which allocates nothing) → copy out → free, and the plan is forgotten on every path.
// Results are fresh Float32Arrays (or the caller's options.out): views of wasm memory go stale when it grows.
import { MAX_RANK, shapeString, typedArrayLength, typedArrayName } from './validate.js';

// What a 32-bit WebAssembly memory can hold at most (the builds' MAXIMUM_MEMORY).
export const HEAP_LIMIT = 2 ** 31;
// Kept free beside each call's block, for the few small allocations of crossing the boundary itself.
const HEADROOM = 1 << 16;
const ALIGN = 64;

// The core speaks C++ names; callers of this package know the camelCase ones.
const RENAMES = [
  ['scaled_dot_product_attention_backward', 'scaledDotProductAttentionGrad'],
  ['scaled_dot_product_attention', 'scaledDotProductAttention'], ['grad_output', 'gradOutput'],
  ['multi_head_attention', 'MultiheadAttention'], ['attn_mask', 'attnMask'], ['is_causal', 'isCausal'],
  ['dropout_p', 'dropoutP'], ['enable_gqa', 'enableGqa'], ['key_padding_mask', 'keyPaddingMask'],
  ['embed_dim', 'embedDim'], ['num_heads', 'numHeads'], ['in_proj_weight', 'inProjWeight'],
  ['in_proj_bias', 'inProjBias'], ['q_proj_weight', 'qProjWeight'], ['k_proj_weight', 'kProjWeight'],
  ['v_proj_weight', 'vProjWeight'], ['out_proj.weight', 'outProjWeight'], ['out_proj.bias', 'outProjBias'],
  ['bias_k', 'biasK'], ['bias_v', 'biasV'],
];

// A core message in the package's names, under the name of the JS function that was called.
export function jsMessage(message, fn) {
  let m = message;
  for (const [cpp, js] of RENAMES) m = m.split(cpp).join(js);
  const colon = m.indexOf(': ');
  return fn && colon > 0 && !m.slice(0, colon).includes(' ') ? `${fn}${m.slice(colon)}` : m;
}

export function cppName(js) {
  return RENAMES.find(([, name]) => name === js)?.[0] ?? js;
}

// The call record (src/bindings/embind.cpp, "The call record"): the requests of the plans and of kvAppend, and
// every plan's reply, cross as doubles in one small array of wasm memory, in the order these lists give. A shape
// (an array of dims, or null for none) takes 1 + MAX_RANK slots: its rank, then MAX_RANK dims; a boolean 1 or 0.
const SDPA_REQUEST = ['query', 'key', 'value', 'attnMask', 'gradOutput', 'maskKind', 'isCausal', 'bottomRight',
  'hasScale', 'scale', 'dropoutP', 'seed', 'enableGqa', 'needWeights'];
const MHA_REQUEST = ['module', 'query', 'key', 'value', 'keyPaddingMask', 'attnMask', 'gradOutput', 'kpmKind',
  'attnKind', 'needWeights', 'averageAttnWeights', 'isCausal', 'training', 'seed'];
const REQUESTS = {
  sdpaPlan: SDPA_REQUEST, sdpaBackwardPlan: SDPA_REQUEST, mhaPlan: MHA_REQUEST, mhaBackwardPlan: MHA_REQUEST,
  kvAttendPlan: ['cache', 'query', 'attnMask', 'maskKind', 'isCausal', 'hasScale', 'scale', 'needWeights'],
  kvAppend: ['key', 'value'],
};
// The reply: token, bytes, then each buffer's offset in the block (-1: the call has none), then two shapes.
const LAYOUT_OFFSETS = ['query', 'key', 'value', 'attnMask', 'keyPaddingMask', 'gradOutput', 'output', 'weights',
  'gradQuery', 'gradKey', 'gradValue', 'gradParameters'];

function writeRequest(f64, at, fields, request) {
  for (const name of fields) {
    const v = request[name];
    if (v === null || Array.isArray(v)) {
      const rank = v === null ? 0 : v.length;
      f64[at++] = rank;
      for (let d = 0; d < MAX_RANK; d++) f64[at++] = d < rank ? v[d] : 0;
    } else if (typeof v === 'number' || typeof v === 'boolean') {
      f64[at++] = +v;
    } else {
      throw new Error(`xattn: the call record's field ${name} is missing (an internal error of xattn)`);
    }
  }
}

function readShape(f64, at) {
  const shape = new Array(f64[at]);
  for (let d = 0; d < shape.length; d++) shape[d] = f64[at + 1 + d];
  return shape;
}

function readLayout(f64, at) {
  const layout = { error: '', token: f64[at], bytes: f64[at + 1] };
  let i = at + 2;
  for (const name of LAYOUT_OFFSETS) layout[name] = f64[i++];
  layout.outputShape = readShape(f64, i);
  layout.weightsShape = readShape(f64, i + 1 + MAX_RANK);
  return layout;
}

const count = (shape) => shape.reduce((n, d) => n * d, 1);

// A module failure: a trap or abort (WebAssembly.RuntimeError), or a C++ exception escaping as a number.
// Only these leave the module's state in doubt; every check made in JS leaves it working.
function isModuleFailure(e) {
  return e instanceof WebAssembly.RuntimeError || typeof e === 'number';
}

const RUN_FAILURES = {
  1: 'the planned call was lost before it ran (an internal error of xattn)',
  2: 'the module was disposed while the call was under way',
  3: 'the call is larger than WebAssembly memory can hold',
};

// The module's memory as calls use it: one block per call, copies in and out.
function memoryOf(mod) {
  const memoryBytes = () => mod.memoryBytes();

  // One malloc of `bytes`, keeping HEADROOM free beside it; a refusal allocates and grows nothing.
  function allocate(fn, bytes, what) {
    const refuse = () => new RangeError(
      `${fn}: the call needs ${bytes} bytes of WebAssembly memory for ${what}, more than it can hold (now ${memoryBytes()} bytes, at most ${HEAP_LIMIT})`);
    if (bytes + HEADROOM > HEAP_LIMIT) throw refuse();
    const block = mod._malloc(bytes);
    if (!block) throw refuse();
    const spare = mod._malloc(HEADROOM);
    if (!spare) {
      mod._free(block);
      throw refuse();
    }
    mod._free(spare);
    return block;
  }

  // Intrinsic type and length: the block was planned from what validate.js read the same way.
  function copyIn(at, typed) {
    if (typedArrayLength(typed) === 0) return;
    if (typedArrayName(typed) === 'Float32Array') mod.HEAPF32.set(typed, at >>> 2);
    else mod.HEAPU8.set(typed, at);
  }

  // slice copies: the caller owns the result, and it survives any later growth of the heap. `into`, a
  // Float32Array of n values (options.out), receives the copy instead: no fresh array, no fresh pages.
  function copyOut(at, n, into) {
    if (into) {
      if (n !== 0) into.set(mod.HEAPF32.subarray(at >>> 2, (at >>> 2) + n));
      return into;
    }
    return n === 0 ? new Float32Array(0) : mod.HEAPF32.slice(at >>> 2, (at >>> 2) + n);
  }

  return { memoryBytes, allocate, copyIn, copyOut, free: (block) => mod._free(block) };
}

const aligned = (address) => Math.ceil(address / ALIGN) * ALIGN;

export function makeBoundary(mod) {
  let broken = null;  // set when the module failed: it cannot be trusted again
  const memory = memoryOf(mod);
  const recordAt = mod.callRecord() / 8;
  let f64 = null;
  // A view of the memory as it is now (any malloc, a plan's included, may have grown it).
  const doubles = () => {
    if (f64 === null || f64.buffer !== mod.HEAPU8.buffer) f64 = new Float64Array(mod.HEAPU8.buffer);
    return f64;
  };

  // Calls a binding that reads its request from the record (a plan, or kvAppend) with `args`.
  function callWithRecord(name, request, ...args) {
    writeRequest(doubles(), recordAt, REQUESTS[name], request);
    return mod[name](...args);
  }

  // Plans a call (name: sdpaPlan, mhaPlan, … as the bindings export them): its layout, or { error }.
  function plan(name, request) {
    const error = callWithRecord(name, request);
    return error ? { error } : readLayout(doubles(), recordAt);
  }

  function ensureUsable() {
    if (broken) throw new Error(`xattn: this instance stopped after an unrecoverable error (${broken}); create a new one with createXattn()`);
  }

  // Runs fn; a failure of the module itself marks the instance unusable, any other error passes unchanged.
  function guarded(fn) {
    ensureUsable();
    try {
      return fn();
    } catch (e) {
      if (!isModuleFailure(e)) throw e;
      broken = String(e?.message ?? e);
      throw new Error(`xattn: the WebAssembly module failed during the call (${broken}); this instance must be re-created with createXattn()`);
    }
  }

  function refuseIfError(fn, layout) {
    if (layout.error) throw new RangeError(jsMessage(layout.error, fn));
  }

  // Runs a planned forward call, whose outputs are the layout's output and, with needWeights, its weights:
  // { output, weights? } as { data, shape } tensors. `out` (options.out, checked by validate.js's checkOut)
  // receives the output (invoke checks its length); it may be an input's array (inputs are copied in before the
  // run, the output out after it).
  function invokeForward(fn, layout, inputs, needWeights, out) {
    refuseIfError(fn, layout);
    const outputs = { output: count(layout.outputShape) };
    if (needWeights) outputs.weights = count(layout.weightsShape);
    const r = invoke(fn, layout, inputs, outputs, out === undefined ? undefined : { output: out });
    const result = { output: { data: r.output, shape: layout.outputShape } };
    if (needWeights) result.weights = { data: r.weights, shape: layout.weightsShape };
    return result;
  }

  // Runs a planned call. `layout` is the plan's reply; `inputs` maps its fields to the arrays to copy in
  // ({ query: Float32Array, attnMask: Uint8Array, … }); `outputs` maps the fields to copy out to their
  // element counts, and `into` some of them to the caller's arrays that receive them (options.out), each
  // refused unless it holds exactly that count. Returns { field: Float32Array }. The plan is forgotten on every
  // path, refusals included.
  function invoke(fn, layout, inputs, outputs, into) {
    refuseIfError(fn, layout);
    try {
      if (into) {
        for (const [field, array] of Object.entries(into)) {
          if (typedArrayLength(array) !== outputs[field]) {
            throw new RangeError(`${fn}: out has ${typedArrayLength(array)} values but the ${field} ${shapeString(layout[`${field}Shape`])} needs ${outputs[field]}`);
          }
        }
      }
      const block = memory.allocate(fn, layout.bytes, 'its inputs, outputs and working memory');
      try {
        const base = aligned(block);
        for (const [field, data] of Object.entries(inputs)) memory.copyIn(base + layout[field], data);
        const code = mod.run(layout.token, base);
        if (code !== 0) throw new Error(`${fn}: ${RUN_FAILURES[code] ?? `run failed with code ${code}`}`);
        const result = {};
        for (const [field, n] of Object.entries(outputs)) result[field] = memory.copyOut(base + layout[field], n, into?.[field]);
        return result;
      } finally {
        memory.free(block);
      }
    } finally {
      mod.forget(layout.token);
    }
  }

  // Copies Float32Arrays into one fresh block, runs use(pointers), frees: for calls that hand the core
  // buffers without a plan (setting and reading parameters). A number instead of an array reserves that
  // many floats without copying anything in (for the core to fill; read them with copyOut).
  function withBuffers(fn, arrays, use) {
    let bytes = 0;
    const offsets = arrays.map((a) => {
      const at = bytes;
      bytes += aligned(4 * (typeof a === 'number' ? a : typedArrayLength(a)));
      return at;
    });
    const block = memory.allocate(fn, bytes + ALIGN, 'its buffers');
    try {
      const base = aligned(block);
      arrays.forEach((a, i) => { if (typeof a !== 'number') memory.copyIn(base + offsets[i], a); });
      return use(offsets.map((at) => base + at));
    } finally {
      memory.free(block);
    }
  }

  return {
    mod, guarded, ensureUsable, plan, callWithRecord, invoke, invokeForward, withBuffers, count, shapeString,
    memoryBytes: memory.memoryBytes,
    copyOut: memory.copyOut,
    get broken() { return broken !== null; },
  };
}
