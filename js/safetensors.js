// Reads the safetensors format (what `safetensors.torch.save_file` writes): an unsigned 64-bit little-endian
// header size N, N bytes of UTF-8 JSON
//   { "<name>": { "dtype": "F32", "shape": [3, 4], "data_offsets": [begin, end] }, …, "__metadata__": { … } }
// then the tensors' raw little-endian bytes, offsets counted from the end of the header.
// Only the header is parsed here; an entry's bytes are converted when asked for (js/float-formats.js).

// Bytes per element of the dtypes safetensors defines (the format's own names).
export const DTYPE_BYTES = {
  F64: 8, F32: 4, F16: 2, BF16: 2, I64: 8, I32: 4, I16: 2, I8: 1, U64: 8, U32: 4, U16: 2, U8: 1, BOOL: 1,
  F8_E4M3: 1, F8_E5M2: 1,
};
// The format caps the header at 100 MB; a larger size means the bytes are not a safetensors file.
const MAX_HEADER = 100_000_000;

// Parses the header of `bytes` (a Uint8Array over the whole file). Returns Map<name, { dtype, shape, bytes }>,
// `bytes` being a view of the entry's data, in the header's order. Throws a TypeError saying what is wrong.
export function readSafetensors(fn, bytes) {
  const bad = (why) => new TypeError(`${fn}: the source is not a valid safetensors file: ${why}`);
  if (bytes.length < 8) throw bad(`it has ${bytes.length} bytes, fewer than the 8 of the header size`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerSize = view.getBigUint64(0, true);
  if (headerSize > BigInt(Math.min(MAX_HEADER, bytes.length - 8))) {
    throw bad(`its header size ${headerSize} does not fit in its ${bytes.length} bytes`);
  }
  const n = Number(headerSize);
  let header;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (e) {
    throw bad(`its header is not UTF-8 JSON (${e.message})`);
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) throw bad('its header is not a JSON object');
  const data = bytes.subarray(8 + n);
  const entries = new Map();
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const where = `entry '${name}'`;
    if (entry === null || typeof entry !== 'object') throw bad(`${where} is not an object`);
    const { dtype, shape, data_offsets: offsets } = entry;
    if (typeof dtype !== 'string') throw bad(`${where} has no dtype`);
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      throw bad(`${where} has no valid shape (got ${JSON.stringify(shape)})`);
    }
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(Number.isSafeInteger)
      || offsets[0] < 0 || offsets[0] > offsets[1] || offsets[1] > data.length) {
      throw bad(`${where} has data_offsets ${JSON.stringify(offsets)} outside the ${data.length} data bytes`);
    }
    const size = DTYPE_BYTES[dtype];
    const count = shape.reduce((a, d) => a * d, 1);
    if (size !== undefined && offsets[1] - offsets[0] !== count * size) {
      throw bad(`${where} (${dtype}, shape ${JSON.stringify(shape)}) needs ${count * size} bytes, its offsets span ${offsets[1] - offsets[0]}`);
    }
    entries.set(name, { dtype, shape, bytes: data.subarray(offsets[0], offsets[1]) });
  }
  return entries;
}
