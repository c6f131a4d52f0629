// AdamW as PyTorch's torch.optim.AdamW (decoupled weight decay: each decayed parameter shrinks by lr · wd, then the
// Adam step of web/src/train/adam.js), with nanoGPT's groups (decay on parameters of 2 or more dims, none on the
// others) and torch.nn.utils.clip_grad_norm_. Parameters and gradients are named Float32Arrays.
import { Adam } from '../train/adam.js';

export class AdamW {
  // params: { name: Float32Array }; decayed: Set of the names that take weight decay.
  constructor(params, { beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 1e-2, decayed }) {
    this.adam = new Adam(params, { beta1, beta2, eps });
    this.weightDecay = weightDecay;
    this.decayed = decayed;
  }

  get t() {
    return this.adam.t;
  }

  // One step at learning rate lr: every parameter named in grads moves.
  step(params, grads, lr) {
    const shrink = 1 - lr * this.weightDecay;
    for (const name of Object.keys(grads)) {
      if (!this.decayed.has(name)) continue;
      const p = params[name];
      for (let k = 0; k < p.length; k++) p[k] *= shrink;
    }
    this.adam.lr = lr;
    this.adam.step(params, grads);
  }

  // The moments, for a checkpoint (Float64Arrays by name) and the step count.
  state() {
    return { t: this.adam.t, m: this.adam.m, v: this.adam.v };
  }
}

// clip_grad_norm_: the norm of all gradients together (in float64); when it exceeds maxNorm, every gradient is
// scaled by maxNorm / (norm + 1e-6). Returns the norm before clipping.
export function clipGradNorm(grads, maxNorm) {
  let sum = 0;
  for (const g of Object.values(grads)) for (let k = 0; k < g.length; k++) sum += g[k] * g[k];
  const norm = Math.sqrt(sum);
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) for (const g of Object.values(grads)) for (let k = 0; k < g.length; k++) g[k] *= coef;
  return norm;
}
