// The whole model's gradients (JS layers around the package's MultiheadAttention backward) against central
// differences of its loss, the state-dict names and shapes, and seeded initialisation.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createXattn } from 'xattn';
import { MHA_NAMES, TinyModel, initParameters, parameterShapes } from '../../web/src/train/model.js';
import { Prng } from '../../web/src/prng.js';
import { centralDifference } from './train-gradcheck.js';

const xa = await createXattn();
const config = { vocab: 5, classes: 5, L: 4, E: 8, H: 2 };
const N = 3;

function smallModel(seed = 3) {
  const mha = xa.createMultiheadAttention({ embedDim: config.E, numHeads: config.H, batchFirst: true });
  const model = new TinyModel(config, initParameters(config, seed), mha);
  model.syncAttention();
  return model;
}

function batch() {
  const rng = new Prng(9, 0);
  const tokens = Int32Array.from({ length: N * config.L }, () => Math.floor(rng.nextFloat() * config.vocab));
  const targets = Int32Array.from({ length: N * config.L }, () => Math.floor(rng.nextFloat() * config.classes));
  return { tokens, targets };
}

// The loss as a function of the parameters as they are now (the attention's re-sent to the package).
const lossOf = (model, { tokens, targets }) => () => {
  model.syncAttention();
  return model.evaluate(tokens, targets, N).loss;
};

// float32 attention: central differences with h = 1e-2 agree with the gradients to about 1e-5 here (measured);
// the bound leaves room for another machine's rounding, and still refuses a missing path (the last test).
const close = (a, b) => Math.abs(a - b) <= 2e-4 + 2e-3 * Math.abs(b);

test('every parameter has its state-dict name and shape', () => {
  const shapes = parameterShapes({ vocab: 5, classes: 25, L: 4, E: 8 });
  assert.deepEqual(Object.keys(shapes), [
    'embedding.weight', 'pos_embedding', 'attn.in_proj_weight', 'attn.in_proj_bias', 'attn.out_proj.weight', 'attn.out_proj.bias', 'head.weight', 'head.bias',
  ]);
  assert.deepEqual(shapes['attn.in_proj_weight'], [24, 8]);
  assert.deepEqual(shapes['head.weight'], [25, 8]);
  assert.deepEqual(Object.values(MHA_NAMES), ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias']);
});

test('initialisation is seeded, and follows PyTorch’s defaults in kind', () => {
  const a = initParameters(config, 1);
  const b = initParameters(config, 1);
  const c = initParameters(config, 2);
  assert.deepEqual(a['embedding.weight'], b['embedding.weight']);
  assert.notDeepEqual(a['embedding.weight'], c['embedding.weight']);
  assert.ok(a['attn.in_proj_bias'].every((v) => v === 0) && a['attn.out_proj.bias'].every((v) => v === 0));
  const bound = Math.sqrt(6 / (4 * config.E)); // Xavier-uniform over (3E, E)
  assert.ok(a['attn.in_proj_weight'].every((v) => Math.abs(v) <= bound));
  assert.ok(a['attn.in_proj_weight'].some((v) => Math.abs(v) > bound / 2));
});

test('the model refuses parameters of the wrong size', () => {
  const params = initParameters(config, 1);
  params['head.bias'] = new Float32Array(4);
  assert.throws(() => new TinyModel(config, params, null), /head.bias must hold 5 values for shape \(5\)/);
});

test('gradients of every parameter match central differences of the loss', () => {
  const model = smallModel();
  const data = batch();
  model.syncAttention();
  const { grads } = model.lossAndGradients(data.tokens, data.targets, N);
  const f = lossOf(model, data);
  const bad = [];
  let checked = 0;
  for (const [name, p] of Object.entries(model.params)) {
    // Every coordinate of the small tensors; an evenly spread 40 of the large ones.
    const step = Math.max(1, Math.floor(p.length / 40));
    for (let k = 0; k < p.length; k += step) {
      const fd = centralDifference(f, p, k);
      checked++;
      if (!close(grads[name][k], fd)) bad.push(`${name}[${k}]: ${grads[name][k]} vs ${fd}`);
    }
  }
  model.mha.dispose();
  assert.ok(checked > 250, String(checked));
  assert.deepEqual(bad, []);
});

test('the embedding gradient needs the attention’s gradQuery + gradKey + gradValue (the check can tell)', () => {
  // Dropping the key and value paths of the residual's gradient gives a gradient the check refuses: so the
  // test above would catch that mistake.
  const model = smallModel();
  const data = batch();
  const original = model.mha.backward.bind(model.mha);
  model.mha.backward = (q, k, v, dO, o) => {
    const r = original(q, k, v, dO, o);
    return { ...r, gradKey: { ...r.gradKey, data: new Float32Array(r.gradKey.data.length) }, gradValue: { ...r.gradValue, data: new Float32Array(r.gradValue.data.length) } };
  };
  const { grads } = model.lossAndGradients(data.tokens, data.targets, N);
  model.mha.backward = original;
  const f = lossOf(model, data);
  const p = model.params.pos_embedding;
  let wrong = 0;
  for (let k = 0; k < p.length; k++) if (!close(grads.pos_embedding[k], centralDifference(f, p, k))) wrong++;
  model.mha.dispose();
  assert.ok(wrong > p.length / 2, `${wrong} of ${p.length}`);
});
