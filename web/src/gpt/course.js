// The course of the "Build a GPT" chapter: from a bigram table to nanoGPT's model, one idea at a time. Each stage
// has an id, its idea in one sentence, the loss the course reaches with it where one is known (Karpathy's "Let's
// build GPT" and nanoGPT's README: validation cross-entropy on Tiny Shakespeare, nats per character), how to build
// its model on the package, and how it trains: the early stages as the course trains them (PyTorch's default
// initialisation, AdamW at its defaults and a constant rate), the GPTs with nanoGPT's AdamW and schedule.
import { GPT } from './model.js';
import { Stack } from './stack.js';
import { GPT_CONFIG } from './schedule.js';

// nanoGPT's training settings (bench/gpt/model.py's CONFIG); a stage replaces some.
const NANO = {
  batchSize: GPT_CONFIG.batchSize, maxIters: GPT_CONFIG.maxIters, learningRate: GPT_CONFIG.learningRate,
  minLr: GPT_CONFIG.minLr, warmupIters: GPT_CONFIG.warmupIters, lrDecayIters: GPT_CONFIG.lrDecayIters,
  beta1: GPT_CONFIG.beta1, beta2: GPT_CONFIG.beta2, weightDecay: GPT_CONFIG.weightDecay, gradClip: GPT_CONFIG.gradClip,
  evalBatches: GPT_CONFIG.evalBatches,
};

// The early stages' sizes and training, as the course's: 32 channels, 8 characters of context, batches of 32,
// 5000 steps of torch.optim.AdamW at its defaults (β2 0.999, weight decay 0.01) and a constant rate, no clipping.
const SMALL = {
  ...NANO, batchSize: 32, maxIters: 5000, learningRate: 1e-3, minLr: 1e-3, warmupIters: 0, lrDecayIters: 5000,
  beta2: 0.999, weightDecay: 0.01, gradClip: Infinity,
};
const stack = (model, training = SMALL) => ({
  model,
  training,
  build(xa, vocab, seed) {
    return new Stack(xa, { vocab, ...this.model }, { seed });
  },
});

const STAGES = [
  {
    id: 'bigram',
    title: 'A bigram table',
    idea: 'Each character alone predicts the next one: a table of 65 × 65 logits, the row of the current character.',
    referenceLoss: 2.5,
    ...stack({ bigram: true, mixer: 'none', blockSize: 8 }, { ...SMALL, learningRate: 1e-2, minLr: 1e-2 }),
  },
  {
    id: 'average',
    title: 'Averaging the past',
    idea: 'Every position sees the plain average of the characters so far (embedded, with their positions): the past counts, all of it equally.',
    referenceLoss: null,
    ...stack({ nEmbd: 32, blockSize: 8, mixer: 'average' }),
  },
  {
    id: 'one-head',
    title: 'One attention head',
    idea: 'Each position asks a query, every earlier one offers a key and a value: the average becomes a weighted one, the weights learned from the data.',
    referenceLoss: 2.4,
    ...stack({ nEmbd: 32, blockSize: 8, mixer: 'attention', nHead: 1 }),
  },
  {
    id: 'four-heads',
    title: 'Four heads',
    idea: 'Four smaller heads of 8 channels look for four different things at once, and their outputs are concatenated.',
    referenceLoss: 2.28,
    ...stack({ nEmbd: 32, blockSize: 8, mixer: 'attention', nHead: 4 }),
  },
  {
    id: 'feed-forward',
    title: '+ feed-forward',
    idea: 'After gathering from the past, each position thinks about what it gathered on its own: a linear layer and a ReLU.',
    referenceLoss: 2.24,
    ...stack({ nEmbd: 32, blockSize: 8, mixer: 'attention', nHead: 4, feedForward: true }),
  },
  {
    id: 'blocks',
    title: 'Residual + LayerNorm blocks',
    idea: 'Attention and feed-forward become a block that adds to a residual stream after a LayerNorm, so three of them can be stacked and still train.',
    referenceLoss: 2.08,
    model: { nLayer: 3, nHead: 4, nEmbd: 32, blockSize: 8 },
    training: { ...SMALL },
    build(xa, vocab, seed) {
      return new GPT(xa, { vocab, ...this.model }, { seed });
    },
  },
  {
    id: 'gpt',
    title: 'The full GPT',
    idea: 'nanoGPT’s model: 4 pre-norm blocks of 4-head attention and a GELU feed-forward over 128 channels and 64 characters of context, trained as nanoGPT trains it.',
    referenceLoss: 1.88,
    model: { nLayer: GPT_CONFIG.nLayer, nHead: GPT_CONFIG.nHead, nEmbd: GPT_CONFIG.nEmbd, blockSize: GPT_CONFIG.blockSize },
    training: { ...NANO },
    build(xa, vocab, seed) {
      return new GPT(xa, { vocab, ...this.model }, { seed });
    },
  },
];

export const COURSE = STAGES.map(({ id, title, idea, referenceLoss }) => ({ id, title, idea, referenceLoss }));

export function stageOf(id) {
  const stage = STAGES.find((s) => s.id === id);
  if (!stage) throw new RangeError(`stage must be one of ${STAGES.map((s) => `'${s.id}'`).join(', ')}, got ${JSON.stringify(id)}`);
  return stage;
}
