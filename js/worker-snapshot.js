// What crosses to and from the worker (js/worker-client.js, js/worker-host.js). A call's arguments are read
// once, when the call is made, into a snapshot whose buffers the worker can take by transfer: typed arrays
// are copied into fresh buffers (one copy, as postMessage would make), or, with { transfer: true }, their
// buffers are moved without copying (the caller's arrays are detached at once). Results come back by
// transfer: they are fresh buffers the worker no longer needs.
import { isArrayBuffer, isDetachedBuffer, isSharedArrayBuffer, objectTag, typeName, typedArrayName } from './validate.js';

// How deep a call's arguments go at most: a state dict of tensors is three levels.
const MAX_DEPTH = 8;

// Returns { value, transfer }: the snapshot of `args` (named `names` in messages) and the buffers to
// transfer with it.
export function snapshot(fn, args, names, transferInputs) {
  const moved = new Set();     // the caller's own buffers, moved (transferInputs)
  const copies = new Map();    // typed array or buffer -> its copy: the same array passed twice is copied once
  function walk(v, path, depth) {
    if (v === null || (typeof v !== 'object' && typeof v !== 'function' && typeof v !== 'symbol')) return v;
    if (typeof v !== 'object') throw new TypeError(`${fn}: ${path} is a ${typeof v}, which cannot be sent to the worker`);
    if (copies.has(v)) return copies.get(v);
    if (depth > MAX_DEPTH) throw new TypeError(`${fn}: ${path} is nested too deeply to be sent to the worker`);
    const tag = typedArrayName(v);
    let out;
    // A detached buffer cannot be sent at all (and Node drops a message that transfers one): refuse it here,
    // as the checks in the worker would.
    if ((ArrayBuffer.isView(v) && isArrayBuffer(v.buffer) && isDetachedBuffer(v.buffer)) || (isArrayBuffer(v) && isDetachedBuffer(v))) {
      throw new TypeError(`${fn}: ${path} is ${isArrayBuffer(v) ? 'a' : 'backed by a'} detached ArrayBuffer`);
    }
    if (tag) {
      const buffer = v.buffer;
      if (transferInputs && isArrayBuffer(buffer)) {
        moved.add(buffer);
        out = v;
      } else if (isSharedArrayBuffer(buffer)) {
        out = v;  // shared memory is shared, not copied
      } else {
        const Type = globalThis[tag];
        out = Type ? new Type(v) : v;  // another realm's type this one lacks: postMessage copies it
      }
    } else if (ArrayBuffer.isView(v)) {  // a DataView
      out = new DataView(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
    } else if (isArrayBuffer(v)) {
      if (transferInputs) {
        moved.add(v);
        out = v;
      } else {
        out = v.slice(0);
      }
    } else if (isSharedArrayBuffer(v)) {
      out = v;
    } else if (Array.isArray(v)) {
      out = new Array(v.length);  // holes stay holes: the worker's checks refuse sparse shapes by index
      for (let i = 0; i < v.length; i++) if (i in v) out[i] = walk(v[i], `${path}[${i}]`, depth + 1);
    } else if (objectTag(v) === '[object Object]' && !typeName(v).includes('look-alike')) {
      out = {};
      // Own enumerable properties, and data/shape/dtype even when a class defines them as getters.
      const keys = new Set(Object.keys(v));
      for (const key of ['data', 'shape', 'dtype']) if (key in v) keys.add(key);
      for (const key of keys) out[key] = walk(v[key], path ? `${path}.${key}` : key, depth + 1);
    } else {
      throw new TypeError(`${fn}: ${path} is a ${typeName(v)}, which cannot be sent to the worker`);
    }
    copies.set(v, out);
    return out;
  }
  let value = args.map((a, i) => walk(a, names[i] ?? `argument ${i + 1}`, 0));
  if (moved.size) {
    // Detach the caller's buffers now, not when the call reaches the worker: what was checked is what runs.
    value = structuredClone(value, { transfer: [...moved] });
  }
  return { value, transfer: buffersIn(value) };
}

// Every non-shared ArrayBuffer under `value` (typed arrays' and bare), once each.
export function buffersIn(value) {
  const found = new Set();
  const seen = new Set();
  (function walk(v, depth) {
    if (v === null || typeof v !== 'object' || seen.has(v) || depth > MAX_DEPTH + 1) return;
    seen.add(v);
    if (ArrayBuffer.isView(v)) {
      if (isArrayBuffer(v.buffer)) found.add(v.buffer);
    } else if (isArrayBuffer(v)) {
      found.add(v);
    } else if (!isSharedArrayBuffer(v)) {
      for (const key of Object.keys(v)) walk(v[key], depth + 1);
    }
  })(value, 0);
  return [...found];
}
