// A PyTorch state dict from JS: either the bytes of a .safetensors file or a plain object of tensors keyed by
// PyTorch's names. Both become one list of entries, each converted to float32 only once it is known to be
// wanted (so a refusal converts nothing), and are matched against the parameters a module has.
import { readSafetensors } from './safetensors.js';
import { SAFETENSORS_FLOATS, bfloat16BitsToFloat32, float16BitsToFloat32 } from './float-formats.js';
import { isArrayBuffer, isSharedArrayBuffer, shapeString, typeName, typedArrayLength, typedArrayName } from './validate.js';

const isBytes = (x) => typedArrayName(x) === 'Uint8Array' || isArrayBuffer(x) || isSharedArrayBuffer(x);

// The element types a plain-object entry may hold, with the dtype each one means and how it becomes float32.
const TYPED = {
  Float32Array: { dtype: 'float32', convert: (a) => new Float32Array(a) },
  Float64Array: { dtype: 'float64', convert: (a) => new Float32Array(a) },
  Float16Array: { dtype: 'float16', convert: (a) => new Float32Array(a) },  // engines that have it
};
// A Uint16Array holds the bits of either 16-bit format: the entry must say which.
const UINT16 = { float16: float16BitsToFloat32, bfloat16: bfloat16BitsToFloat32 };
const SAFETENSORS_NAMES = { F32: 'float32', F64: 'float64', F16: 'float16', BF16: 'bfloat16' };

// Map<name, { dtype, shape (null when not given), count, toFloat32() }> from either kind of source.
export function stateDictEntries(fn, source) {
  if (isBytes(source)) {
    const bytes = typedArrayName(source) ? source : new Uint8Array(source);
    const entries = new Map();
    for (const [name, e] of readSafetensors(fn, bytes)) {
      const convert = SAFETENSORS_FLOATS[e.dtype];
      entries.set(name, {
        dtype: SAFETENSORS_NAMES[e.dtype] ?? e.dtype,
        shape: e.shape,
        count: e.shape.reduce((n, d) => n * d, 1),
        toFloat32: () => {
          if (!convert) throw new TypeError(`${fn}: ${name} is ${e.dtype}, not a floating-point type (F32, F64, F16 or BF16)`);
          return convert(e.bytes);
        },
      });
    }
    return entries;
  }
  if (source === null || typeof source !== 'object' || Array.isArray(source) || typedArrayName(source)) {
    throw new TypeError(`${fn}: source must be the bytes of a .safetensors file (ArrayBuffer or Uint8Array) or an object of tensors keyed by PyTorch's names, got ${typeName(source)}`);
  }
  const entries = new Map();
  for (const name of Object.keys(source)) entries.set(name, objectEntry(fn, name, source[name]));
  return entries;
}

// One value of a plain-object state dict: a typed array, or { data, shape?, dtype? } (what parameters() returns).
function objectEntry(fn, name, value) {
  const tag = typedArrayName(value);
  if (tag) return typedEntry(fn, name, value, null, undefined);
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(`${fn}: ${name} must be a Float32Array, a Float64Array or { data, shape, dtype }, got ${typeName(value)}`);
  }
  const { data, shape, dtype } = value;
  let dims = null;
  if (shape !== undefined) {
    if (!Array.isArray(shape) || Array.from(shape).some((d, i) => !(i in shape) || !Number.isSafeInteger(d) || d < 0)) {
      throw new TypeError(`${fn}: ${name}.shape must be an Array of non-negative integers, got ${typeName(shape)} ${JSON.stringify(shape)}`);
    }
    dims = Array.from(shape);
  }
  return typedEntry(fn, `${name}.data`, data, dims, dtype);
}

function typedEntry(fn, what, data, shape, dtype) {
  const tag = typedArrayName(data);
  const count = tag ? typedArrayLength(data) : 0;
  if (tag === 'Uint16Array') {
    if (!(dtype in UINT16)) {
      throw new TypeError(`${fn}: ${what} is a Uint16Array: say which format its bits hold with dtype 'float16' or 'bfloat16'${dtype === undefined ? '' : ` (got ${JSON.stringify(dtype)})`}`);
    }
    return { dtype, shape, count, toFloat32: () => UINT16[dtype](data) };
  }
  const kind = TYPED[tag];
  if (!kind) throw new TypeError(`${fn}: ${what} must be a Float32Array, a Float64Array or a Uint16Array (float16 or bfloat16 bits), got ${typeName(data)}`);
  if (dtype !== undefined && dtype !== kind.dtype) {
    throw new TypeError(`${fn}: ${what} is a ${tag}, which holds ${kind.dtype}, not ${JSON.stringify(dtype)}`);
  }
  return { dtype: kind.dtype, shape, count, toFloat32: () => kind.convert(data) };
}

// Picks this module's parameters out of `entries`: the names under `prefix` must be exactly the module's
// (`shapes`: Map<PyTorch name, shape>), each of its shape. Returns Map<PyTorch name, Float32Array>, or throws
// naming every missing, unexpected or mis-shaped entry.
export function matchParameters(fn, entries, shapes, prefix) {
  const known = [...shapes.keys()];
  const under = [...entries.keys()].filter((name) => name.startsWith(prefix));
  if (under.length === 0 && entries.size > 0 && prefix !== '') {
    const heads = [...new Set([...entries.keys()].map((n) => n.slice(0, n.lastIndexOf('.') + 1)))].slice(0, 5);
    throw new RangeError(`${fn}: no entry starts with the prefix '${prefix}'${prefix.endsWith('.') ? '' : " (a prefix usually ends with '.')"}; the source's entries start with ${heads.map((h) => `'${h}'`).join(', ')}${heads.length === 5 ? ', …' : ''}`);
  }
  // A prefix that only lacks its dot ('self_attn' for 'self_attn.in_proj_weight'): say so, and nothing else.
  if (prefix !== '' && !prefix.endsWith('.') && known.some((name) => !entries.has(prefix + name))
      && known.every((name) => entries.has(`${prefix}.${name}`))) {
    throw new RangeError(`${fn}: the source's entries are under '${prefix}.', not '${prefix}': use { prefix: '${prefix}.' } (a prefix ends with its dot, as in PyTorch's state_dict keys)`);
  }
  const problems = [];
  const missing = known.filter((name) => !entries.has(prefix + name));
  if (missing.length) problems.push(`missing ${missing.map((n) => `'${prefix}${n}'`).join(', ')}`);
  const extra = under.filter((full) => !shapes.has(full.slice(prefix.length)));
  if (extra.length) problems.push(`unexpected ${extra.map((n) => `'${n}'`).join(', ')}`);
  for (const name of known) {
    const e = entries.get(prefix + name);
    if (!e) continue;
    const want = shapes.get(name);
    const wantCount = want.reduce((n, d) => n * d, 1);
    if (e.shape ? e.shape.join() !== want.join() : e.count !== wantCount) {
      problems.push(`'${prefix}${name}' has ${e.shape ? `shape ${shapeString(e.shape)}` : `${e.count} values`}, this module needs ${shapeString(want)}`);
    }
  }
  if (problems.length) {
    throw new RangeError(`${fn}: the state dict does not fit this module (its parameters: ${known.join(', ')}): ${problems.join('; ')}`);
  }
  return new Map(known.map((name) => [name, entries.get(prefix + name).toFloat32()]));
}
