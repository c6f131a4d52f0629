// The windows a GPT trains and validates on (bench/gpt/model.py): training batches of B windows of T+1
// characters at seeded random offsets (inputs, and targets shifted by one), and the fixed validation windows,
// evenly spaced, that every implementation evaluates on.
import { Prng } from '../shared/prng.js';

// B windows at offsets drawn uniformly from [0, n − T), as nanoGPT's get_batch (its random stream is torch's; ours
// is the seeded Prng's, so the batches differ from PyTorch's but are drawn alike). → { x, y } Int32Arrays (B·T).
export function randomBatch(data, B, T, rng) {
  if (data.length <= T) throw new RangeError(`randomBatch: ${data.length} tokens are too few for windows of ${T} + 1`);
  const offsets = Array.from({ length: B }, () => Math.floor(rng.nextFloat() * (data.length - T)));
  return windows(data, offsets, T);
}

// The windows at the given offsets: x (B·T) and y (B·T), y the next character of each.
export function windows(data, offsets, T) {
  const B = offsets.length;
  const x = new Int32Array(B * T);
  const y = new Int32Array(B * T);
  offsets.forEach((o, b) => {
    x.set(data.subarray(o, o + T), b * T);
    y.set(data.subarray(o + 1, o + 1 + T), b * T);
  });
  return { x, y };
}

// model.py's validation_offsets: batches · B offsets, (k + ½) · span / count for span = n − T − 1, truncated.
export function validationOffsets(n, batches, B, T) {
  const count = batches * B;
  const span = n - T - 1;
  return Array.from({ length: count }, (_, k) => Math.trunc(((k + 0.5) * span) / count));
}

// A seeded batch source over a token array (one Prng stream per run).
export class BatchSource {
  constructor(data, { B, T, seed }) {
    Object.assign(this, { data, B, T });
    this.rng = new Prng(seed >>> 0, 7);
  }

  next() {
    return randomBatch(this.data, this.B, this.T, this.rng);
  }
}
