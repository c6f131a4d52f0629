// options.out of the backwards: scaledDotProductAttentionGrad, MultiheadAttention.backward, linearGrad,
// layerNormGrad and TransformerEncoderLayer.backward take an object of arrays by result ({ gradInput, gradWeight },
// a layer's gradParameters by PyTorch name, …). Each array given receives its result and comes back as that
// result's data, the same bits as a fresh result; results not given come fresh. A training loop that keeps its
// gradient arrays makes no new array (and faults in no new pages) a step. A refused out writes nothing and spends
// nothing (a saved forward still serves its backward).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { createXattnWorker } from '../../js/worker-node.js';
import { createTestingXattn } from './testing-build.mjs';
import { randomTensor as seeded, sameBits } from './test-data.mjs';
import { loadCases, mhaConfig, mhaOptions, mhaParameters, mismatch } from './golden.mjs';

const mhaCase = loadCases('mha.txt')[0];

const filled = (n) => new Float32Array(n).fill(Number.NaN);

// Every array of `fresh` (a backward's result: tensors and a gradParameters map) equal bit for bit to `got`'s.
function sameResults(got, fresh, label) {
  for (const [name, t] of Object.entries(fresh)) {
    if (name === 'gradParameters') {
      for (const [p, g] of Object.entries(t)) assert.ok(sameBits(got.gradParameters[p], g), `${label} gradParameters.${p}`);
    } else {
      assert.ok(sameBits(got[name].data, t.data), `${label} ${name}`);
      assert.deepEqual(got[name].shape, t.shape, `${label} ${name}'s shape`);
    }
  }
}

// A small pre-norm GELU layer with its input and gradient, (N, L, E) = (2, 5, 8).
function layerCase(xa) {
  const layer = xa.createTransformerEncoderLayer({ dModel: 8, nhead: 2, dimFeedforward: 16, dropout: 0, activation: 'gelu', batchFirst: true, normFirst: true, initSeed: 3 });
  return { layer, src: seeded([2, 5, 8], 1), dy: seeded([2, 5, 8], 2) };
}

// Each kind of wrong out for a backward, refused by name with the result's shape; nothing is written or spent.
function refuseWrongOuts(xa) {
  const x = seeded([3, 4], 1), w = seeded([5, 4], 2), b = seeded([5], 3), dy = seeded([3, 5], 4);
  const short = filled(19);
  assert.throws(() => xa.linearGrad(x, w, b, dy, { out: { gradWeight: short } }), {
    name: 'RangeError', message: 'linearGrad: out.gradWeight has 19 values but the output (5, 4) needs 20',
  });
  assert.ok(short.every(Number.isNaN), 'a refused out is not written');
  const gradInput = filled(12);
  assert.throws(() => xa.linearGrad(x, w, b, dy, { out: { gradInput, gradBias: new Float64Array(5) } }), {
    name: 'TypeError', message: 'linearGrad: out.gradBias must be a Float32Array, got Float64Array',
  });
  assert.ok(gradInput.every(Number.isNaN), 'no array of a refused out is written, the valid ones neither');
  assert.throws(() => xa.linearGrad(x, w, null, dy, { out: { gradBias: new Float32Array(5) } }), {
    name: 'TypeError', message: "linearGrad: unknown out field 'gradBias' (known: gradInput, gradWeight)",
  });
  assert.throws(() => xa.linearGrad(x, w, b, dy, { out: new Float32Array(12) }), {
    name: 'TypeError', message: 'linearGrad: out must be an object of arrays by result (gradInput, gradWeight, gradBias), got Float32Array',
  });
  const twice = new Float32Array(4);
  assert.throws(() => xa.layerNormGrad(x, [4], x, { weight: seeded([4], 5), bias: seeded([4], 6), out: { gradWeight: twice, gradBias: twice } }), {
    name: 'RangeError', message: 'layerNormGrad: out.gradWeight and out.gradBias are the same array; each result needs its own',
  });
  assert.throws(() => xa.scaledDotProductAttentionGrad(seeded([1, 2, 3, 4], 1), seeded([1, 2, 5, 4], 2), seeded([1, 2, 5, 6], 3), seeded([1, 2, 3, 6], 4),
    { out: { gradValue: new Float32Array(59) } }), {
    name: 'RangeError', message: 'scaledDotProductAttentionGrad: out.gradValue has 59 values but the output (1, 2, 5, 6) needs 60',
  });

  const { layer, src, dy: g } = layerCase(xa);
  const f = layer.forward(src, { saveForBackward: true });
  assert.throws(() => layer.backward(src, g, { saved: f.saved, out: { gradParameters: { 'linear1.weight': new Float32Array(127) } } }), {
    name: 'RangeError', message: 'TransformerEncoderLayer.backward: out.gradParameters.linear1.weight has 127 values but the output (16, 8) needs 128',
  });
  assert.throws(() => layer.backward(src, g, { saved: f.saved, out: { gradParameters: { in_proj_weight: new Float32Array(192) } } }), {
    name: 'TypeError', message: /^TransformerEncoderLayer\.backward: unknown out\.gradParameters field 'in_proj_weight' \(known: self_attn\.in_proj_weight, /,
  });
  // The saved forward was not spent by the refusals: its backward runs, the same bits as one without it.
  const r = layer.backward(src, g, { saved: f.saved });
  sameResults(r, layer.backward(src, g), 'after refused outs');
  layer.dispose();
}

describe('a backward\'s options.out refused on the testing build', () => {
  test('refused outs hold nothing in the heap', async () => {
    const { xa, testing } = await createTestingXattn();
    refuseWrongOuts(xa);  // once first: the layer's first creation sizes what the module keeps
    const heap = testing.heapInUse();
    refuseWrongOuts(xa);
    assert.equal(testing.heapInUse(), heap, 'refused calls hold nothing');
    xa.dispose();
  });
});

for (const threads of [1, 2]) {
  describe(`a backward's options.out on the ${threads === 1 ? 'SIMD' : 'threaded SIMD'} build`, async () => {
    const xa = await createXattn({ simd: true, relaxedSimd: false, threads });

    test('linearGrad and layerNormGrad fill the arrays given, a fresh array for the others, the same bits', () => {
      const x = seeded([6, 7], 1), w = seeded([9, 7], 2), b = seeded([9], 3), dy = seeded([6, 9], 4);
      const fresh = xa.linearGrad(x, w, b, dy);
      const out = { gradInput: filled(42), gradBias: filled(9) };
      const r = xa.linearGrad(x, w, b, dy, { out });
      assert.equal(r.gradInput.data, out.gradInput);
      assert.equal(r.gradBias.data, out.gradBias);
      assert.ok(r.gradWeight.data !== fresh.gradWeight.data && r.gradWeight.data.length === 63, 'gradWeight comes fresh');
      sameResults(r, fresh, 'linearGrad');
      // out may be an input's own array: the inputs are copied in before the run.
      const own = { data: dy.data.slice(), shape: dy.shape };
      const again = xa.linearGrad(x, w, b, own, { out: { gradBias: own.data.subarray(0, 9) } });
      assert.ok(sameBits(again.gradBias.data, fresh.gradBias.data));

      const lnw = seeded([7], 5), lnb = seeded([7], 6), dn = seeded([6, 7], 7);
      const nFresh = xa.layerNormGrad(x, [7], dn, { weight: lnw, bias: lnb });
      const nOut = { gradInput: filled(42), gradWeight: filled(7), gradBias: filled(7) };
      const n = xa.layerNormGrad(x, [7], dn, { weight: lnw, bias: lnb, out: nOut });
      for (const name of Object.keys(nOut)) assert.equal(n[name].data, nOut[name], name);
      sameResults(n, nFresh, 'layerNormGrad');
    });

    test('scaledDotProductAttentionGrad and MultiheadAttention.backward fill theirs, the same bits as fresh and PyTorch\'s', () => {
      const q = seeded([2, 3, 5, 8], 1), k = seeded([2, 3, 7, 8], 2), v = seeded([2, 3, 7, 4], 3), dO = seeded([2, 3, 5, 4], 4);
      const fresh = xa.scaledDotProductAttentionGrad(q, k, v, dO, { isCausal: true });
      const out = { output: filled(120), gradQuery: filled(240), gradKey: filled(336), gradValue: filled(168) };
      const r = xa.scaledDotProductAttentionGrad(q, k, v, dO, { isCausal: true, out });
      for (const name of Object.keys(out)) assert.equal(r[name].data, out[name], name);
      sameResults(r, fresh, 'scaledDotProductAttentionGrad');

      const mha = xa.createMultiheadAttention(mhaConfig(mhaCase));
      mha.setParameters(mhaParameters(mhaCase));
      const t = mhaCase.tensors;
      const args = ['query', 'key', 'value'].map((n) => ({ data: Float32Array.from(t[n].values), shape: t[n].shape }));
      const { needWeights, averageAttnWeights, ...options } = mhaOptions(mhaCase);  // the backward's options
      const dy = seeded(mha.forward(...args, options).output.shape, 9);
      const mFresh = mha.backward(...args, dy, options);
      const gradParameters = Object.fromEntries(Object.entries(mFresh.gradParameters).map(([p, g]) => [p, filled(g.length)]));
      const mOut = { gradKey: filled(mFresh.gradKey.data.length), gradParameters };
      const m = mha.backward(...args, dy, { ...options, out: mOut });
      assert.equal(m.gradKey.data, mOut.gradKey);
      for (const p of Object.keys(gradParameters)) assert.equal(m.gradParameters[p], gradParameters[p], p);
      sameResults(m, mFresh, 'MultiheadAttention.backward');
      assert.equal(mismatch(m.output, t.output), '', 'the output is PyTorch\'s');
      mha.dispose();
    });

    test('TransformerEncoderLayer.backward fills the kept arrays step after step, as fresh results', () => {
      const { layer, src } = layerCase(xa);
      const names = Object.keys(layer.parameters());
      const gradParameters = Object.fromEntries(names.map((p) => [p, new Float32Array(layer.parameters()[p].data.length)]));
      const out = { gradSrc: new Float32Array(80), gradParameters };
      for (let step = 0; step < 3; step++) {
        const dy = seeded([2, 5, 8], 10 + step);
        const fresh = layer.backward(src, dy, { isCausal: true });
        const f = layer.forward(src, { isCausal: true, saveForBackward: true });
        const r = layer.backward(src, dy, { isCausal: true, saved: f.saved, out });
        assert.equal(r.gradSrc.data, out.gradSrc);
        for (const p of names) assert.equal(r.gradParameters[p], gradParameters[p], p);
        sameResults(r, fresh, `step ${step}`);
      }
      layer.dispose();
    });

    test('a wrong out is refused by name with the result\'s shape, and the instance keeps working', () => {
      refuseWrongOuts(xa);
      const x = seeded([3, 4], 1), w = seeded([5, 4], 2), dy = seeded([3, 5], 4);
      assert.ok(sameBits(xa.linearGrad(x, w, null, dy).gradWeight.data, xa.linearGrad(x, w, null, dy, { out: { gradWeight: new Float32Array(20) } }).gradWeight.data));
    });
  });
}

describe('a backward\'s options.out through a worker', () => {
  test('is refused before anything is sent', async () => {
    const worker = await createXattnWorker({ threads: 1 });
    try {
      const x = seeded([3, 4], 1), w = seeded([5, 4], 2), dy = seeded([3, 5], 4);
      await assert.rejects(worker.layerNormGrad(x, [4], x, { out: { gradInput: new Float32Array(12) } }), {
        name: 'TypeError', message: /^layerNormGrad: options\.out is not available through a worker/,
      });
      const layer = await worker.createTransformerEncoderLayer({ dModel: 8, nhead: 2, dropout: 0 });
      await assert.rejects(layer.backward(seeded([2, 5, 8], 1), seeded([2, 5, 8], 2), { out: { gradSrc: new Float32Array(80) } }), {
        name: 'TypeError', message: /^TransformerEncoderLayer\.backward: options\.out is not available through a worker/,
      });
      const g = await worker.linearGrad(x, w, null, dy);
      assert.equal(g.gradWeight.data.length, 20, 'the worker keeps working');
    } finally {
      await worker.terminate();
    }
  });
});
