// The wasm boundary has one schema (src/bindings/call_record.hpp, src/xattn/messages.hpp): the JavaScript copy
// is generated from it and must be current; every shipped build was compiled from the same lists; the shipped
// builds export only the package's calls; and one call crosses into the module at most twice. The copy also
// carries C++'s thread defaults (src/xattn/threads.hpp), which createXattn uses.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { SIGNATURE } from '../../js/boundary-schema.js';
import { makeXattn } from '../../js/api.js';
import { chooseBuild, instantiate } from '../../js/instantiate.js';
import { createXattn } from '../../js/node.js';
import { relaxedSimdSupported } from '../../js/detect.js';
import { schema } from '../../scripts/gen-boundary.mjs';
import { randomTensor } from './test-data.mjs';

const repo = fileURLToPath(new URL('../..', import.meta.url));
// The calls the shipped builds export (src/bindings/embind.cpp); the testing build adds its own.
const PACKAGE_EXPORTS = ['cacheElement', 'cacheLength', 'destroy', 'execute', 'kernelsName', 'maxThreads', 'memoryBytes', 'prepare',
  'record', 'setSpinMicroseconds', 'setThreads', 'signature', 'version'];
const BUILD_OPTIONS = [{ simd: false }, { simd: true, threads: 1, relaxedSimd: false }, { threads: 2, relaxedSimd: false },
  ...(relaxedSimdSupported() ? [{ threads: 1, relaxedSimd: true }, { threads: 2, relaxedSimd: true }] : [])];

describe('the boundary schema', () => {
  test('js/boundary-schema.js is what scripts/gen-boundary.mjs writes from the C++ lists', () => {
    execFileSync(process.execPath, ['scripts/gen-boundary.mjs', '--check'], { cwd: repo, stdio: 'pipe' });
  });

  test('a module from other lists is refused at start, naming both signatures', async () => {
    const factory = (await import('../../dist/xattn-simd.mjs')).default;
    const wasm = await WebAssembly.compile(await readFile(new URL('../../dist/xattn-simd.wasm', import.meta.url)));
    let started = null;
    await instantiate(factory, wasm, true, { started: (m) => { started = m; } });
    const stale = new Proxy(started, { get: (m, key) => (key === 'signature' ? () => SIGNATURE + 1 : m[key]) });
    assert.throws(() => makeXattn(stale, { simd: true }), (e) => e.message.includes(`(${SIGNATURE + 1})`)
      && e.message.includes(`(${SIGNATURE})`) && /rebuild with npm run build:wasm/.test(e.message));
  });
});

describe('the thread defaults', () => {
  test("createXattn's are C++'s (src/xattn/threads.hpp): min(kDefaultMaxThreads, cores), and the helpers' polling", () => {
    const cpp = schema();
    const env = (cores) => ({ defaultThreads: () => cores, sharedMemory: () => null });
    for (const cores of [1, 2, 3, 64]) {
      assert.equal(chooseBuild({ simd: true }, env(cores)).threads, Math.min(cpp.defaultMaxThreads, cores), `${cores} cores`);
    }
    assert.equal(chooseBuild({ simd: true }, env(64)).spinMicroseconds, cpp.defaultSpinMicroseconds);
    assert.equal(chooseBuild({ spinMicroseconds: cpp.maxSpinMicroseconds }, env(1)).spinMicroseconds, cpp.maxSpinMicroseconds);
    assert.throws(() => chooseBuild({ spinMicroseconds: cpp.maxSpinMicroseconds + 1 }, env(1)), RangeError);
  });
});

describe('what the shipped builds export', () => {
  for (const options of BUILD_OPTIONS) {
    test(`${JSON.stringify(options)}: only the package's calls, none of the testing build's`, async () => {
      const xa = await createXattn(options);
      const built = xa.threads > 1 ? `${xa.relaxedSimd ? 'relaxed-' : ''}simd-threads`
        : xa.simd ? `${xa.relaxedSimd ? 'relaxed-' : ''}simd` : 'scalar';
      xa.dispose();
      // The Embind names are registered by the module's start: read them off a fresh one.
      const factory = built.endsWith('threads')
        ? (await import('node:module')).createRequire(import.meta.url)(`../../dist/xattn-${built}-node.cjs`)
        : (await import(`../../dist/xattn-${built}.mjs`)).default;
      const wasm = await WebAssembly.compile(await readFile(new URL(`../../dist/xattn-${built}.wasm`, import.meta.url)));
      let mod = null;
      const worker = fileURLToPath(new URL(`../../dist/xattn-${built}-node.worker.cjs`, import.meta.url));
      const started = await instantiate(factory, wasm, { simd: true, relaxedSimd: xa.relaxedSimd, threads: xa.threads }, {
        locateFile: (path, prefix) => (path.endsWith('.worker.js') ? worker : prefix + path),
        started: (m) => {
          mod = m;
          for (const w of [...(m.PThread?.unusedWorkers ?? []), ...(m.PThread?.runningWorkers ?? [])]) w.unref();
        },
      });
      const calls = PACKAGE_EXPORTS.filter((name) => typeof mod[name] === 'function');
      assert.deepEqual(calls, PACKAGE_EXPORTS);
      for (const testing of ['heapInUse', 'setMinWorkPerWorker', 'helperTasksRun', 'setEveryWorkerTakesPart', 'helpersAsleep']) {
        assert.equal(mod[testing], undefined, `${testing} is the testing build's`);
      }
      started.dispose();
    });
  }
  test('the API object has no test hooks', async () => {
    const xa = await createXattn();
    const names = Reflect.ownKeys(xa).filter((k) => typeof k === 'string');
    assert.deepEqual(names.filter((n) => /ForTests|heapInUse|pendingPlans/.test(n)), []);
    xa.dispose();
  });
});

describe('crossings per call', () => {
  // An instance over a module whose every exported function counts its calls.
  async function counted() {
    const factory = (await import('../../dist/xattn-simd.mjs')).default;
    const wasm = await WebAssembly.compile(await readFile(new URL('../../dist/xattn-simd.wasm', import.meta.url)));
    let mod = null;
    await instantiate(factory, wasm, true, { started: (m) => { mod = m; } });
    const calls = [];
    const counting = new Proxy(mod, {
      get(m, key) {
        const v = m[key];
        return typeof v === 'function' && PACKAGE_EXPORTS.includes(key) ? (...args) => { calls.push(key); return v.apply(m, args); } : v;
      },
    });
    const xa = makeXattn(counting, { simd: true });
    calls.length = 0;  // the instance's own start-up
    return { xa, calls };
  }

  test('scaledDotProductAttention enters the module twice, with or without weights, and once when refused', async () => {
    const { xa, calls } = await counted();
    const q = randomTensor([2, 4, 33, 16], 1), k = randomTensor([2, 4, 40, 16], 2);
    for (const options of [{}, { needWeights: true }, { isCausal: true, needWeights: true }]) {
      calls.length = 0;
      xa.scaledDotProductAttention(q, k, k, options);
      assert.deepEqual(calls, ['prepare', 'execute'], JSON.stringify(options));
    }
    calls.length = 0;
    assert.throws(() => xa.scaledDotProductAttention(q, randomTensor([2, 4, 40, 8], 3), k), RangeError);
    assert.deepEqual(calls, ['prepare']);
  });

  test('its gradient with the weights enters twice: the weights come from the gradients\' own forward', async () => {
    const { xa, calls } = await counted();
    const q = randomTensor([1, 2, 17, 8], 4), k = randomTensor([1, 2, 19, 8], 5), dO = randomTensor([1, 2, 17, 8], 6);
    const r = xa.scaledDotProductAttentionGrad(q, k, k, dO, { needWeights: true, isCausal: true });
    assert.deepEqual(calls, ['prepare', 'execute']);
    const forward = xa.scaledDotProductAttention(q, k, k, { needWeights: true, isCausal: true });
    assert.deepEqual(r.weights.shape, forward.weights.shape);
    r.weights.data.forEach((w, i) => assert.ok(Math.abs(w - forward.weights.data[i]) <= 1e-6, `weight ${i}: ${w} against ${forward.weights.data[i]}`));
  });

  test('MultiheadAttention forward and backward, a KV cache step and parameters: two crossings at most', async () => {
    const { xa, calls } = await counted();
    const m = xa.createMultiheadAttention({ embedDim: 16, numHeads: 2 });
    assert.deepEqual(calls, ['prepare']);
    const x = randomTensor([5, 2, 16], 7);
    for (const run of [() => m.forward(x, x, x), () => m.backward(x, x, x, x)]) {
      calls.length = 0;
      run();
      assert.deepEqual(calls, ['prepare', 'execute']);
    }
    calls.length = 0;
    m.setParameters(Object.fromEntries(Object.entries(m.parameters()).map(([name, t]) => [name, t.data])));
    assert.deepEqual(calls, [], 'parameters are read and written in place');
    const cache = xa.createKvCache({ kvHeads: 2, headDim: 8, capacity: 16 });
    calls.length = 0;
    cache.append(randomTensor([1, 2, 1, 8], 8), randomTensor([1, 2, 1, 8], 9));
    assert.deepEqual(calls, ['prepare', 'execute']);
    calls.length = 0;
    cache.attend(randomTensor([1, 4, 1, 8], 10));
    assert.deepEqual(calls, ['prepare', 'execute']);
  });
});
