// Seeded random numbers for Q, K and V, so the same seed gives the same tensors in every browser
// (Math.random cannot be seeded). The generator is xoshiro128** (Blackman & Vigna): 32-bit state words,
// so it runs on plain JS integer ops through Math.imul and `>>> 0`.
// ref: https://prng.di.unimi.it/xoshiro128starstar.c

const rotl = (x, k) => ((x << k) | (x >>> (32 - k))) >>> 0;

// splitmix32 step: spreads a small seed over all 128 state bits, so seeds 1 and 2 give unrelated streams
// and the all-zero state (which xoshiro can never leave) cannot occur.
function splitmix32(state) {
  let z = (state.s = (state.s + 0x9e3779b9) >>> 0);
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  return (z ^ (z >>> 16)) >>> 0;
}

export class Prng {
  // seed: any integer in [0, 2^32); stream: which independent stream of that seed (Q, K and V use 0, 1, 2,
  // so changing L redraws Q without touching K and V).
  constructor(seed, stream = 0) {
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) {
      throw new RangeError(`seed must be an integer in [0, 4294967295], got ${seed}`);
    }
    const mix = { s: (seed ^ Math.imul(stream + 1, 0x632be5ab)) >>> 0 };
    this.s = Uint32Array.of(splitmix32(mix), splitmix32(mix), splitmix32(mix), splitmix32(mix));
    this.spare = null; // Box-Muller makes normals in pairs; the second one waits here.
  }

  // A generator with the given four state words (not all zero); known-answer tests start from {1, 2, 3, 4}.
  static fromState(words) {
    const g = Object.create(Prng.prototype);
    g.s = Uint32Array.from(words);
    g.spare = null;
    return g;
  }

  // Next 32 random bits as an unsigned integer.
  nextUint32() {
    const s = this.s;
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  }

  // Uniform in [0, 1) with 32 bits of resolution.
  nextFloat() {
    return this.nextUint32() / 4294967296;
  }

  // Standard normal (mean 0, variance 1), Box-Muller on two uniforms.
  nextNormal() {
    if (this.spare !== null) {
      const z = this.spare;
      this.spare = null;
      return z;
    }
    // 1 - u lies in (0, 1], so the log never sees 0.
    const r = Math.sqrt(-2 * Math.log(1 - this.nextFloat()));
    const theta = 2 * Math.PI * this.nextFloat();
    this.spare = r * Math.sin(theta);
    return r * Math.cos(theta);
  }
}

// n float32 values: 'normal' draws N(0, scale²), 'uniform' draws U(-scale, scale).
export function randomValues(n, { seed, stream = 0, distribution = 'normal', scale = 1 }) {
  const rng = new Prng(seed, stream);
  const out = new Float32Array(n);
  if (distribution === 'normal') {
    for (let i = 0; i < n; i++) out[i] = scale * rng.nextNormal();
  } else if (distribution === 'uniform') {
    for (let i = 0; i < n; i++) out[i] = scale * (2 * rng.nextFloat() - 1);
  } else {
    throw new RangeError(`distribution must be 'normal' or 'uniform', got '${distribution}'`);
  }
  return out;
}
