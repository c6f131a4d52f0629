// One decoding run through the package's public API: a KvCache filled one position per step, each step's
// query row attended against it, and full causal attention on the whole sequence computed once at the
// start, which every step is checked against. Pure given the package instance (`lib`), so it runs in the
// decoding Worker and in Node's tests alike.
import { decodeInputs, positions } from './decode-sequence.js';
import { stepAgainstFull } from './decode-rows.js';

export class DecodeSession {
  // settings: { H, Hkv, E, Ev, T, seed } (readDecodeSettings checked them).
  constructor(lib, settings) {
    this.settings = settings;
    const { H, Hkv, E, Ev, T } = settings;
    this.inputs = decodeInputs(settings);
    const { query, key, value } = this.inputs;
    // The reference: every query at once, keys after it hidden by the causal mask (L = S, so top-left and
    // bottom-right alignment agree).
    const full = lib.scaledDotProductAttention(query, key, value, { isCausal: true, enableGqa: H !== Hkv, needWeights: true });
    this.full = { weights: full.weights.data, output: full.output.data };
    this.cache = lib.createKvCache({ kvHeads: Hkv, headDim: E, valueDim: Ev, capacity: T });
  }

  get t() {
    return this.cache.length;
  }

  // Appends position t's key and value, then attends query t against the cache: keys 0 … t are all that
  // exist, so no mask is passed (with one query, isCausal would hide nothing either).
  step() {
    const { H, Ev, T } = this.settings;
    const t = this.cache.length;
    if (t >= T) throw new RangeError(`all ${T} positions are decoded: Reset starts again`);
    const { query, key, value } = this.inputs;
    this.cache.append(positions(key, t, t + 1), positions(value, t, t + 1));
    const r = this.cache.attend(positions(query, t, t + 1), { needWeights: true });
    const step = { weights: r.weights.data, output: r.output.data };
    return {
      t,
      length: this.cache.length,
      weightsShape: r.weights.shape,
      outputShape: r.output.shape,
      ...step,
      diff: stepAgainstFull(step, this.full, { H, T, Ev, t }),
    };
  }

  // Back to an empty cache; the sequence and the reference stay.
  reset() {
    this.cache.truncate(0);
  }

  dispose() {
    this.cache.dispose();
  }
}
