// The sentences under the step-time chart, from the measured rows (pure). Every claim is conditional on the
// figures: if the cache is not faster on this machine, or float16 not faster than float32, it says so.
import { formatNumber as f } from '../shared/shapes.js';
import { formatBytes } from '../shared/tensors.js';
import { stepCopyBytes } from './decode-rows.js';

const ms = (x) => `${f(x)} ms`;

// timing: timeDecodeSteps's result. Returns { html, cacheFaster, ratio } for the longest length measured.
export function timingSummary({ shape, dtypes, rows }) {
  const last = rows[rows.length - 1];
  const first = rows[0];
  const { H, Hkv, E, Ev } = shape;
  const n = last.length;
  const cache = last.cache.float32 ?? last.cache[dtypes[0]];
  const ratio = last.full / cache;
  const cacheFaster = ratio > 1;
  const bytes = stepCopyBytes(shape, n);
  const kv = 4 * n * Hkv * (E + Ev); // all n keys and values, float32
  const verdict = cacheFaster
    ? `the cache is <strong>${f(ratio)}× faster</strong>`
    : `the cache is <strong>not faster here</strong> (${f(1 / ratio)}× the full copy's time)`;
  const lines = [
    `At n = ${n} positions (H = ${H}, Hkv = ${Hkv}, E = ${E}, Ev = ${Ev}) one step took <strong>${ms(cache)}</strong> with the cache ` +
      `and <strong>${ms(last.full)}</strong> recomputing from a full copy: ${verdict}. ` +
      `At n = ${first.length}: ${ms(first.cache.float32 ?? first.cache[dtypes[0]])} against ${ms(first.full)}.`,
    `Both then attend over all n keys and values; the full copy first writes them into WebAssembly memory: ${formatBytes(kv)} ` +
      `(Hkv · n · (E + Ev) · 4 bytes) at n = ${n}, against ${formatBytes(bytes.cache)} for the cache's step (the new token's ` +
      `query, key and value). The gap grows with n because that copy does.`,
  ];
  if (last.cache.float16 !== undefined) {
    const half = last.cache.float16;
    const faster = half < last.cache.float32;
    lines.push(
      `Float16 storage halves the bytes each step reads: ${ms(half)} at n = ${n}, ` +
        (faster
          ? `${f(last.cache.float32 / half)}× faster than float32.`
          : `slower than float32 here (${f(half / last.cache.float32)}×): widening each key and value to float32 in the kernel costs more than the halved reads save.`) +
        ` Its output differs from the full copy's by at most ${f(last.diff.float16)} (keys and values rounded to 11 significant bits); float32's by ${f(last.diff.float32)}.`,
    );
  } else {
    lines.push(`The cache's output differs from the full copy's by at most ${f(last.diff.float32)}.`);
  }
  return { html: lines.map((l) => `<p>${l}</p>`).join(''), cacheFaster, ratio };
}
