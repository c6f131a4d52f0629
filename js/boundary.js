// The one path every operation takes across the JS ↔ wasm boundary (src/bindings/embind.cpp), at most two
// crossings per call:
//   prepare(op, request) → the module checks the call, plans it and places all its buffers in one block of its
//                          memory; the reply says where each buffer is and the output shapes. A refusal comes
//                          back as data (a message id, its arguments, numbers, shapes), printed here with the
//                          package's own argument names (formatRefusal).
//   copy in → execute()  → copy out. Results are fresh Float32Arrays (or the caller's options.out): views of
//                          wasm memory go stale when it grows.
// The request and reply cross as doubles in the call record, in the order js/boundary-schema.js (generated
// from the C++ lists) gives.
import * as schema from './boundary-schema.js';
import { typedArrayLength, typedArrayName } from './validate.js';

// What a 32-bit WebAssembly memory can hold at most (the builds' MAXIMUM_MEMORY).
export const HEAP_LIMIT = 2 ** 31;

const SLOTS = { shape: 1 + schema.MAX_RANK, number: 1, flag: 1, address: 1 };
const shapeText = (shape) => `(${shape.join(', ')}${shape.length === 1 ? ',' : ''})`;

// A refusal's text, from the error record's fields, under `fn` (the JS function that was called).
export function formatRefusal(fn, e) {
  const text = (schema.MESSAGES[e.code] ?? 'refused ({a0})').replace(/\{([ants])(\d)\}/g, (_, kind, digit) => {
    const i = Number(digit);
    if (kind === 'a') return schema.ARGUMENTS[e[`argument${i}`]] ?? '?';
    if (kind === 'n') return String(e[`number${i}`]);
    if (kind === 's') return i < e.shapeCount ? shapeText(e[`shape${i}`]) : '?';
    return '?';
  });
  return `${fn}: ${text}`;
}

// A module failure: a trap or abort (WebAssembly.RuntimeError), or a C++ exception escaping as a number.
// Only these leave the module's state in doubt; every check made in JS leaves it working.
function isModuleFailure(e) {
  return e instanceof WebAssembly.RuntimeError || typeof e === 'number';
}

const EXECUTE_FAILED = 'the prepared call was lost before it ran (an internal error of xattn)';

// The call record in the module's memory: requests written, replies, refusals and parameter tables read, in the
// schema's order. `live()` is the module (views of its memory are re-made when it grows).
function recordOf(live) {
  const at0 = live().record() / 8;
  let f64 = null;
  const doubles = () => {
    if (f64 === null || f64.buffer !== live().HEAPU8.buffer) f64 = new Float64Array(live().HEAPU8.buffer);
    return f64;
  };
  const replySlots = schema.REPLY.reduce((n, [, kind]) => n + SLOTS[kind], 0);

  function read(fields) {
    const d = doubles();
    const out = {};
    let at = at0;
    for (const [name, kind] of fields) {
      if (kind === 'shape') {
        const shape = new Array(d[at]);
        for (let k = 0; k < shape.length; k++) shape[k] = d[at + 1 + k];
        out[name] = shape;
      } else {
        out[name] = d[at];
      }
      at += SLOTS[kind];
    }
    return out;
  }

  function write(op, request) {
    const d = doubles();
    let at = at0;
    for (const [name, kind] of schema.REQUESTS[op]) {
      const v = request[name];
      if (kind === 'shape') {
        const rank = v === null || v === undefined ? 0 : v.length;
        d[at] = rank;
        for (let k = 0; k < schema.MAX_RANK; k++) d[at + 1 + k] = k < rank ? v[k] : 0;
      } else if (typeof v === 'number' || typeof v === 'boolean') {
        d[at] = +v;
      } else {
        throw new Error(`xattn: the call record's field ${name} is missing (an internal error of xattn)`);
      }
      at += SLOTS[kind];
    }
  }

  // A created module's parameter table (after its reply): Map<PyTorch name, { offset, shape }>.
  function table() {
    const d = doubles();
    const entries = new Map();
    for (let e = 0, at = at0 + replySlots; e < schema.TABLE_ENTRIES; e++, at += 6) {
      if (d[at] < 0) break;
      entries.set(schema.PARAMETER_NAMES[d[at]], { offset: d[at + 1], shape: [d[at + 3], d[at + 4], d[at + 5]].slice(0, d[at + 2]) });
    }
    return entries;
  }

  return { read, write, table, forget: () => { f64 = null; } };
}

// Copies between JS arrays and the module's memory.
function copiesOf(live) {
  // Intrinsic type and length: the block was planned from what validate.js read the same way.
  function copyIn(address, typed) {
    if (typedArrayLength(typed) === 0) return;
    if (typedArrayName(typed) === 'Float32Array') live().HEAPF32.set(typed, address >>> 2);
    else live().HEAPU8.set(typed, address);
  }
  // slice copies: the caller owns the result, and it survives any later growth of the heap. `into`, a
  // Float32Array of n values (options.out), receives the copy instead: no fresh array, no fresh pages.
  function copyOut(address, n, into) {
    const heap = live().HEAPF32;
    if (into) {
      if (n !== 0) into.set(heap.subarray(address >>> 2, (address >>> 2) + n));
      return into;
    }
    return n === 0 ? new Float32Array(0) : heap.slice(address >>> 2, (address >>> 2) + n);
  }
  return { copyIn, copyOut };
}

// The boundary over one started module. `release()` (the instance's dispose) drops the module; every later call
// throws.
export function makeBoundary(mod) {
  if (mod.signature() !== schema.SIGNATURE) {
    throw new Error(`the WebAssembly module's call schema (${mod.signature()}) is not this package's (${schema.SIGNATURE}): dist/ and js/ come from different builds; rebuild with npm run build:wasm`);
  }
  let live = mod;
  let broken = null;    // why the module failed, when it did: it cannot be trusted again
  let disposed = false;
  const record = recordOf(() => live);

  function ensureUsable() {
    if (disposed) throw new Error('xattn: this instance was disposed; create a new one with createXattn()');
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

  // The first crossing: the reply's fields, or a RangeError with the refusal under `fn`.
  function prepare(op, request, fn) {
    record.write(op, request);
    if (live.prepare(schema.OPERATIONS[op]) !== 0) throw new RangeError(formatRefusal(fn, record.read(schema.ERROR)));
    return record.read(schema.REPLY);
  }

  // The second crossing.
  function execute(fn) {
    const outcome = live.execute();
    if (outcome === 1) throw new RangeError(formatRefusal(fn, record.read(schema.ERROR)));
    if (outcome !== 0) throw new Error(`${fn}: ${EXECUTE_FAILED}`);
  }

  // Frees a module or cache (never after the module failed or the instance was released: its memory is gone).
  function destroy(handle) {
    if (!broken && !disposed) live.destroy(handle);
  }

  // The instance's dispose: stops its threads and lets its memory go.
  function release() {
    if (disposed) return;
    disposed = true;
    const pool = live.PThread;
    if (pool) for (const worker of [...pool.runningWorkers, ...pool.unusedWorkers]) worker.terminate();
    live = null;
    record.forget();
  }

  return {
    guarded, ensureUsable, prepare, execute, destroy, release, ...copiesOf(() => live),
    parameterTable: record.table,
    count: (shape) => shape.reduce((n, d) => n * d, 1),
    memoryBytes: () => live.memoryBytes(),
    get module() { return live; },
    get usable() { return !broken && !disposed; },
  };
}
