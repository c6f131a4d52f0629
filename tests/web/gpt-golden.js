// Reads tests/web/fixtures/gpt_golden.safetensors (written by make_gpt_golden.py from PyTorch in float64): every
// entry as a Float64Array with its shape, and the tiny model's configuration and parameters as float32.
import { readFileSync } from 'node:fs';
import { readSafetensors } from '../../js/safetensors.js';

export const TINY = { vocab: 11, nLayer: 2, nHead: 2, nEmbd: 16, blockSize: 8 };
export const B = 3;
export const T = 7;
// The fixture's AdamW schedule (make_gpt_golden.py's SCHEDULE).
export const SCHEDULE = {
  learningRate: 1e-2, minLr: 1e-3, warmupIters: 1, lrDecayIters: 3, beta1: 0.9, beta2: 0.99, weightDecay: 0.1, gradClip: 0.1,
};

export function readGolden(file = 'gpt_golden.safetensors') {
  const bytes = new Uint8Array(readFileSync(new URL(`./fixtures/${file}`, import.meta.url)));
  const out = new Map();
  for (const [name, e] of readSafetensors('readGolden', bytes)) {
    if (e.dtype !== 'F64') throw new TypeError(`readGolden: ${name} is ${e.dtype}, expected F64`);
    out.set(name, { data: new Float64Array(new Uint8Array(e.bytes).buffer), shape: e.shape });
  }
  return out;
}

// The entries under `prefix` (e.g. 'param.'), by the rest of their names, as Float32Arrays.
export function group(golden, prefix) {
  const out = {};
  for (const [name, e] of golden) if (name.startsWith(prefix)) out[name.slice(prefix.length)] = Float32Array.from(e.data);
  return out;
}

// The largest |a − b| / (atol + rtol · |b|) over two arrays (≤ 1 passes), and where it is.
export function worst(a, b, { atol, rtol }) {
  if (a.length !== b.length) throw new RangeError(`lengths differ: ${a.length} vs ${b.length}`);
  let ratio = 0;
  let at = -1;
  for (let k = 0; k < a.length; k++) {
    const r = Math.abs(a[k] - b[k]) / (atol + rtol * Math.abs(b[k]));
    if (!(r <= ratio)) {
      ratio = r;
      at = k;
    }
  }
  return { ratio, at, got: a[at], want: b[at] };
}
