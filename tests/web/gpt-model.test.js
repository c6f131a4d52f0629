// The GPT of web/src/gpt on the package against bench/gpt/model.py's in PyTorch (float64 autograd; the fixture is
// written by tests/web/fixtures/make_gpt_golden.py): the state_dict names and shapes, the logits, the loss, every
// parameter's gradient, each layer's attention weights, and the parameters after 2 clipped AdamW steps.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createXattn } from 'xattn';
import { GPT, decayedNames, initParameters, parameterShapes } from '../../web/src/gpt/model.js';
import { AdamW, clipCoefficient, clipGradNorm, gradNorm } from '../../web/src/gpt/adamw.js';
import { lrAt } from '../../web/src/gpt/schedule.js';
import { B, SCHEDULE, T, TINY, group, readGolden, worst } from './gpt-golden.js';

const xa = await createXattn({ threads: 1 });
const golden = readGolden();
const idx = Int32Array.from(golden.get('idx').data);
const targets = Int32Array.from(golden.get('targets').data);

// float32 computation against float64: values of order 1 agree to a few 1e-6 (measured below 1e-5 relative);
// gradients, summed over the batch, to a few 1e-7 absolute.
function assertClose(name, got, want, tol) {
  const w = worst(got, want, tol);
  assert.ok(w.ratio <= 1, `${name}: at ${w.at} got ${w.got}, want ${w.want} (${w.ratio.toFixed(2)} × the tolerance)`);
}

function goldenModel() {
  return new GPT(xa, TINY, { params: group(golden, 'param.') });
}

test("the parameters are model.py's, by name, shape and order", () => {
  const shapes = parameterShapes(TINY);
  const names = [...golden.keys()].filter((n) => n.startsWith('param.')).map((n) => n.slice(6));
  assert.deepEqual(Object.keys(shapes), names);
  for (const n of names) assert.deepEqual(shapes[n], golden.get(`param.${n}`).shape, n);
  assert.deepEqual(Object.keys(initParameters(TINY, 1)), names);
});

test("nanoGPT's initialisation: seeded, biases 0, norms 1, N(0, 0.02) and the residual projections' smaller std", () => {
  const config = { vocab: 65, nLayer: 4, nHead: 4, nEmbd: 128, blockSize: 64 };
  const a = initParameters(config, 5);
  assert.deepEqual(a['head.weight'], initParameters(config, 5)['head.weight']);
  assert.notDeepEqual(a['head.weight'], initParameters(config, 6)['head.weight']);
  const std = (p) => Math.sqrt(p.reduce((s, v) => s + v * v, 0) / p.length);
  const mean = (p) => p.reduce((s, v) => s + v, 0) / p.length;
  assert.ok(a['layers.2.linear1.bias'].every((v) => v === 0) && a['norm.bias'].every((v) => v === 0));
  assert.ok(a['layers.0.norm1.weight'].every((v) => v === 1) && a['norm.weight'].every((v) => v === 1));
  for (const n of ['token_embedding.weight', 'layers.1.self_attn.in_proj_weight', 'layers.3.linear1.weight', 'head.weight']) {
    assert.ok(Math.abs(std(a[n]) - 0.02) < 0.001, `${n}: std ${std(a[n])}`);
    assert.ok(Math.abs(mean(a[n])) < 0.001, `${n}: mean ${mean(a[n])}`);
  }
  const residual = 0.02 / Math.sqrt(8);
  for (const n of ['layers.0.self_attn.out_proj.weight', 'layers.3.linear2.weight']) {
    assert.ok(Math.abs(std(a[n]) - residual) < 0.0005, `${n}: std ${std(a[n])}, want ${residual}`);
  }
});

test('the logits and the loss are PyTorch’s', () => {
  const model = goldenModel();
  const { logits } = model.forward(idx, B, T);
  assert.deepEqual(logits.shape, [B, T, TINY.vocab]);
  assertClose('logits', logits.data, golden.get('logits').data, { atol: 1e-5, rtol: 1e-5 });
  const loss = model.loss(idx, targets, B, T);
  assert.ok(Math.abs(loss - golden.get('loss').data[0]) < 1e-5, `loss ${loss} vs ${golden.get('loss').data[0]}`);
  model.dispose();
});

test('every parameter’s gradient is PyTorch’s', () => {
  const model = goldenModel();
  const { grads, loss } = model.lossAndGradients(idx, targets, B, T);
  assert.ok(Math.abs(loss - golden.get('loss').data[0]) < 1e-5);
  const want = group(golden, 'grad.');
  assert.deepEqual(Object.keys(grads), Object.keys(want));
  for (const [name, g] of Object.entries(want)) {
    const scale = Math.max(...g.map(Math.abs));
    assert.ok(scale > 0 || name === 'position_embedding.weight', `${name}: the reference gradient is all zero`);
    assertClose(`grad ${name}`, grads[name], g, { atol: 2e-6 * Math.max(scale, 1e-3), rtol: 1e-4 });
  }
  // The position embedding's last row (position 7 ≥ T) gets no gradient.
  assert.ok(grads['position_embedding.weight'].subarray(7 * 16).every((v) => v === 0));
  model.dispose();
});

test('each layer’s attention weights for the first window are PyTorch’s', () => {
  const model = goldenModel();
  const layers = model.attention(idx.subarray(0, T));
  assert.equal(layers.length, TINY.nLayer);
  layers.forEach((l, i) => {
    assert.equal(l.heads, 2);
    assert.equal(l.T, T);
    assertClose(`attention ${i}`, l.weights, golden.get(`attention.${i}`).data, { atol: 1e-6, rtol: 1e-5 });
  });
  model.dispose();
});

for (const fused of [false, true]) {
  // clipGradNorm scales the gradients in place before the step; GptRun fuses the scaling into the step.
  test(`2 AdamW steps with clipping${fused ? ' fused into the step' : ''} and the schedule land where PyTorch’s do`, () => {
    const model = goldenModel();
    const opt = new AdamW(model.params, { beta1: SCHEDULE.beta1, beta2: SCHEDULE.beta2, weightDecay: SCHEDULE.weightDecay, decayed: decayedNames(TINY) });
    for (let step = 0; step < 2; step++) {
      const lr = lrAt(step, SCHEDULE);
      assert.ok(Math.abs(lr - golden.get(`lr.${step}`).data[0]) < 1e-15, `lr at ${step}: ${lr}`);
      const { grads } = model.lossAndGradients(idx, targets, B, T);
      const norm = fused ? gradNorm(grads) : clipGradNorm(grads, SCHEDULE.gradClip);
      const wantNorm = golden.get(`grad_norm.${step}`).data[0];
      assert.ok(Math.abs(norm - wantNorm) < 1e-5 * wantNorm, `gradient norm at ${step}: ${norm} vs ${wantNorm}`);
      if (fused) assert.ok(clipCoefficient(norm, SCHEDULE.gradClip) < 1, 'the fixture clips');
      opt.step(model.params, grads, lr, fused ? clipCoefficient(norm, SCHEDULE.gradClip) : 1);
      model.sync();
    }
    const want = group(golden, 'after.');
    for (const [name, p] of Object.entries(want)) assertClose(`after ${name}`, model.params[name], p, { atol: 2e-6, rtol: 1e-5 });
    model.dispose();
  });
}
