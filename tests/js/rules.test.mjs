// The rules beside the mask (softcap, window, ALiBi, key lengths, where rows sit, the scores' stage), rotary
// embeddings and the KV cache's rolling ring and per-element lengths, through the JS API on every build, against
// the float64 fixtures of tests/golden/make_golden_rules.py (PyTorch, and ONNX's semantics written in torch).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import {
  BUILDS, gradMismatch, loadCases, mask, mhaConfig, mhaParameters, mismatch, tensor, withRules,
} from './golden.mjs';

const sdpaCases = loadCases('sdpa_rules.txt');
const gradCases = loadCases('sdpa_rules_grad.txt');
const mhaCases = loadCases('mha_rules.txt');
const rotaryCases = loadCases('rotary.txt');
const kvCases = loadCases('kv_rules.txt');

function sdpaOptions(c, forward) {
  const o = withRules(c, {
    isCausal: c.opts.is_causal === '1', enableGqa: c.opts.enable_gqa === '1',
  });
  if (forward) o.needWeights = c.opts.need_weights === '1';
  else delete o.returnScores;
  if (c.opts.scale !== undefined) o.scale = Number(c.opts.scale);
  if (c.opts.dropout_p !== undefined) o.dropoutP = Number(c.opts.dropout_p);
  if (c.opts.seed !== undefined) o.seed = Number(c.opts.seed);
  if (c.tensors.attn_mask) o.attnMask = mask(c.tensors.attn_mask);
  return o;
}

function mhaOptions(c) {
  const o = withRules(c, { isCausal: c.opts.is_causal === '1' });
  if (c.tensors.key_padding_mask) o.keyPaddingMask = mask(c.tensors.key_padding_mask);
  if (c.tensors.attn_mask) o.attnMask = mask(c.tensors.attn_mask);
  return o;
}

function rotaryOptions(c) {
  const o = { base: Number(c.opts.base), rotaryDim: Number(c.opts.rotary_dim), interleaved: c.opts.interleaved === '1' };
  if (c.tensors.positions) o.positions = Int32Array.from(c.tensors.positions.values);
  else o.positionOffset = Number(c.opts.position_offset ?? 0);
  return o;
}

// A scenario's cache: created, appended to and truncated as its steps say.
function replay(xa, c, dtype = 'float32') {
  const config = {
    batch: Number(c.opts.batch), kvHeads: Number(c.opts.kv_heads), headDim: Number(c.opts.head_dim),
    valueDim: Number(c.opts.value_dim), capacity: Number(c.opts.capacity), rolling: c.opts.rolling === '1', dtype,
  };
  if (c.opts.rotary_base !== undefined) {
    config.rotary = { base: Number(c.opts.rotary_base), rotaryDim: Number(c.opts.rotary_dim), interleaved: c.opts.rotary_interleaved === '1' };
  }
  const cache = xa.createKvCache(config);
  for (let i = 0; i < Number(c.opts.steps); i++) {
    const t = c.tensors;
    if (t[`step${i}_truncate`]) {
      cache.truncate(t[`step${i}_truncate`].values);
      continue;
    }
    const counts = t[`step${i}_counts`] ? { counts: Int32Array.from(t[`step${i}_counts`].values) } : undefined;
    cache.append(tensor(t[`step${i}_key`]), tensor(t[`step${i}_value`]), counts);
  }
  return cache;
}

function attendOptions(c) {
  const o = withRules(c, { isCausal: c.opts.is_causal === '1', needWeights: true });
  delete o.causalAlignment;  // attend's rows are each element's last ones
  if (c.tensors.attn_mask) o.attnMask = mask(c.tensors.attn_mask);
  return o;
}

for (const { options: buildOptions, label } of BUILDS) {
  describe(`the rules on the ${label} build match the float64 fixtures`, async () => {
    const xa = await createXattn(buildOptions);

    test(`every scaledDotProductAttention rules fixture (${sdpaCases.length}): output, weights, scores`, () => {
      assert.ok(sdpaCases.length >= 25);
      for (const c of sdpaCases) {
        const t = c.tensors;
        const r = xa.scaledDotProductAttention(tensor(t.query), tensor(t.key), tensor(t.value), sdpaOptions(c, true));
        assert.equal(mismatch(r.output, t.output), '', `${c.name} output`);
        if (t.weights) assert.equal(mismatch(r.weights, t.weights), '', `${c.name} weights`);
        if (t.scores) assert.equal(mismatch(r.scores, t.scores), '', `${c.name} scores`);
        else assert.equal(r.scores, undefined, `${c.name}: no scores unless asked for`);
      }
    });

    test(`every scaledDotProductAttentionGrad rules fixture (${gradCases.length})`, () => {
      assert.ok(gradCases.length >= 13);
      for (const c of gradCases) {
        const t = c.tensors;
        const r = xa.scaledDotProductAttentionGrad(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output),
          sdpaOptions(c, false));
        for (const [got, want, name] of [[r.output, t.output, 'output'], [r.gradQuery, t.grad_query, 'gradQuery'],
          [r.gradKey, t.grad_key, 'gradKey'], [r.gradValue, t.grad_value, 'gradValue']]) {
          assert.equal(gradMismatch(got, want), '', `${c.name} ${name}`);
        }
      }
    });

    test(`every MultiheadAttention rules fixture (${mhaCases.length}): forward and backward`, () => {
      for (const c of mhaCases) {
        const t = c.tensors;
        const m = xa.createMultiheadAttention(mhaConfig(c));
        try {
          m.setParameters(mhaParameters(c));
          const f = m.forward(tensor(t.query), tensor(t.key), tensor(t.value), mhaOptions(c));
          assert.equal(mismatch(f.output, t.output), '', `${c.name} output`);
          assert.equal(mismatch(f.weights, t.weights), '', `${c.name} weights`);
          const b = m.backward(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output), mhaOptions(c));
          for (const [got, want, name] of [[b.output, t.output, 'output'], [b.gradQuery, t.grad_query, 'gradQuery'],
            [b.gradKey, t.grad_key, 'gradKey'], [b.gradValue, t.grad_value, 'gradValue']]) {
            assert.equal(gradMismatch(got, want), '', `${c.name} ${name}`);
          }
          for (const name of Object.keys(t).filter((n) => n.startsWith('grad:'))) {
            const got = { data: b.gradParameters[name.slice(5)], shape: t[name].shape };
            assert.equal(gradMismatch(got, t[name]), '', `${c.name} ${name}`);
          }
        } finally {
          m.dispose();
        }
      }
    });

    test(`every rotary fixture (${rotaryCases.length}): forward and backward`, () => {
      for (const c of rotaryCases) {
        const t = c.tensors;
        const y = xa.applyRotaryEmbedding(tensor(t.x), rotaryOptions(c));
        assert.equal(mismatch(y, t.output), '', `${c.name} output`);
        const g = xa.applyRotaryEmbeddingGrad(tensor(t.grad_output), rotaryOptions(c));
        assert.equal(mismatch(g, t.grad_x), '', `${c.name} grad_x`);
      }
    });

    test(`every KV cache scenario (${kvCases.length}): rolling, per-element counts and truncation, rotary keys`, () => {
      for (const c of kvCases) {
        const t = c.tensors;
        const cache = replay(xa, c);
        try {
          assert.deepEqual([...cache.lengths], t.lengths.values, `${c.name} lengths`);
          assert.equal(cache.length, Math.max(...t.lengths.values));
          assert.equal(mismatch(cache.keys(), t.keys), '', `${c.name} keys, turned by their positions`);
          const r = cache.attend(tensor(t.query), attendOptions(c));
          assert.equal(mismatch(r.output, t.output), '', `${c.name} output`);
          assert.equal(mismatch(r.weights, t.weights), '', `${c.name} weights`);
        } finally {
          cache.dispose();
        }
      }
    });
  });
}

describe('the rules, rotary embeddings, float16 I/O and the cache options are checked', async () => {
  const xa = await createXattn();
  const t = (shape, f = (i) => Math.sin(i * 0.31)) => {
    const data = new Float32Array(shape.reduce((n, d) => n * d, 1));
    data.forEach((_, i) => { data[i] = f(i); });
    return { data, shape };
  };
  const x = t([2, 3, 4, 8]);
  const sdpa = (o) => xa.scaledDotProductAttention(x, x, x, o);
  const refused = (call, Kind, message) => assert.throws(call, (e) => {
    assert.ok(e instanceof Kind, `${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.message, message);
    return true;
  });

  test('refusals name the option and the numbers', () => {
    refused(() => sdpa({ softcap: -1 }), RangeError,
      'scaledDotProductAttention: softcap must be 0 (none) or a positive number finite and non-zero as a float32, got -1');
    refused(() => sdpa({ window: { left: -2 } }), RangeError,
      'scaledDotProductAttention: window.left must be an integer in [-1, 2147483647], got -2');
    refused(() => sdpa({ window: { up: 1 } }), TypeError, "scaledDotProductAttention: unknown window field 'up' (known: left, right)");
    refused(() => sdpa({ alibiSlopes: [1, 2] }), RangeError,
      'scaledDotProductAttention: alibiSlopes has 2 values, expected one per query head: Hq = 3 (query dim -3 of (2, 3, 4, 8))');
    refused(() => sdpa({ alibiSlopes: [1, 2, Infinity] }), RangeError, 'scaledDotProductAttention: alibiSlopes[2] must be finite, got Infinity');
    refused(() => sdpa({ keyLengths: [1] }), RangeError,
      'scaledDotProductAttention: keyLengths has 1 values, expected one per batch element: B = 2 (the query dims before -3 of (2, 3, 4, 8))');
    refused(() => sdpa({ keyLengths: [1, 5] }), RangeError, 'scaledDotProductAttention: keyLengths[1] = 5 is outside [0, S] = [0, 4]');
    refused(() => sdpa({ keyLengths: [1, 0.5] }), RangeError,
      'scaledDotProductAttention: keyLengths[1] must be an integer in [0, 2147483647], got 0.5');
    refused(() => sdpa({ returnScores: 'raw' }), TypeError,
      "scaledDotProductAttention: returnScores must be 'scaled', 'softcapped' or 'biased', got \"raw\"");
    refused(() => xa.scaledDotProductAttentionGrad(x, x, x, x, { returnScores: 'scaled' }), TypeError,
      "scaledDotProductAttentionGrad: unknown option 'returnScores' (known: attnMask, isCausal, causalAlignment, scale, dropoutP, seed, enableGqa, needWeights, softcap, window, alibiSlopes, keyLengths, out)");
    const h = { data: new Uint16Array(x.data.length), shape: x.shape };
    refused(() => xa.scaledDotProductAttention(h, x, h), TypeError,
      "scaledDotProductAttention: key.data must be a Uint16Array like query's (float16 calls take every tensor as halves), got Float32Array");
    refused(() => xa.applyRotaryEmbedding(x, { rotaryDim: 5 }), RangeError,
      'applyRotaryEmbedding: rotaryDim must be even and at most D = 8 (0 = D), got 5 for x of shape (2, 3, 4, 8)');
    refused(() => xa.applyRotaryEmbedding(x, { positions: [1, 2, 3] }), RangeError,
      'applyRotaryEmbedding: positions has 3 values, expected L = 4 or B·L = 8 (B: the dims before -3 of (2, 3, 4, 8))');
    refused(() => xa.applyRotaryEmbedding(x, { positions: [1, 2, 3, 4], positionOffset: 2 }), TypeError,
      'applyRotaryEmbedding: give positions or positionOffset, not both');
    const cache = xa.createKvCache({ batch: 2, kvHeads: 3, headDim: 8, capacity: 3 });
    refused(() => cache.append(x, x), RangeError,
      'KvCache.append: 4 positions do not fit: the cache holds 0 of its capacity 3; nothing was appended (key (2, 3, 4, 8), value (2, 3, 4, 8))');
    refused(() => cache.append(x, x, { counts: [2, 4] }), RangeError,
      'KvCache.append: 4 positions do not fit: element 1 holds 0 of its capacity 3; nothing was appended (key (2, 3, 4, 8), value (2, 3, 4, 8))');
    refused(() => cache.append(x, x, { counts: [2] }), RangeError,
      'KvCache.append: counts has 1 values, expected one per batch element: B = 2');
    assert.deepEqual([...cache.lengths], [0, 0]);
    cache.dispose();
  });

  test('float16 calls compute in float32 and round each result once', () => {
    const toHalf = (f) => {  // nearest even, through a Float32Array's bits (normal values only here)
      const b = new Uint32Array(new Float32Array([f]).buffer)[0];
      const sign = (b >>> 16) & 0x8000;
      const exp = ((b >>> 23) & 0xff) - 127 + 15;
      if (exp <= 0) return sign;
      let m = b & 0x7fffff;
      let h = sign | (exp << 10) | (m >>> 13);
      const rest = m & 0x1fff;
      if (rest > 0x1000 || (rest === 0x1000 && (h & 1))) h += 1;
      return h;
    };
    const fromHalf = (h) => {
      const exp = (h >>> 10) & 0x1f;
      const m = h & 0x3ff;
      const v = exp === 0 ? m * 2 ** -24 : (1 + m / 1024) * 2 ** (exp - 15);
      return h & 0x8000 ? -v : v;
    };
    const halves = { data: Uint16Array.from(x.data, toHalf), shape: x.shape };
    const widened = { data: Float32Array.from(halves.data, fromHalf), shape: x.shape };
    const o = { isCausal: true, window: { left: 1 }, needWeights: true };
    const got = xa.scaledDotProductAttention(halves, halves, halves, o);
    const want = xa.scaledDotProductAttention(widened, widened, widened, o);
    assert.ok(got.output.data instanceof Uint16Array && got.weights.data instanceof Uint16Array);
    assert.deepEqual([...got.output.data], [...want.output.data].map(toHalf));
    assert.deepEqual([...got.weights.data], [...want.weights.data].map(toHalf));
    const rot = xa.applyRotaryEmbedding(halves, { positionOffset: 7 });
    assert.deepEqual([...rot.data], [...xa.applyRotaryEmbedding(widened, { positionOffset: 7 }).data].map(toHalf));
    if (typeof Float16Array === 'function') {
      const f16 = { data: new Float16Array(widened.data), shape: x.shape };
      const r = xa.scaledDotProductAttention(f16, f16, f16, o);
      assert.ok(r.output.data instanceof Float16Array);
      assert.deepEqual([...new Uint16Array(r.output.data.buffer)], [...got.output.data]);
    }
  });

  test('a rolling cache keeps the last capacity positions; positions keep counting', () => {
    const cache = xa.createKvCache({ kvHeads: 1, headDim: 2, capacity: 3, rolling: true });
    const row = (p) => ({ data: new Float32Array([p, -p]), shape: [1, 1, 1, 2] });
    for (let p = 0; p < 5; p++) cache.append(row(p), row(p));
    assert.deepEqual([...cache.lengths], [3]);
    assert.deepEqual([...cache.positions], [5]);
    assert.deepEqual([...cache.keys().data], [2, -2, 3, -3, 4, -4]);
    cache.truncate(4);  // back to positions 0…3: the ring holds 2 and 3
    assert.deepEqual([...cache.keys().data], [2, -2, 3, -3]);
    refused(() => cache.truncate(1), RangeError,
      'KvCache.truncate: lengths[0] = 1 is before position 2, the oldest this rolling cache still holds for element 0');
    cache.dispose();
  });
});
