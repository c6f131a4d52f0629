// Step time against cache length, for a decoder-sized shape: (a) the KvCache, append one position and attend
// one query row; (b) recomputing from a full copy, scaledDotProductAttention with the whole K and V so far,
// which copies them into WebAssembly memory on every call. Both read every key and value once; (b) also
// copies them in first. Pure given the package instance and a clock: it runs in the page's side Worker.
import { randomValues } from '../shared/prng.js';
import { maxAbsDiff, timeRuns } from '../shared/timing.js';
import { positions } from './decode-sequence.js';

// A decoder layer's attention: 32 query heads sharing 8 key/value heads (grouped-query attention), head dim
// 128, as in mid-sized open decoders.
export const TIMING_SHAPE = { H: 32, Hkv: 8, E: 128, Ev: 128 };
// Evenly spaced, so the two lines' slopes read directly: each is linear in the length.
export const TIMING_LENGTHS = [256, 512, 1024, 1536, 2048, 2560, 3072, 3584, 4096];
export const TIMING_DTYPES = ['float32', 'float16'];
// Each point is the median of ≥ 5 batches and ≥ 100 ms: enough for a stable median on a busy machine while
// the whole study stays a few seconds.
const RUNS = { minRuns: 5, minMs: 100, minBatchMs: 10 };

// Returns { shape, rows: [{ length, cache: { float32, float16 } (ms), full (ms), diff: { float32, float16 } }] }:
// diff is the largest |Δ| of the cache's output from the full copy's at that length.
export function timeDecodeSteps(lib, { shape = TIMING_SHAPE, lengths = TIMING_LENGTHS, dtypes = TIMING_DTYPES, seed = 7, clock, runs = RUNS, onProgress = () => {} }) {
  const { H, Hkv, E, Ev } = shape;
  const T = Math.max(...lengths);
  const draw = (n, stream) => randomValues(n, { seed, stream, distribution: 'normal', scale: 1 });
  const key = { data: draw(Hkv * T * E, 1), shape: [1, Hkv, T, E] };
  const value = { data: draw(Hkv * T * Ev, 2), shape: [1, Hkv, T, Ev] };
  const query = { data: draw(H * E, 0), shape: [1, H, 1, E] };
  const options = { enableGqa: H !== Hkv };
  const caches = dtypes.map((dtype) => ({ dtype, cache: lib.createKvCache({ kvHeads: Hkv, headDim: E, valueDim: Ev, capacity: T, dtype }) }));
  const rows = [];
  try {
    const sorted = [...lengths].sort((a, b) => a - b);
    for (const [k, n] of sorted.entries()) {
      onProgress(k, sorted.length, `decoding steps at cache length ${n}`);
      // The step's new token is position n − 1; the cache holds the n − 1 before it.
      const newKey = positions(key, n - 1, n);
      const newValue = positions(value, n - 1, n);
      const row = { length: n, cache: {}, diff: {} };
      // (b) first: its output is what the caches are checked against.
      const fullKey = positions(key, 0, n);
      const fullValue = positions(value, 0, n);
      const fullStep = () => lib.scaledDotProductAttention(query, fullKey, fullValue, options);
      const reference = fullStep().output.data;
      row.full = timeRuns(fullStep, { clock, ...runs }).median;
      for (const { dtype, cache } of caches) {
        if (cache.length < n - 1) cache.append(positions(key, cache.length, n - 1), positions(value, cache.length, n - 1));
        // One step, then back to n − 1 positions, so every timed call is the same step.
        const cacheStep = () => {
          cache.append(newKey, newValue);
          const r = cache.attend(query);
          cache.truncate(n - 1);
          return r;
        };
        row.diff[dtype] = maxAbsDiff(cacheStep().output.data, reference);
        row.cache[dtype] = timeRuns(cacheStep, { clock, ...runs }).median;
      }
      rows.push(row);
    }
  } finally {
    for (const { cache } of caches) cache.dispose();
  }
  onProgress(lengths.length, lengths.length, 'done');
  return { shape, dtypes, rows };
}
