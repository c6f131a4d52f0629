// The tiny model the training panel trains: token embedding + learned positional embedding → one
// MultiheadAttention layer (the package's, batch first) with a residual around it → a linear head to
// logits, trained with softmax cross-entropy. The attention's forward and gradients are the package's;
// everything around it is the small JS of embedding.js, linear.js and cross-entropy.js. The parameters
// live here, under PyTorch state-dict names, and are handed to the package before every forward.
import { Prng } from '../prng.js';
import { embed, embedBackward } from './embedding.js';
import { linear, linearBackward } from './linear.js';
import { accuracy, argmaxRows, crossEntropy } from './cross-entropy.js';

// The model's state-dict names of the attention's parameters, and the package's (PyTorch's MultiheadAttention's).
export const MHA_NAMES = {
  'attn.in_proj_weight': 'in_proj_weight',
  'attn.in_proj_bias': 'in_proj_bias',
  'attn.out_proj.weight': 'out_proj.weight',
  'attn.out_proj.bias': 'out_proj.bias',
};

// Each parameter's shape for a configuration { vocab, classes, L, E }.
export function parameterShapes({ vocab, classes, L, E }) {
  return {
    'embedding.weight': [vocab, E],
    pos_embedding: [L, E],
    'attn.in_proj_weight': [3 * E, E],
    'attn.in_proj_bias': [3 * E],
    'attn.out_proj.weight': [E, E],
    'attn.out_proj.bias': [E],
    'head.weight': [classes, E],
    'head.bias': [classes],
  };
}

const count = (shape) => shape.reduce((a, b) => a * b, 1);

// Seeded initialisation with PyTorch's default distributions: nn.Embedding N(0, 1); the positional
// embedding N(0, 1) too, so position is as loud as the token at the start; MultiheadAttention's
// in_proj_weight Xavier-uniform and zero biases, out_proj.weight U(±1/√E); nn.Linear's U(±1/√E) for the
// head. One stream of the seed per parameter, so changing one shape does not redraw the others.
export function initParameters(config, seed) {
  const shapes = parameterShapes(config);
  const { E } = config;
  const uniform = (bound) => (rng) => bound * (2 * rng.nextFloat() - 1);
  const normal = (rng) => rng.nextNormal();
  const zero = () => 0;
  const draw = {
    'embedding.weight': normal,
    pos_embedding: normal,
    'attn.in_proj_weight': uniform(Math.sqrt(6 / (E + 3 * E))),
    'attn.in_proj_bias': zero,
    'attn.out_proj.weight': uniform(1 / Math.sqrt(E)),
    'attn.out_proj.bias': zero,
    'head.weight': uniform(1 / Math.sqrt(E)),
    'head.bias': uniform(1 / Math.sqrt(E)),
  };
  const params = {};
  Object.keys(shapes).forEach((name, stream) => {
    const rng = new Prng(seed, 200 + stream);
    const p = new Float32Array(count(shapes[name]));
    for (let k = 0; k < p.length; k++) p[k] = draw[name](rng);
    params[name] = p;
  });
  return params;
}

export class TinyModel {
  // mha: a module from the package's createMultiheadAttention({ embedDim: E, numHeads: H, batchFirst: true }).
  constructor(config, params, mha) {
    const shapes = parameterShapes(config);
    for (const [name, shape] of Object.entries(shapes)) {
      if (!params[name] || params[name].length !== count(shape)) {
        throw new RangeError(`${name} must hold ${count(shape)} values for shape (${shape.join(', ')})`);
      }
    }
    Object.assign(this, { config, params, mha });
  }

  // Hands the attention's parameters to the package (after every update: the package holds a copy).
  syncAttention() {
    const p = {};
    for (const [name, key] of Object.entries(MHA_NAMES)) p[key] = this.params[name];
    this.mha.setParameters(p);
  }

  // The forward pass of N sequences (tokens N·L): every intermediate the backward needs, and the logits.
  // With weights: true, the attention weights per head (N, H, L, L) as well.
  forward(tokens, N, { weights = false } = {}) {
    const { L, E, classes } = this.config;
    const dims = { N, L, E };
    const x = embed(tokens, this.params['embedding.weight'], this.params.pos_embedding, dims);
    const xt = { data: x, shape: [N, L, E] };
    const r = this.mha.forward(xt, xt, xt, { needWeights: weights, averageAttnWeights: false });
    const h = new Float32Array(N * L * E);
    for (let k = 0; k < h.length; k++) h[k] = x[k] + r.output.data[k];
    const logits = linear(h, this.params['head.weight'], this.params['head.bias'], { rows: N * L, inDim: E, outDim: classes });
    return { x, h, logits, weights: r.weights ?? null };
  }

  // Loss and gradients of every parameter for N sequences and their targets (both N·L).
  lossAndGradients(tokens, targets, N) {
    const { L, E, vocab, classes } = this.config;
    const f = this.forward(tokens, N);
    const rows = N * L;
    const { loss, dLogits } = crossEntropy(f.logits, targets, { rows, classes });
    const head = linearBackward(f.h, this.params['head.weight'], dLogits, { rows, inDim: E, outDim: classes });
    // h = x + mha(x, x, x): x receives dh directly and through each of the attention's three inputs.
    const xt = { data: f.x, shape: [N, L, E] };
    const a = this.mha.backward(xt, xt, xt, { data: head.dx, shape: [N, L, E] });
    const dx = new Float32Array(rows * E);
    for (let k = 0; k < dx.length; k++) dx[k] = head.dx[k] + a.gradQuery.data[k] + a.gradKey.data[k] + a.gradValue.data[k];
    const emb = embedBackward(tokens, dx, { N, L, E, vocab });
    const grads = {
      'embedding.weight': emb.dTable,
      pos_embedding: emb.dPos,
      'head.weight': head.dWeight,
      'head.bias': head.dBias,
    };
    for (const [name, key] of Object.entries(MHA_NAMES)) grads[name] = a.gradParameters[key];
    return { loss, grads, logits: f.logits };
  }

  // Loss, token and exact-sequence accuracy on N sequences, without gradients.
  evaluate(tokens, targets, N) {
    const { L, classes } = this.config;
    const f = this.forward(tokens, N);
    const rows = N * L;
    const { loss } = crossEntropy(f.logits, targets, { rows, classes });
    const predicted = argmaxRows(f.logits, { rows, classes });
    return { loss, ...accuracy(predicted, targets, { N, L }), predicted };
  }
}
