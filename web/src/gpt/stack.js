// The course's early models (course.js), before the blocks of a GPT: a token embedding, optionally a position
// embedding, a mixer over the past (none, the uniform average of every character so far, or the course's causal
// attention heads), optionally a feed-forward layer (linear + ReLU), and a linear head to logits, or, for the
// bigram, the embedding's row itself as the logits. The heads are the course's Head and MultiHeadAttention: key,
// query and value projections without bias, the package's scaled dot-product attention in each head, the heads'
// outputs concatenated, and no output projection (the course adds one with the residual blocks). Forward and
// backward over the package's linear, linearGrad, scaledDotProductAttention and its gradient, and the JS
// embeddings and cross-entropy.
// Dimension letters: B batch, T positions, C channels, V vocabulary, H heads, D = C / H.
import { Prng } from '../shared/prng.js';
import { embed, embedBackward } from '../train/embedding.js';
import { crossEntropy } from '../train/cross-entropy.js';
import { count } from './model.js';
import { mergeHeads, splitHeads } from './heads.js';

// The heads' projections (every head's rows of each, head h's at rows h·D .. (h + 1)·D: the course's heads' own
// (D, C) weights, stacked), by the name of what they project and of its gradient in the attention's backward.
const PROJECTIONS = [
  { which: 'query', name: 'query.weight', grad: 'gradQuery' },
  { which: 'key', name: 'key.weight', grad: 'gradKey' },
  { which: 'value', name: 'value.weight', grad: 'gradValue' },
];

// config { vocab, nEmbd, blockSize, mixer: 'none' | 'average' | 'attention', nHead, feedForward, bigram }.
export function stackShapes(c) {
  const V = c.vocab;
  const C = c.bigram ? V : c.nEmbd;
  const shapes = { 'token_embedding.weight': [V, C] };
  if (c.mixer !== 'none') shapes['position_embedding.weight'] = [c.blockSize, C];
  if (c.mixer === 'attention') for (const { name } of PROJECTIONS) shapes[name] = [C, C];
  if (c.feedForward) Object.assign(shapes, { 'ffwd.weight': [C, C], 'ffwd.bias': [C] });
  if (!c.bigram) Object.assign(shapes, { 'head.weight': [V, C], 'head.bias': [V] });
  return shapes;
}

// PyTorch's default initialisation, as the course's models get it: nn.Embedding N(0, 1); nn.Linear's weight and
// bias U(−1/√in, 1/√in), `in` its weight's input dim. Seeded, one Prng stream per parameter (the values are ours).
function pytorchDefault(name, shape, inDim, rng) {
  const p = new Float32Array(count(shape));
  if (name.endsWith('embedding.weight')) {
    for (let k = 0; k < p.length; k++) p[k] = rng.nextNormal();
  } else {
    const bound = 1 / Math.sqrt(inDim);
    for (let k = 0; k < p.length; k++) p[k] = bound * (2 * rng.nextFloat() - 1);
  }
  return p;
}

export class Stack {
  // params: optional, by name; else PyTorch's default initialisation (pytorchDefault), or with `std` every weight
  // N(0, std) and zero biases (for tests that want a scale of their own). Seeded.
  constructor(xa, config, { params = null, seed = 0, std } = {}) {
    this.xa = xa;
    this.config = { ...config, nEmbd: config.bigram ? config.vocab : config.nEmbd, nHead: config.nHead ?? 1 };
    this.shapes = stackShapes(this.config);
    this.params = params ?? {};
    Object.entries(this.shapes).forEach(([name, shape], stream) => {
      if (params) {
        if (!(params[name] instanceof Float32Array) || params[name].length !== count(shape)) throw new RangeError(`Stack: ${name} must be a Float32Array of ${count(shape)} values`);
        return;
      }
      const rng = new Prng(seed >>> 0, 2000 + stream);
      if (std === undefined) {
        // A bias's input dim is its layer's: the channels for the feed-forward and the head.
        this.params[name] = pytorchDefault(name, shape, shape.length === 2 ? shape[1] : this.config.nEmbd, rng);
        return;
      }
      const p = new Float32Array(count(shape));
      if (!name.endsWith('bias')) for (let k = 0; k < p.length; k++) p[k] = std * rng.nextNormal();
      this.params[name] = p;
    });
    if (this.config.nEmbd % this.config.nHead !== 0) throw new RangeError(`Stack: nEmbd ${this.config.nEmbd} is not a multiple of nHead ${this.config.nHead}`);
    this.layers = [];
  }

  decayed() {
    return new Set(Object.entries(this.shapes).filter(([, s]) => s.length >= 2).map(([n]) => n));
  }

  get parameterCount() {
    return Object.values(this.params).reduce((a, p) => a + p.length, 0);
  }

  // The parameters live here only: nothing to hand to the package after a change.
  sync() {}

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
    let heads = null;
    if (mixer === 'attention') {
      heads = this.heads(x, B, T);
      a = { data: mergeHeads(heads.output.data, this.headDims(B, T)), shape: x.shape };
    }
    let z = null;
    let f = a;
    if (feedForward) {
      z = this.xa.linear(a, this.t('ffwd.weight'), this.t('ffwd.bias')).output;                     // (B, T, C)
      f = { data: z.data.map((v) => (v > 0 ? v : 0)), shape: z.shape };
    }
    const logits = bigram ? { data: x.data, shape: [B, T, V] } : this.xa.linear(f, this.t('head.weight'), this.t('head.bias')).output;
    return { x, heads, a, z, f, logits };
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
        const { query: q, key: k, value: v } = s.heads;
        const dims = this.headDims(B, T);
        const dOut = { data: splitHeads(da.data, dims), shape: q.shape };                      // (B, H, T, D)
        const g = this.xa.scaledDotProductAttentionGrad(q, k, v, dOut, { isCausal: true });
        dx = new Float32Array(B * T * C);
        for (const { name, grad } of PROJECTIONS) {
          const dz = { data: mergeHeads(g[grad].data, dims), shape: [B, T, C] };              // (B, T, C)
          const lg = this.xa.linearGrad(s.x, this.t(name), null, dz);
          grads[name] = lg.gradWeight.data;
          for (let j = 0; j < dx.length; j++) dx[j] += lg.gradInput.data[j];
        }
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
    const { query, key, value } = this.heads(x, 1, T);
    const r = this.xa.scaledDotProductAttention(query, key, value, { isCausal: true, needWeights: true });
    return [{ heads: H, T, weights: r.weights.data }];                                               // (1, H, T, T)
  }

  // The heads over x (B, T, C): each projection (B, T, C) split into heads (B, H, T, D), and the causal attention's
  // output (B, H, T, D).
  heads(x, B, T) {
    const dims = this.headDims(B, T);
    const shape = [B, dims.H, T, dims.D];
    const r = {};
    for (const { which, name } of PROJECTIONS) r[which] = { data: splitHeads(this.xa.linear(x, this.t(name)).output.data, dims), shape };
    r.output = this.xa.scaledDotProductAttention(r.query, r.key, r.value, { isCausal: true }).output;
    return r;
  }

  // The dims splitHeads and mergeHeads take for a batch of B sequences of T positions.
  headDims(B, T) {
    const { nEmbd: C, nHead: H } = this.config;
    return { B, T, H, D: C / H };
  }

  dispose() {}
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
