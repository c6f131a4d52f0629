// IEEE half precision (binary16: a sign bit, 5 exponent bits biased by 15, 10 mantissa bits), written from the
// format's definition for the float16 I/O checks: halves widened to float32 exactly, float32 results rounded to
// the nearest half with ties to even, as a float16 call rounds each of its results once. Shared by tests/js and
// the Chromium suites (tests/package/browser-suites.js): no Node import.
import { uniform } from './test-data.mjs';

const scratch = new Float32Array(1);
const scratchBits = new Uint32Array(scratch.buffer);

// The float32 bit pattern of half `h`, exactly: subnormal halves become normal floats, a NaN keeps its sign and
// payload (the mantissa's bits move up by 13), ±inf stay ±inf.
export function float32BitsOfHalf(h) {
  const sign = (h & 0x8000) << 16;
  const exponent = (h >>> 10) & 0x1f, mantissa = h & 0x3ff;
  if (exponent === 31) return (sign | 0x7f800000 | (mantissa << 13)) >>> 0;
  scratch[0] = exponent === 0 ? mantissa * 2 ** -24 : (1024 + mantissa) * 2 ** (exponent - 25);  // exact
  return (sign | scratchBits[0]) >>> 0;
}

// The half nearest the float32 of bit pattern `bits`, ties to even. NaN becomes the quiet NaN of its sign (0x7e00
// or 0xfe00); whatever rounds past the largest half, 65504 (from 65520 on), becomes ±inf; below 2^-14, the
// nearest multiple of 2^-24 (a subnormal half, or ±0).
export function halfOfFloat32Bits(bits) {
  const sign = (bits >>> 16) & 0x8000;
  scratchBits[0] = bits & 0x7fffffff;
  const x = scratch[0];
  if (Number.isNaN(x)) return sign | 0x7e00;
  // Halves in [2^e, 2^(e+1)) are 2^(e−10) apart; below 2^-14, 2^-24 apart (e = −14).
  let e = -14;
  while (e < 15 && x >= 2 ** (e + 1)) e++;
  const quantum = 2 ** (e - 10);
  const q = x / quantum;  // exact: a float32 over a power of two
  let n = Math.floor(q);
  if (q - n > 0.5 || (q - n === 0.5 && n % 2 === 1)) n++;
  const value = n * quantum;
  if (value > 65504) return sign | 0x7c00;
  if (value < 2 ** -14) return sign | n;  // a subnormal: n · 2^-24
  let exponent = e;
  if (value >= 2 ** (e + 1)) exponent++;  // rounded up to the next power of two
  return sign | ((exponent + 15) << 10) | (value / 2 ** (exponent - 10) - 1024);
}

// A tensor of halves (Uint16Array or Float16Array) as the float32 tensor it holds, exactly.
export function widened(t) {
  const bits = halfBits(t.data);
  const data = new Float32Array(bits.length);
  const out = new Uint32Array(data.buffer);
  for (let i = 0; i < bits.length; i++) out[i] = float32BitsOfHalf(bits[i]);
  return { data, shape: [...t.shape] };
}

// The bits of a Uint16Array or a Float16Array, as a Uint16Array over the same memory.
export function halfBits(a) {
  return new Uint16Array(a.buffer, a.byteOffset, a.length);
}

// Float32 values as the halves they round to.
export function roundedToHalves(data) {
  const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
  return Uint16Array.from(bits, halfOfFloat32Bits);
}

// '' when the halves `got` are `want` (a float32 result) rounded once, bit for bit (NaN the quiet NaN of its
// sign); else the first element that is not, named by `label`.
export function roundingMismatch(got, want, label) {
  const g = halfBits(got), w = roundedToHalves(want);
  if (g.length !== w.length) return `${label}: ${g.length} halves, want ${w.length}`;
  for (let i = 0; i < w.length; i++) {
    if (g[i] !== w[i]) return `${label}[${i}]: 0x${g[i].toString(16)}, want 0x${w[i].toString(16)} (float32 ${want[i]})`;
  }
  return '';
}

// How many halves of each kind `a` holds: subnormal (not zero), ±inf, NaN. Checks use it to show that a case
// reaches the rounding's edges.
export function halfKinds(a) {
  const kinds = { subnormal: 0, inf: 0, nan: 0 };
  for (const h of halfBits(a)) {
    const exponent = (h >>> 10) & 0x1f, mantissa = h & 0x3ff;
    if (exponent === 0 && mantissa !== 0) kinds.subnormal++;
    else if (exponent === 31) kinds[mantissa ? 'nan' : 'inf']++;
  }
  return kinds;
}

// Seeded halves: standard normal values times `scale`, rounded to halves, one in `subnormalEvery` (0: none)
// replaced by a subnormal half of either sign.
export function randomHalves(n, seed, { scale = 1, subnormalEvery = 0 } = {}) {
  const next = uniform(seed);
  const values = new Float32Array(n);
  for (let i = 0; i < n; i++) values[i] = scale * Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next());
  const out = roundedToHalves(values);
  if (subnormalEvery > 0) {
    for (let i = 0; i < n; i += subnormalEvery) out[i] = (next() < 0.5 ? 0x8000 : 0) | (1 + Math.floor(next() * 0x3ff));
  }
  return out;
}
