// Seeded problems: every implementation of one shape gets the very same Float32Arrays.
// Dimension legend: B batch, H heads (B·H folded into one leading dim, BH), L query length, S key length,
// E query/key dim, Ev value dim.

// mulberry32: tiny, fast, and the same stream on every machine (Math.random is neither seedable nor portable).
function uniform(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Standard normal values (Box–Muller): scores q·k/√E then have unit spread, like a trained model's, so the
// softmax is neither flat nor one-hot and the agreement check means something.
export function normals(count, seed) {
  const next = uniform(seed);
  const out = new Float32Array(count);
  for (let i = 0; i < count; i += 2) {
    const r = Math.sqrt(-2 * Math.log(1 - next()));
    const t = 2 * Math.PI * next();
    out[i] = r * Math.cos(t);
    if (i + 1 < count) out[i + 1] = r * Math.sin(t);
  }
  return out;
}

// FLOPs of the two matrix products, the convention every GFLOP/s here uses.
export const attentionFlops = ({ BH, L, S, E, Ev }) => 2 * BH * L * S * E + 2 * BH * L * S * Ev;

export function makeProblem(dims, seed = 1) {
  const { BH, L, S, E, Ev } = dims;
  return {
    dims,
    query: { data: normals(BH * L * E, seed), shape: [BH, L, E] },
    key: { data: normals(BH * S * E, seed + 1), shape: [BH, S, E] },
    value: { data: normals(BH * S * Ev, seed + 2), shape: [BH, S, Ev] },
    scale: 1 / Math.sqrt(E),
    flops: attentionFlops(dims),
  };
}

// "8x1024x64" (BH × L × E, S = L, Ev = E) → dims.
export function parseShape(text) {
  const parts = text.split(/[x×]/).map(Number);
  if (parts.length !== 3 || !parts.every((n) => Number.isInteger(n) && n > 0)) {
    throw new RangeError(`shape '${text}' is not BHxLxE (three positive integers, e.g. 8x1024x64)`);
  }
  const [BH, L, E] = parts;
  return { BH, L, S: L, E, Ev: E };
}

export const shapeText = ({ BH, L, E }) => `${BH}×${L}×${E}`;
