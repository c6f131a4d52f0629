// The GPT's AdamW (web/src/gpt/adamw.js) against torch.optim.AdamW's update written out step by step in float64
// (the golden fixture in gpt-model.test.js checks it against PyTorch itself), its clipping fused into the step
// against clipGradNorm's in-place scaling, and its refusals.
import test from 'node:test';
import assert from 'node:assert/strict';
import { AdamW, clipCoefficient, clipGradNorm, gradNorm } from '../../web/src/gpt/adamw.js';

// Two parameters (one decayed) of awkward lengths, and a gradient per step from a fixed wave.
function problem() {
  const params = {
    w: Float32Array.from({ length: 7 }, (_, k) => Math.sin(k + 1)),
    b: Float32Array.from({ length: 5 }, (_, k) => 0.1 * Math.cos(k)),
  };
  const gradsAt = (t) => ({
    w: Float32Array.from({ length: 7 }, (_, k) => Math.sin(3 * k + t)),
    b: Float32Array.from({ length: 5 }, (_, k) => 0.5 * Math.cos(2 * k - t)),
  });
  return { params, gradsAt };
}
const settings = { beta1: 0.9, beta2: 0.99, eps: 1e-8, weightDecay: 0.1, decayed: new Set(['w']) };

test("three steps follow torch.optim.AdamW's update: decay, moments, bias corrections", () => {
  const { params, gradsAt } = problem();
  const opt = new AdamW(params, settings);
  const ref = Object.fromEntries(Object.entries(params).map(([n, p]) => [n, { p: [...p], m: Array.from(p, () => 0), v: Array.from(p, () => 0) }]));
  const lrs = [1e-2, 5e-3, 2e-3];
  for (let t = 1; t <= 3; t++) {
    const lr = lrs[t - 1];
    const grads = gradsAt(t);
    opt.step(params, grads, lr);
    for (const [name, r] of Object.entries(ref)) {
      for (let k = 0; k < r.p.length; k++) {
        const g = grads[name][k];
        if (settings.decayed.has(name)) r.p[k] *= 1 - lr * settings.weightDecay;
        r.m[k] = settings.beta1 * r.m[k] + (1 - settings.beta1) * g;
        r.v[k] = settings.beta2 * r.v[k] + (1 - settings.beta2) * g * g;
        const denom = Math.sqrt(r.v[k]) / Math.sqrt(1 - settings.beta2 ** t) + settings.eps;
        r.p[k] -= (lr / (1 - settings.beta1 ** t)) * (r.m[k] / denom);
        // float32 parameters: within a few float32 roundings of the float64 walk.
        assert.ok(Math.abs(params[name][k] - r.p[k]) < 4e-7 * Math.max(1, Math.abs(r.p[k])), `${name}[${k}] at step ${t}: ${params[name][k]} vs ${r.p[k]}`);
      }
    }
  }
  assert.equal(opt.t, 3);
  const state = opt.state();
  assert.deepEqual(Object.keys(state.m), ['w', 'b']);
  assert.equal(state.m.b.length, 5);
  for (let k = 0; k < 5; k++) assert.ok(Math.abs(state.v.b[k] - ref.b.v[k]) < 1e-15, `v.b[${k}]`);
});

test('the clipping fused into the step gives the bits of clipGradNorm then the step', () => {
  for (const maxNorm of [0.5, 100]) {  // clipped, and not
    const a = problem(), b = problem();
    const optA = new AdamW(a.params, settings), optB = new AdamW(b.params, settings);
    for (let t = 1; t <= 3; t++) {
      const ga = a.gradsAt(t), gb = b.gradsAt(t);
      const normA = clipGradNorm(ga, maxNorm);
      optA.step(a.params, ga, 1e-2);
      const normB = gradNorm(gb);
      assert.equal(normB, normA);
      optB.step(b.params, gb, 1e-2, clipCoefficient(normB, maxNorm));
      for (const n of ['w', 'b']) assert.deepEqual(b.params[n], a.params[n], `${n} at step ${t}, max norm ${maxNorm}`);
      assert.deepEqual(optB.m, optA.m, `first moments at step ${t}, max norm ${maxNorm}`);
      assert.deepEqual(optB.v, optA.v, `second moments at step ${t}, max norm ${maxNorm}`);
    }
    assert.equal(clipCoefficient(gradNorm(a.gradsAt(1)), maxNorm) < 1, maxNorm === 0.5);
  }
});

test('the gradient norm is the float64 norm of all gradients together', () => {
  const grads = { a: Float32Array.from({ length: 1001 }, (_, k) => Math.sin(k)), b: Float32Array.of(3), c: new Float32Array(0) };
  let sum = 0;
  for (const g of Object.values(grads)) for (const x of g) sum += x * x;
  assert.ok(Math.abs(gradNorm(grads) - Math.sqrt(sum)) < 1e-12 * Math.sqrt(sum));
  assert.equal(gradNorm({ b: Float32Array.of(3), d: Float32Array.of(4) }), 5);
});

test('a refused step names the parameter and moves nothing', () => {
  const { params, gradsAt } = problem();
  const opt = new AdamW(params, settings);
  opt.step(params, gradsAt(1), 1e-2);
  const before = { w: params.w.slice(), b: params.b.slice(), m: opt.m.slice(), v: opt.v.slice() };
  assert.throws(() => opt.step(params, { w: gradsAt(2).w, b: new Float32Array(4) }, 1e-2), /AdamW: 'b' has 5 values, its parameter 5 and its gradient 4/);
  assert.throws(() => opt.step(params, { w: gradsAt(2).w, nope: new Float32Array(5) }, 1e-2), /AdamW: no parameter named 'nope'/);
  assert.deepEqual(params.w, before.w);
  assert.deepEqual(params.b, before.b);
  assert.deepEqual(opt.m, before.m);
  assert.deepEqual(opt.v, before.v);
  assert.equal(opt.t, 1);
});
