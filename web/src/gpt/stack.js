// The course's early models (course.js), before the blocks of a GPT: a token embedding, optionally a position
// embedding, a mixer over the past (none, the uniform average of every character so far, or causal multi-head
// attention: the package's MultiheadAttention), optionally a feed-forward layer (linear + ReLU), and a linear head
// to logits, or, for the bigram, the embedding's row itself as the logits. Forward and backward over the package's
// linear, linearGrad and MultiheadAttention forward/backward, and the JS embeddings and cross-entropy.
// Dimension letters: B batch, T positions, C channels, V vocabulary, H heads.
import { Prng } from '../shared/prng.js';
import { embed, embedBackward } from '../train/embedding.js';
import { crossEntropy } from '../train/cross-entropy.js';
import { count } from './model.js';

const MHA = { 'self_attn.in_proj_weight': 'in_proj_weight', 'self_attn.in_proj_bias': 'in_proj_bias', 'self_attn.out_proj.weight': 'out_proj.weight', 'self_attn.out_proj.bias': 'out_proj.bias' };

// config { vocab, nEmbd, blockSize, mixer: 'none' | 'average' | 'attention', nHead, feedForward, bigram }.
export function stackShapes(c) {
  const V = c.vocab;
  const C = c.bigram ? V : c.nEmbd;
  const shapes = { 'token_embedding.weight': [V, C] };
  if (c.mixer !== 'none') shapes['position_embedding.weight'] = [c.blockSize, C];
  if (c.mixer === 'attention') {
    Object.assign(shapes, { 'self_attn.in_proj_weight': [3 * C, C], 'self_attn.in_proj_bias': [3 * C], 'self_attn.out_proj.weight': [C, C], 'self_attn.out_proj.bias': [C] });
  }
  if (c.feedForward) Object.assign(shapes, { 'ffwd.weight': [C, C], 'ffwd.bias': [C] });
  if (!c.bigram) Object.assign(shapes, { 'head.weight': [V, C], 'head.bias': [V] });
  return shapes;
}

export class Stack {
  // params: optional, by name; else weights N(0, std) (default nanoGPT's 0.02) and zero biases, seeded.
  constructor(xa, config, { params = null, seed = 0, std = 0.02 } = {}) {
    this.xa = xa;
    this.config = { ...config, nEmbd: config.bigram ? config.vocab : config.nEmbd, nHead: config.nHead ?? 1 };
    this.shapes = stackShapes(this.config);
    this.params = params ?? {};
    Object.entries(this.shapes).forEach(([name, shape], stream) => {
      if (params) {
        if (!(params[name] instanceof Float32Array) || params[name].length !== count(shape)) throw new RangeError(`Stack: ${name} must be a Float32Array of ${count(shape)} values`);
        return;
      }
      const p = new Float32Array(count(shape));
      if (!name.endsWith('bias')) {
        const rng = new Prng(seed >>> 0, 2000 + stream);
        for (let k = 0; k < p.length; k++) p[k] = std * rng.nextNormal();
      }
      this.params[name] = p;
    });
    const { nEmbd: C, nHead: H } = this.config;
    this.mha = this.config.mixer === 'attention' ? xa.createMultiheadAttention({ embedDim: C, numHeads: H, batchFirst: true }) : null;
    this.layers = [];
    this.sync();
  }

  decayed() {
    return new Set(Object.entries(this.shapes).filter(([, s]) => s.length >= 2).map(([n]) => n));
  }

  get parameterCount() {
    return Object.values(this.params).reduce((a, p) => a + p.length, 0);
  }

  sync() {
    if (!this.mha) return;
    const p = {};
    for (const [name, key] of Object.entries(MHA)) p[key] = this.params[name];
    this.mha.setParameters(p);
  }

  t(name) {
    return { data: this.params[name], shape: this.shapes[name] };
  }

  forward(tokens, B, T) {
    const { vocab: V, nEmbd: C, blockSize, mixer, feedForward, bigram } = this.config;
    if (T > blockSize) throw new RangeError(`Stack.forward: T ${T} is past the block size ${blockSize}`);
    const pos = mixer === 'none' ? new Float32Array(T * C) : this.params['position_embedding.weight'];
    const x = { data: embed(tokens, this.params['token_embedding.weight'], pos, { N: B, L: T, E: C }), shape: [B, T, C] };
    let a = x;                                                                                       // (B, T, C)
    if (mixer === 'average') a = { data: causalMean(x.data, B, T, C), shape: x.shape };
    if (mixer === 'attention') a = this.mha.forward(x, x, x, { isCausal: true, needWeights: false }).output;
    let z = null;
    let f = a;
    if (feedForward) {
      z = this.xa.linear(a, this.t('ffwd.weight'), this.t('ffwd.bias')).output;                     // (B, T, C)
      f = { data: z.data.map((v) => (v > 0 ? v : 0)), shape: z.shape };
    }
    const logits = bigram ? { data: x.data, shape: [B, T, V] } : this.xa.linear(f, this.t('head.weight'), this.t('head.bias')).output;
    return { x, a, z, f, logits };
  }

  loss(tokens, targets, B, T) {
    return crossEntropy(this.forward(tokens, B, T).logits.data, targets, { rows: B * T, classes: this.config.vocab }).loss;
  }

  lossAndGradients(tokens, targets, B, T) {
    const { vocab: V, nEmbd: C, blockSize, mixer, feedForward, bigram } = this.config;
    const s = this.forward(tokens, B, T);
    const { loss, dLogits } = crossEntropy(s.logits.data, targets, { rows: B * T, classes: V });
    const grads = {};
    let dx;
    if (bigram) {
      dx = dLogits;
    } else {
      const head = this.xa.linearGrad(s.f, this.t('head.weight'), this.t('head.bias'), { data: dLogits, shape: [B, T, V] });
      grads['head.weight'] = head.gradWeight.data;
      grads['head.bias'] = head.gradBias.data;
      let da = head.gradInput;
      if (feedForward) {
        const dz = da.data.map((g, k) => (s.z.data[k] > 0 ? g : 0));
        const ff = this.xa.linearGrad(s.a, this.t('ffwd.weight'), this.t('ffwd.bias'), { data: dz, shape: [B, T, C] });
        grads['ffwd.weight'] = ff.gradWeight.data;
        grads['ffwd.bias'] = ff.gradBias.data;
        da = ff.gradInput;
      }
      if (mixer === 'none') dx = da.data;
      if (mixer === 'average') dx = causalMeanBackward(da.data, B, T, C);
      if (mixer === 'attention') {
        const g = this.mha.backward(s.x, s.x, s.x, da, { isCausal: true });
        dx = new Float32Array(B * T * C);
        for (let k = 0; k < dx.length; k++) dx[k] = g.gradQuery.data[k] + g.gradKey.data[k] + g.gradValue.data[k];
        for (const [name, key] of Object.entries(MHA)) grads[name] = g.gradParameters[key];
      }
    }
    const emb = embedBackward(tokens, dx, { N: B, L: T, E: C, vocab: V });
    const ordered = { 'token_embedding.weight': emb.dTable };
    if (mixer !== 'none') {
      ordered['position_embedding.weight'] = new Float32Array(blockSize * C);
      ordered['position_embedding.weight'].set(emb.dPos);
    }
    for (const name of Object.keys(this.shapes)) if (grads[name]) ordered[name] = grads[name];
    return { loss, grads: ordered, logits: s.logits };
  }

  // The mixer's weights over one sequence, as GPT.attention gives them: attention's per head, the average's as
  // one head of 1/(t + 1); none without a mixer.
  attention(tokens) {
    const T = tokens.length;
    const { mixer, nHead: H } = this.config;
    if (mixer === 'none') return [];
    if (mixer === 'average') {
      const w = new Float32Array(T * T);
      for (let t = 0; t < T; t++) for (let s = 0; s <= t; s++) w[t * T + s] = 1 / (t + 1);
      return [{ heads: 1, T, weights: w }];
    }
    const { x } = this.forward(tokens, 1, T);
    const r = this.mha.forward(x, x, x, { isCausal: true, needWeights: true, averageAttnWeights: false });
    return [{ heads: H, T, weights: r.weights.data }];                                               // (1, H, T, T)
  }

  dispose() {
    this.mha?.dispose();
  }
}

// a[b, t] = mean of x[b, 0..t].
function causalMean(x, B, T, C) {
  const a = new Float32Array(B * T * C);
  const sum = new Float64Array(C);
  for (let b = 0; b < B; b++) {
    sum.fill(0);
    for (let t = 0; t < T; t++) {
      const o = (b * T + t) * C;
      for (let c = 0; c < C; c++) {
        sum[c] += x[o + c];
        a[o + c] = sum[c] / (t + 1);
      }
    }
  }
  return a;
}

// dx[b, s] = Σ_{t ≥ s} da[b, t] / (t + 1).
function causalMeanBackward(da, B, T, C) {
  const dx = new Float32Array(B * T * C);
  const sum = new Float64Array(C);
  for (let b = 0; b < B; b++) {
    sum.fill(0);
    for (let t = T - 1; t >= 0; t--) {
      const o = (b * T + t) * C;
      for (let c = 0; c < C; c++) {
        sum[c] += da[o + c] / (t + 1);
        dx[o + c] = sum[c];
      }
    }
  }
  return dx;
}
