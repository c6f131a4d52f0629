// MultiheadAttention.backward against PyTorch autograd (tests/golden/mha_grad.txt), on every build: the
// output, the inputs' gradients and every parameter's, named as setParameters takes them.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { BUILDS, gradValuesMismatch, loadCases, mask, mhaConfig, mhaParameters, tensor } from './golden.mjs';

const cases = loadCases('mha_grad.txt');


function options(c) {
  const o = { isCausal: c.opts.is_causal === '1', training: c.opts.training === '1', seed: Number(c.opts.seed) };
  if (c.tensors.key_padding_mask) o.keyPaddingMask = mask(c.tensors.key_padding_mask);
  if (c.tensors.attn_mask) o.attnMask = mask(c.tensors.attn_mask);
  return o;
}

function moduleFor(xa, c) {
  const m = xa.createMultiheadAttention({ ...mhaConfig(c), dropout: Number(c.opts.dropout) });
  m.setParameters(mhaParameters(c));
  return m;
}

for (const { options: buildOptions, label } of BUILDS) {
  describe(`MultiheadAttention.backward on the ${label} build`, async () => {
    const xa = await createXattn(buildOptions);

    test(`every autograd fixture (${cases.length}): output, inputs' and parameters' gradients`, () => {
      assert.ok(cases.length >= 15);
      for (const c of cases) {
        const t = c.tensors;
        const m = moduleFor(xa, c);
        const r = m.backward(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output), options(c));
        m.dispose();
        for (const [got, want] of [[r.output, t.output], [r.gradQuery, t.grad_query], [r.gradKey, t.grad_key],
          [r.gradValue, t.grad_value]]) {
          assert.deepEqual(got.shape, want.shape, c.name);
          assert.equal(gradValuesMismatch(got.data, want), '', c.name);
        }
        const torchNames = Object.keys(t).filter((n) => n.startsWith('grad:')).map((n) => n.slice(5));
        assert.deepEqual(Object.keys(r.gradParameters).sort(), torchNames.sort(), `${c.name}: parameter names`);
        for (const name of Object.keys(t).filter((n) => n.startsWith('grad:'))) {
          const got = r.gradParameters[name.slice(5)];
          assert.ok(got instanceof Float32Array);
          assert.equal(gradValuesMismatch(got, t[name]), '', `${c.name} ${name}`);
        }
      }
    });

    test('the backward\'s output is the forward\'s, dropout included; a seed drops the same weights', () => {
      const c = cases.find((x) => x.name === 'dropout_training_seed_11');
      const t = c.tensors;
      const m = moduleFor(xa, c);
      const o = options(c);
      const r = m.backward(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output), o);
      const f = m.forward(tensor(t.query), tensor(t.key), tensor(t.value), { ...o, needWeights: false });
      // Two algorithms (the backward recomputes the forward its own way): equal to float32 rounding.
      f.output.data.forEach((x, i) => assert.ok(Math.abs(r.output.data[i] - x) <= 1e-5 + 1e-4 * Math.abs(x), `output ${i}`));
      const other = m.forward(tensor(t.query), tensor(t.key), tensor(t.value), { ...o, needWeights: false, seed: o.seed + 1 });
      assert.notDeepEqual(other.output.data, f.output.data);
      const evaluated = m.forward(tensor(t.query), tensor(t.key), tensor(t.value), { needWeights: true });
      for (let row = 0; row < evaluated.weights.data.length / 6; row++) {
        const sum = evaluated.weights.data.slice(row * 6, row * 6 + 6).reduce((a, b) => a + b, 0);
        assert.ok(Math.abs(sum - 1) < 1e-5, `eval weights row ${row} sums to ${sum}`);
      }
      m.dispose();
    });

    test('refusals name the function and the shapes; the module keeps working', () => {
      const c = cases[0];
      const t = c.tensors;
      const m = moduleFor(xa, c);
      assert.throws(() => m.backward(tensor(t.query), tensor(t.key), tensor(t.value)),
        (e) => e instanceof TypeError && /MultiheadAttention\.backward: gradOutput is required/.test(e.message));
      const wrong = { data: new Float32Array(5 * 3 * 7), shape: [5, 3, 7] };
      assert.throws(() => m.backward(tensor(t.query), tensor(t.key), tensor(t.value), wrong),
        (e) => e instanceof RangeError
          && e.message === "MultiheadAttention.backward: gradOutput shape (5, 3, 7) != output shape (5, 3, 8) (the query's)");
      assert.throws(() => m.backward(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output), { needWeights: true }),
        (e) => e instanceof TypeError && /unknown option 'needWeights'/.test(e.message));
      assert.throws(() => m.forward(tensor(t.query), tensor(t.key), tensor(t.value), { seed: -1 }),
        (e) => e instanceof RangeError && /MultiheadAttention\.forward: seed must be an integer/.test(e.message));
      const r = m.backward(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output), options(c));
      assert.equal(gradValuesMismatch(r.gradQuery.data, t.grad_query), '');
      m.dispose();
      assert.throws(() => m.backward(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output)),
        /MultiheadAttention\.backward: this module was disposed/);
    });
  });
}
