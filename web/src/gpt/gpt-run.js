// One training run of the "Build a GPT" chapter, independent of where it runs (gpt-host.js drives it in the Worker,
// the tests in Node): the corpus, the model of a course stage, AdamW with nanoGPT's schedule and clipping, seeded
// training batches, the loss estimates, the probe line's attention and short samples. Everything is seeded: the
// same text, stage and seed give the same run, step for step.
import { makeCorpus } from './corpus.js';
import { BatchSource, validationOffsets, windows } from './batches.js';
import { AdamW, clipCoefficient, gradNorm } from './adamw.js';
import { lrAt } from './schedule.js';
import { Sampler, generate, makeDecoder } from './generate.js';
import { stageOf } from './course.js';

// Both parts of the text must hold a window of blockSize + 1 characters (else a RangeError saying which is short).
export function checkCorpus(corpus, blockSize) {
  for (const [part, data] of [['training', corpus.train], ['validation', corpus.val]]) {
    if (data.length < blockSize + 2) {
      throw new RangeError(`the text's ${part} part (${part === 'training' ? 'the first 90%' : 'the last 10%'}) has ${data.length} characters; windows of ${blockSize} + 1 need at least ${blockSize + 2}`);
    }
  }
}

export class GptRun {
  // xa: the package; text: the corpus; stage: a course stage id (course.js); seed: the run's seed; model: an
  // imported model to continue from (its configuration must be the stage's shape for this text), at `step`.
  constructor(xa, text, { stage = 'gpt', seed = 1337, model = null, step = 0 } = {}) {
    this.xa = xa;
    this.stage = stageOf(stage);
    this.corpus = typeof text === 'string' ? makeCorpus(text) : text;
    this.settings = { ...this.stage.training };
    const s = this.settings;
    const blockSize = model ? model.config.blockSize : this.stage.model.blockSize;
    checkCorpus(this.corpus, blockSize);
    this.model = model ?? this.stage.build(xa, this.corpus.chars.length, seed);
    this.optimizer = new AdamW(this.model.params, {
      beta1: s.beta1, beta2: s.beta2, weightDecay: s.weightDecay, decayed: this.model.decayed(),
    });
    this.batches = new BatchSource(this.corpus.train, { B: s.batchSize, T: blockSize, seed });
    this.seed = seed;
    this.step = step;
    this.lastLoss = null;
    this.probe = this.corpus.decode(this.corpus.val.subarray(0, blockSize));
  }

  get config() {
    return this.model.config;
  }

  // One AdamW step on a fresh batch at the schedule's rate; returns { loss, lr }.
  trainStep() {
    const s = this.settings;
    const T = this.model.config.blockSize;
    const lr = lrAt(this.step, s);
    const { x, y } = this.batches.next();
    const { loss, grads } = this.model.lossAndGradients(x, y, s.batchSize, T);
    // clip_grad_norm_ fused into the step: the gradients scaled as they are read, not in a pass of their own.
    this.optimizer.step(this.model.params, grads, lr, clipCoefficient(gradNorm(grads), s.gradClip));
    this.model.sync();
    this.step++;
    this.lastLoss = loss;
    return { loss, lr };
  }

  // model.py's validation_loss over `data`: the mean of evalBatches batches' losses, the windows evenly spaced.
  estimate(data) {
    const s = this.settings;
    const T = this.model.config.blockSize;
    const offsets = validationOffsets(data.length, s.evalBatches, s.batchSize, T);
    let total = 0;
    for (let b = 0; b < s.evalBatches; b++) {
      const { x, y } = windows(data, offsets.slice(b * s.batchSize, (b + 1) * s.batchSize), T);
      total += this.model.loss(x, y, s.batchSize, T);
    }
    return total / s.evalBatches;
  }

  // The validation loss (model.py's estimate) and the same estimate over the training text.
  evaluate() {
    return { trainLoss: this.estimate(this.corpus.train), valLoss: this.estimate(this.corpus.val) };
  }

  // The probe line: at most blockSize characters, every one in the vocabulary (else a RangeError naming it).
  setProbe(text) {
    if (typeof text !== 'string' || text.length === 0) throw new TypeError('setProbe: text must be a non-empty string');
    const { blockSize } = this.model.config;
    const n = this.corpus.encode(text).length;
    if (n > blockSize) throw new RangeError(`setProbe: the probe has ${n} characters, the model sees at most ${blockSize}`);
    this.probe = text;
  }

  // Each layer's attention weights over the probe line: [{ heads, T, weights (heads·T·T) }].
  probeAttention() {
    return this.model.attention(this.corpus.encode(this.probe));
  }

  // A short sample from a newline (or the first character of the vocabulary), seeded by the step.
  sample(n = 120) {
    const decoder = makeDecoder(this.model);
    try {
      const ids = generate(decoder, this.promptIds(''), { maxNew: n, sampler: new Sampler({ seed: (this.seed + this.step) >>> 0 }) });
      return this.corpus.decode(ids);
    } finally {
      decoder.dispose();
    }
  }

  // A prompt's ids: the empty prompt starts from a newline where the vocabulary has one.
  promptIds(prompt) {
    if (prompt.length > 0) return this.corpus.encode(prompt);
    return Int32Array.of(this.corpus.chars.includes('\n') ? this.corpus.chars.indexOf('\n') : 0);
  }

  dispose() {
    this.model.dispose();
  }
}
