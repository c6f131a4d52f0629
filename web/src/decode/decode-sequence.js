// The decoding panel's sequence: seeded q, k, v for T positions, and the slices of it a decoder has at each
// step. Tensors are (1, heads, T, D) with B = 1, laid out as the package wants them (B, H, S, E).
import { randomValues } from '../shared/prng.js';
import { STREAMS } from '../shared/tensors.js';

// settings: { H, Hkv, E, Ev, T, seed }. Each tensor has its own stream of the seed, drawn N(0, 1).
export function decodeInputs({ H, Hkv, E, Ev, T, seed }) {
  const draw = (name, heads, dim) => ({
    data: randomValues(heads * T * dim, { seed, stream: STREAMS[name], distribution: 'normal', scale: 1 }),
    shape: [1, heads, T, dim],
  });
  return { query: draw('query', H, E), key: draw('key', Hkv, E), value: draw('value', Hkv, Ev) };
}

// Positions [from, to) of a (1, heads, T, D) tensor as a contiguous (1, heads, to − from, D) copy. Each head's
// rows are apart in memory, so a run of positions of every head is a copy, never a view.
export function positions(tensor, from, to) {
  const [, heads, T, D] = tensor.shape;
  if (!(Number.isInteger(from) && Number.isInteger(to) && 0 <= from && from < to && to <= T)) {
    throw new RangeError(`positions ${from} … ${to} are not within 0 … ${T}`);
  }
  const n = to - from;
  const out = new Float32Array(heads * n * D);
  for (let h = 0; h < heads; h++) out.set(tensor.data.subarray((h * T + from) * D, (h * T + to) * D), h * n * D);
  return { data: out, shape: [1, heads, n, D] };
}
