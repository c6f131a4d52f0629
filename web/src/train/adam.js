// Adam (Kingma & Ba), as PyTorch's torch.optim.Adam with weight_decay = 0: per parameter a running mean m
// and a running mean of squares v of its gradient, both bias-corrected, and a step of
// lr · m̂ / (√v̂ + eps). Parameters are named Float32Arrays updated in place.

export class Adam {
  constructor(params, { lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8 } = {}) {
    Object.assign(this, { lr, beta1, beta2, eps });
    this.t = 0;
    this.m = {};
    this.v = {};
    for (const [name, p] of Object.entries(params)) {
      this.m[name] = new Float64Array(p.length);
      this.v[name] = new Float64Array(p.length);
    }
  }

  // One step: every parameter named in grads moves; the names must be the constructor's.
  step(params, grads) {
    this.t++;
    const { beta1, beta2, eps, lr } = this;
    const c1 = 1 - beta1 ** this.t;
    const c2 = 1 - beta2 ** this.t;
    for (const [name, g] of Object.entries(grads)) {
      const p = params[name];
      const m = this.m[name];
      const v = this.v[name];
      if (!p || !m) throw new RangeError(`Adam: no parameter named '${name}'`);
      if (g.length !== p.length) throw new RangeError(`Adam: '${name}' has ${p.length} values, its gradient ${g.length}`);
      for (let k = 0; k < p.length; k++) {
        m[k] = beta1 * m[k] + (1 - beta1) * g[k];
        v[k] = beta2 * v[k] + (1 - beta2) * g[k] * g[k];
        p[k] -= (lr * (m[k] / c1)) / (Math.sqrt(v[k] / c2) + eps);
      }
    }
  }
}
