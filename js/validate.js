// Checks of JS values before anything reaches the wasm bindings. Release Embind coerces silently
// ("abc" and 2**40 become 0 for an int), so every number is checked here: integer, range, type.

// The largest rank a shape may have; the dims area in the heap is sized for it.
export const MAX_RANK = 16;

export function shapeString(shape) {
  return shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(', ')})`;
}

function typeName(x) {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'Array';
  if (typeof x === 'object') return x.constructor?.name ?? 'object';
  return typeof x;
}

// A plain object with only the allowed keys: a misspelt option must not be silently ignored.
export function checkOptions(fn, what, options, allowed) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError(`${fn}: ${what} must be an object, got ${typeName(options)}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) {
      throw new TypeError(`${fn}: unknown ${what === 'options' ? 'option' : what + ' field'} '${key}' (known: ${allowed.join(', ')})`);
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

function checkShape(fn, name, shape) {
  if (!Array.isArray(shape)) throw new TypeError(`${fn}: ${name}.shape must be an Array of dims, got ${typeName(shape)}`);
  if (shape.length > MAX_RANK) throw new RangeError(`${fn}: ${name} has ${shape.length} dims, more than ${MAX_RANK}`);
  shape.forEach((d, i) => {
    if (typeof d !== 'number' || !Number.isInteger(d) || d < 0 || d > 0x7fffffff) {
      throw new RangeError(`${fn}: ${name}.shape[${i}] must be an integer in [0, 2^31), got ${typeof d === 'number' ? d : typeName(d)} (shape ${String(shape)})`);
    }
  });
  // Exact product; a product past 2^53 cannot match any array anyway.
  return shape.reduce((n, d) => n * d, 1);
}

// A tensor: { data: Float32Array, shape: number[] } with data.length = product of shape.
export function checkTensor(fn, name, t) {
  if (t === null || typeof t !== 'object') throw new TypeError(`${fn}: ${name} must be a tensor { data: Float32Array, shape }, got ${typeName(t)}`);
  if (!(t.data instanceof Float32Array)) {
    throw new TypeError(`${fn}: ${name}.data must be a Float32Array, got ${typeName(t.data)}`);
  }
  return checkData(fn, name, t);
}

// A mask: { data: Uint8Array (boolean, non-zero = true) | Float32Array (added), shape }.
export function checkMask(fn, name, m) {
  if (m === undefined) return null;
  if (m === null || typeof m !== 'object') throw new TypeError(`${fn}: ${name} must be a mask { data: Uint8Array | Float32Array, shape }, got ${typeName(m)}`);
  if (!(m.data instanceof Uint8Array) && !(m.data instanceof Float32Array)) {
    throw new TypeError(`${fn}: ${name}.data must be a Uint8Array (boolean) or a Float32Array (added), got ${typeName(m.data)}`);
  }
  checkData(fn, name, m);
  return { ...m, kind: m.data instanceof Uint8Array ? 1 : 2 };
}

function checkData(fn, name, t) {
  const count = checkShape(fn, name, t.shape);
  if (isDetached(t.data)) throw new TypeError(`${fn}: ${name}.data is backed by a detached ArrayBuffer`);
  if (t.data.length !== count) {
    throw new RangeError(`${fn}: ${name} has ${t.data.length} values but its shape ${shapeString(t.shape)} needs ${count}`);
  }
  return t;
}

function isDetached(view) {
  const buffer = view.buffer;
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
