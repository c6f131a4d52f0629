// Conversions of the floating-point formats PyTorch saves parameters in to float32: the format the core
// computes in. float64 rounds to nearest (as torch's .float() does); float16 and bfloat16 convert exactly.

const HOST_IS_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

// A float16 bit pattern as a number (exact: every float16 is a float32).
function halfToNumber(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;  // zero and subnormals
  if (exponent === 31) return mantissa ? NaN : sign * Infinity;
  return sign * (1024 + mantissa) * 2 ** (exponent - 25);
}

export function float16BitsToFloat32(bits) {
  const out = new Float32Array(bits.length);
  for (let i = 0; i < bits.length; i++) out[i] = halfToNumber(bits[i]);
  return out;
}

// bfloat16 is the top half of a float32.
export function bfloat16BitsToFloat32(bits) {
  const wide = new Uint32Array(bits.length);
  for (let i = 0; i < bits.length; i++) wide[i] = bits[i] << 16;
  return new Float32Array(wide.buffer);
}

// Raw little-endian bytes (any alignment) as a fresh typed array of `Type`.
function fromLittleEndian(bytes, Type) {
  const copy = new Uint8Array(bytes);  // own, aligned buffer (a Node Buffer's slice() would share memory)
  if (HOST_IS_LITTLE_ENDIAN) return new Type(copy.buffer);
  const view = new DataView(copy.buffer);
  const out = new Type(copy.length / Type.BYTES_PER_ELEMENT);
  const get = { 2: 'getUint16', 4: Type === Float32Array ? 'getFloat32' : 'getUint32', 8: 'getFloat64' }[Type.BYTES_PER_ELEMENT];
  for (let i = 0; i < out.length; i++) out[i] = view[get](i * Type.BYTES_PER_ELEMENT, true);
  return out;
}

// Safetensors dtypes (js/safetensors.js) this package can load, and how their bytes become float32.
export const SAFETENSORS_FLOATS = {
  F32: (bytes) => fromLittleEndian(bytes, Float32Array),
  F64: (bytes) => Float32Array.from(fromLittleEndian(bytes, Float64Array)),
  F16: (bytes) => float16BitsToFloat32(fromLittleEndian(bytes, Uint16Array)),
  BF16: (bytes) => bfloat16BitsToFloat32(fromLittleEndian(bytes, Uint16Array)),
};
