// Every bad input is refused with a TypeError or RangeError naming the function, the argument and
// the shapes; the instance keeps working afterwards and nothing leaks.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';

const t = (shape, fill = 0.5) => ({ data: new Float32Array(shape.reduce((n, d) => n * d, 1)).fill(fill), shape });

// assert.throws with the error class and every fragment of the message.
function refused(fn, Kind, ...fragments) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof Kind, `expected ${Kind.name}, got ${e?.constructor?.name}: ${e?.message}`);
    for (const f of fragments) assert.ok(e.message.includes(f), `message "${e.message}" lacks "${f}"`);
    return true;
  });
}

describe('scaledDotProductAttention refuses bad input', async () => {
  const xa = await createXattn();
  const sdpa = xa.scaledDotProductAttention;
  const q = t([2, 5, 8]);
  const k = t([2, 7, 8]);
  const v = t([2, 7, 4]);

  test('wrong types where a tensor belongs', () => {
    refused(() => sdpa(null, k, v), TypeError, 'scaledDotProductAttention', 'query');
    refused(() => sdpa({ data: [1, 2], shape: [1, 2] }, k, v), TypeError, 'query.data must be a Float32Array, got Array');
    refused(() => sdpa({ data: new Float64Array(80), shape: [2, 5, 8] }, k, v), TypeError, 'query.data', 'Float64Array');
    refused(() => sdpa(q, { data: new Float32Array(112), shape: '2,7,8' }, v), TypeError, 'key.shape must be an Array');
  });

  test('non-integer, negative, NaN and huge dims', () => {
    refused(() => sdpa({ data: new Float32Array(4), shape: [2, 2.5] }, k, v), RangeError, 'query.shape[1]', '2.5');
    refused(() => sdpa({ data: new Float32Array(4), shape: [-2, -2] }, k, v), RangeError, 'query.shape[0]', '-2');
    refused(() => sdpa({ data: new Float32Array(4), shape: [NaN, 4] }, k, v), RangeError, 'query.shape[0]');
    refused(() => sdpa({ data: new Float32Array(4), shape: [2 ** 40, 4] }, k, v), RangeError, 'query.shape[0]');
    refused(() => sdpa({ data: new Float32Array(4), shape: ['2', 2] }, k, v), RangeError, 'query.shape[0]');
  });

  test('data length != product of shape', () => {
    refused(() => sdpa({ data: new Float32Array(79), shape: [2, 5, 8] }, k, v), RangeError,
      'query has 79 values but its shape (2, 5, 8) needs 80');
  });

  test('every semantic error of the core, in camelCase', () => {
    refused(() => sdpa(t([5]), k, v), RangeError, 'scaledDotProductAttention: query must have at least 2 dims', '(5,)');
    refused(() => sdpa(q, t([2, 7, 6]), v), RangeError, 'key last dim 6 != query last dim 8', 'key (2, 7, 6)');
    refused(() => sdpa(q, k, t([2, 6, 4])), RangeError, 'value dim -2 6 != key dim -2 7');
    refused(() => sdpa(q, t([3, 7, 8]), t([3, 7, 4])), RangeError, 'key leading dims (3,) != query leading dims (2,)');
    refused(() => sdpa(q, k, v, { attnMask: { data: new Uint8Array(21), shape: [3, 7] } }), RangeError,
      'attnMask shape (3, 7) does not broadcast to the weights\' shape (2, 5, 7)');
    refused(() => sdpa(q, k, v, { attnMask: { data: new Uint8Array(35), shape: [5, 7] }, isCausal: true }), RangeError,
      'attnMask and isCausal cannot both be set');
    for (const p of [1, -0.1, NaN]) refused(() => sdpa(q, k, v, { dropoutP: p }), RangeError, 'dropoutP must be in [0, 1)');
    for (const s of [0, Infinity, NaN]) refused(() => sdpa(q, k, v, { scale: s }), RangeError, 'scale must be finite and non-zero');
    refused(() => sdpa(t([1, 6, 4, 8]), t([1, 4, 4, 8]), t([1, 4, 4, 8]), { enableGqa: true }), RangeError,
      'enableGqa: query heads 6 (dim -3) are not a multiple of key/value heads 4');
  });

  test('wrong option types and unknown options are not coerced', () => {
    refused(() => sdpa(q, k, v, { isCausal: 1 }), TypeError, 'isCausal must be a boolean, got number');
    refused(() => sdpa(q, k, v, { needWeights: 'yes' }), TypeError, 'needWeights must be a boolean');
    refused(() => sdpa(q, k, v, { scale: '0.5' }), TypeError, 'scale must be a number, got string');
    refused(() => sdpa(q, k, v, { seed: 1.5 }), RangeError, 'seed must be an integer');
    refused(() => sdpa(q, k, v, { seed: -1 }), RangeError, 'seed must be an integer');
    refused(() => sdpa(q, k, v, { isCasual: true }), TypeError, "unknown option 'isCasual'");
    refused(() => sdpa(q, k, v, { causalAlignment: 'bottom' }), TypeError, 'causalAlignment');
    refused(() => sdpa(q, k, v, { attnMask: { data: new Int32Array(35), shape: [5, 7] } }), TypeError,
      'attnMask.data must be a Uint8Array (boolean) or a Float32Array');
    refused(() => sdpa(q, k, v, 'causal'), TypeError, 'options must be an object');
  });

  test('sizes too big for wasm memory are refused before allocating, with the bytes they need', () => {
    const before = xa.memoryBytes();
    const big = { data: new Float32Array(64 * 8192), shape: [64, 8192, 1] };
    refused(() => sdpa(big, big, big, { needWeights: true }), RangeError,
      'weights of shape (64, 8192, 8192) needs 17179869184 bytes');
    assert.equal(xa.memoryBytes(), before);
  });

  test('a detached buffer is refused clearly', () => {
    const data = new Float32Array(80);
    structuredClone(data.buffer, { transfer: [data.buffer] });
    refused(() => sdpa({ data, shape: [2, 5, 8] }, k, v), TypeError, 'query.data is backed by a detached ArrayBuffer');
  });

  test('the instance keeps working after every refusal', () => {
    const r = sdpa(q, k, v, { needWeights: true });
    assert.deepEqual(r.output.shape, [2, 5, 4]);
    assert.ok(Math.abs(r.weights.data[0] - 1 / 7) < 1e-6);
  });
});

describe('createMultiheadAttention and MultiheadAttention refuse bad input', async () => {
  const xa = await createXattn({ simd: false });

  test('bad configurations', () => {
    refused(() => xa.createMultiheadAttention(), TypeError, 'createMultiheadAttention', 'config');
    refused(() => xa.createMultiheadAttention({ embedDim: 10, numHeads: 3 }), RangeError,
      'createMultiheadAttention: embedDim 10 is not divisible by numHeads 3');
    refused(() => xa.createMultiheadAttention({ embedDim: 0, numHeads: 1 }), RangeError, 'embedDim must be an integer');
    refused(() => xa.createMultiheadAttention({ embedDim: 8.5, numHeads: 1 }), RangeError, 'embedDim');
    refused(() => xa.createMultiheadAttention({ embedDim: '8', numHeads: 2 }), TypeError, 'embedDim must be a number');
    refused(() => xa.createMultiheadAttention({ embedDim: 8, numHeads: 2, batchFirst: 1 }), TypeError, 'batchFirst must be a boolean');
    refused(() => xa.createMultiheadAttention({ embedDim: 8, numHeads: 2, dropoutP: 0.1 }), TypeError, "unknown config field 'dropoutP'");
    refused(() => xa.createMultiheadAttention({ embedDim: 8, numHeads: 2, dropout: 1 }), RangeError,
      'createMultiheadAttention: dropout must be in [0, 1), got 1');
    refused(() => xa.createMultiheadAttention({ embedDim: 8, numHeads: 2, dropout: '0.1' }), TypeError, 'dropout must be a number');
    refused(() => xa.createMultiheadAttention({ embedDim: 2 ** 20, numHeads: 2 }), RangeError, 'bytes');
  });

  test('wrong parameters change nothing', () => {
    const mha = xa.createMultiheadAttention({ embedDim: 8, numHeads: 2 });
    const x = t([3, 2, 8], 0.25);
    const before = mha.forward(x, x, x).output.data;
    refused(() => mha.setParameters({ 'out_proj.bias': new Float32Array(8).fill(1), in_proj_weight: new Float32Array(5) }),
      RangeError, 'MultiheadAttention.setParameters: in_proj_weight needs 192 values for shape (24, 8), got 5');
    refused(() => mha.setParameters({ q_proj_weight: new Float32Array(64) }), TypeError, "no parameter 'q_proj_weight'", 'in_proj_weight');
    refused(() => mha.setParameters({ in_proj_weight: new Float64Array(192) }), TypeError, 'in_proj_weight must be a Float32Array');
    refused(() => mha.setParameters({ inProjWeight: new Float32Array(192) }), TypeError,
      "no parameter 'inProjWeight' in this configuration (parameters are named as PyTorch names them: did you mean 'in_proj_weight'?)");
    assert.deepEqual(mha.forward(x, x, x).output.data, before);
    mha.dispose();
  });

  test('bad forward inputs and masks', () => {
    const mha = xa.createMultiheadAttention({ embedDim: 8, numHeads: 2, kdim: 5, vdim: 3 });
    refused(() => mha.forward(t([4, 2, 6]), t([3, 2, 5]), t([3, 2, 3])), RangeError,
      'MultiheadAttention.forward: query embedding size 6 != embedDim 8', 'query (4, 2, 6)');
    refused(() => mha.forward(t([4, 2, 8]), t([3, 2, 8]), t([3, 2, 3])), RangeError, 'key embedding size 8 != kdim 5');
    refused(() => mha.forward(t([1, 4, 2, 8]), t([1, 3, 2, 5]), t([1, 3, 2, 3])), RangeError, 'query must be 3-D');
    refused(() => mha.forward(t([4, 2, 8]), t([3, 2, 5]), t([3, 2, 3]), { keyPaddingMask: { data: new Uint8Array(4), shape: [2, 2] } }),
      RangeError, 'keyPaddingMask shape (2, 2) != (2, 3) (N, S)');
    refused(() => mha.forward(t([4, 2, 8]), t([3, 2, 5]), t([3, 2, 3]), { attnMask: { data: new Float32Array(9), shape: [3, 3] } }),
      RangeError, 'attnMask shape (3, 3) is neither (4, 3) (L, S) nor (4, 4, 3)');
    refused(() => mha.forward(t([4, 2, 8]), t([3, 2, 5]), t([3, 2, 3]), { averageAttnWeights: 0 }), TypeError, 'averageAttnWeights must be a boolean');
    const ok = mha.forward(t([4, 2, 8]), t([3, 2, 5]), t([3, 2, 3]));
    assert.deepEqual(ok.output.shape, [4, 2, 8]);
    assert.deepEqual(ok.weights.shape, [2, 4, 3]);
    mha.dispose();
  });

  test('a disposed module refuses further calls', () => {
    const mha = xa.createMultiheadAttention({ embedDim: 4, numHeads: 1 });
    mha.dispose();
    mha.dispose();  // twice is harmless
    assert.throws(() => mha.forward(t([2, 4]), t([2, 4]), t([2, 4])), /disposed/);
    assert.throws(() => mha.setParameters({ 'out_proj.bias': new Float32Array(4) }), /disposed/);
  });

  test('createXattn refuses unknown options', async () => {
    await assert.rejects(createXattn({ simd: 'yes' }), TypeError);
    await assert.rejects(createXattn({ thread: 2 }), /unknown option 'thread' \(known: simd, threads, relaxedSimd, spinMicroseconds, wasmPaths\)/);
    await assert.rejects(createXattn({ relaxedSimd: 1 }),
      (e) => e instanceof TypeError && e.message === 'createXattn: options.relaxedSimd must be a boolean, got number');
    await assert.rejects(createXattn({ simd: false, relaxedSimd: true }),
      /^Error: createXattn: relaxedSimd: true needs the SIMD build \(relaxed SIMD extends it\), but simd is off$/);
    await assert.rejects(createXattn({ threads: '2' }), (e) => e instanceof TypeError && /options.threads must be a number, got string/.test(e.message));
    for (const bad of [0, 5, 1.5, NaN]) {
      await assert.rejects(createXattn({ threads: bad }),
        (e) => e instanceof RangeError && e.message === `createXattn: options.threads must be an integer from 1 to 4, got ${bad}`);
    }
    await assert.rejects(createXattn({ simd: false, threads: 2 }),
      /^Error: createXattn: threads: 2 needs the SIMD build \(the threaded build is SIMD only\), but simd is off$/);
    await assert.rejects(createXattn({ spinMicroseconds: '200' }),
      (e) => e instanceof TypeError && e.message === 'createXattn: options.spinMicroseconds must be a number, got string');
    for (const bad of [-1, 1_000_001, 2.5, NaN, Infinity]) {
      await assert.rejects(createXattn({ spinMicroseconds: bad }), (e) => e instanceof RangeError &&
        e.message === `createXattn: options.spinMicroseconds must be an integer from 0 to 1000000, got ${bad}`);
    }
  });
});
