// The test side of the .safetensors fixtures (tests/golden/safetensors/make_safetensors.py): a reader written
// apart from the package's (js/safetensors.js), so that the fixtures' inputs and expected values do not pass
// through the code under test; and a writer for the malformed files the refusal tests need.
import { readFileSync, readdirSync } from 'node:fs';

const DIR = new URL('../golden/safetensors/', import.meta.url);

export const fixtureNames = () => readdirSync(DIR).filter((f) => f.endsWith('.safetensors')).sort();

// { bytes: Buffer, metadata, entries: Map<name, { dtype, shape, raw: Uint8Array, values?: Float32Array | Float64Array }> }
export function readFixture(file) {
  const bytes = readFileSync(new URL(file, DIR));
  const n = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
  const entries = new Map();
  for (const [name, e] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const raw = bytes.subarray(8 + n + e.data_offsets[0], 8 + n + e.data_offsets[1]);
    const copy = new Uint8Array(raw);  // aligned
    const values = { F32: Float32Array, F64: Float64Array }[e.dtype];
    entries.set(name, { dtype: e.dtype, shape: e.shape, raw: copy, values: values && new values(copy.buffer) });
  }
  return { bytes, metadata: header.__metadata__, entries };
}

// The fixture's MultiheadAttention configuration, in the JS API's names.
export function fixtureConfig(metadata) {
  const m = Object.fromEntries(Object.entries(metadata).filter(([k]) => k !== 'prefix').map(([k, v]) => [k, JSON.parse(v)]));
  const config = {
    embedDim: m.embed_dim, numHeads: m.num_heads, bias: m.bias, batchFirst: m.batch_first,
    addBiasKv: m.add_bias_kv, addZeroAttn: m.add_zero_attn,
  };
  if (m.kdim !== null) config.kdim = m.kdim;
  if (m.vdim !== null) config.vdim = m.vdim;
  return config;
}

export const tensorOf = (entry) => ({ data: Float32Array.from(entry.values), shape: entry.shape });
// The form golden.mjs's mismatch() compares against.
export const expected = (entry) => ({ shape: entry.shape, values: Array.from(entry.values) });

// A safetensors file from { name: { dtype, shape, raw: Uint8Array } } and a raw header override, for
// malformed inputs.
export function writeSafetensors(entries, { headerText, headerSize } = {}) {
  const header = {};
  const blobs = [];
  let offset = 0;
  for (const [name, e] of Object.entries(entries)) {
    header[name] = { dtype: e.dtype, shape: e.shape, data_offsets: e.offsets ?? [offset, offset + e.raw.length] };
    blobs.push(e.raw);
    offset += e.raw.length;
  }
  const text = Buffer.from(headerText ?? JSON.stringify(header));
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(headerSize ?? text.length));
  return new Uint8Array(Buffer.concat([size, text, ...blobs]));
}
