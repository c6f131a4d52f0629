// Q, K and V for a set of dims, generated from the seed: each tensor has its own stream of the seed, so
// changing S redraws K and V but leaves Q as it was.
import { randomValues } from './prng.js';
import { elementCount, formatShape, inputShapes } from './shapes.js';

export const STREAMS = { query: 0, key: 1, value: 2 };

// The generator's options for one stream of the page's settings. The page calls the data's standard
// deviation (or half-width) its "spread", so it is never confused with attention's scale factor 1/√E.
export function drawOptions({ seed, distribution, spread }, stream) {
  return { seed, distribution, scale: spread, stream };
}

// gen: { seed, distribution: 'normal' | 'uniform', spread }: N(0, spread²) or U(−spread, spread). `imported`
// may hold any of query, key, value read from .npy files; those are used as they are.
export function generateInputs(dims, gen, imported = {}) {
  const shapes = inputShapes(dims);
  const out = {};
  for (const name of ['query', 'key', 'value']) {
    if (imported[name]) {
      out[name] = { data: imported[name].data, shape: imported[name].shape };
      continue;
    }
    const shape = shapes[name].shape;
    out[name] = { data: randomValues(elementCount(shape), drawOptions(gen, STREAMS[name])), shape };
  }
  return out;
}

// Matrix m of a (…, R, C) tensor: its last two dims, as a copy (so it can be transferred to the page).
export function matrixOf(tensor, m) {
  const [R, C] = tensor.shape.slice(-2);
  return tensor.data.slice(m * R * C, (m + 1) * R * C);
}

// Bytes of float32 data a shape needs, and a readable size.
export function float32Bytes(shape) {
  return 4 * elementCount(shape);
}

export function formatBytes(n) {
  if (n >= 2 ** 30) return `${(n / 2 ** 30).toFixed(2)} GiB`;
  if (n >= 2 ** 20) return `${(n / 2 ** 20).toFixed(1)} MiB`;
  if (n >= 2 ** 10) return `${(n / 2 ** 10).toFixed(1)} KiB`;
  return `${n} B`;
}

// What the page itself allocates in the worker (Q, K, V, output, weights); refused past `limit` with a
// message a person can act on, before any allocation can take the tab down.
export function checkFootprint(tensors, limit) {
  let total = 0;
  const parts = [];
  for (const [name, shape] of Object.entries(tensors)) {
    const bytes = float32Bytes(shape);
    total += bytes;
    parts.push(`${name} ${formatShape(shape)} ${formatBytes(bytes)}`);
  }
  if (total > limit) {
    return `These shapes need ${formatBytes(total)} of float32 data (${parts.join(', ')}); the demo allows ${formatBytes(limit)}. Make B, H, L or S smaller.`;
  }
  return null;
}
