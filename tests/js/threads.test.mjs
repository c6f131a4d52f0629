// The threaded build: what createXattn picks and refuses, and results bit-identical at 1, 2, 3 and 4 threads
// on every golden fixture (split however small) and on calls big enough to split by themselves; for the plain
// SIMD builds and, where the engine has relaxed SIMD (npm test), for their relaxed-SIMD variants.
import assert from 'node:assert/strict';
import { availableParallelism } from 'node:os';
import { describe, test } from 'node:test';

import { relaxedSimdSupported } from '../../js/detect.js';
import { createXattn } from '../../js/node.js';
import { randomTensor, sameBits } from './attention-reference.mjs';
import { createTestingXattn } from './testing-build.mjs';
import { loadCases, mask, mhaConfig, mhaOptions, mhaParameters, sdpaOptions, tensor } from './golden.mjs';

const COUNTS = [1, 2, 3, 4];
const VARIANTS = [false, ...(relaxedSimdSupported() ? [true] : [])];  // relaxedSimd
// Per variant: the package's one-thread build (plain SIMD, no threads), and the threaded build at each count,
// as its testing build (tests/js/testing-build.mjs), whose pool the tests steer.
const plain = new Map();      // relaxedSimd -> instance
const instances = new Map();  // `${relaxedSimd} ${threads}` -> { xa, testing }
const instance = (relaxedSimd, threads) => instances.get(`${relaxedSimd} ${threads}`);
for (const relaxedSimd of VARIANTS) {
  plain.set(relaxedSimd, await createXattn({ threads: 1, relaxedSimd }));
  for (const threads of COUNTS) {
    const made = await createTestingXattn({ threads, relaxedSimd });
    // Every thread a run wakes takes part, so a split run is tested as one even on a loaded machine.
    made.testing.setEveryWorkerTakesPart(true);
    instances.set(`${relaxedSimd} ${threads}`, made);
  }
}

function gradOptions(c) {
  const o = sdpaOptions(c);
  delete o.needWeights;
  if (c.opts.dropout_p !== undefined) o.dropoutP = Number(c.opts.dropout_p);
  if (c.opts.seed !== undefined) o.seed = Number(c.opts.seed);
  return o;
}

function mhaGradOptions(c) {
  const o = { isCausal: c.opts.is_causal === '1', training: c.opts.training === '1', seed: Number(c.opts.seed) };
  if (c.tensors.key_padding_mask) o.keyPaddingMask = mask(c.tensors.key_padding_mask);
  if (c.tensors.attn_mask) o.attnMask = mask(c.tensors.attn_mask);
  return o;
}

// Every Float32Array in a result, in a fixed order (nested objects such as gradParameters included).
function arrays(result) {
  const out = [];
  const visit = (x) => {
    if (x instanceof Float32Array) out.push(x);
    else if (x && typeof x === 'object') for (const key of Object.keys(x).sort()) visit(x[key]);
  };
  visit(result);
  return out;
}

// Runs compute(xa) on every instance; each result's arrays must equal the package's one-thread build's of the same
// variant bit for bit. With `force`, calls split over every thread however little work they hold (tiny fixtures
// would not split). Returns the tasks helper threads ran.
function checkSameAtEveryCount(label, force, compute) {
  let helped = 0;
  for (const relaxedSimd of VARIANTS) helped += checkVariant(`${label}${relaxedSimd ? ' (relaxed SIMD)' : ''}`, relaxedSimd, force, compute);
  return helped;
}

function checkVariant(label, relaxedSimd, force, compute) {
  let helped = 0;
  const one = arrays(compute(plain.get(relaxedSimd)));
  for (const threads of COUNTS) {
    const { xa, testing } = instance(relaxedSimd, threads);
    const before = testing.helperTasksRun();
    if (force) testing.setMinWorkPerWorker(0);
    try {
      const got = arrays(compute(xa));
      assert.equal(got.length, one.length, label);
      got.forEach((g, i) => assert.ok(sameBits(g, one[i]), `${label}: array ${i} differs at ${threads} threads`));
    } finally {
      if (force) testing.setMinWorkPerWorker(1e6);
    }
    helped += testing.helperTasksRun() - before;
  }
  return helped;
}

describe('createXattn({ threads })', () => {
  test('Node defaults to min(4, available cores); threads: 1 takes the plain SIMD build', async () => {
    assert.equal((await createXattn()).threads, Math.min(4, availableParallelism()));
    for (const relaxedSimd of VARIANTS) {
      for (const threads of COUNTS) {
        const xa = await createXattn({ threads, relaxedSimd });
        assert.equal(xa.threads, threads);
        assert.equal(xa.simd, true);
        assert.equal(xa.relaxedSimd, relaxedSimd);
        xa.dispose();
      }
    }
    assert.equal((await createXattn({ simd: false })).threads, 1);
  });

  test('spinMicroseconds: the helpers poll that long after a call, then sleep', async () => {
    assert.equal(instance(false, 2).xa.spinMicroseconds, 200);
    const k = randomTensor([1, 2, 3000, 64], 8), v = randomTensor([1, 2, 3000, 64], 9), q = randomTensor([1, 8, 1, 64], 10);
    const callOn = ({ xa, testing }) => {
      testing.setEveryWorkerTakesPart(true);  // the helper takes part, so it polls after the call
      testing.setMinWorkPerWorker(0);
      try {
        xa.scaledDotProductAttention(q, k, v, { enableGqa: true });
      } finally {
        testing.setMinWorkPerWorker(1e6);
      }
    };
    const sleepMs = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
    const asleepSoon = async ({ testing }) => {  // within seconds, on a loaded machine
      for (let ms = 0; ms < 5000 && !testing.helpersAsleep(); ms += 5) await sleepMs(5);
      return testing.helpersAsleep();
    };
    // Polling for a second: still awake 30 ms after a call, where the default would have let it sleep.
    const polling = await createTestingXattn({ threads: 2, spinMicroseconds: 1_000_000 });
    assert.equal(polling.xa.spinMicroseconds, 1_000_000);
    callOn(polling);
    await sleepMs(30);
    assert.equal(polling.testing.helpersAsleep(), false);
    // Not polling, or the default 200 µs: asleep soon after a call.
    const sleeping = await createTestingXattn({ threads: 2, spinMicroseconds: 0 });
    assert.equal(sleeping.xa.spinMicroseconds, 0);
    callOn(sleeping);
    assert.equal(await asleepSoon(sleeping), true);
    callOn(instance(false, 2));
    assert.equal(await asleepSoon(instance(false, 2)), true);
  });
});

describe('bit-identical at 1, 2, 3 and 4 threads', () => {
  test('every scaledDotProductAttention fixture, output and weights', () => {
    let helped = 0;
    for (const c of loadCases('sdpa.txt')) {
      const t = c.tensors;
      helped += checkSameAtEveryCount(c.name, true,
        (xa) => xa.scaledDotProductAttention(tensor(t.query), tensor(t.key), tensor(t.value), sdpaOptions(c)));
    }
    assert.ok(helped > 0, 'helper threads ran tasks');
  });

  test('every scaledDotProductAttentionGrad fixture', () => {
    let helped = 0;
    for (const c of loadCases('sdpa_grad.txt')) {
      const t = c.tensors;
      helped += checkSameAtEveryCount(c.name, true, (xa) => xa.scaledDotProductAttentionGrad(
        tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output), gradOptions(c)));
    }
    assert.ok(helped > 0, 'helper threads ran tasks');
  });

  test('every MultiheadAttention fixture, forward and backward', () => {
    let helped = 0;
    const run = (xa, c, f) => {
      const m = xa.createMultiheadAttention({ ...mhaConfig(c), dropout: Number(c.opts.dropout ?? 0) });
      try {
        m.setParameters(mhaParameters(c));
        return f(m);
      } finally {
        m.dispose();
      }
    };
    for (const c of loadCases('mha.txt')) {
      const t = c.tensors;
      helped += checkSameAtEveryCount(c.name, true,
        (xa) => run(xa, c, (m) => m.forward(tensor(t.query), tensor(t.key), tensor(t.value), mhaOptions(c))));
    }
    for (const c of loadCases('mha_grad.txt')) {
      const t = c.tensors;
      helped += checkSameAtEveryCount(c.name, true, (xa) => run(xa, c,
        (m) => m.backward(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output), mhaGradOptions(c))));
    }
    assert.ok(helped > 0, 'helper threads ran tasks');
  });


  test('calls big enough to split by themselves: forward, weights, backward, causal', () => {
    const q = randomTensor([2, 4, 300, 64], 1), k = randomTensor([2, 4, 257, 64], 2), v = randomTensor([2, 4, 257, 48], 3);
    const dO = randomTensor([2, 4, 300, 48], 4);
    for (const isCausal of [false, true]) {
      const o = isCausal ? { isCausal, causalAlignment: 'bottom-right' } : {};
      const helped = checkSameAtEveryCount(`causal ${isCausal}`, false, (xa) => [
        xa.scaledDotProductAttention(q, k, v, o),
        xa.scaledDotProductAttention(q, k, v, { ...o, needWeights: true }),
        xa.scaledDotProductAttentionGrad(q, k, v, dO, o),
      ]);
      assert.ok(helped > 0, 'helper threads ran tasks');
    }
  });

  test('a decoding step over 5000 cached positions splits the keys (flash decoding), float32 and float16', () => {
    const k = randomTensor([1, 1, 5000, 64], 5), v = randomTensor([1, 1, 5000, 64], 6), q = randomTensor([1, 4, 1, 64], 7);
    for (const dtype of ['float32', 'float16']) {
      const helped = checkSameAtEveryCount(dtype, false, (xa) => {
        const cache = xa.createKvCache({ kvHeads: 1, headDim: 64, capacity: 5000, dtype });
        try {
          cache.append(k, v);
          // Ten steps: one step is a few small tasks, which the calling thread may finish before a sleeping
          // helper wakes; a helper that has just run polls for the next call, so it takes part in later ones.
          return Array.from({ length: 10 }, () => cache.attend(q));
        } finally {
          cache.dispose();
        }
      });
      assert.ok(helped > 0, 'helper threads ran tasks');
    }
  });
});
