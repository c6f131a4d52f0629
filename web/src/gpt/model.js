// The GPT of bench/gpt/model.py on the package: token and position embeddings (JS loops, web/src/train/embedding.js),
// nLayer × the package's TransformerEncoderLayer (pre-norm, exact GELU, feed-forward 4·C, batch first, causal),
// a final LayerNorm (xa.layerNorm) and a linear head without bias (xa.linear), trained with softmax cross-entropy.
// The backward runs the same way back: the head's and the LayerNorm's gradients from the package, each layer's
// backward, and the embeddings' scatter-add.
//
// Every parameter lives here as a Float32Array under model.py's state_dict names (token_embedding.weight,
// position_embedding.weight, layers.{i}.self_attn.in_proj_weight, …, norm.weight, norm.bias, head.weight) in
// PyTorch's order; each layer's are handed to its package layer by sync() after every change. Training and the loss
// estimates write every activation and gradient into arrays the model keeps (a Workspace, through the package's
// `out` options), so a step makes no new large array: lossAndGradients' gradients, like PyTorch's .grad, hold
// until the next call.
// Dimension letters: B batch, T positions (≤ blockSize), C channels (nEmbd), V vocabulary, H heads, D = C / H.
import { Prng } from '../shared/prng.js';
import { embed, embedBackward } from '../train/embedding.js';
import { crossEntropy } from '../train/cross-entropy.js';
import { Workspace } from '../train/workspace.js';
import { splitHeads } from './heads.js';

// A TransformerEncoderLayer's parameters, in PyTorch's order.
export const LAYER_NAMES = [
  'self_attn.in_proj_weight', 'self_attn.in_proj_bias', 'self_attn.out_proj.weight', 'self_attn.out_proj.bias',
  'linear1.weight', 'linear1.bias', 'linear2.weight', 'linear2.bias', 'norm1.weight', 'norm1.bias', 'norm2.weight', 'norm2.bias',
];

// Every parameter's shape, in the order of model.py's GPT.state_dict().
export function parameterShapes({ vocab, nLayer, nEmbd: C, blockSize }) {
  const shapes = { 'token_embedding.weight': [vocab, C], 'position_embedding.weight': [blockSize, C] };
  const layer = {
    'self_attn.in_proj_weight': [3 * C, C], 'self_attn.in_proj_bias': [3 * C],
    'self_attn.out_proj.weight': [C, C], 'self_attn.out_proj.bias': [C],
    'linear1.weight': [4 * C, C], 'linear1.bias': [4 * C], 'linear2.weight': [C, 4 * C], 'linear2.bias': [C],
    'norm1.weight': [C], 'norm1.bias': [C], 'norm2.weight': [C], 'norm2.bias': [C],
  };
  for (let i = 0; i < nLayer; i++) for (const n of LAYER_NAMES) shapes[`layers.${i}.${n}`] = layer[n];
  shapes['norm.weight'] = [C];
  shapes['norm.bias'] = [C];
  shapes['head.weight'] = [vocab, C];
  return shapes;
}

export const count = (shape) => shape.reduce((a, b) => a * b, 1);

// nanoGPT's initialisation, as model.py's: biases 0, LayerNorm weights 1, the residual projections (out_proj,
// linear2) N(0, 0.02 / √(2 · nLayer)), every other weight and both embeddings N(0, 0.02). Seeded; one Prng stream
// per parameter, in state_dict order (the values are ours, not torch's).
export function initParameters(config, seed) {
  const shapes = parameterShapes(config);
  const residual = 0.02 / Math.sqrt(2 * config.nLayer);
  const params = {};
  Object.entries(shapes).forEach(([name, shape], stream) => {
    const p = new Float32Array(count(shape));
    if (name.endsWith('bias')) {
      // zeros
    } else if (name.startsWith('norm') || name.includes('.norm')) {
      p.fill(1);
    } else {
      const std = name.endsWith('out_proj.weight') || name.endsWith('linear2.weight') ? residual : 0.02;
      const rng = new Prng(seed >>> 0, 1000 + stream);
      for (let k = 0; k < p.length; k++) p[k] = std * rng.nextNormal();
    }
    params[name] = p;
  });
  return params;
}

// The parameters AdamW decays: those of 2 or more dims (model.py's make_optimizer).
export function decayedNames(config) {
  return new Set(Object.entries(parameterShapes(config)).filter(([, s]) => s.length >= 2).map(([n]) => n));
}

export function checkGptConfig(config) {
  const FN = 'GPT';
  for (const k of ['vocab', 'nLayer', 'nHead', 'nEmbd', 'blockSize']) {
    if (!Number.isInteger(config?.[k]) || config[k] < 1) throw new RangeError(`${FN}: config.${k} must be an integer ≥ 1, got ${config?.[k]}`);
  }
  if (config.nEmbd % config.nHead !== 0) throw new RangeError(`${FN}: nEmbd ${config.nEmbd} is not a multiple of nHead ${config.nHead}`);
  return { vocab: config.vocab, nLayer: config.nLayer, nHead: config.nHead, nEmbd: config.nEmbd, blockSize: config.blockSize };
}

export class GPT {
  // xa: the package (createXattn()); config { vocab, nLayer, nHead, nEmbd, blockSize }; params: optional, by
  // state_dict name (else nanoGPT's seeded initialisation from `seed`).
  constructor(xa, config, { params = null, seed = 0 } = {}) {
    this.xa = xa;
    this.config = checkGptConfig(config);
    const shapes = parameterShapes(this.config);
    this.params = params ?? initParameters(this.config, seed);
    for (const [name, shape] of Object.entries(shapes)) {
      const p = this.params[name];
      if (!(p instanceof Float32Array) || p.length !== count(shape)) {
        throw new RangeError(`GPT: ${name} must be a Float32Array of ${count(shape)} values for shape (${shape.join(', ')}), got ${p ? p.length : 'none'}`);
      }
    }
    const { nLayer, nHead, nEmbd: C } = this.config;
    this.layers = Array.from({ length: nLayer }, () => xa.createTransformerEncoderLayer({
      dModel: C, nhead: nHead, dimFeedforward: 4 * C, dropout: 0, activation: 'gelu', batchFirst: true, normFirst: true,
    }));
    this.workspace = new Workspace();
    this.sync();
  }

  // The names AdamW decays.
  decayed() {
    return decayedNames(this.config);
  }

  get parameterCount() {
    return Object.values(this.params).reduce((a, p) => a + p.length, 0);
  }

  // Hands each layer's parameters to its package layer (after every change to this.params).
  sync() {
    this.layers.forEach((layer, i) => {
      const p = {};
      for (const n of LAYER_NAMES) p[n] = this.params[`layers.${i}.${n}`];
      layer.setParameters(p);
    });
  }

  // tokens (B·T ids) → the residual stream before each layer and after the last (xs[0..nLayer], each (B, T, C)),
  // the final LayerNorm's output h (B, T, C) and the logits (B, T, V). With save, each layer keeps its
  // activations for its backward (saved[i]), which then need not run the layer's forward again. With
  // kept: true, every result is in the model's workspace (valid until its next use), else in fresh arrays.
  forward(tokens, B, T, { save = false, kept = false } = {}) {
    const { vocab: V, nEmbd: C, blockSize } = this.config;
    if (T > blockSize) throw new RangeError(`GPT.forward: T ${T} is past the block size ${blockSize}`);
    if (tokens.length !== B * T) throw new RangeError(`GPT.forward: ${tokens.length} tokens for B ${B} × T ${T}`);
    const into = (name, n) => (kept ? this.workspace.array(name, n) : undefined);
    const shape = [B, T, C];
    const n = B * T * C;
    let x = { data: embed(tokens, this.params['token_embedding.weight'], this.params['position_embedding.weight'], { N: B, L: T, E: C }, into('x0', n)), shape };
    const xs = [x];
    const saved = [];
    this.layers.forEach((layer, i) => {
      const r = layer.forward(x, { isCausal: true, saveForBackward: save, out: into(`x${i + 1}`, n) });
      x = r.output;                                                                              // (B, T, C)
      xs.push(x);
      if (save) saved.push(r.saved);
    });
    const h = this.xa.layerNorm(x, [C], { weight: this.norm('weight'), bias: this.norm('bias'), out: into('h', n) }).output;  // (B, T, C)
    const logits = this.xa.linear(h, { data: this.params['head.weight'], shape: [V, C] }, null, { out: into('logits', B * T * V) }).output;  // (B, T, V)
    return { xs, h, logits, saved };
  }

  norm(which) {
    return { data: this.params[`norm.${which}`], shape: [this.config.nEmbd] };
  }

  // The mean cross-entropy of the next-token predictions (targets B·T ids).
  loss(tokens, targets, B, T) {
    const { logits } = this.forward(tokens, B, T, { kept: true });
    const rows = B * T, classes = this.config.vocab;
    return crossEntropy(logits.data, targets, { rows, classes }, this.workspace.array('dLogits', rows * classes)).loss;
  }

  // The loss, every parameter's gradient by state_dict name, and the logits.
  lossAndGradients(tokens, targets, B, T) {
    const f = this.forward(tokens, B, T, { save: true, kept: true });
    try {
      return this.backward(f, tokens, targets, B, T);
    } finally {
      for (const kept of f.saved) kept.dispose();  // spent by their backwards; freed here should one have thrown
    }
  }

  // lossAndGradients' second half: from the forward f (with each layer's saved activations) back. Every gradient
  // lands in the workspace: the parameters' under 'grad.' + their name, the one flowing back down the residual
  // stream in 'dx' (each backward copies its gradOutput in before it writes its gradSrc, so one array serves).
  backward(f, tokens, targets, B, T) {
    const { vocab: V, nEmbd: C } = this.config;
    const ws = this.workspace;
    const grad = (name) => ws.array(`grad.${name}`, this.params[name].length);
    const n = B * T * C;
    const { loss, dLogits } = crossEntropy(f.logits.data, targets, { rows: B * T, classes: V }, ws.array('dLogits', B * T * V));
    const head = this.xa.linearGrad(f.h, { data: this.params['head.weight'], shape: [V, C] }, null, { data: dLogits, shape: [B, T, V] },
      { out: { gradInput: ws.array('dh', n), gradWeight: grad('head.weight') } });
    const last = f.xs[this.layers.length];
    const norm = this.xa.layerNormGrad(last, [C], head.gradInput, {
      weight: this.norm('weight'), bias: this.norm('bias'),
      out: { gradInput: ws.array('dx', n), gradWeight: grad('norm.weight'), gradBias: grad('norm.bias') },
    });
    let dx = norm.gradInput;                                                                    // (B, T, C)
    for (let i = this.layers.length - 1; i >= 0; i--) {
      const gradParameters = {};
      for (const name of LAYER_NAMES) gradParameters[name] = grad(`layers.${i}.${name}`);
      const out = { output: ws.array('layerOutput', n), gradSrc: dx.data, gradParameters };
      dx = this.layers[i].backward(f.xs[i], dx, { isCausal: true, saved: f.saved[i], out }).gradSrc;
    }
    const emb = embedBackward(tokens, dx.data, { N: B, L: T, E: C, vocab: V },
      { dTable: grad('token_embedding.weight'), dPos: grad('position_embedding.weight') });  // dPos: blockSize rows, those past T 0
    // In state_dict order.
    const ordered = {};
    for (const name of Object.keys(this.params)) ordered[name] = grad(name);
    return { loss, grads: ordered, logits: f.logits };
  }

  // Each layer's causal attention weights for one sequence of T tokens: [{ heads, T, weights (H·T·T) }], composed
  // from the layer's own parameters (norm1, in_proj, scaled dot-product attention with the weights) on the
  // residual stream entering it, which is what the layer attends with.
  attention(tokens) {
    const T = tokens.length;
    const { xs } = this.forward(tokens, 1, T);
    return this.layers.map((_, i) => {
      const { q, k, v } = this.queryKeyValue(i, xs[i], T);
      const r = this.xa.scaledDotProductAttention(q, k, v, { isCausal: true, needWeights: true });
      return { heads: this.config.nHead, T, weights: r.weights.data };                        // (1, H, T, T)
    });
  }

  // Layer i's queries, keys and values for x (1, T, C): (1, H, T, D) each.
  queryKeyValue(i, x, T) {
    const { nHead: H, nEmbd: C } = this.config;
    const D = C / H;
    const p = (n) => this.params[`layers.${i}.${n}`];
    const n1 = this.xa.layerNorm(x, [C], { weight: { data: p('norm1.weight'), shape: [C] }, bias: { data: p('norm1.bias'), shape: [C] } }).output;
    const qkv = this.xa.linear(n1, { data: p('self_attn.in_proj_weight'), shape: [3 * C, C] }, { data: p('self_attn.in_proj_bias'), shape: [3 * C] }).output.data; // (1, T, 3C)
    const split = (which) => ({ data: splitHeads(qkv, { B: 1, T, H, D, stride: 3 * C, offset: which * C }), shape: [1, H, T, D] });  // (1, H, T, D)
    return { q: split(0), k: split(1), v: split(2) };
  }

  dispose() {
    for (const layer of this.layers) layer.dispose();
  }
}
