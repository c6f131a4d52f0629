// nanoGPT's cheap configuration and its learning-rate schedule, as bench/gpt/model.py's CONFIG and lr_at.

export const GPT_CONFIG = Object.freeze({
  nLayer: 4, nHead: 4, nEmbd: 128, blockSize: 64, batchSize: 12, maxIters: 2000,
  learningRate: 1e-3, minLr: 1e-4, warmupIters: 100, lrDecayIters: 2000, beta1: 0.9, beta2: 0.99,
  weightDecay: 0.1, gradClip: 1.0, evalBatches: 20, seed: 1337,
});

// The learning rate of iteration `it` (0-based): linear warmup to learningRate over warmupIters, then a cosine to
// minLr at lrDecayIters, minLr after.
export function lrAt(it, c = GPT_CONFIG) {
  if (it < c.warmupIters) return (c.learningRate * (it + 1)) / (c.warmupIters + 1);
  if (it > c.lrDecayIters) return c.minLr;
  const ratio = (it - c.warmupIters) / (c.lrDecayIters - c.warmupIters);
  return c.minLr + 0.5 * (1 + Math.cos(Math.PI * ratio)) * (c.learningRate - c.minLr);
}
