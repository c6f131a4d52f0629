// Generation with a KV cache: the model's layers composed from their parts (the package's linear, a KvCache per
// layer that keeps every past position's keys and values; LayerNorm and the exact GELU of gelu.js in JS), so each
// new character costs one position's work instead of a forward over the whole context. The result is the full
// forward's (tests/web/gpt-generate.test.js checks the logits position by position).
//
// The model knows blockSize positions. nanoGPT crops the context to the last blockSize characters and runs the
// whole window again for every character; here, when the context reaches blockSize, the caches are emptied and
// refilled (one prefill call per layer) from the last blockSize / 2 characters, at positions 0…blockSize/2 − 1,
// so the next blockSize / 2 characters are again one position each.
// Dimension letters: n new positions, t positions held, C channels, H heads, D = C / H, V vocabulary.
import { Prng } from '../shared/prng.js';
import { geluInPlace } from './gelu.js';
import { mergeHeads, splitHeads } from './heads.js';

export class Decoder {
  // model: a GPT (web/src/gpt/model.js); its parameters are read at each call, so training may go on between.
  constructor(model) {
    const { nHead: H, nEmbd: C, blockSize } = model.config;
    this.model = model;
    this.caches = model.layers.map(() => model.xa.createKvCache({ batch: 1, kvHeads: H, headDim: C / H, capacity: blockSize }));
    this.context = [];  // the ids the caches hold, in order (position = index)
    this.work = new Map();
  }

  get length() {
    return this.context.length;
  }

  reset() {
    for (const c of this.caches) c.truncate(0);
    this.context = [];
  }

  // Appends ids (a prefill when there are several) and returns the logits of the last one (V) and, with
  // attention: true, each layer's attention weights of that last position: [{ layer, heads, weights (H·t) }].
  // The context may not pass blockSize: next() makes room first.
  feed(ids, { attention = false } = {}) {
    const { model } = this;
    const { xa, params } = model;
    const { nHead: H, nEmbd: C, vocab: V, blockSize } = model.config;
    const D = C / H;
    const n = ids.length;
    const start = this.context.length;
    if (n < 1) throw new RangeError('Decoder.feed: no ids');
    if (start + n > blockSize) throw new RangeError(`Decoder.feed: ${start} + ${n} positions pass the block size ${blockSize}`);
    const b = this.buffers(n);
    const tok = params['token_embedding.weight'];
    const pos = params['position_embedding.weight'];
    const { x } = b;                                                                               // (1, n, C)
    for (let i = 0; i < n; i++) {
      for (let c = 0; c < C; c++) x[i * C + c] = tok[ids[i] * C + c] + pos[(start + i) * C + c];
    }
    const shape = [1, n, C];
    const heads = [1, H, n, D];
    const weightsOut = [];
    model.layers.forEach((_, l) => {
      const t = (name, s) => ({ data: params[`layers.${l}.${name}`], shape: s });
      layerNormRows(x, params[`layers.${l}.norm1.weight`], params[`layers.${l}.norm1.bias`], b.n1, C);
      xa.linear({ data: b.n1, shape }, t('self_attn.in_proj_weight', [3 * C, C]), t('self_attn.in_proj_bias', [3 * C]), { out: b.qkv }); // (1, n, 3C)
      // (1, n, 3C) → q, k, v (1, H, n, D); one position is already in that order.
      const part = (which) => {
        if (n === 1) return { data: b.qkv.subarray(which * C, (which + 1) * C), shape: heads };
        return { data: splitHeads(b.qkv, { B: 1, T: n, H, D, stride: 3 * C, offset: which * C }, b.split[which]), shape: heads };
      };
      this.caches[l].append(part(1), part(2));
      const a = this.caches[l].attend(part(0), { isCausal: true, needWeights: attention, out: n === 1 ? b.merged : b.heads }); // (1, H, n, D)
      if (n > 1) mergeHeads(b.heads, { B: 1, T: n, H, D }, b.merged);
      xa.linear({ data: b.merged, shape }, t('self_attn.out_proj.weight', [C, C]), t('self_attn.out_proj.bias', [C]), { out: b.o });
      for (let k = 0; k < x.length; k++) x[k] += b.o[k];
      layerNormRows(x, params[`layers.${l}.norm2.weight`], params[`layers.${l}.norm2.bias`], b.n2, C);
      xa.linear({ data: b.n2, shape }, t('linear1.weight', [4 * C, C]), t('linear1.bias', [4 * C]), { out: b.f }); // (1, n, 4C)
      geluInPlace(b.f);
      xa.linear({ data: b.f, shape: [1, n, 4 * C] }, t('linear2.weight', [C, 4 * C]), t('linear2.bias', [C]), { out: b.o });
      for (let k = 0; k < x.length; k++) x[k] += b.o[k];
      if (attention) {
        const tHeld = start + n;
        const w = new Float32Array(H * tHeld);                                                      // (H, t): the last query's row
        for (let h = 0; h < H; h++) w.set(a.weights.data.subarray((h * n + n - 1) * tHeld, (h * n + n) * tHeld), h * tHeld);
        weightsOut.push({ layer: l, heads: H, weights: w });
      }
    });
    for (const id of ids) this.context.push(id);
    const h = new Float32Array(C);                                                                 // (1, C)
    layerNormRows(x.subarray((n - 1) * C), params['norm.weight'], params['norm.bias'], h, C);
    const logits = xa.linear({ data: h, shape: [1, C] }, { data: params['head.weight'], shape: [V, C] }).output.data; // (V)
    return { logits, attention: attention ? weightsOut : null };
  }

  // Work arrays for n positions, kept between calls (the package writes into them: no fresh arrays per step).
  buffers(n) {
    let b = this.work.get(n);
    if (!b) {
      const C = this.model.config.nEmbd;
      const f32 = (k) => new Float32Array(n * k);
      b = {
        x: f32(C), n1: f32(C), qkv: f32(3 * C), split: [f32(C), f32(C), f32(C)], heads: f32(C), merged: f32(C),
        o: f32(C), n2: f32(C), f: f32(4 * C),
      };
      this.work.set(n, b);
    }
    return b;
  }

  // The next id after the context: when the context is full, first refills from its last blockSize / 2 ids.
  // Returns feed's result for `id`.
  next(id, options) {
    const { blockSize } = this.model.config;
    if (this.context.length >= blockSize) {
      const keep = this.context.slice(this.context.length - Math.floor(blockSize / 2));
      this.reset();
      this.feed(keep);
    }
    return this.feed([id], options);
  }

  // The whole prompt (its last blockSize / 2 ids when it is longer), from an empty context.
  prompt(ids, options) {
    const { blockSize } = this.model.config;
    this.reset();
    const keep = ids.length > blockSize ? ids.slice(ids.length - Math.floor(blockSize / 2)) : ids;
    return this.feed(Array.from(keep), options);
  }

  dispose() {
    for (const c of this.caches) c.dispose();
  }
}

// For the course's models without a cache (stack.js): nanoGPT's way, the whole context (its last blockSize ids)
// through the full forward for every new character. The same interface as Decoder.
export class WindowDecoder {
  constructor(model) {
    this.model = model;
    this.context = [];
  }

  get length() {
    return this.context.length;
  }

  reset() {
    this.context = [];
  }

  feed(ids, { attention = false } = {}) {
    const { blockSize, vocab: V } = this.model.config;
    for (const id of ids) this.context.push(id);
    if (this.context.length > blockSize) this.context = this.context.slice(this.context.length - blockSize);
    const T = this.context.length;
    const tokens = Int32Array.from(this.context);
    const logits = this.model.forward(tokens, 1, T).logits.data.slice((T - 1) * V, T * V);
    if (!attention) return { logits, attention: null };
    const rows = this.model.attention(tokens).map((l, layer) => {
      const w = new Float32Array(l.heads * T);                                                     // (H, t): the last row
      for (let h = 0; h < l.heads; h++) w.set(l.weights.subarray((h * T + T - 1) * T, (h * T + T) * T), h * T);
      return { layer, heads: l.heads, weights: w };
    });
    return { logits, attention: rows };
  }

  next(id, options) {
    return this.feed([id], options);
  }

  prompt(ids, options) {
    this.reset();
    return this.feed(Array.from(ids), options);
  }

  dispose() {}
}

// The decoder a model has: the KV cache for the GPT's blocks, the window otherwise.
export function makeDecoder(model) {
  return model.layers.length > 0 ? new Decoder(model) : new WindowDecoder(model);
}

// LayerNorm over rows of C (eps 1e-5, the layers' and model.py's), in JS: a row of 128 costs less here than a call
// into the package does. Mean and biased variance summed in float64, as the package sums them.
function layerNormRows(x, weight, bias, out, C) {
  for (let r = 0; r < x.length / C; r++) {
    const o = r * C;
    let mean = 0;
    for (let c = 0; c < C; c++) mean += x[o + c];
    mean /= C;
    let variance = 0;
    for (let c = 0; c < C; c++) variance += (x[o + c] - mean) ** 2;
    const scale = 1 / Math.sqrt(variance / C + 1e-5);
    for (let c = 0; c < C; c++) out[o + c] = (x[o + c] - mean) * scale * weight[c] + bias[c];
  }
  return out;
}

// A sampler: temperature (> 0; 0 picks the most likely), top-k (0 or ≥ the vocabulary: all), seeded.
export class Sampler {
  constructor({ temperature = 1, topK = 0, seed = 0 } = {}) {
    if (!(Number.isFinite(temperature) && temperature >= 0)) throw new RangeError(`Sampler: temperature must be a finite number ≥ 0, got ${temperature}`);
    if (!(Number.isInteger(topK) && topK >= 0)) throw new RangeError(`Sampler: topK must be an integer ≥ 0, got ${topK}`);
    if (!(Number.isInteger(seed) && seed >= 0 && seed <= 0xffffffff)) throw new RangeError(`Sampler: seed must be an integer in [0, 4294967295], got ${seed}`);
    Object.assign(this, { temperature, topK });
    this.rng = new Prng(seed, 11);
  }

  // logits (V) → an id.
  pick(logits) {
    const V = logits.length;
    let best = 0;
    for (let c = 1; c < V; c++) if (logits[c] > logits[best]) best = c;
    if (this.temperature === 0) return best;
    // Top-k keeps the logits at or above the k-th largest (ties kept, as torch.topk's threshold in nanoGPT).
    let floor = -Infinity;
    if (this.topK > 0 && this.topK < V) floor = Float64Array.from(logits).sort()[V - this.topK];
    const p = new Float64Array(V);
    let sum = 0;
    for (let c = 0; c < V; c++) {
      p[c] = logits[c] >= floor ? Math.exp((logits[c] - logits[best]) / this.temperature) : 0;
      sum += p[c];
    }
    let u = this.rng.nextFloat() * sum;
    for (let c = 0; c < V; c++) {
      u -= p[c];
      if (u < 0 && p[c] > 0) return c;
    }
    return best;
  }
}

// Generates maxNew characters after a prompt (ids), calling onToken(index, id, attention) for each; returns the
// ids. The context starts over as Decoder.next says when it fills.
export function generate(decoder, promptIds, { maxNew, sampler, attention = false, onToken = null }) {
  let r = decoder.prompt(promptIds, { attention });
  const out = [];
  for (let i = 0; i < maxNew; i++) {
    const id = sampler.pick(r.logits);
    out.push(id);
    onToken?.(i, id, r.attention);
    if (i + 1 < maxNew) r = decoder.next(id, { attention });
  }
  return out;
}
