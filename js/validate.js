// Checks of JS values before anything reaches the wasm bindings. Release Embind coerces silently
// ("abc" and 2**40 become 0 for an int), so every number is checked here: integer, range, type.

// The largest rank a shape may have: what the bindings' shape record holds (src/bindings/embind.cpp).
export const MAX_RANK = 16;

// "(2, 5, 8)", and "(5,)" for one dim: the spelling of the C++ side and of PyTorch.
export function shapeString(shape) {
  return shape.length === 1 ? `(${shape[0]},)` : `(${Array.from(shape, String).join(', ')})`;
}

// The class name of a typed array from any realm (an iframe, node:vm), or undefined for anything else,
// a Proxy included: TypedArray.prototype[Symbol.toStringTag] reads the internal slot, not the prototype.
const typedArrayTag = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), Symbol.toStringTag).get;
export function typedArrayName(x) {
  return ArrayBuffer.isView(x) ? typedArrayTag.call(x) : undefined;
}

// An object's tag, "[object ArrayBuffer]": what a buffer is in any realm, where instanceof fails across realms.
export const objectTag = (x) => Object.prototype.toString.call(x);
export const isArrayBuffer = (x) => objectTag(x) === '[object ArrayBuffer]';
export const isSharedArrayBuffer = (x) => objectTag(x) === '[object SharedArrayBuffer]';

// Whether an ArrayBuffer has been detached (transferred away).
export function isDetachedBuffer(buffer) {
  if (typeof buffer.detached === 'boolean') return buffer.detached;
  if (buffer.byteLength !== 0) return false;
  // Engines without ArrayBuffer.prototype.detached: a view over a detached buffer cannot be made.
  try {
    new Uint8Array(buffer);
    return false;
  } catch {
    return true;
  }
}
const isDetached = (view) => isDetachedBuffer(view.buffer);

export function typeName(x) {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'Array';
  const tag = typedArrayName(x);
  if (tag) return tag;
  if (typeof x === 'object') {
    const name = x.constructor?.name ?? 'object';
    // Not a typed array by its internal slots, yet named like one: a Proxy or a look-alike.
    return /^(Big)?(Int|Uint|Float)(8|16|32|64)(Clamped)?Array$/.test(name) ? `${name} look-alike (not a typed array)` : name;
  }
  return typeof x;
}

// A plain object with only the allowed keys: a misspelt option must not be silently ignored.
// `unknown(key)`, when given, says what is wrong with a key not in `allowed` (after "fn: ").
export function checkOptions(fn, what, options, allowed, unknown) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${fn}: ${what} must be an object, got ${typeName(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new TypeError(`${fn}: ${unknown ? unknown(key) : `unknown ${what === 'options' ? 'option' : what + ' field'} '${key}' (known: ${allowed.join(', ')})`}`);
    }
  }
  return options;
}

export function checkBoolean(fn, name, value, fallback) {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new TypeError(`${fn}: ${name} must be a boolean, got ${typeName(value)}`);
  return value;
}

export function checkNumber(fn, name, value) {
  if (typeof value !== 'number') throw new TypeError(`${fn}: ${name} must be a number, got ${typeName(value)}`);
  return value;
}

// A whole number in [min, max].
export function checkInteger(fn, name, value, min, max) {
  checkNumber(fn, name, value);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new RangeError(`${fn}: ${name} must be an integer in [${min}, ${max}], got ${value}`);
  }
  return value;
}

// Returns a copy of the dims (read once) after checking them.
function checkShape(fn, name, given) {
  if (!Array.isArray(given)) throw new TypeError(`${fn}: ${name}.shape must be an Array of dims, got ${typeName(given)}`);
  if (given.length > MAX_RANK) throw new RangeError(`${fn}: ${name} has ${given.length} dims, more than ${MAX_RANK}`);
  for (let i = 0; i < given.length; i++) {
    // A hole ([2, , 4]) is not a dim; forEach would skip it and the product would ignore it.
    if (!(i in given)) throw new TypeError(`${fn}: ${name}.shape[${i}] is missing (a sparse array): every dim must be given`);
  }
  const shape = Array.from(given);
  shape.forEach((d, i) => {
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 0 || d > 0x7fffffff) {
      const shown = shape.map((x) => (typeof x === 'number' ? String(x) : typeName(x))).join(', ');
      throw new RangeError(`${fn}: ${name}.shape[${i}] must be an integer in [0, 2^31), got ${typeof d === 'number' ? d : typeName(d)} (shape (${shown}))`);
    }
  });
  return shape;
}

// The intrinsic length of a typed array: an own `length` property defined on the instance cannot fake it.
export const typedArrayLength = (view) => intrinsicLength.call(view);
const intrinsicLength = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'length').get;

// A tensor: { data: Float32Array, shape: number[] } with data.length = product of shape. Returns a
// snapshot { data, shape } read once: a getter must not hand the copy-in step something the checks never saw.
export function checkTensor(fn, name, t) {
  if (t === null || typeof t !== 'object') throw new TypeError(`${fn}: ${name} must be a tensor { data: Float32Array, shape }, got ${typeName(t)}`);
  const data = t.data;
  if (typedArrayName(data) !== 'Float32Array') {
    throw new TypeError(`${fn}: ${name}.data must be a Float32Array, got ${typeName(data)}`);
  }
  return checkData(fn, name, data, t.shape);
}

// Tensors of one call, each { data, shape }: all Float32Array, or all IEEE halves (Uint16Array of their bits, or
// Float16Array where the runtime has it), computed in float32 and returned in the inputs' type. Returns the
// snapshots (as checkTensor's) and `half`: the array class of halves (Uint16Array or Float16Array), or null.
const HALVES = ['Uint16Array', 'Float16Array'];
export function checkTensors(fn, named) {
  // Each tensor's data is read once, as checkTensor reads it: its type decides the call's, and is what is copied.
  const datas = named.map(([, t]) => (t !== null && typeof t === 'object' ? t.data : undefined));
  const kinds = datas.map((d) => typedArrayName(d));
  const half = HALVES.includes(kinds[0]) ? kinds[0] : null;
  const want = half ?? 'Float32Array';
  return {
    half: half === null ? null : globalThis[half],
    tensors: named.map(([name, t], i) => {
      if (t === null || typeof t !== 'object') throw new TypeError(`${fn}: ${name} must be a tensor { data: ${want}, shape }, got ${typeName(t)}`);
      if (kinds[i] !== want) {
        throw new TypeError(half === null ? `${fn}: ${name}.data must be a Float32Array, got ${typeName(datas[i])}`
          : `${fn}: ${name}.data must be a ${half} like ${named[0][0]}'s (float16 calls take every tensor as halves), got ${typeName(datas[i])}`);
      }
      return checkData(fn, name, datas[i], t.shape);
    }),
  };
}

// A mask: { data: Uint8Array (boolean, non-zero = true) | Float32Array (added), shape }, or null when
// absent. The snapshot carries its kind: 1 boolean, 2 additive (the bindings' numbering).
export function checkMask(fn, name, m) {
  if (m === undefined) return null;
  if (m === null || typeof m !== 'object') throw new TypeError(`${fn}: ${name} must be a mask { data: Uint8Array | Float32Array, shape }, got ${typeName(m)}`);
  const data = m.data;
  const tag = typedArrayName(data);
  if (tag !== 'Uint8Array' && tag !== 'Float32Array') {
    throw new TypeError(`${fn}: ${name}.data must be a Uint8Array (boolean) or a Float32Array (added), got ${typeName(data)}`);
  }
  return { ...checkData(fn, name, data, m.shape), kind: tag === 'Uint8Array' ? 1 : 2 };
}

function checkData(fn, name, data, shapeGiven) {
  const shape = checkShape(fn, name, shapeGiven);
  // Exact product; a product past 2^53 cannot match any array anyway.
  const count = shape.reduce((n, d) => n * d, 1);
  if (isDetached(data)) throw new TypeError(`${fn}: ${name}.data is backed by a detached ArrayBuffer`);
  const length = typedArrayLength(data);
  if (length !== count) {
    throw new RangeError(`${fn}: ${name} has ${length} values but its shape ${shapeString(shape)} needs ${count}`);
  }
  return { data, shape };
}

// options.out: where a forward call writes its output instead of a fresh array. A Float32Array over a plain
// ArrayBuffer (results are typed as ArrayBuffer-backed arrays the caller owns, so not a SharedArrayBuffer), not
// detached; its length is checked against the output once the call is planned (boundary.js).
const intrinsicBuffer = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'buffer').get;
export function checkOut(fn, out, name = 'out') {
  if (out === undefined) return undefined;
  if (typedArrayName(out) !== 'Float32Array') throw new TypeError(`${fn}: ${name} must be a Float32Array, got ${typeName(out)}`);
  if (!isArrayBuffer(intrinsicBuffer.call(out))) {
    throw new TypeError(`${fn}: ${name} must be over an ArrayBuffer, not a SharedArrayBuffer (results are arrays over ArrayBuffers the caller owns)`);
  }
  if (isDetached(out)) throw new TypeError(`${fn}: ${name} is backed by a detached ArrayBuffer`);
  return out;
}

// out (checked by checkOut, or undefined) must hold exactly the output's values.
export function checkOutLength(fn, out, shape, name = 'out') {
  if (out === undefined) return;
  const n = shape.reduce((count, d) => count * d, 1);
  if (typedArrayLength(out) !== n) {
    throw new RangeError(`${fn}: ${name} has ${typedArrayLength(out)} values but the output ${shapeString(shape)} needs ${n}`);
  }
}

// A backward's options.out: an object whose fields, each optional, are the arrays for the results of those names.
// `shapes` maps each name to its result's shape, or to such a map for a group of results (a layer's
// gradParameters). Every array is checked before anything is written, and no array may stand for two results.
// Returns the same structure with only the arrays given (undefined for no out); results not given come fresh.
export function checkOutFields(fn, out, shapes) {
  if (out === undefined) return undefined;
  const seen = new Map();  // array → the field that has it
  function fields(value, group, path) {
    if (ArrayBuffer.isView(value)) {
      throw new TypeError(`${fn}: ${path} must be an object of arrays by result (${Object.keys(group).join(', ')}), got ${typeName(value)}`);
    }
    const o = checkOptions(fn, path, value, Object.keys(group));
    const chosen = {};
    for (const [key, given] of Object.entries(o)) {
      if (given === undefined) continue;
      const name = `${path}.${key}`;
      if (!Array.isArray(group[key])) {
        chosen[key] = fields(given, group[key], name);
        continue;
      }
      checkOut(fn, given, name);
      checkOutLength(fn, given, group[key], name);
      if (seen.has(given)) throw new RangeError(`${fn}: ${seen.get(given)} and ${name} are the same array; each result needs its own`);
      seen.set(given, name);
      chosen[key] = given;
    }
    return chosen;
  }
  return fields(out, shapes, 'out');
}
