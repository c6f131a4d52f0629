// One decoding run through the package's public API: a KvCache filled one position per step, each step's
// query row attended against it, and full causal attention on the whole sequence computed once at the
// start, which every step is checked against. `lib` is the package's API, direct (createXattn) or through a
// worker (createXattnWorker, the panel's): every call is awaited, so both work, and the tests run it on both.
import { decodeInputs, positions } from './decode-sequence.js';
import { stepAgainstFull } from './decode-rows.js';

export class DecodeSession {
  // settings: { H, Hkv, E, Ev, T, seed } (readDecodeSettings checked them).
  static async create(lib, settings) {
    const { H, Hkv, E, Ev, T } = settings;
    const inputs = decodeInputs(settings);
    const { query, key, value } = inputs;
    // The reference: every query at once, keys after it hidden by the causal mask (L = S, so top-left and
    // bottom-right alignment agree).
    const full = await lib.scaledDotProductAttention(query, key, value, { isCausal: true, enableGqa: H !== Hkv, needWeights: true });
    const cache = await lib.createKvCache({ kvHeads: Hkv, headDim: E, valueDim: Ev, capacity: T });
    return new DecodeSession(settings, inputs, { weights: full.weights.data, output: full.output.data }, cache);
  }

  constructor(settings, inputs, full, cache) {
    Object.assign(this, { settings, inputs, full, cache });
    this.t = 0; // positions in the cache (the worker's cache tells its length only through a Promise)
  }

  // Appends position t's key and value, then attends query t against the cache: keys 0 … t are all that
  // exist, so no mask is passed (with one query, isCausal would hide nothing either).
  async step() {
    const { H, Ev, T } = this.settings;
    const t = this.t;
    if (t >= T) throw new RangeError(`all ${T} positions are decoded: Reset starts again`);
    const { query, key, value } = this.inputs;
    await this.cache.append(positions(key, t, t + 1), positions(value, t, t + 1));
    this.t = t + 1;
    const r = await this.cache.attend(positions(query, t, t + 1), { needWeights: true });
    const step = { weights: r.weights.data, output: r.output.data };
    return {
      t,
      length: t + 1,
      weightsShape: r.weights.shape,
      outputShape: r.output.shape,
      ...step,
      diff: stepAgainstFull(step, this.full, { H, T, Ev, t }),
    };
  }

  // Back to an empty cache; the sequence and the reference stay.
  async reset() {
    await this.cache.truncate(0);
    this.t = 0;
  }

  dispose() {
    return this.cache.dispose();
  }
}
