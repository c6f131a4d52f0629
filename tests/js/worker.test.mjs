// createXattnWorker in Node (worker_threads): the same answers and the same refusals as the synchronous API,
// arguments read when the call is made, buffers moved on request, queued calls cancelled by their signal,
// calls run in order, terminate() ends everything, and an idle worker never keeps the process alive.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, describe, test } from 'node:test';

import { relaxedSimdSupported } from '../../js/detect.js';
import { createXattn } from '../../js/node.js';
import { createXattnWorker } from '../../js/worker-node.js';
import { loadCases, mhaConfig, mhaOptions, mhaParameters, mismatch, sdpaOptions, tensor } from './golden.mjs';
import { halfKinds, randomHalves } from './halves.mjs';
import { fixtureConfig, readFixture, tensorOf, expected } from './safetensors-fixture.mjs';
import { sameBits } from './test-data.mjs';

const xa = await createXattn();
const worker = await createXattnWorker();
after(() => worker.terminate());

const lesson = loadCases('sdpa.txt').find((c) => c.name === 'lesson_example_4x10x64');
const lessonInputs = () => [tensor(lesson.tensors.query), tensor(lesson.tensors.key), tensor(lesson.tensors.value)];
const t = (shape, fill) => ({ data: new Float32Array(shape.reduce((n, d) => n * d, 1)).fill(fill), shape });
// A call long enough (tens of ms) for others to queue behind it.
const big = t([1, 2048, 64], 0.01);

// Asserts that two results (objects of tensors, typed arrays and numbers, nested) hold the same fields, classes,
// shapes and bits.
function assertSameBits(got, want, path = 'result') {
  if (ArrayBuffer.isView(want)) {
    assert.equal(got?.constructor, want.constructor, `${path}: ${got?.constructor?.name}, want ${want.constructor.name}`);
    assert.ok(sameBits(got, want), `${path}: not the same bits`);
  } else if (want !== null && typeof want === 'object') {
    assert.deepEqual(Object.keys(got).sort(), Object.keys(want).sort(), `${path}: fields`);
    for (const key of Object.keys(want)) assertSameBits(got[key], want[key], `${path}.${key}`);
  } else {
    assert.equal(got, want, path);
  }
}

async function rejects(promise, Kind, message) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof Kind, `expected ${Kind.name}, got ${e?.constructor?.name}: ${e?.message}`);
    assert.equal(e.message, message);
    return true;
  });
}

describe('createXattnWorker', () => {
  test('reports the build it runs', () => {
    assert.equal(worker.simd, xa.simd);
    assert.equal(worker.relaxedSimd, xa.relaxedSimd);
    assert.equal(worker.kernels, xa.kernels);
    assert.equal(worker.version, xa.version);
  });

  test('passes relaxedSimd and spinMicroseconds to the worker\'s createXattn', async () => {
    const plain = await createXattnWorker({ relaxedSimd: false, threads: 1, spinMicroseconds: 5000 });
    assert.equal(plain.relaxedSimd, false);
    assert.equal(plain.spinMicroseconds, 5000);
    assert.equal(worker.spinMicroseconds, 200);
    await rejects(createXattnWorker({ spinMicroseconds: '1' }), TypeError, 'createXattnWorker: options.spinMicroseconds must be a number, got string');
    await rejects(createXattnWorker({ spinMicroseconds: -1 }), Error, 'createXattnWorker: the worker could not start xattn: createXattn: ' +
      'options.spinMicroseconds must be an integer from 0 to 1000000, got -1');
    assert.equal(plain.simd, true);
    await plain.terminate();
    if (!relaxedSimdSupported()) {
      await rejects(createXattnWorker({ relaxedSimd: true }), Error, 'createXattnWorker: the worker could not start xattn: createXattn: ' +
        'this engine has no WebAssembly relaxed SIMD (Chromium 114+, Firefox 146+; Node 20 needs --experimental-wasm-relaxed-simd); ' +
        'use { relaxedSimd: false } or leave relaxedSimd unset');
      return;
    }
    const relaxed = await createXattnWorker({ relaxedSimd: true, threads: 2 });
    assert.deepEqual([relaxed.relaxedSimd, relaxed.threads], [true, 2]);
    const [q, k, v] = lessonInputs();
    assert.equal(mismatch((await relaxed.scaledDotProductAttention(q, k, v)).output, lesson.tensors.output), '');
    await relaxed.terminate();
  });

  test("computes the lesson's example, its gradient and every golden MultiheadAttention case as PyTorch does", async () => {
    const r = await worker.scaledDotProductAttention(...lessonInputs(), sdpaOptions(lesson));
    assert.equal(mismatch(r.output, lesson.tensors.output), '');
    assert.equal(mismatch(r.weights, lesson.tensors.weights), '');
    assert.ok(r.output.data instanceof Float32Array && r.output.data.buffer instanceof ArrayBuffer);
    const [q, k, v] = lessonInputs();
    const g = await worker.scaledDotProductAttentionGrad(q, k, v, q);
    assert.deepEqual(g.gradKey, xa.scaledDotProductAttentionGrad(q, k, v, q).gradKey);
    for (const c of loadCases('mha.txt')) {
      const mha = await worker.createMultiheadAttention(mhaConfig(c));
      await mha.setParameters(mhaParameters(c));
      const y = await mha.forward(tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value), mhaOptions(c));
      assert.equal(mismatch(y.output, c.tensors.output), '', c.name);
      await mha.dispose();
    }
  });

  test('takes the rules, scores, float16 I/O, rotary embeddings and the rolling, per-element cache as the synchronous API does', async () => {
    const x = t([2, 3, 5, 8], 0);
    x.data.forEach((_, i) => { x.data[i] = Math.sin(i * 0.37); });
    const rules = {
      softcap: 3, window: { left: 2, right: 1 }, alibiSlopes: [0.5, 0.25, 0.125], keyLengths: new Int32Array([5, 3]),
      causalAlignment: 'bottom-right', isCausal: true, returnScores: 'biased', needWeights: true,
    };
    assert.deepEqual(await worker.scaledDotProductAttention(x, x, x, rules), xa.scaledDotProductAttention(x, x, x, rules));
    const { returnScores, ...gradRules } = rules;
    assert.deepEqual(await worker.scaledDotProductAttentionGrad(x, x, x, x, gradRules), xa.scaledDotProductAttentionGrad(x, x, x, x, gradRules));
    const halves = { data: new Uint16Array(x.data.length).fill(0x3c00), shape: x.shape };
    const h = await worker.scaledDotProductAttention(halves, halves, halves);
    assert.ok(h.output.data instanceof Uint16Array);
    assert.deepEqual(h, xa.scaledDotProductAttention(halves, halves, halves));
    const rot = { positions: [3, 1, 4, 1, 5], rotaryDim: 6, interleaved: true };
    assert.deepEqual(await worker.applyRotaryEmbedding(x, rot), xa.applyRotaryEmbedding(x, rot));
    assert.deepEqual(await worker.applyRotaryEmbeddingGrad(x, rot), xa.applyRotaryEmbeddingGrad(x, rot));
    const config = { batch: 2, kvHeads: 3, headDim: 8, capacity: 6, rolling: true, rotary: { base: 100 } };
    const more = t([2, 3, 3, 8], 0);
    more.data.forEach((_, i) => { more.data[i] = Math.cos(i * 0.21); });
    const local = xa.createKvCache(config);
    const remote = await worker.createKvCache(config);
    assert.deepEqual(remote.config, local.config);
    for (const cache of [local, remote]) {
      await cache.append(x, x, { counts: [5, 2] });
      await cache.truncate([5, 1]);
      await cache.append(more, more);  // element 0 rolls past its capacity
    }
    assert.deepEqual(await remote.lengths(), local.lengths);
    assert.deepEqual(await remote.positions(), local.positions);
    assert.deepEqual(await remote.length(), local.length);
    const q = t([2, 3, 1, 8], 0.5);
    const attend = { isCausal: true, window: { left: 2 }, alibiSlopes: [1, 2, 3], needWeights: true };
    assert.deepEqual(await remote.attend(q, attend), local.attend(q, attend));
    assert.deepEqual(await remote.keys(), local.keys());
    local.dispose();
    await remote.dispose();
  });

  test('runs MultiheadAttention forward and backward with every rule, bit for bit as the synchronous API', async () => {
    // (N, L, E) = (2, 5, 8) queries over (2, 7, 8) keys, 2 heads; isCausal with a mask, bottom-right, per-element
    // key lengths, a window, soft-capping, ALiBi and a key padding mask, together.
    const config = { embedDim: 8, numHeads: 2, batchFirst: true, initSeed: 11 };
    const seq = (shape, f) => ({ data: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, (_, i) => f(i)), shape });
    const q = seq([2, 5, 8], (i) => Math.sin(0.37 * i)), kv = seq([2, 7, 8], (i) => Math.cos(0.23 * i) * 1.5);
    const dO = seq([2, 5, 8], (i) => Math.sin(0.11 * i + 1));
    const rules = {
      isCausal: true, causalAlignment: 'bottom-right', softcap: 2.5, window: { left: 3, right: 1 }, alibiSlopes: [0.5, 0.125],
      keyLengths: new Int32Array([7, 4]),
      attnMask: { data: Uint8Array.from({ length: 5 * 7 }, (_, i) => (i % 6 === 1 ? 1 : 0)), shape: [5, 7] },  // true = hidden
      keyPaddingMask: { data: Float32Array.from({ length: 2 * 7 }, (_, i) => (i === 2 ? -Infinity : -0.1 * i)), shape: [2, 7] },
    };
    const local = xa.createMultiheadAttention(config);
    const remote = await worker.createMultiheadAttention(config);
    try {
      for (const options of [rules, { ...rules, averageAttnWeights: false }]) {
        const want = local.forward(q, kv, kv, options);
        assert.ok(want.weights.data.some((w) => w === 0) && want.output.data.every(Number.isFinite), 'the rules hide keys');
        assertSameBits(await remote.forward(q, kv, kv, options), want, 'forward');
      }
      const want = local.backward(q, kv, kv, dO, rules);
      assert.ok(Object.keys(want.gradParameters).length >= 4);
      assertSameBits(await remote.backward(q, kv, kv, dO, rules), want, 'backward');
      // Dropout too: the same seed drops the same weights in the worker.
      const dropping = xa.createMultiheadAttention({ ...config, dropout: 0.3 });
      const remoteDropping = await worker.createMultiheadAttention({ ...config, dropout: 0.3 });
      const trained = { ...rules, training: true, seed: 4 };
      assertSameBits(await remoteDropping.backward(q, kv, kv, dO, trained), dropping.backward(q, kv, kv, dO, trained), 'training');
      dropping.dispose();
      await remoteDropping.dispose();
    } finally {
      local.dispose();
      await remote.dispose();
    }
  });

  test('runs float16 gradients and a float16 KV cache fed halves in the worker, bit for bit as the synchronous API', async () => {
    const halves = (shape, seed, options) => ({ data: randomHalves(shape.reduce((a, b) => a * b, 1), seed, options), shape });
    const q = halves([2, 4, 6, 8], 31), k = halves([2, 2, 9, 8], 32), v = halves([2, 2, 9, 5], 33);
    const dO = halves([2, 4, 6, 5], 34, { scale: 2 ** -12, subnormalEvery: 4 });  // gradients down among the subnormal halves
    const o = {
      enableGqa: true, isCausal: true, causalAlignment: 'bottom-right', keyLengths: [9, 5], window: { left: 4 }, softcap: 3,
      alibiSlopes: [0.4, 0.3, 0.2, 0.1], dropoutP: 0.1, seed: 2, needWeights: true,
      attnMask: { data: Float32Array.from({ length: 6 * 9 }, (_, i) => Math.sin(i)), shape: [6, 9] },
    };
    const want = xa.scaledDotProductAttentionGrad(q, k, v, dO, o);
    assert.ok(want.gradQuery.data instanceof Uint16Array && halfKinds(want.gradKey.data).subnormal > 0);
    assertSameBits(await worker.scaledDotProductAttentionGrad(q, k, v, dO, o), want, 'gradient');

    const config = { batch: 2, kvHeads: 2, headDim: 8, valueDim: 5, capacity: 7, dtype: 'float16', rolling: true,
      rotary: { rotaryDim: 4, interleaved: true } };
    const local = xa.createKvCache(config);
    const remote = await worker.createKvCache(config);
    try {
      for (const cache of [local, remote]) {
        await cache.append(k, v, { counts: [6, 3] });
        await cache.truncate([5, 3]);
        await cache.append(halves([2, 2, 4, 8], 35), halves([2, 2, 4, 5], 36), { counts: [4, 2] });  // element 0 rolls
      }
      assert.deepEqual(await remote.positions(), local.positions);
      assert.deepEqual([...local.positions], [9, 5]);
      assertSameBits(await remote.keys(), local.keys(), 'keys');
      assertSameBits(await remote.values(), local.values(), 'values');
      const attend = {
        isCausal: true, window: { left: 5 }, alibiSlopes: [0.4, 0.3, 0.2, 0.1], softcap: 5, needWeights: true,
        attnMask: { data: Uint8Array.from({ length: 2 * 7 }, (_, i) => (i % 5 === 3 ? 0 : 1)), shape: [2, 1, 1, 7] },
      };
      for (const query of [halves([2, 4, 2, 8], 37), halves([2, 4, 1, 8], 38)]) {
        const got = await remote.attend(query, attend);
        assert.ok(got.output.data instanceof Uint16Array);
        assertSameBits(got, local.attend(query, attend), `attend L = ${query.shape[2]}`);
      }
    } finally {
      local.dispose();
      await remote.dispose();
    }
  });

  test('runs MultiheadAttention.backward and parameters() in the worker, as the synchronous API does', async () => {
    const config = { embedDim: 8, numHeads: 2, initSeed: 3 };
    const x = t([3, 2, 8], 0.25);
    x.data.forEach((_, i) => { x.data[i] = Math.sin(i); });
    const local = xa.createMultiheadAttention(config);
    const remote = await worker.createMultiheadAttention(config);
    assert.deepEqual(await remote.parameters(), local.parameters());
    const want = local.backward(x, x, x, x);
    const got = await remote.backward(x, x, x, x);
    assert.deepEqual(got.gradQuery, want.gradQuery);
    assert.deepEqual(got.gradParameters, want.gradParameters);
    local.dispose();
    await remote.dispose();
  });

  test('loads a safetensors state dict in the worker', async () => {
    const f = readFixture('encoder_layer_f32.safetensors');
    const mha = await worker.createMultiheadAttention(fixtureConfig(f.metadata));
    await mha.loadStateDict(f.bytes, { prefix: f.metadata.prefix });
    const y = await mha.forward(...['query', 'key', 'value'].map((n) => tensorOf(f.entries.get(`check.${n}`))));
    assert.equal(mismatch(y.output, expected(f.entries.get('check.output'))), '');
    await mha.dispose();
    await rejects(mha.forward(y.output, y.output, y.output), Error, 'MultiheadAttention.forward: this module was disposed');
  });

  test('refuses what the synchronous API refuses, with the same class and message', async () => {
    const q = t([2, 5, 8], 1);
    const bad = [
      [[q, t([2, 7, 6], 1), t([2, 7, 8], 1)], undefined],
      [[q, q, q], { dropoutP: 2 }],
      [[q, q, q], { causalAlignment: 'bottom' }],
      [[q, q, q], { window: { left: -2 } }],
      [[q, q, q], { alibiSlopes: [1, 2, 3] }],
      [[{ data: new Float64Array(80), shape: [2, 5, 8] }, q, q], undefined],
      [[{ data: new Float32Array(80), shape: [2, , 8] }, q, q], undefined],  // eslint-disable-line no-sparse-arrays
    ];
    for (const [args, options] of bad) {
      let sync;
      try {
        xa.scaledDotProductAttention(...args, options);
      } catch (e) {
        sync = e;
      }
      await rejects(worker.scaledDotProductAttention(...args, options), sync.constructor, sync.message);
    }
    await rejects(worker.createMultiheadAttention({ embedDim: 6, numHeads: 4 }), RangeError,
      (() => { try { xa.createMultiheadAttention({ embedDim: 6, numHeads: 4 }); } catch (e) { return e.message; } })());
  });

  test('refuses arguments that cannot be sent, and bad call options, naming them', async () => {
    const q = t([2, 4], 1);
    await rejects(worker.scaledDotProductAttention(q, { data: () => 1, shape: [2, 4] }, q), TypeError,
      'scaledDotProductAttention: key.data is a function, which cannot be sent to the worker');
    await rejects(worker.scaledDotProductAttention(q, q, q, {}, { signal: 1 }), TypeError,
      'scaledDotProductAttention: signal must be an AbortSignal, got number');
    await rejects(worker.scaledDotProductAttention(q, q, q, {}, { transfers: true }), TypeError,
      "scaledDotProductAttention: unknown call options field 'transfers' (known: signal, transfer)");
    await rejects(createXattnWorker({ simd: 'yes' }), TypeError, 'createXattnWorker: options.simd must be a boolean, got string');
    await rejects(createXattnWorker({ relaxedSimd: 'yes' }), TypeError, 'createXattnWorker: options.relaxedSimd must be a boolean, got string');
  });

  test('reads the arguments when the call is made: later changes do not reach it', async () => {
    const [q, k, v] = lessonInputs();
    const want = xa.scaledDotProductAttention(q, k, v).output.data;
    const pending = worker.scaledDotProductAttention(q, k, v);
    q.data.fill(0);
    assert.deepEqual((await pending).output.data, want);
  });

  test('with { transfer: true } moves the input buffers at once, without copying', async () => {
    const [q, k, v] = lessonInputs();
    const want = xa.scaledDotProductAttention(q, k, v).output.data;
    const pending = worker.scaledDotProductAttention(q, k, v, undefined, { transfer: true });
    assert.equal(q.data.byteLength, 0, 'the query buffer left this thread when the call was made');
    assert.equal(v.data.byteLength, 0);
    assert.deepEqual((await pending).output.data, want);
    await rejects(worker.scaledDotProductAttention(q, k, v), TypeError,
      'scaledDotProductAttention: query.data is backed by a detached ArrayBuffer');
  });

  test('runs calls in the order they were made', async () => {
    const mha = await worker.createMultiheadAttention({ embedDim: 4, numHeads: 1 });
    const x = t([2, 4], 0.5);
    const set = mha.setParameters({ 'out_proj.bias': Float32Array.from([1, 2, 3, 4]), 'out_proj.weight': new Float32Array(16) });
    const y = mha.forward(x, x, x);  // not awaiting set: it still runs after it
    await set;
    assert.deepEqual(Array.from((await y).output.data), [1, 2, 3, 4, 1, 2, 3, 4]);
    await mha.dispose();
  });

  test('an aborted queued call never runs and rejects with the reason; the queue goes on', async () => {
    const mha = await worker.createMultiheadAttention({ embedDim: 4, numHeads: 1 });
    await mha.setParameters({ 'out_proj.weight': new Float32Array(16), 'out_proj.bias': new Float32Array(4) });
    const x = t([2, 4], 0.5);
    const controller = new AbortController();
    const running = worker.scaledDotProductAttention(big, big, big);
    const queued = mha.setParameters({ 'out_proj.bias': new Float32Array(4).fill(9) }, { signal: controller.signal });
    assert.equal(worker.pendingCalls, 2);
    controller.abort(new Error('user navigated away'));
    await rejects(queued, Error, 'user navigated away');
    assert.equal(worker.pendingCalls, 1);
    assert.deepEqual((await running).output.shape, [1, 2048, 64]);
    assert.deepEqual(Array.from((await mha.forward(x, x, x)).output.data), new Array(8).fill(0), 'the aborted setParameters never ran');
    const already = AbortSignal.abort();
    await assert.rejects(worker.memoryBytes({ signal: already }), (e) => e.name === 'AbortError');
    assert.equal(typeof (await worker.memoryBytes()), 'number');
    await mha.dispose();
  });

  test('aborting the running call settles it at once; the worker finishes it and goes on', async () => {
    const controller = new AbortController();
    const running = worker.scaledDotProductAttention(big, big, big, {}, { signal: controller.signal });
    const next = worker.scaledDotProductAttention(...lessonInputs());
    controller.abort();
    await assert.rejects(running, (e) => e.name === 'AbortError');
    assert.equal(mismatch((await next).output, lesson.tensors.output), '');
  });

  test('terminate() rejects the running and queued calls and every later one', async () => {
    const w = await createXattnWorker({ simd: false });
    assert.equal(w.simd, false);
    const calls = [w.scaledDotProductAttention(big, big, big), w.scaledDotProductAttention(big, big, big)]
      .map((c) => rejects(c, Error, 'xattn worker: terminated'));
    await w.terminate();
    await Promise.all(calls);
    await rejects(w.memoryBytes(), Error, 'xattn worker: terminated');
  });

  test('an idle worker does not keep Node running, from ESM and from require', () => {
    const esm = `import { createXattnWorker } from ${JSON.stringify(new URL('../../js/worker-node.js', import.meta.url).href)};
      const w = await createXattnWorker();
      const r = await w.scaledDotProductAttention({ data: new Float32Array(4), shape: [2, 2] }, { data: new Float32Array(4), shape: [2, 2] }, { data: new Float32Array(4), shape: [2, 2] });
      console.log('esm', r.output.shape.join('x'));`;
    assert.equal(execFileSync(process.execPath, ['--input-type=module', '-e', esm], { encoding: 'utf8', timeout: 20000 }).trim(), 'esm 2x2');
    const cjs = `const { createXattnWorker } = require(${JSON.stringify(new URL('../../js/worker-node.cjs', import.meta.url).pathname)});
      createXattnWorker().then((w) => w.memoryBytes()).then((n) => console.log('cjs', n > 0));`;
    assert.equal(execFileSync(process.execPath, ['-e', cjs], { encoding: 'utf8', timeout: 20000 }).trim(), 'cjs true');
  });
});
