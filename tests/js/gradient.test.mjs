// scaledDotProductAttentionGrad against PyTorch autograd (tests/golden/sdpa_grad.txt), on every build (SIMD, threaded SIMD, scalar).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { BUILDS, gradMismatch, loadCases, sdpaGradOptions as options, tensor } from './golden.mjs';

const cases = loadCases('sdpa_grad.txt');

for (const { options: buildOptions, label } of BUILDS) {
  describe(`gradients on the ${label} build`, async () => {
    const xa = await createXattn(buildOptions);

    test(`every autograd fixture (${cases.length}): output, gradQuery, gradKey, gradValue`, () => {
      assert.ok(cases.length >= 15);
      for (const c of cases) {
        const t = c.tensors;
        const r = xa.scaledDotProductAttentionGrad(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output), options(c));
        for (const [got, want] of [[r.output, t.output], [r.gradQuery, t.grad_query], [r.gradKey, t.grad_key], [r.gradValue, t.grad_value]]) {
          assert.ok(got.data instanceof Float32Array);
          assert.equal(gradMismatch(got, want), '', c.name);
        }
      }
    });

    test('needWeights also returns the forward weights; bad input is refused like the forward', () => {
      const c = cases.find((x) => x.name === 'custom_scale');
      const t = c.tensors;
      const r = xa.scaledDotProductAttentionGrad(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output),
        { ...options(c), needWeights: true });
      assert.deepEqual(r.weights.shape, [2, 5, 6]);
      const u = cases.find((x) => x.name === 'rank4_L_ne_S_Ev_ne_E').tensors;  // output (2, 3, 5, 4), query (2, 3, 5, 8)
      assert.throws(() => xa.scaledDotProductAttentionGrad(tensor(u.query), tensor(u.key), tensor(u.value), tensor(u.query)),
        (e) => e instanceof RangeError
          && e.message.includes('scaledDotProductAttentionGrad: gradOutput shape (2, 3, 5, 8) != output shape (2, 3, 5, 4)'));
      assert.throws(() => xa.scaledDotProductAttentionGrad(tensor(t.query), tensor(t.key), tensor(t.value), null), TypeError);
      assert.throws(() => xa.scaledDotProductAttentionGrad(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output), { dropoutP: 1 }),
        /scaledDotProductAttentionGrad: dropoutP must be in \[0, 1\)/);
    });
  });
}
