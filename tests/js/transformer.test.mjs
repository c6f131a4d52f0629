// createTransformerEncoderLayer, linear and layerNorm against PyTorch (tests/golden/transformer.txt, layers.txt,
// written by make_golden_layers.py) on every build: outputs and every gradient under PyTorch's names; the
// parameter table, loadStateDict from objects and .safetensors bytes under a prefix, dispose; refusals in JS
// names; and the same calls through the Worker entry.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { createXattnWorker } from '../../js/worker-node.js';
import { BUILDS, gradValuesMismatch, loadCases, mask, mismatch, tensor } from './golden.mjs';

const layerCases = loadCases('transformer.txt');
const functional = loadCases('layers.txt');


function layerConfig(c) {
  return {
    dModel: Number(c.opts.d_model), nhead: Number(c.opts.nhead), dimFeedforward: Number(c.opts.dim_feedforward),
    dropout: Number(c.opts.dropout), activation: c.opts.activation, layerNormEps: Number(c.opts.layer_norm_eps),
    batchFirst: c.opts.batch_first === '1', normFirst: c.opts.norm_first === '1',
  };
}

function layerParameters(c) {
  const p = {};
  for (const [name, t] of Object.entries(c.tensors)) if (name.startsWith('param:')) p[name.slice(6)] = Float32Array.from(t.values);
  return p;
}

function layerOptions(c) {
  const o = { isCausal: c.opts.is_causal === '1', training: c.opts.training === '1', seed: Number(c.opts.seed) };
  if (c.tensors.src_mask) o.srcMask = mask(c.tensors.src_mask);
  if (c.tensors.src_key_padding_mask) o.srcKeyPaddingMask = mask(c.tensors.src_key_padding_mask);
  return o;
}

// A .safetensors file of F32 entries, written here (not by the package's reader's code): an 8-byte
// little-endian header length, the JSON header, then the data.
function safetensors(entries) {
  const header = {};
  let offset = 0;
  for (const [name, { data, shape }] of Object.entries(entries)) {
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + 4 * data.length] };
    offset += 4 * data.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const bytes = new Uint8Array(8 + json.length + offset);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(json.length), true);
  bytes.set(new TextEncoder().encode(json), 8);
  let at = 8 + json.length;
  for (const { data } of Object.values(entries)) {
    bytes.set(new Uint8Array(data.buffer, data.byteOffset, 4 * data.length), at);
    at += 4 * data.length;
  }
  return bytes;
}

for (const { options: buildOptions, label } of BUILDS) {
  describe(`TransformerEncoderLayer, linear and layerNorm on the ${label} build`, async () => {
    const xa = await createXattn(buildOptions);

    test(`every TransformerEncoderLayer fixture (${layerCases.length}): output, gradSrc, every parameter's gradient`, () => {
      assert.ok(layerCases.length >= 18);
      for (const c of layerCases) {
        const t = c.tensors;
        const layer = xa.createTransformerEncoderLayer(layerConfig(c));
        layer.setParameters(layerParameters(c));
        const o = layerOptions(c);
        assert.equal(mismatch(layer.forward(tensor(t.src), o).output, t.output), '', `${c.name} forward`);
        const r = layer.backward(tensor(t.src), tensor(t.grad_output), o);
        layer.dispose();
        assert.equal(mismatch(r.output, t.output), '', `${c.name} backward's output`);
        assert.deepEqual(r.gradSrc.shape, t.grad_src.shape, c.name);
        assert.equal(gradValuesMismatch(r.gradSrc.data, t.grad_src), '', `${c.name} gradSrc`);
        const torchNames = Object.keys(t).filter((n) => n.startsWith('grad:')).map((n) => n.slice(5));
        assert.deepEqual(Object.keys(r.gradParameters), torchNames, `${c.name}: names, in PyTorch's order`);
        for (const name of torchNames) assert.equal(gradValuesMismatch(r.gradParameters[name], t[`grad:${name}`]), '', `${c.name} ${name}`);
      }
    });

    test('a forward that saves for its backward: that backward gives the bits of one that runs its own forward, on every fixture', () => {
      const sameBits = (a, b, what) => assert.deepEqual(new Uint32Array(a.buffer, a.byteOffset, a.length), new Uint32Array(b.buffer, b.byteOffset, b.length), what);
      for (const c of layerCases) {
        const t = c.tensors;
        const layer = xa.createTransformerEncoderLayer(layerConfig(c));
        layer.setParameters(layerParameters(c));
        const o = layerOptions(c);
        const whole = layer.backward(tensor(t.src), tensor(t.grad_output), o);
        const f = layer.forward(tensor(t.src), { ...o, saveForBackward: true });
        sameBits(f.output.data, whole.output.data, `${c.name} forward`);
        const r = layer.backward(tensor(t.src), tensor(t.grad_output), { ...o, saved: f.saved });
        sameBits(r.output.data, whole.output.data, `${c.name} output`);
        sameBits(r.gradSrc.data, whole.gradSrc.data, `${c.name} gradSrc`);
        for (const name of Object.keys(whole.gradParameters)) sameBits(r.gradParameters[name], whole.gradParameters[name], `${c.name} ${name}`);
        layer.dispose();
      }
    });

    test('every linear and layerNorm fixture, forward and backward', () => {
      for (const c of functional) {
        const t = c.tensors;
        if (c.op === 'linear') {
          const bias = t.bias ? tensor(t.bias) : undefined;
          assert.equal(mismatch(xa.linear(tensor(t.input), tensor(t.weight), bias).output, t.output), '', c.name);
          const g = xa.linearGrad(tensor(t.input), tensor(t.weight), bias ?? null, tensor(t.grad_output));
          assert.equal(gradValuesMismatch(g.gradInput.data, t.grad_input), '', `${c.name} gradInput`);
          assert.equal(gradValuesMismatch(g.gradWeight.data, t.grad_weight), '', `${c.name} gradWeight`);
          if (bias) assert.equal(gradValuesMismatch(g.gradBias.data, t.grad_bias), '', `${c.name} gradBias`);
          else assert.equal(g.gradBias, undefined);
        } else {
          const ns = c.opts.normalized_shape.split(',').map(Number);
          const o = { eps: Number(c.opts.eps) };
          if (t.weight) o.weight = tensor(t.weight);
          if (t.bias) o.bias = tensor(t.bias);
          assert.equal(mismatch(xa.layerNorm(tensor(t.input), ns, o).output, t.output), '', c.name);
          const g = xa.layerNormGrad(tensor(t.input), ns, tensor(t.grad_output), o);
          assert.equal(gradValuesMismatch(g.gradInput.data, t.grad_input), '', `${c.name} gradInput`);
          for (const [name, key] of [['gradWeight', 'grad_weight'], ['gradBias', 'grad_bias']]) {
            if (t[key]) assert.equal(gradValuesMismatch(g[name].data, t[key]), '', `${c.name} ${name}`);
            else assert.equal(g[name], undefined, `${c.name} ${name}`);
          }
        }
      }
    });
  });
}

describe('TransformerEncoderLayer: parameters, state dicts, lifetime and refusals', async () => {
  const xa = await createXattn();
  const c = layerCases.find((x) => x.name === 'causal_pre_norm_gelu_batch_first');
  const t = c.tensors;

  test("parameters() in PyTorch's order and shapes; loadStateDict from an object, and from .safetensors bytes under a prefix", () => {
    const layer = xa.createTransformerEncoderLayer(layerConfig(c));
    assert.deepEqual(layer.config, { ...layerConfig(c), initSeed: 0 });
    const want = layerParameters(c);
    const names = Object.keys(want);
    assert.deepEqual(Object.keys(layer.parameters()), names);
    // The default initialisation is PyTorch's kind: LayerNorms 1 and 0, linear weights within ±1/sqrt(in).
    const init = layer.parameters();
    assert.ok(init['norm1.weight'].data.every((v) => v === 1) && init['norm2.bias'].data.every((v) => v === 0));
    assert.ok(init['linear2.weight'].data.every((v) => Math.abs(v) <= 1 / Math.sqrt(64)));
    assert.deepEqual(init['linear1.weight'].shape, [64, 16]);

    layer.loadStateDict(Object.fromEntries(names.map((n) => [n, { data: want[n], shape: t[`param:${n}`].shape }])));
    for (const n of names) assert.deepEqual(layer.parameters()[n].data, want[n], n);
    const o = layerOptions(c);
    const expected = layer.forward(tensor(t.src), o).output;
    assert.equal(mismatch(expected, t.output), '');

    // A whole model's file: this layer's entries under 'layers.1.', beside another layer's and an embedding.
    const file = { 'token_embedding.weight': { data: new Float32Array(6), shape: [3, 2] } };
    for (const n of names) {
      file[`layers.0.${n}`] = { data: new Float32Array(want[n].length).fill(0.5), shape: t[`param:${n}`].shape };
      file[`layers.1.${n}`] = { data: want[n], shape: t[`param:${n}`].shape };
    }
    const other = xa.createTransformerEncoderLayer(layerConfig(c));
    other.loadStateDict(safetensors(file), { prefix: 'layers.1.' });
    assert.deepEqual(other.forward(tensor(t.src), o).output.data, expected.data);
    assert.throws(() => other.loadStateDict(safetensors(file), { prefix: 'layers.1' }), {
      name: 'RangeError',
      message: "TransformerEncoderLayer.loadStateDict: the source's entries are under 'layers.1.', not 'layers.1': use { prefix: 'layers.1.' } (a prefix ends with its dot, as in PyTorch's state_dict keys)",
    });
    layer.dispose();
    other.dispose();
  });

  test('refusals name the JS function, the argument and the shapes; the layer keeps working', () => {
    const layer = xa.createTransformerEncoderLayer({ dModel: 8, nhead: 2, dimFeedforward: 12 });
    const src = { data: new Float32Array(5 * 2 * 8), shape: [5, 2, 8] };
    assert.throws(() => layer.forward({ data: new Float32Array(5 * 2 * 7), shape: [5, 2, 7] }), {
      name: 'RangeError', message: "TransformerEncoderLayer.forward: src's last dim 7 != dModel 8 (src (5, 2, 7))",
    });
    assert.throws(() => layer.forward(src, { srcKeyPaddingMask: { data: new Uint8Array(10), shape: [5, 2] } }), {
      name: 'RangeError',
      message: 'TransformerEncoderLayer.forward: srcKeyPaddingMask shape (5, 2) != (2, 5) (N, L) (src (5, 2, 8))',
    });
    assert.throws(() => layer.forward(src, { srcMask: { data: new Float32Array(20), shape: [5, 4] } }), {
      name: 'RangeError',
      message: 'TransformerEncoderLayer.forward: srcMask shape (5, 4) is neither (5, 5) (L, L) nor (4, 5, 5) (N·nhead, L, L) (src (5, 2, 8))',
    });
    assert.throws(() => layer.backward(src, { data: new Float32Array(80), shape: [2, 5, 8] }), {
      name: 'RangeError', message: 'TransformerEncoderLayer.backward: gradOutput shape (2, 5, 8) != src shape (5, 2, 8)',
    });
    assert.throws(() => layer.forward(src, { isCausal: 1 }), { name: 'TypeError', message: 'TransformerEncoderLayer.forward: isCausal must be a boolean, got number' });
    assert.throws(() => xa.createTransformerEncoderLayer({ dModel: 8, nhead: 3 }), {
      name: 'RangeError', message: 'createTransformerEncoderLayer: dModel 8 is not divisible by nhead 3',
    });
    assert.throws(() => xa.createTransformerEncoderLayer({ dModel: 8, nhead: 2, dropout: 1 }), {
      name: 'RangeError', message: 'createTransformerEncoderLayer: dropout must be in [0, 1), got 1',
    });
    assert.throws(() => xa.createTransformerEncoderLayer({ dModel: 8, nhead: 2, activation: 'tanh' }), {
      name: 'TypeError', message: `createTransformerEncoderLayer: activation must be 'relu' or 'gelu', got "tanh"`,
    });
    assert.throws(() => layer.setParameters({ linear1Weight: new Float32Array(96) }), {
      name: 'TypeError', message: /^TransformerEncoderLayer\.setParameters: no parameter 'linear1Weight' in this configuration \(it has self_attn\.in_proj_weight, /,
    });
    assert.throws(() => xa.linear({ data: new Float32Array(6), shape: [2, 3] }, { data: new Float32Array(20), shape: [4, 5] }), {
      name: 'RangeError', message: "linear: input's last dim 3 != weight's in 5 (input (2, 3), weight (4, 5))",
    });
    assert.throws(() => xa.layerNorm({ data: new Float32Array(6), shape: [2, 3] }, [2]), {
      name: 'RangeError', message: "layerNorm: normalizedShape must be input's trailing dims (input (2, 3), normalizedShape (2,))",
    });
    assert.throws(() => xa.layerNorm({ data: new Float32Array(6), shape: [2, 3] }, [3], { eps: -1 }), {
      name: 'RangeError', message: 'layerNorm: eps must be finite and >= 0, got -1',
    });
    assert.equal(layer.forward(src).output.shape.join(), '5,2,8');
    layer.dispose();
  });

  test('a saved forward serves one backward of the same arguments and parameters, and is refused otherwise, naming what differs', () => {
    const layer = xa.createTransformerEncoderLayer(layerConfig(c));
    const twin = xa.createTransformerEncoderLayer(layerConfig(c));
    layer.setParameters(layerParameters(c));
    const o = layerOptions(c);
    const src = tensor(t.src);
    const dy = tensor(t.grad_output);
    const FN = 'TransformerEncoderLayer.backward';
    const differs = (what) => `${FN}: options.saved was kept by a forward with other ${what} than this call's: pass the forward's arguments, and change no parameter between the two`;
    const { saved } = layer.forward(src, { ...o, saveForBackward: true });
    assert.throws(() => twin.backward(src, dy, { ...o, saved }), { name: 'RangeError', message: `${FN}: options.saved was kept by another layer's forward` });
    assert.throws(() => layer.backward(src, dy, { ...o, isCausal: !o.isCausal, saved }), { message: differs('isCausal') });
    assert.throws(() => layer.backward(src, dy, { ...o, seed: 7, saved }), { message: differs('seed') });
    const moved = { data: Float32Array.from(src.data, (v, i) => (i === 3 ? v + 1 : v)), shape: src.shape };
    assert.throws(() => layer.backward(moved, dy, { ...o, saved }), { message: differs('src') });
    const bias = layer.parameters()['linear2.bias'].data;
    layer.setParameters({ 'linear2.bias': bias.map((v) => v + 1) });
    assert.throws(() => layer.backward(src, dy, { ...o, saved }), { message: differs('parameters') });
    layer.setParameters({ 'linear2.bias': bias });
    // Refusals leave it whole: with the forward's arguments and parameters it serves, once.
    const r = layer.backward(src, dy, { ...o, saved });
    assert.equal(gradValuesMismatch(r.gradSrc.data, t.grad_src), '');
    assert.throws(() => layer.backward(src, dy, { ...o, saved }), {
      message: `${FN}: options.saved was used by a backward already, or released: a saving forward serves one backward`,
    });
    assert.throws(() => layer.backward(src, dy, { ...o, saved: {} }), { name: 'TypeError', message: /options\.saved must be the saved of a forward/ });
    assert.throws(() => layer.forward(src, { saveForBackward: 1 }), { name: 'TypeError', message: /saveForBackward/ });
    // dispose() of an unused one, and the layer's dispose, release what they keep; later use is refused.
    const unused = layer.forward(src, { ...o, saveForBackward: true }).saved;
    unused.dispose();
    unused[Symbol.dispose]();
    assert.throws(() => layer.backward(src, dy, { ...o, saved: unused }), { message: /was used by a backward already, or released/ });
    const pending = layer.forward(src, { ...o, saveForBackward: true }).saved;
    layer.dispose();
    twin.dispose();
    assert.throws(() => layer.backward(src, dy, { ...o, saved: pending }), { message: `${FN}: this layer was disposed` });
  });

  test('saved forwards dropped without their backward are released by garbage collection', { skip: typeof globalThis.gc !== 'function' && 'needs --expose-gc' }, async () => {
    const layer = xa.createTransformerEncoderLayer({ dModel: 64, nhead: 4, dimFeedforward: 256 });
    const src = { data: new Float32Array(256 * 64).fill(0.5), shape: [256, 64] };
    const collect = async () => {
      for (let i = 0; i < 3; i++) {
        globalThis.gc();
        await new Promise((done) => setTimeout(done, 10));
      }
    };
    const round = async () => {
      for (let i = 0; i < 10; i++) layer.forward(src, { saveForBackward: true });  // each token dropped at once
      await collect();
    };
    await round();  // sizes the memory for ten kept forwards
    const before = xa.memoryBytes();
    for (let r = 0; r < 20; r++) await round();
    // 200 more kept forwards of several MiB each would need over a GiB: what is collected is reused.
    assert.ok(xa.memoryBytes() - before < 64 * 2 ** 20, `memory grew by ${(xa.memoryBytes() - before) / 2 ** 20} MiB`);
    layer.dispose();
  });

  test('dispose frees the layer: later calls throw, dispose is idempotent, Symbol.dispose is the same', () => {
    const layer = xa.createTransformerEncoderLayer({ dModel: 8, nhead: 2, dimFeedforward: 12 });
    layer.dispose();
    layer.dispose();
    assert.equal(layer[Symbol.dispose], layer.dispose);
    assert.throws(() => layer.forward({ data: new Float32Array(8), shape: [1, 8] }), {
      message: 'TransformerEncoderLayer.forward: this layer was disposed',
    });
    assert.throws(() => layer.parameters(), { message: 'TransformerEncoderLayer.parameters: this layer was disposed' });
  });
});

describe('TransformerEncoderLayer, linear and layerNorm through the Worker entry', async () => {
  const worker = await createXattnWorker();
  after(() => worker.terminate());
  const c = layerCases.find((x) => x.name === 'dropout_training_pre_norm_gelu_causal_batch_first');
  const t = c.tensors;

  test('the same answers as PyTorch, and the same refusals, as Promises', async () => {
    const layer = await worker.createTransformerEncoderLayer(layerConfig(c));
    await layer.loadStateDict(layerParameters(c));
    const o = layerOptions(c);
    assert.equal(mismatch((await layer.forward(tensor(t.src), o)).output, t.output), '');
    const r = await layer.backward(tensor(t.src), tensor(t.grad_output), o);
    assert.equal(gradValuesMismatch(r.gradSrc.data, t.grad_src), '');
    assert.equal(gradValuesMismatch(r.gradParameters['linear1.weight'], t['grad:linear1.weight']), '');
    await assert.rejects(layer.forward(tensor(t.src), { out: new Float32Array(1) }), {
      name: 'TypeError', message: /^TransformerEncoderLayer\.forward: options\.out is not available through a worker/,
    });
    // A saved forward through the worker: a token the page hands back, spent by its backward.
    const f = await layer.forward(tensor(t.src), { ...o, saveForBackward: true });
    const kept = await layer.backward(tensor(t.src), tensor(t.grad_output), { ...o, saved: f.saved });
    assert.deepEqual(kept.gradSrc.data, r.gradSrc.data);
    await assert.rejects(layer.backward(tensor(t.src), tensor(t.grad_output), { ...o, saved: f.saved }), {
      name: 'RangeError', message: /options\.saved was used by a backward already, or released/,
    });
    const unused = await layer.forward(tensor(t.src), { ...o, saveForBackward: true });
    await unused.saved.dispose();
    await assert.rejects(layer.backward(tensor(t.src), tensor(t.grad_output), { ...o, saved: unused.saved }), { message: /used by a backward already, or released/ });
    await layer.dispose();
    await assert.rejects(layer.forward(tensor(t.src)), { message: 'TransformerEncoderLayer.forward: this layer was disposed' });

    const lin = functional.find((x) => x.name === 'linear_past_the_blocks').tensors;
    const got = await worker.linear(tensor(lin.input), tensor(lin.weight), tensor(lin.bias));
    assert.equal(mismatch(got.output, lin.output), '');
    const g = await worker.linearGrad(tensor(lin.input), tensor(lin.weight), tensor(lin.bias), tensor(lin.grad_output));
    assert.equal(gradValuesMismatch(g.gradWeight.data, lin.grad_weight), '');
    const ln = functional.find((x) => x.name === 'layer_norm_two_dims').tensors;
    const normed = await worker.layerNorm(tensor(ln.input), [3, 5], { weight: tensor(ln.weight), bias: tensor(ln.bias) });
    assert.equal(mismatch(normed.output, ln.output), '');
    await assert.rejects(worker.layerNorm(tensor(ln.input), [4]), { name: 'RangeError' });
  });
});
