// MultiheadAttention through the JS API on every build (golden.mjs BUILDS), against a float64 reference written
// here (mha-reference.mjs): modules and calls beside the PyTorch fixtures' small ones, with head dims around the
// 4-lane vectors, kdim and vdim of their own, query rows across the 16-row groups and keys across the 96-key
// tiles, every layout, bias_k / zero keys, and masks of every kind. The wasm kernels (plain, relaxed, threaded)
// compile only to wasm, so this is where their projections and heads meet awkward sizes. Dims: N batch, L
// queries, S keys, E embed dim, H heads.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { farFrom, randomTensor as tensor, uniform } from './attention-reference.mjs';
import { BUILDS, GRAD_TOLERANCE } from './golden.mjs';
import { mhaReference } from './mha-reference.mjs';

// Seeded parameters for a resolved config: weights uniform in ±1/√fan_in, biases in ±1.
function parametersFor(config, seed) {
  const { embedDim: E, kdim, vdim, bias, addBiasKv } = config, next = uniform(seed);
  const draw = (n, fanIn) => Float32Array.from({ length: n }, () => (2 * next() - 1) / Math.sqrt(fanIn));
  const p = { 'out_proj.weight': draw(E * E, E) };
  if (kdim === E && vdim === E) p.in_proj_weight = draw(3 * E * E, E);
  else Object.assign(p, { q_proj_weight: draw(E * E, E), k_proj_weight: draw(E * kdim, kdim), v_proj_weight: draw(E * vdim, vdim) });
  if (bias) Object.assign(p, { in_proj_bias: draw(3 * E, 1), 'out_proj.bias': draw(E, 1) });
  if (addBiasKv) Object.assign(p, { bias_k: draw(E, 1), bias_v: draw(E, 1) });
  return p;
}

// A boolean mask (1 = masked out) with about a third of its entries set, or a float one with a fifth -inf.
function boolMask(shape, seed) {
  const next = uniform(seed);
  return { data: Uint8Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => (next() < 0.3 ? 1 : 0)), shape };
}
function floatMask(shape, seed) {
  const next = uniform(seed);
  return { data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => (next() < 0.2 ? -Infinity : 3 * next() - 1.5)), shape };
}

// The modules and calls: [config, N (0 = unbatched), L, S, options(N, L, S, H)].
const CASES = [
  // Packed in-projection, head dim 17, (L, N, E), per-head weights; float key padding and a boolean (L, S) mask.
  [{ embedDim: 68, numHeads: 4 }, 2, 37, 150,
    (N, L, S) => ({ keyPaddingMask: floatMask([N, S], 1), attnMask: boolMask([L, S], 2), averageAttnWeights: false })],
  // kdim and vdim of their own, no bias, batch first, head dim 3, bias_k and a zero key under the causal rule.
  [{ embedDim: 15, numHeads: 5, kdim: 7, vdim: 11, bias: false, batchFirst: true, addBiasKv: true, addZeroAttn: true },
    3, 17, 97, () => ({ isCausal: true })],
  // Unbatched, head dim 1, a per-head float mask and a boolean key padding mask, a zero key.
  [{ embedDim: 8, numHeads: 8, addZeroAttn: true }, 0, 65, 33,
    (N, L, S, H) => ({ keyPaddingMask: boolMask([S], 3), attnMask: floatMask([H, L, S], 4) })],
  // Head dim 5 with bias_k, a per-head boolean mask over a batch of 2, one query row.
  [{ embedDim: 10, numHeads: 2, kdim: 4, addBiasKv: true }, 2, 1, 200,
    (N, L, S, H) => ({ attnMask: boolMask([N * H, L, S], 5) })],
];

for (const { options: buildOptions, label } of BUILDS) {
  describe(`MultiheadAttention against a float64 reference on the ${label} build`, async () => {
    const xa = await createXattn(buildOptions);

    test('awkward sizes, layouts, appended keys and masks: output, weights and every gradient', () => {
      CASES.forEach(([given, N, L, S, makeOptions], index) => {
        const m = xa.createMultiheadAttention(given);
        try {
          const config = m.config, { embedDim: E, numHeads: H, kdim, vdim, batchFirst } = config;
          const params = parametersFor(config, 10 + index);
          m.setParameters(params);
          const shape = (T, C) => (N === 0 ? [T, C] : batchFirst ? [N, T, C] : [T, N, C]);
          const q = tensor(shape(L, E), 20 + index), k = tensor(shape(S, kdim), 30 + index);
          const v = tensor(shape(S, vdim), 40 + index), dO = tensor(shape(L, E), 50 + index);
          const options = makeOptions(Math.max(N, 1), L, S, H);
          const want = mhaReference(config, params, q, k, v, dO, options);
          const at = `case ${index} (E ${E}, H ${H}, N ${N}, L ${L}, S ${S})`;

          const f = m.forward(q, k, v, options);
          assert.equal(farFrom(f.output.data, want.output, `${at} output`), '');
          assert.equal(farFrom(f.weights.data, want.weights, `${at} weights`), '');
          const { averageAttnWeights, ...gradOptions } = options;  // the backward returns no weights
          const r = m.backward(q, k, v, dO, gradOptions);
          for (const [name, got, expected] of [['output', r.output, want.output], ['gradQuery', r.gradQuery, want.gradQuery],
            ['gradKey', r.gradKey, want.gradKey], ['gradValue', r.gradValue, want.gradValue]])
            assert.equal(farFrom(got.data, expected, `${at} ${name}`, GRAD_TOLERANCE), '');
          assert.deepEqual(Object.keys(r.gradParameters).sort(), Object.keys(want.gradParameters).sort(), at);
          for (const [name, expected] of Object.entries(want.gradParameters))
            assert.equal(farFrom(r.gradParameters[name], expected, `${at} ${name}`, GRAD_TOLERANCE), '');
        } finally {
          m.dispose();
        }
      });
    });
  });
}
