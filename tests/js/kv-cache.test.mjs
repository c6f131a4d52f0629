// createKvCache on every build (SIMD, threaded SIMD, scalar): decoding a token at a time and prefill give what scaledDotProductAttention
// gives on the same keys and values (GQA, MQA, masks, causal, scale, weights), float16 storage holds them
// rounded, refusals leave the cache as it was, lifetimes, and the same cache through the Worker entry.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { createTestingXattn } from './testing-build.mjs';
import { normalTensor } from './attention-reference.mjs';
import { BUILDS } from './golden.mjs';
import { createXattnWorker } from '../../js/worker-node.js';

const tensor = normalTensor;  // (shape, seed): the same normal inputs on every run

// |got - want| <= 1e-5 + 1e-4·|want|, the golden tolerance.
function close(got, want, label) {
  assert.deepEqual(got.shape, want.shape, `${label}: shape`);
  want.data.forEach((w, i) => {
    assert.ok(Math.abs(got.data[i] - w) <= 1e-5 + 1e-4 * Math.abs(w), `${label}: element ${i} is ${got.data[i]}, want ${w}`);
  });
}

// (B, H, T, D) rows of positions [from, to) of a (B, H, Tall, D) tensor.
function positions(t, from, to) {
  const [B, H, T, D] = t.shape;
  const data = new Float32Array(B * H * (to - from) * D);
  for (let p = 0; p < B * H; p++) data.set(t.data.subarray((p * T + from) * D, (p * T + to) * D), p * (to - from) * D);
  return { data, shape: [B, H, to - from, D] };
}

for (const { options: buildOptions, label } of BUILDS) {
  describe(`createKvCache on the ${label} build`, async () => {
    const xa = await createXattn(buildOptions);

    test('decoding one token at a time equals SDPA on the whole K and V each step (GQA 8 over 2)', () => {
      const B = 2, Hq = 8, Hkv = 2, E = 16, Ev = 12, steps = 40;
      const K = tensor([B, Hkv, steps, E], 1), V = tensor([B, Hkv, steps, Ev], 2);
      const cache = xa.createKvCache({ batch: B, kvHeads: Hkv, headDim: E, valueDim: Ev, capacity: 64 });
      for (let s = 0; s < steps; s++) {
        cache.append(positions(K, s, s + 1), positions(V, s, s + 1));
        assert.equal(cache.length, s + 1);
        const q = tensor([B, Hq, 1, E], 100 + s);
        const got = cache.attend(q, { isCausal: true });
        const want = xa.scaledDotProductAttention(q, positions(K, 0, s + 1), positions(V, 0, s + 1), { enableGqa: true });
        close(got.output, want.output, `step ${s}`);
      }
      assert.deepEqual(cache.keys(), { data: K.data, shape: K.shape });
      cache.dispose();
    });

    test('prefill with the bottom-right causal rule, MQA, a mask, a scale and the weights', () => {
      const K = tensor([1, 1, 50, 8], 3), V = tensor([1, 1, 50, 8], 4);
      const cache = xa.createKvCache({ kvHeads: 1, headDim: 8, capacity: 50 });
      cache.append(positions(K, 0, 20), positions(V, 0, 20));
      cache.append(positions(K, 20, 50), positions(V, 20, 50));
      const q = tensor([1, 6, 30, 8], 5);
      close(cache.attend(q, { isCausal: true }).output,
        xa.scaledDotProductAttention(q, K, V, { enableGqa: true, isCausal: true, causalAlignment: 'bottom-right' }).output,
        'causal prefill');
      const attnMask = { data: new Uint8Array(30 * 50).map((_, i) => (i % 7 ? 1 : 0)), shape: [30, 50] };
      const got = cache.attend(q, { attnMask, scale: 0.3, needWeights: true });
      const want = xa.scaledDotProductAttention(q, K, V, { enableGqa: true, attnMask, scale: 0.3, needWeights: true });
      close(got.output, want.output, 'masked');
      close(got.weights, want.weights, 'masked weights');
      cache.dispose();
    });

    test('truncate drops positions; appending again continues from there', () => {
      const cache = xa.createKvCache({ kvHeads: 2, headDim: 4, capacity: 10 });
      const K = tensor([1, 2, 8, 4], 6), V = tensor([1, 2, 8, 4], 7);
      cache.append(K, V);
      cache.truncate(5);
      assert.equal(cache.length, 5);
      cache.append(positions(K, 5, 8), positions(V, 5, 8));
      assert.deepEqual(cache.values().data, V.data);
      const q = tensor([1, 2, 1, 4], 8);
      close(cache.attend(q).output, xa.scaledDotProductAttention(q, K, V).output, 'after truncate');
      cache.dispose();
    });

    test('float16 storage: half the memory, values rounded, attend equals SDPA on the rounded values', async () => {
      const config = { kvHeads: 4, headDim: 64, capacity: 1024 };
      {
        const { xa: counted, testing } = await createTestingXattn({ threads: 1 });
        const heap = testing.heapInUse();
        const full = counted.createKvCache(config);
        const fullBytes = testing.heapInUse() - heap;
        counted.createKvCache({ ...config, dtype: 'float16' });
        const halfBytes = testing.heapInUse() - heap - fullBytes;
        assert.ok(Math.abs(halfBytes / fullBytes - 0.5) < 0.01, `float16 ${halfBytes} bytes against float32 ${fullBytes}`);
        full.dispose();
        counted.dispose();
      }
      const full = xa.createKvCache(config);
      const half = xa.createKvCache({ ...config, dtype: 'float16' });
      const K = tensor([1, 4, 300, 64], 9), V = tensor([1, 4, 300, 64], 10);
      half.append(K, V);
      const heldK = half.keys(), heldV = half.values();
      K.data.forEach((x, i) => assert.ok(Math.abs(heldK.data[i] - x) <= Math.abs(x) * 2 ** -11 + 2 ** -25, `key ${i}`));
      assert.notDeepEqual(heldK.data, K.data);  // rounded, not kept
      const q = tensor([1, 16, 3, 64], 11);
      close(half.attend(q).output, xa.scaledDotProductAttention(q, heldK, heldV, { enableGqa: true }).output, 'float16');
      full.dispose();
      half.dispose();
    });

    test('refusals name the method and leave the cache as it was', () => {
      const cache = xa.createKvCache({ batch: 2, kvHeads: 2, headDim: 8, capacity: 10 });
      cache.append(tensor([2, 2, 6, 8], 12), tensor([2, 2, 6, 8], 13));
      assert.throws(() => cache.append(tensor([2, 2, 5, 8], 14), tensor([2, 2, 5, 8], 15)), (e) => e instanceof RangeError
        && e.message === 'KvCache.append: 5 positions do not fit: the cache holds 6 of its capacity 10; nothing was appended (key (2, 2, 5, 8), value (2, 2, 5, 8))');
      assert.equal(cache.length, 6);
      assert.throws(() => cache.append(tensor([2, 2, 1, 7], 14), tensor([2, 2, 1, 8], 15)),
        (e) => e instanceof RangeError && /^KvCache\.append: key must be \(B, Hkv, n, E\) = \(2, 2, n, 8\)/.test(e.message));
      assert.throws(() => cache.truncate(7), (e) => e instanceof RangeError
        && e.message === 'KvCache.truncate: length 7 is past the 6 positions held');
      assert.throws(() => cache.truncate(-1), RangeError);
      assert.throws(() => cache.attend(tensor([2, 3, 1, 8], 16)), (e) => e instanceof RangeError
        && /^KvCache\.attend: query must be \(B, Hq, L, E\) with B = 2, E = 8 and Hq a multiple of the cache's 2 key\/value heads, got shape \(2, 3, 1, 8\)$/.test(e.message));
      assert.throws(() => cache.attend(tensor([2, 2, 1, 8], 16), { enableGqa: true }), (e) => e instanceof TypeError && /unknown option 'enableGqa'/.test(e.message));
      assert.throws(() => xa.createKvCache({ kvHeads: 2, headDim: 8, capacity: 10, dtype: 'bfloat16' }),
        (e) => e instanceof TypeError && /dtype must be 'float32' or 'float16'/.test(e.message));
      assert.throws(() => xa.createKvCache({ kvHeads: 2, headDim: 8 }), (e) => e instanceof TypeError && /capacity/.test(e.message));
      const before = xa.memoryBytes();
      assert.throws(() => xa.createKvCache({ kvHeads: 64, headDim: 128, capacity: 65536 }),
        (e) => e instanceof RangeError && /^createKvCache: .*needs \d+ bytes/.test(e.message));
      assert.equal(xa.memoryBytes(), before, 'a refused cache grows no memory');
      assert.equal(cache.length, 6);
      cache.dispose();
      cache.dispose();
      assert.throws(() => cache.attend(tensor([2, 2, 1, 8], 16)), (e) => e.message === 'KvCache.attend: this cache was disposed');
      assert.throws(() => cache.length, /KvCache\.length: this cache was disposed/);
    });

    test('caches dropped without dispose() are freed by the garbage collector; Symbol.dispose frees at once',
      { skip: typeof globalThis.gc !== 'function' && 'needs --expose-gc' }, async () => {
        const { xa: counted, testing } = await createTestingXattn({ threads: 1 });
        const heap = testing.heapInUse();
        const c = counted.createKvCache({ kvHeads: 1, headDim: 64, capacity: 4096 });
        c[Symbol.dispose]();
        assert.equal(testing.heapInUse(), heap);
        (() => { for (let i = 0; i < 50; i++) counted.createKvCache({ kvHeads: 2, headDim: 64, capacity: 1024 }); })();
        assert.ok(testing.heapInUse() > heap + 50 * 2 * 2 * 64 * 1024 * 4);
        for (let round = 0; round < 20 && testing.heapInUse() > heap; round++) {
          globalThis.gc();
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        assert.equal(testing.heapInUse(), heap);
        counted.dispose();
      });
  });
}

describe('createKvCache through the Worker entry', async () => {
  const worker = await createXattnWorker();
  after(() => worker.terminate());
  const xa = await createXattn();

  test('the same answers as on this thread; length is a call; refusals keep their class', async () => {
    const cache = await worker.createKvCache({ kvHeads: 2, headDim: 16, capacity: 32, dtype: 'float16' });
    const local = xa.createKvCache({ kvHeads: 2, headDim: 16, capacity: 32, dtype: 'float16' });
    const K = tensor([1, 2, 20, 16], 20), V = tensor([1, 2, 20, 16], 21), q = tensor([1, 4, 1, 16], 22);
    await cache.append(K, V);
    local.append(K, V);
    assert.equal(await cache.length(), 20);
    assert.equal(cache.capacity, 32);
    assert.deepEqual((await cache.attend(q)).output.data, local.attend(q).output.data);
    assert.deepEqual((await cache.keys()).data, local.keys().data);
    await assert.rejects(cache.truncate(21), (e) => e instanceof RangeError && /KvCache\.truncate: length 21/.test(e.message));
    await cache.dispose();
    await assert.rejects(cache.attend(q), /this cache was disposed/);
    local.dispose();
  });
});
