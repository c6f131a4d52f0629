// The PyTorch-made fixtures through the JS API, on every build (BUILDS: SIMD, threaded SIMD, their relaxed-SIMD
// variants, scalar).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import {
  BUILDS, loadCases, mask, mhaConfig, mhaOptions, mhaParameters, mismatch, sdpaOptions, tensor,
} from './golden.mjs';

const sdpaCases = loadCases('sdpa.txt');
const mhaCases = loadCases('mha.txt');

for (const { options: buildOptions, label } of BUILDS) {
  describe(`${label} build matches PyTorch`, async () => {
    const xa = await createXattn(buildOptions);

    test('the build is the one asked for', () => {
      assert.equal(xa.simd, buildOptions.simd);
      assert.equal(xa.relaxedSimd, buildOptions.relaxedSimd ?? false);
      assert.equal(xa.threads, buildOptions.threads ?? 1);
    });

    test(`every scaledDotProductAttention fixture (${sdpaCases.length})`, () => {
      assert.ok(sdpaCases.length >= 30);
      for (const c of sdpaCases) {
        const t = c.tensors;
        const r = xa.scaledDotProductAttention(tensor(t.query), tensor(t.key), tensor(t.value), sdpaOptions(c));
        assert.equal(mismatch(r.output, t.output), '', `${c.name} output`);
        if (t.weights) assert.equal(mismatch(r.weights, t.weights), '', `${c.name} weights`);
        else assert.equal(r.weights, undefined, `${c.name}: weights without needWeights`);
      }
    });

    test(`every MultiheadAttention fixture (${mhaCases.length}), parameters from the state dict`, () => {
      assert.ok(mhaCases.length >= 15);
      for (const c of mhaCases) {
        const t = c.tensors;
        const mha = xa.createMultiheadAttention(mhaConfig(c));
        try {
          mha.setParameters(mhaParameters(c));
          const r = mha.forward(tensor(t.query), tensor(t.key), tensor(t.value), mhaOptions(c));
          assert.equal(mismatch(r.output, t.output), '', `${c.name} output`);
          if (t.weights) assert.equal(mismatch(r.weights, t.weights), '', `${c.name} weights`);
          else assert.equal(r.weights, undefined, `${c.name}: weights without needWeights`);
        } finally {
          mha.dispose();
        }
      }
    });

    test("the lesson's quiz gives (8, 128, 64)", () => {
      const c = sdpaCases.find((x) => x.name === 'lesson_quiz_8x128x32_value_64');
      const r = xa.scaledDotProductAttention(tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value));
      assert.deepEqual(r.output.shape, [8, 128, 64]);
    });

    test('SDPA boolean masks attend where true; MHA boolean masks forbid where true', () => {
      const c = sdpaCases.find((x) => x.name === 'bool_mask_full_shape');
      const allowed = mask(c.tensors.attn_mask);
      const r = xa.scaledDotProductAttention(tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value),
        { attnMask: allowed, needWeights: true });
      r.weights.data.forEach((w, i) => { if (!allowed.data[i]) assert.equal(w, 0); });
      const m = mhaCases.find((x) => x.name === 'attn_mask_bool_L_S');
      const mha = xa.createMultiheadAttention(mhaConfig(m));
      mha.setParameters(mhaParameters(m));
      const y = mha.forward(tensor(m.tensors.query), tensor(m.tensors.key), tensor(m.tensors.value), mhaOptions(m));
      const forbidden = mask(m.tensors.attn_mask).data;
      const LS = forbidden.length;
      y.weights.data.forEach((w, i) => { if (forbidden[i % LS]) assert.equal(w, 0); });
      mha.dispose();
    });
  });
}
