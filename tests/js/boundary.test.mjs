// The JS ↔ C++ boundary itself (js/boundary.js, src/bindings/embind.cpp): calls sized past the 2 GiB
// wasm memory are refused with the bytes they need and allocate nothing; calls that fit run without any
// allocation that could fail inside the module; only a failure of the module marks an instance dead;
// modules are freed when collected; createXattn never hangs.
//
// Run with --expose-gc (npm test does) for the collection test; without it that test is skipped.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';

import { instantiate } from '../../js/instantiate.js';
import { createXattn } from '../../js/node.js';
import { createTestingXattn } from './testing-build.mjs';
import { checkSdpaFixture } from './golden.mjs';

const GiB = 2 ** 30;
const t = (shape, fill = 0) => ({ data: new Float32Array(shape.reduce((n, d) => n * d, 1)).fill(fill), shape });


// fn must throw a RangeError naming `fnName` and a byte count, and leave memory and the heap as they were.
function refusedForSize(xa, testing, fn, fnName) {
  const memory = xa.memoryBytes();
  const heap = testing.heapInUse();
  let error;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof RangeError, `expected a RangeError, got ${error}`);
  assert.match(error.message, new RegExp(`^${fnName.replace('.', '\\.')}: .*needs \\d+ bytes`));
  assert.equal(xa.memoryBytes(), memory, 'a refused call grows no memory');
  assert.equal(testing.heapInUse(), heap, 'a refused call holds no allocation');
  return error;
}

describe('calls past the 2 GiB memory are refused, every entry point', async () => {
  const { xa, testing } = await createTestingXattn();
  // One 1 GiB array serves as every big argument: (1, 2^24, 16) floats.
  const big = { data: new Float32Array(GiB / 4), shape: [1, 2 ** 24, 16] };
  const small = t([1, 1, 16], 0.5);

  test('forward without weights: key and value of 1 GiB each, with a query of one row', () => {
    refusedForSize(xa, testing, () => xa.scaledDotProductAttention(small, big, big), 'scaledDotProductAttention');
    checkSdpaFixture(xa);
  });

  test('forward with weights: 2 × 512 MiB of key and value and 1 GiB of weights', () => {
    const half = { data: big.data.subarray(0, GiB / 8), shape: [1, 2 ** 23, 16] };
    refusedForSize(xa, testing, () => xa.scaledDotProductAttention(t([1, 32, 16], 0.1), half, half, { needWeights: true }),
      'scaledDotProductAttention');
    checkSdpaFixture(xa);
  });

  test('backward: 1 GiB of key and value, whose gradients take as much again', () => {
    const e = refusedForSize(xa, testing, () => xa.scaledDotProductAttentionGrad(small, big, big, small),
      'scaledDotProductAttentionGrad');
    assert.match(e.message, /WebAssembly memory/);
    checkSdpaFixture(xa);
  });

  test('MultiheadAttention.forward: 1 GiB of keys and values to project', () => {
    const mha = xa.createMultiheadAttention({ embedDim: 16, numHeads: 2 });
    const seq = { data: big.data, shape: [2 ** 24, 1, 16] };
    refusedForSize(xa, testing, () => mha.forward(t([1, 1, 16], 0.5), seq, seq, { needWeights: false }), 'MultiheadAttention.forward');
    const r = mha.forward(t([3, 2, 16], 0.5), t([4, 2, 16], 0.25), t([4, 2, 16], 1));
    assert.deepEqual(r.output.shape, [3, 2, 16]);
    mha.dispose();
    checkSdpaFixture(xa);
  });

  test('three 512 MiB inputs: refused without growing the memory for good', () => {
    const x = { data: big.data.subarray(0, GiB / 8), shape: [1, 2 ** 23, 16] };
    refusedForSize(xa, testing, () => xa.scaledDotProductAttention(x, x, x), 'scaledDotProductAttention');
  });
});

describe('a scale that is not a usable float32 is refused', async () => {
  const xa = await createXattn();
  const q = t([1, 3, 4], 0.5);
  for (const [scale, shown, float32] of [[1e39, '1e+39', 'Infinity'], [3.5e38, '3.5e+38', 'Infinity'],
    [1e-50, '1e-50', '0'], [-1e-46, '-1e-46', '0'], [0, '0', '0'], [NaN, 'NaN', 'NaN']]) {
    test(`scale ${shown}`, () => {
      assert.throws(() => xa.scaledDotProductAttention(q, q, q, { scale }), (e) => e instanceof RangeError &&
        e.message === `scaledDotProductAttention: scale must be finite and non-zero as a float32, got ${shown} (float32 ${float32})`);
      assert.throws(() => xa.scaledDotProductAttentionGrad(q, q, q, q, { scale }),
        (e) => e instanceof RangeError && e.message.startsWith('scaledDotProductAttentionGrad: scale must be finite'));
    });
  }
  test('the smallest and largest usable scales still compute', () => {
    for (const scale of [1e-45, 3.4e38]) {
      const r = xa.scaledDotProductAttention(q, q, q, { scale });
      for (const x of r.output.data) assert.ok(Number.isFinite(x));
    }
    checkSdpaFixture(xa);
  });
});

describe('only a failure of the module marks an instance dead', async () => {
  const xa = await createXattn();
  const x = t([2, 3, 4], 0.5);

  test('a disposed module, a throwing getter, a bad option: each throws, everything else keeps working', () => {
    const alive = xa.createMultiheadAttention({ embedDim: 4, numHeads: 2 });
    const gone = xa.createMultiheadAttention({ embedDim: 4, numHeads: 2 });
    gone.dispose();
    gone.dispose();  // idempotent
    assert.throws(() => gone.forward(x, x, x), (e) => e.message === 'MultiheadAttention.forward: this module was disposed');
    assert.throws(() => gone.setParameters({}), /MultiheadAttention.setParameters: this module was disposed/);
    const trap = new Error('from a getter');
    const options = { get isCausal() { throw trap; } };
    assert.throws(() => xa.scaledDotProductAttention(x, x, x, options), (e) => e === trap);
    assert.throws(() => alive.forward(x, x, x, { get needWeights() { throw trap; } }), (e) => e === trap);
    const data = { get data() { throw trap; }, shape: [2, 3, 4] };
    assert.throws(() => xa.scaledDotProductAttentionGrad(data, x, x, x), (e) => e === trap);
    assert.throws(() => xa.createMultiheadAttention({ get embedDim() { throw trap; }, numHeads: 1 }), (e) => e === trap);
    // Everything still works: the other module, SDPA, its gradient, memoryBytes.
    assert.deepEqual(alive.forward(x, x, x).output.shape, [2, 3, 4]);
    assert.ok(xa.memoryBytes() > 0);
    xa.scaledDotProductAttentionGrad(x, x, x, x);
    checkSdpaFixture(xa);
    alive.dispose();
  });

  test('a tensor whose getters change their answer is copied as it was checked', () => {
    let reads = 0;
    const shifty = {
      get data() { reads += 1; return reads === 1 ? new Float32Array(24).fill(1) : new Float32Array(2 ** 20); },
      get shape() { return reads <= 1 ? [2, 3, 4] : [2 ** 20, 1]; },
    };
    const r = xa.scaledDotProductAttention(x, x, shifty);
    assert.equal(reads, 1, 'data is read once');
    assert.deepEqual(r.output.shape, [2, 3, 4]);
    for (const v of r.output.data) assert.equal(v, 1);
  });

  test('typed arrays from another realm are accepted; Proxies and look-alikes are refused', async () => {
    const vm = await import('node:vm');
    const foreign = vm.runInNewContext('new Float32Array(24).fill(0.5)');
    const r = xa.scaledDotProductAttention({ data: foreign, shape: [2, 3, 4] }, x, x);
    assert.deepEqual(r.output.shape, [2, 3, 4]);
    const proxy = new Proxy(new Float32Array(24), {});
    assert.throws(() => xa.scaledDotProductAttention({ data: proxy, shape: [2, 3, 4] }, x, x),
      (e) => e instanceof TypeError && /query\.data must be a Float32Array, got Float32Array look-alike/.test(e.message));
    const liar = new Float32Array(4);
    Object.defineProperty(liar, 'length', { value: 24 });
    assert.throws(() => xa.scaledDotProductAttention({ data: liar, shape: [2, 3, 4] }, x, x),
      (e) => e instanceof RangeError && /query has 4 values but its shape \(2, 3, 4\) needs 24/.test(e.message));
  });

  test('sparse shapes are refused', () => {
    // eslint-disable-next-line no-sparse-arrays
    assert.throws(() => xa.scaledDotProductAttention({ data: new Float32Array(8), shape: [2, , 4] }, x, x),
      (e) => e instanceof TypeError && /query\.shape\[1\] is missing \(a sparse array\)/.test(e.message));
  });
});

describe('lifetimes of MultiheadAttention modules', async () => {
  test('Symbol.dispose frees the module, as dispose() does', async () => {
    const { xa, testing } = await createTestingXattn();
    const heap = testing.heapInUse();
    const m = xa.createMultiheadAttention({ embedDim: 64, numHeads: 4 });
    assert.ok(testing.heapInUse() > heap + 4 * 64 * 64 * 4);
    assert.equal(typeof m[Symbol.dispose], 'function');
    m[Symbol.dispose]();
    assert.equal(testing.heapInUse(), heap);
    assert.throws(() => m.forward(t([1, 1, 64]), t([1, 1, 64]), t([1, 1, 64])), /disposed/);
  });

  test('modules dropped without dispose() are freed when garbage-collected', { skip: typeof globalThis.gc !== 'function' && 'needs --expose-gc' }, async () => {
    const { xa, testing } = await createTestingXattn();
    const heap = testing.heapInUse();
    (() => {
      for (let i = 0; i < 300; i++) xa.createMultiheadAttention({ embedDim: 256, numHeads: 4 });
    })();
    const held = testing.heapInUse() - heap;
    assert.ok(held > 300 * 4 * 256 * 256 * 4, `${held} bytes held by 300 modules`);
    for (let round = 0; round < 20 && testing.heapInUse() > heap; round++) {
      globalThis.gc();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(testing.heapInUse(), heap, 'every dropped module was freed');
    checkSdpaFixture(xa);
  });
});

describe('initSeed reaches the module', async () => {
  test('the same seed gives the same parameters, another seed others', async () => {
    const xa = await createXattn();
    const x = t([3, 1, 8], 0);
    for (let i = 0; i < x.data.length; i++) x.data[i] = Math.sin(i);
    const out = (initSeed) => {
      const m = xa.createMultiheadAttention({ embedDim: 8, numHeads: 2, initSeed });
      try {
        return m.forward(x, x, x).output.data;
      } finally {
        m.dispose();
      }
    };
    assert.deepEqual(out(7), out(7));
    assert.notDeepEqual(out(7), out(8));
    assert.throws(() => xa.createMultiheadAttention({ embedDim: 8, numHeads: 2, initSeed: -1 }),
      (e) => e instanceof RangeError && /initSeed must be an integer in \[0, 9007199254740991\], got -1/.test(e.message));
  });
});

describe('createXattn and the version', async () => {
  test('a failed instantiation rejects with its cause, and a later createXattn succeeds', async () => {
    const factory = (await import('../../dist/xattn-simd.mjs')).default;
    // A module importing a function the glue does not provide fails to link; an empty one links but has
    // none of the exports the glue needs.
    const linkFails = await WebAssembly.compile(new Uint8Array([
      0, 97, 115, 109, 1, 0, 0, 0, 1, 4, 1, 0x60, 0, 0, 2, 12, 1, 3, 101, 110, 118, 4, 110, 111, 112, 101, 0, 0]));
    const empty = await WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]));
    for (const module of [linkFails, empty]) {
      await assert.rejects(instantiate(factory, module, true),
        (e) => e instanceof Error && /^createXattn: could not start the SIMD WebAssembly build: /.test(e.message));
    }
    const xa = await createXattn();
    checkSdpaFixture(xa);
  });

  test('the version is package.json\'s, compiled into the module', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url)));
    for (const simd of [true, false]) assert.equal((await createXattn({ simd })).version, pkg.version);
  });
});
