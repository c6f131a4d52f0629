// AdamW as PyTorch's torch.optim.AdamW (decoupled weight decay: each decayed parameter shrinks by lr · wd, then
// Adam's step lr / (1 − β1ᵗ) · m / (√v / √(1 − β2ᵗ) + eps)), with nanoGPT's groups (decay on parameters of 2 or
// more dims, none on the others) and torch.nn.utils.clip_grad_norm_. Parameters and gradients are named
// Float32Arrays; the moments are float64, all parameters' in one flat array each, and a step makes one pass over
// each parameter (decay, moments and update together), allocating nothing.

export class AdamW {
  // params: { name: Float32Array }; decayed: Set of the names that take weight decay.
  constructor(params, { beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weightDecay = 1e-2, decayed }) {
    Object.assign(this, { beta1, beta2, eps, weightDecay, decayed });
    this.t = 0;
    this.offsets = new Map();  // name → where its moments start in m and v
    this.sizes = new Map();
    let n = 0;
    for (const [name, p] of Object.entries(params)) {
      this.offsets.set(name, n);
      this.sizes.set(name, p.length);
      n += p.length;
    }
    this.m = new Float64Array(n);
    this.v = new Float64Array(n);
  }

  // One step at learning rate lr: every parameter named in grads moves. gradScale multiplies every gradient first,
  // rounded to float32 as clipGradNorm's in-place scaling would (clipCoefficient: the clipping fused in).
  // Everything is checked before anything moves: a refused step leaves parameters and moments as they were.
  step(params, grads, lr, gradScale = 1) {
    const names = Object.keys(grads);
    for (const name of names) {
      const p = params[name];
      if (!p || !this.sizes.has(name)) throw new RangeError(`AdamW: no parameter named '${name}'`);
      const size = this.sizes.get(name);
      if (p.length !== size || grads[name].length !== size) {
        throw new RangeError(`AdamW: '${name}' has ${size} values, its parameter ${p.length} and its gradient ${grads[name].length}`);
      }
    }
    this.t++;
    const c1 = 1 - this.beta1 ** this.t;
    const c2 = 1 - this.beta2 ** this.t;
    const stepSize = lr / c1;
    const invSqrtC2 = 1 / Math.sqrt(c2);
    const shrink = 1 - lr * this.weightDecay;
    for (const name of names) {
      update(params[name], grads[name], this.m, this.v, this.offsets.get(name), this.decayed.has(name) ? shrink : 1,
        gradScale, this.beta1, this.beta2, this.eps, stepSize, invSqrtC2);
    }
  }

  // The moments by name (views of the flat arrays) and the step count, for a checkpoint.
  state() {
    const m = {}, v = {};
    for (const [name, offset] of this.offsets) {
      m[name] = this.m.subarray(offset, offset + this.sizes.get(name));
      v[name] = this.v.subarray(offset, offset + this.sizes.get(name));
    }
    return { t: this.t, m, v };
  }
}

// One parameter's step. shrink is 1 for parameters without decay (p · 1 is p); scale 1 leaves the gradient as it is.
function update(p, g, m, v, offset, shrink, scale, beta1, beta2, eps, stepSize, invSqrtC2) {
  const a1 = 1 - beta1, a2 = 1 - beta2;
  for (let k = 0, j = offset; k < p.length; k++, j++) {
    const gk = scale === 1 ? g[k] : Math.fround(g[k] * scale);
    const mk = beta1 * m[j] + a1 * gk;
    const vk = beta2 * v[j] + a2 * gk * gk;
    m[j] = mk;
    v[j] = vk;
    p[k] = Math.fround(p[k] * shrink) - (stepSize * mk) / (Math.sqrt(vk) * invSqrtC2 + eps);
  }
}

// The norm of all gradients together, summed in float64 (four running sums per array, for speed; float64 keeps
// the order's effect far below float32's resolution).
export function gradNorm(grads) {
  let sum = 0;
  for (const name in grads) sum += sumOfSquares(grads[name]);
  return Math.sqrt(sum);
}

// Σ g[k]², one array at a time: a loop the engine compiles once for Float32Arrays.
function sumOfSquares(g) {
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  const n4 = g.length - (g.length % 4);
  let k = 0;
  for (; k < n4; k += 4) {
    s0 += g[k] * g[k];
    s1 += g[k + 1] * g[k + 1];
    s2 += g[k + 2] * g[k + 2];
    s3 += g[k + 3] * g[k + 3];
  }
  for (; k < g.length; k++) s0 += g[k] * g[k];
  return s0 + s1 + s2 + s3;
}

// clip_grad_norm_'s factor for gradients of that norm: maxNorm / (norm + 1e-6) when that is below 1, else 1.
export function clipCoefficient(norm, maxNorm) {
  const coef = maxNorm / (norm + 1e-6);
  return coef < 1 ? coef : 1;
}

// clip_grad_norm_: when the norm of all gradients together exceeds maxNorm, every gradient is scaled in place by
// clipCoefficient. Returns the norm before clipping.
export function clipGradNorm(grads, maxNorm) {
  const norm = gradNorm(grads);
  const coef = clipCoefficient(norm, maxNorm);
  if (coef < 1) for (const g of Object.values(grads)) for (let k = 0; k < g.length; k++) g[k] *= coef;
  return norm;
}
