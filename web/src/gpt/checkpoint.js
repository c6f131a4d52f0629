// A GPT's parameters as a .safetensors file: model.py's state_dict names, F32, little-endian, in state_dict order,
// which PyTorch loads with safetensors.torch.load_file and GPT.load_state_dict. The file's __metadata__ (string
// values, as the format wants) carries what the names and shapes cannot: the configuration (JSON), the vocabulary
// (a JSON array of characters), the course stage and the training step.
// Reading goes through the package's own parser (js/safetensors.js) and float conversions (F32, F64, F16, BF16).
import { readSafetensors } from '../../../js/safetensors.js';
import { SAFETENSORS_FLOATS } from '../../../js/float-formats.js';
import { GPT, count, parameterShapes } from './model.js';
import { Stack, stackShapes } from './stack.js';

// The course's early models (stack.js) have a mixer in their configuration; the others are GPTs.
const isStack = (config) => 'mixer' in config;
const shapesOf = (config) => (isStack(config) ? stackShapes(config) : parameterShapes(config));

// params { name: Float32Array } in the order to write, shapes { name: dims }, metadata { key: string } → bytes.
export function writeSafetensors(params, shapes, metadata = {}) {
  const header = { __metadata__: metadata };
  let offset = 0;
  for (const [name, p] of Object.entries(params)) {
    header[name] = { dtype: 'F32', shape: shapes[name], data_offsets: [offset, offset + 4 * p.length] };
    offset += 4 * p.length;
  }
  let json = new TextEncoder().encode(JSON.stringify(header));
  // The data starts on an 8-byte boundary (the format pads its header with spaces).
  const padded = new Uint8Array(Math.ceil(json.length / 8) * 8).fill(0x20);
  padded.set(json);
  json = padded;
  const bytes = new Uint8Array(8 + json.length + offset);
  const view = new DataView(bytes.buffer);
  view.setBigUint64(0, BigInt(json.length), true);
  bytes.set(json, 8);
  let at = 8 + json.length;
  for (const p of Object.values(params)) {
    for (let k = 0; k < p.length; k++, at += 4) view.setFloat32(at, p[k], true);
  }
  return bytes;
}

// The model's file: its parameters and { vocab (characters), stage, step, … } as metadata.
export function writeModel(model, { chars, stage = 'gpt', step = 0, extra = {} } = {}) {
  const metadata = {
    format: 'pt',
    config: JSON.stringify(model.config),
    vocab: JSON.stringify(chars ?? null),
    stage: String(stage),
    step: String(step),
    ...Object.fromEntries(Object.entries(extra).map(([k, v]) => [k, String(v)])),
  };
  return writeSafetensors(model.params, shapesOf(model.config), metadata);
}

// bytes → { params (Float32Arrays by name), config, metadata }. The configuration comes from the metadata, or else
// from the shapes, with nHead (which no shape shows) from `options.nHead`. Every entry of the model must be there,
// each of its shape, and nothing else; a file that does not fit is refused with a message naming what is wrong.
export function readModelParameters(bytes, { nHead } = {}) {
  const FN = 'readModel';
  const entries = readSafetensors(FN, bytes);
  let metadata = {};
  try {
    const n = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0, true));
    metadata = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n))).__metadata__ ?? {};
  } catch {
    metadata = {};
  }
  let config;
  if (typeof metadata.config === 'string') {
    config = JSON.parse(metadata.config);
  } else {
    const tok = entries.get('token_embedding.weight');
    const pos = entries.get('position_embedding.weight');
    if (!tok || !pos) throw new RangeError(`${FN}: the file has no token_embedding.weight or position_embedding.weight, and no configuration in its metadata`);
    let nLayer = 0;
    while (entries.has(`layers.${nLayer}.norm1.weight`)) nLayer++;
    if (!Number.isInteger(nHead)) throw new RangeError(`${FN}: the file's metadata has no configuration; give nHead (the shapes do not show it)`);
    config = { vocab: tok.shape[0], nLayer, nHead, nEmbd: tok.shape[1], blockSize: pos.shape[0] };
  }
  const shapes = shapesOf(config);
  const problems = [];
  const params = {};
  for (const [name, shape] of Object.entries(shapes)) {
    const e = entries.get(name);
    if (!e) { problems.push(`missing ${name}`); continue; }
    if (e.shape.length !== shape.length || e.shape.some((d, i) => d !== shape[i])) {
      problems.push(`${name} is (${e.shape.join(', ')}), the model's is (${shape.join(', ')})`);
      continue;
    }
    const convert = SAFETENSORS_FLOATS[e.dtype];
    if (!convert) { problems.push(`${name} is ${e.dtype}, not a float format`); continue; }
    params[name] = convert(e.bytes);
    if (params[name].length !== count(shape)) problems.push(`${name} has ${params[name].length} values`);
  }
  for (const name of entries.keys()) if (!(name in shapes)) problems.push(`unexpected ${name}`);
  if (problems.length) throw new RangeError(`${FN}: the file does not fit the model (${JSON.stringify(config)}): ${problems.join('; ')}`);
  return { params, config, metadata };
}

// bytes → { model (a GPT on xa), metadata }.
export function readModel(xa, bytes, options) {
  const { params, config, metadata } = readModelParameters(bytes, options);
  return { model: isStack(config) ? new Stack(xa, config, { params }) : new GPT(xa, config, { params }), metadata };
}
