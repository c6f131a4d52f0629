// The course of the "Build a GPT" chapter: from a bigram table to nanoGPT's model, one idea at a time. Each stage
// has an id, its idea in one sentence, the loss the course reaches with it where one is known (Karpathy's "Let's
// build GPT" and nanoGPT's README: validation cross-entropy on Tiny Shakespeare, nats per character), how to build
// its model on the package, and how it trains (nanoGPT's AdamW and schedule, at the stage's sizes).
import { GPT } from './model.js';
import { GPT_CONFIG } from './schedule.js';

// nanoGPT's training settings (bench/gpt/model.py's CONFIG); a stage replaces some.
const NANO = {
  batchSize: GPT_CONFIG.batchSize, maxIters: GPT_CONFIG.maxIters, learningRate: GPT_CONFIG.learningRate,
  minLr: GPT_CONFIG.minLr, warmupIters: GPT_CONFIG.warmupIters, lrDecayIters: GPT_CONFIG.lrDecayIters,
  beta1: GPT_CONFIG.beta1, beta2: GPT_CONFIG.beta2, weightDecay: GPT_CONFIG.weightDecay, gradClip: GPT_CONFIG.gradClip,
  evalBatches: GPT_CONFIG.evalBatches,
};

const STAGES = [
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
