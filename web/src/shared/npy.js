// NumPy's .npy format, so tensors leave the page for NumPy/PyTorch (np.load) and come back (np.save).
// Layout: magic "\x93NUMPY", version (major, minor), header length (uint16 in 1.0, uint32 in 2.0/3.0),
// an ASCII Python dict {'descr', 'fortran_order', 'shape'} padded with spaces to a 64-byte boundary and
// ending in '\n', then the raw data.
// ref: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html

const MAGIC = [0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]; // \x93NUMPY
const ALIGN = 64;
const LITTLE_ENDIAN_HOST = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

function shapeTuple(shape) {
  if (shape.length === 1) return `(${shape[0]},)`;
  return `(${shape.join(', ')})`;
}

// A tensor { data: Float32Array, shape } as the bytes of a .npy file ('<f4', C order).
export function encodeNpy({ data, shape }) {
  if (!(data instanceof Float32Array)) throw new TypeError('encodeNpy: data must be a Float32Array');
  const count = shape.reduce((n, d) => n * d, 1);
  if (count !== data.length) {
    throw new RangeError(`encodeNpy: data has ${data.length} values but shape ${shapeTuple(shape)} needs ${count}`);
  }
  const dict = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shapeTuple(shape)}, }`;
  // Version 1.0 stores the header length in 16 bits; longer headers (thousands of dims) need 2.0.
  let version = 1;
  let prefix = 10;
  if (dict.length + 1 + prefix + ALIGN > 0xffff) {
    version = 2;
    prefix = 12;
  }
  const headerLength = Math.ceil((prefix + dict.length + 1) / ALIGN) * ALIGN - prefix;
  const header = dict.padEnd(headerLength - 1, ' ') + '\n';
  const out = new Uint8Array(prefix + headerLength + data.byteLength);
  out.set(MAGIC, 0);
  out[6] = version;
  out[7] = 0;
  const view = new DataView(out.buffer);
  if (version === 1) view.setUint16(8, headerLength, true);
  else view.setUint32(8, headerLength, true);
  for (let i = 0; i < header.length; i++) out[prefix + i] = header.charCodeAt(i);
  const body = prefix + headerLength;
  if (LITTLE_ENDIAN_HOST) {
    out.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), body);
  } else {
    for (let i = 0; i < data.length; i++) view.setFloat32(body + 4 * i, data[i], true);
  }
  return out;
}

// The element types a tensor can be read from; every one becomes float32 for the page.
const READERS = {
  f2: { size: 2, read: (v, o, le) => halfToFloat(v.getUint16(o, le)) },
  f4: { size: 4, read: (v, o, le) => v.getFloat32(o, le) },
  f8: { size: 8, read: (v, o, le) => v.getFloat64(o, le) },
  i1: { size: 1, read: (v, o) => v.getInt8(o) },
  u1: { size: 1, read: (v, o) => v.getUint8(o) },
  b1: { size: 1, read: (v, o) => (v.getUint8(o) ? 1 : 0) },
  i2: { size: 2, read: (v, o, le) => v.getInt16(o, le) },
  u2: { size: 2, read: (v, o, le) => v.getUint16(o, le) },
  i4: { size: 4, read: (v, o, le) => v.getInt32(o, le) },
  u4: { size: 4, read: (v, o, le) => v.getUint32(o, le) },
  i8: { size: 8, read: (v, o, le) => Number(v.getBigInt64(o, le)) },
  u8: { size: 8, read: (v, o, le) => Number(v.getBigUint64(o, le)) },
};

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >> 10) & 0x1f;
  const frac = h & 0x3ff;
  if (exp === 0) return sign * 2 ** -14 * (frac / 1024);
  if (exp === 31) return frac ? NaN : sign * Infinity;
  return sign * 2 ** (exp - 15) * (1 + frac / 1024);
}

// Reads the header dict, a Python literal: {'descr': '<f4', 'fortran_order': False, 'shape': (4, 10, 64), }.
// A tiny parser for exactly that grammar (strings, True/False, tuples of ints), never eval.
export function parseHeaderDict(text) {
  let i = 0;
  const fail = (what) => {
    throw new RangeError(`.npy header: ${what} at character ${i} of ${JSON.stringify(text.trim())}`);
  };
  const skip = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const expect = (ch) => {
    skip();
    if (text[i] !== ch) fail(`expected '${ch}'`);
    i++;
  };
  const value = () => {
    skip();
    const ch = text[i];
    if (ch === "'" || ch === '"') {
      const end = text.indexOf(ch, i + 1);
      if (end < 0) fail('unterminated string');
      const s = text.slice(i + 1, end);
      i = end + 1;
      return s;
    }
    if (ch === '(') {
      i++;
      const items = [];
      for (;;) {
        skip();
        if (text[i] === ')') {
          i++;
          return items;
        }
        const m = /^\d+L?/.exec(text.slice(i));
        if (!m) fail('expected a whole number in the shape');
        items.push(Number(m[0].replace('L', '')));
        i += m[0].length;
        skip();
        if (text[i] === ',') i++;
        else if (text[i] !== ')') fail("expected ',' or ')'");
      }
    }
    if (text.startsWith('True', i)) {
      i += 4;
      return true;
    }
    if (text.startsWith('False', i)) {
      i += 5;
      return false;
    }
    if (ch === '[') fail('structured dtypes are not supported');
    return fail('unexpected value');
  };
  const dict = {};
  expect('{');
  for (;;) {
    skip();
    if (text[i] === '}') break;
    const key = value();
    if (typeof key !== 'string') fail('expected a string key');
    expect(':');
    dict[key] = value();
    skip();
    if (text[i] === ',') i++;
    else if (text[i] !== '}') fail("expected ',' or '}'");
  }
  return dict;
}

// The bytes of a .npy file as { data: Float32Array, shape, descr }. Any numeric dtype is read and
// converted to float32; Fortran-ordered arrays are reordered to row-major.
export function decodeNpy(bytes) {
  const u8 = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  if (u8.length < 10 || !MAGIC.every((b, i) => u8[i] === b)) {
    // What the file starts with, when it is text a person could recognise (a CSV, a note, JSON).
    const start = String.fromCharCode(...u8.subarray(0, 24)).split(/[\r\n]/)[0];
    const shown = /^[\x20-\x7e]{1,}$/.test(start) ? ` (it starts with “${start}”)` : '';
    throw new RangeError(`not a .npy file${shown}: the lab reads the arrays NumPy saves with np.save(file, array)`);
  }
  const view = new DataView(u8.buffer, u8.byteOffset, u8.byteLength);
  const major = u8[6];
  if (major < 1 || major > 3) throw new RangeError(`.npy version ${major}.${u8[7]} is not supported (1.0 to 3.0 are)`);
  const prefix = major === 1 ? 10 : 12;
  if (u8.length < prefix) throw new RangeError('.npy file is truncated inside its header');
  const headerLength = major === 1 ? view.getUint16(8, true) : view.getUint32(8, true);
  if (u8.length < prefix + headerLength) throw new RangeError('.npy file is truncated inside its header');
  const headerBytes = u8.subarray(prefix, prefix + headerLength);
  const header = major === 3 ? new TextDecoder('utf-8').decode(headerBytes) : String.fromCharCode(...headerBytes);
  const dict = parseHeaderDict(header);
  const { descr, fortran_order: fortran, shape } = dict;
  if (typeof descr !== 'string' || typeof fortran !== 'boolean' || !Array.isArray(shape)) {
    throw new RangeError(`.npy header must hold 'descr', 'fortran_order' and 'shape', got ${header.trim()}`);
  }
  const m = /^([<>|=]?)([a-z])(\d+)$/.exec(descr);
  const reader = m && READERS[m[2] + m[3]];
  if (!reader) throw new RangeError(`.npy dtype '${descr}' is not supported (float, int, uint and bool are)`);
  const little = m[1] !== '>';
  const count = shape.reduce((n, d) => n * d, 1);
  const start = prefix + headerLength;
  const need = count * reader.size;
  if (u8.length - start < need) {
    throw new RangeError(`.npy data is truncated: shape ${shapeTuple(shape)} of '${descr}' needs ${need} bytes, the file has ${u8.length - start}`);
  }
  const flat = new Float32Array(count);
  for (let k = 0; k < count; k++) flat[k] = reader.read(view, start + k * reader.size, little);
  const data = fortran ? fortranToC(flat, shape) : flat;
  return { data, shape, descr };
}

// Column-major (first index fastest) to row-major (last index fastest).
function fortranToC(src, shape) {
  const n = shape.length;
  const out = new Float32Array(src.length);
  const fStrides = new Array(n);
  let s = 1;
  for (let d = 0; d < n; d++) {
    fStrides[d] = s;
    s *= shape[d];
  }
  const index = new Array(n).fill(0);
  for (let c = 0; c < src.length; c++) {
    let f = 0;
    for (let d = 0; d < n; d++) f += index[d] * fStrides[d];
    out[c] = src[f];
    for (let d = n - 1; d >= 0; d--) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return out;
}
