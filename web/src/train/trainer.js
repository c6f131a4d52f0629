// One training run, independent of where it runs (the training Worker drives it; the unit tests drive
// it in Node): the model, its data, Adam, and the held-out evaluation and the probe's weights the panel
// draws. Everything is seeded: the same settings and seed give the same run, step for step.
import { Adam } from './adam.js';
import { TinyModel, initParameters, parameterShapes } from './model.js';
import { SequenceSource, probeSequence, targetsOf, taskOf } from './tasks.js';

// Defaults that train fast: the reversal needs about 100 Adam steps at PyTorch's default lr (measured over
// 12 seeds: 100 to 120 steps to 95% exact sequences), a few seconds in the browser.
export const DEFAULTS = { task: 'reverse', vocab: 8, L: 8, E: 32, H: 2, batch: 32, lr: 0.001, seed: 1 };

// The model's configuration for a run's settings.
export function modelConfig(s) {
  return { vocab: s.vocab, classes: taskOf(s.task).classes(s.vocab), L: s.L, E: s.E, H: s.H };
}

export class Trainer {
  // lib: the package (createXattn()); settings: DEFAULTS with any field replaced; params: optional
  // parameters to start from (a loaded state dict) instead of the seeded initialisation.
  constructor(lib, settings, params = null) {
    this.settings = { ...DEFAULTS, ...settings };
    const s = this.settings;
    if (s.E % s.H !== 0) throw new RangeError(`E = ${s.E} must be a multiple of H = ${s.H}`);
    this.config = modelConfig(s);
    this.mha = lib.createMultiheadAttention({ embedDim: s.E, numHeads: s.H, batchFirst: true });
    this.model = new TinyModel(this.config, params ?? initParameters(this.config, s.seed), this.mha);
    this.model.syncAttention();
    this.optimiser = new Adam(this.model.params, { lr: s.lr });
    this.data = new SequenceSource({ seed: s.seed, L: s.L, vocab: s.vocab });
    this.heldOutTargets = targetsOf(s.task, this.data.heldOut, { N: this.heldOutCount, L: s.L, vocab: s.vocab });
    this.probe = probeSequence(s.L, s.vocab);
    this.step = 0;
  }

  get heldOutCount() {
    return this.data.heldOut.length / this.settings.L;
  }

  // One Adam step on a fresh batch; returns the batch's loss.
  trainStep() {
    const { batch, L, vocab, task } = this.settings;
    const tokens = this.data.batch(batch);
    const targets = targetsOf(task, tokens, { N: batch, L, vocab });
    const { loss, grads } = this.model.lossAndGradients(tokens, targets, batch);
    this.optimiser.step(this.model.params, grads);
    this.model.syncAttention();
    this.step++;
    return loss;
  }

  // Loss, token accuracy and exact-sequence accuracy on the held-out sequences.
  evaluate() {
    const r = this.model.evaluate(this.data.heldOut, this.heldOutTargets, this.heldOutCount);
    return { loss: r.loss, token: r.token, sequence: r.sequence };
  }

  // Every head's weights (H, L, L) for the probe sequence, and what the model outputs for it.
  probeWeights() {
    const f = this.model.forward(this.probe, 1, { weights: true });
    const { L, H, vocab, task } = this.settings;
    const classes = this.config.classes;
    const predicted = new Int32Array(L);
    for (let i = 0; i < L; i++) {
      let best = 0;
      for (let c = 1; c < classes; c++) if (f.logits[i * classes + c] > f.logits[i * classes + best]) best = c;
      predicted[i] = best;
    }
    return {
      tokens: this.probe.slice(),
      targets: targetsOf(task, this.probe, { N: 1, L, vocab }),
      predicted,
      weights: f.weights.data,
      H,
      L,
    };
  }

  // Copies of the parameters under their state-dict names, with their shapes.
  stateDict() {
    const shapes = parameterShapes(this.config);
    return Object.entries(this.model.params).map(([name, data]) => ({ name, data: data.slice(), shape: shapes[name] }));
  }

  dispose() {
    this.mha.dispose();
  }
}
