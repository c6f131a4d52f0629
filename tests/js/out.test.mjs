// options.out: scaledDotProductAttention, MultiheadAttention.forward and KvCache.attend write their output into
// the caller's Float32Array instead of a fresh one (no new array, no new pages to fault in), and hand that array
// back as output.data. The values are the same bits a fresh result holds; a refused out changes nothing.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { createXattnWorker } from '../../js/worker-node.js';
import { createTestingXattn } from './testing-build.mjs';
import { randomTensor as seeded, sameBits } from './test-data.mjs';
import { loadCases, mhaConfig, mhaOptions, mhaParameters, mismatch, sdpaOptions, tensor } from './golden.mjs';

const lesson = loadCases('sdpa.txt').find((c) => c.name === 'lesson_example_4x10x64');
const mhaCase = loadCases('mha.txt')[0];

// Every kind of wrong out, each refused by name with the output's shape; a refused out is not written.
function refuseWrongOuts(xa) {
  const q = seeded([1, 2, 3, 4], 4), k = seeded([1, 2, 5, 4], 5), v = seeded([1, 2, 5, 6], 6);
  const short = new Float32Array(35).fill(9);
  assert.throws(() => xa.scaledDotProductAttention(q, k, v, { out: short }), {
    name: 'RangeError', message: 'scaledDotProductAttention: out has 35 values but the output (1, 2, 3, 6) needs 36',
  });
  assert.ok(short.every((x) => x === 9), 'a refused out is not written');
  assert.throws(() => xa.scaledDotProductAttention(q, k, v, { out: new Float64Array(36) }), {
    name: 'TypeError', message: 'scaledDotProductAttention: out must be a Float32Array, got Float64Array',
  });
  assert.throws(() => xa.scaledDotProductAttention(q, k, v, { out: new Float32Array(new SharedArrayBuffer(144)) }), {
    name: 'TypeError', message: /^scaledDotProductAttention: out must be over an ArrayBuffer, not a SharedArrayBuffer/,
  });
  const gone = new Float32Array(36);
  structuredClone(gone.buffer, { transfer: [gone.buffer] });
  assert.throws(() => xa.scaledDotProductAttention(q, k, v, { out: gone }), {
    name: 'TypeError', message: 'scaledDotProductAttention: out is backed by a detached ArrayBuffer',
  });
  assert.throws(() => xa.scaledDotProductAttentionGrad(q, k, v, seeded([1, 2, 3, 6], 7), { out: new Float32Array(36) }), {
    name: 'TypeError', message: /^scaledDotProductAttentionGrad: out must be an object of arrays by result \(output, gradQuery, gradKey, gradValue\)/,
  });  // a backward's out: tests/js/out-backward.test.mjs
  const cache = xa.createKvCache({ kvHeads: 2, headDim: 4, valueDim: 6, capacity: 8 });
  cache.append(k, v);
  assert.throws(() => cache.attend(q, { out: new Float32Array(37) }), {
    name: 'RangeError', message: 'KvCache.attend: out has 37 values but the output (1, 2, 3, 6) needs 36',
  });
  assert.equal(cache.length, 5, 'the cache keeps what it held');
  cache.dispose();
}

describe('options.out refused on the testing build', () => {
  test('refused outs hold nothing in the heap', async () => {
    const { xa, testing } = await createTestingXattn();
    const heap = testing.heapInUse();
    refuseWrongOuts(xa);
    assert.equal(testing.heapInUse(), heap, 'refused calls hold nothing');
    xa.dispose();
  });
});

for (const threads of [1, 2]) {
  describe(`options.out on the ${threads === 1 ? 'SIMD' : 'threaded SIMD'} build`, async () => {
    const xa = await createXattn({ simd: true, relaxedSimd: false, threads });
    const [query, key, value] = ['query', 'key', 'value'].map((n) => tensor(lesson.tensors[n]));

    test('scaledDotProductAttention fills out, returns it, and matches PyTorch and a fresh result bit for bit', () => {
      const fresh = xa.scaledDotProductAttention(query, key, value, sdpaOptions(lesson));
      const out = new Float32Array(fresh.output.data.length).fill(Number.NaN);
      const r = xa.scaledDotProductAttention(query, key, value, { ...sdpaOptions(lesson), out });
      assert.equal(r.output.data, out, 'output.data is the caller\'s array');
      assert.deepEqual(r.output.shape, fresh.output.shape);
      assert.ok(sameBits(out, fresh.output.data), 'the same bits as a fresh result');
      assert.equal(mismatch(r.output, lesson.tensors.output), '');
      assert.equal(mismatch(r.weights, lesson.tensors.weights), '', 'the weights still come as a fresh array');
      assert.notEqual(r.weights.data.buffer, out.buffer);
    });

    test('out may be a subarray, and may be the query\'s own array (inputs are copied in before the run)', () => {
      const q = seeded([2, 3, 5, 8], 1), k = seeded([2, 3, 7, 8], 2), v = seeded([2, 3, 7, 8], 3);
      const fresh = xa.scaledDotProductAttention(q, k, v).output.data;
      const big = new Float32Array(fresh.length + 9).fill(5);
      const view = big.subarray(4, 4 + fresh.length);
      assert.equal(xa.scaledDotProductAttention(q, k, v, { out: view }).output.data, view);
      assert.ok(sameBits(view, fresh));
      assert.deepEqual([...big.subarray(0, 4), ...big.subarray(4 + fresh.length)], new Array(9).fill(5), 'nothing outside the view is written');
      const own = { data: q.data.slice(), shape: q.shape };
      assert.equal(xa.scaledDotProductAttention(own, k, v, { out: own.data }).output.data, own.data);
      assert.ok(sameBits(own.data, fresh));
    });

    test('MultiheadAttention.forward fills out with what PyTorch gives', () => {
      const mha = xa.createMultiheadAttention(mhaConfig(mhaCase));
      mha.setParameters(mhaParameters(mhaCase));
      const args = ['query', 'key', 'value'].map((n) => tensor(mhaCase.tensors[n]));
      const fresh = mha.forward(...args, mhaOptions(mhaCase));
      const out = new Float32Array(fresh.output.data.length).fill(Number.NaN);
      const r = mha.forward(...args, { ...mhaOptions(mhaCase), out });
      assert.equal(r.output.data, out);
      assert.ok(sameBits(out, fresh.output.data));
      assert.equal(mismatch(r.output, mhaCase.tensors.output), '');
      assert.throws(() => mha.backward(...args, fresh.output, { out }), {
        name: 'TypeError', message: /^MultiheadAttention\.backward: out must be an object of arrays by result/,
      });
      mha.dispose();
    });

    test('KvCache.attend fills out, step after step, as a fresh result', () => {
      const cache = xa.createKvCache({ kvHeads: 2, headDim: 8, capacity: 16 });
      const out = new Float32Array(4 * 8);
      for (let step = 0; step < 5; step++) {
        cache.append(seeded([1, 2, 1, 8], 10 + step), seeded([1, 2, 1, 8], 20 + step));
        const q = seeded([1, 4, 1, 8], 30 + step);
        const fresh = cache.attend(q).output.data;
        assert.equal(cache.attend(q, { out }).output.data, out);
        assert.ok(sameBits(out, fresh), `step ${step}`);
      }
      cache.dispose();
    });

    test('a wrong out is refused by name, with the output\'s shape, and changes nothing', () => {
      refuseWrongOuts(xa);
      const q = seeded([1, 2, 3, 4], 4), k = seeded([1, 2, 5, 4], 5), v = seeded([1, 2, 5, 6], 6);
      const out = new Float32Array(36);
      assert.ok(sameBits(xa.scaledDotProductAttention(q, k, v, { out }).output.data, xa.scaledDotProductAttention(q, k, v).output.data),
        'the instance keeps working');
    });
  });
}

describe('options.out through a worker', async () => {
  test('is refused before anything is sent: the worker cannot write into this thread\'s arrays', async () => {
    const worker = await createXattnWorker({ threads: 1 });
    try {
      const [query, key, value] = ['query', 'key', 'value'].map((n) => tensor(lesson.tensors[n]));
      const out = new Float32Array(4 * 10 * 64);
      await assert.rejects(worker.scaledDotProductAttention(query, key, value, { out }), {
        name: 'TypeError', message: /^scaledDotProductAttention: options\.out is not available through a worker/,
      });
      const cache = await worker.createKvCache({ kvHeads: 1, headDim: 4, capacity: 4 });
      await cache.append(seeded([1, 1, 1, 4], 1), seeded([1, 1, 1, 4], 2));
      await assert.rejects(cache.attend(seeded([1, 1, 1, 4], 3), { out: new Float32Array(4) }), {
        name: 'TypeError', message: /^KvCache\.attend: options\.out is not available through a worker/,
      });
      const r = await worker.scaledDotProductAttention(query, key, value, sdpaOptions(lesson));
      assert.equal(mismatch(r.output, lesson.tensors.output), '', 'the worker keeps working');
    } finally {
      await worker.terminate();
    }
  });
});
