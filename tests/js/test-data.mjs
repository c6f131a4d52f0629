// What the JS suites share beside the float64 reference (web/src/shared/attention-reference.js): seeded inputs and
// the comparisons, in Node (tests/js) and Chromium (tests/package/browser-suites.js). No Node import.

// mulberry32: the same inputs on every run.
export function uniform(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
export const randomTensor = (shape, seed) => {
  const next = uniform(seed);
  return { data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => 2 * next() - 1), shape };
};
// The same with standard normal values (Box–Muller over uniform(seed)).
export const normalTensor = (shape, seed) => {
  const next = uniform(seed);
  const data = Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) },
    () => Math.sqrt(-2 * Math.log(1 - next())) * Math.cos(2 * Math.PI * next()));
  return { data, shape };
};

// Whether two typed arrays hold the same bytes (float results equal bit for bit, NaN payloads and -0 included).
export function sameBits(a, b) {
  if (a.byteLength !== b.byteLength) return false;
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

// '' when |got - want| <= atol + rtol·|want| everywhere (by default the golden tolerance, 1e-5 + 1e-4·|want|; the
// gradients' is golden-cases.mjs GRAD_TOLERANCE), NaN only where NaN; else the first element that is not, named
// by `label`.
export function farFrom(got, want, label, { atol = 1e-5, rtol = 1e-4 } = {}) {
  for (let i = 0; i < want.length; i++) {
    const g = got[i], w = want[i];
    if (Number.isNaN(w) ? !Number.isNaN(g) : !(Math.abs(g - w) <= atol + rtol * Math.abs(w))) return `${label}[${i}]: ${g}, want ${w}`;
  }
  return got.length === want.length ? '' : `${label}: ${got.length} values, want ${want.length}`;
}
