// The relaxed-SIMD builds: their products are f32x4.relaxed_madd in the shipped binaries (and the plain builds
// have none), createXattn picks them where the engine validates relaxed SIMD and falls back where it does not,
// and they compute what the plain SIMD build does within the golden tolerance. The fixture, gradient and KV
// cache suites run on them too (golden.mjs BUILDS), as does the bit-identity across thread counts.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, test } from 'node:test';

import { relaxedSimdSupported } from '../../js/detect.js';
import { createXattn } from '../../js/node.js';
import { normalTensor } from './test-data.mjs';
import { countOps } from './wasm-ops.mjs';

const FLAG = '--experimental-wasm-relaxed-simd';
const dist = (name) => new URL(`../../dist/xattn-${name}.wasm`, import.meta.url);

describe('the shipped binaries', () => {
  const plain = countOps(dist('simd'));

  for (const name of ['relaxed-simd', 'relaxed-simd-threads']) {
    test(`${name}: the products in its loops are f32x4.relaxed_madd`, () => {
      const { inLoops } = countOps(dist(name));
      const madd = inLoops.get('f32x4.relaxed_madd') ?? 0;
      // 374 when written: every micro-kernel block size, exp, the finite checks. A build that lost the relaxed
      // ops set would have none, and one that kept mul + add beside it would not have 300 fewer muls.
      assert.ok(madd >= 300, `${madd} f32x4.relaxed_madd in loops`);
      const fewerMuls = plain.inLoops.get('f32x4.mul') - (inLoops.get('f32x4.mul') ?? 0);
      assert.ok(fewerMuls >= 300, `only ${fewerMuls} fewer f32x4.mul in loops than the plain SIMD build`);
    });
  }

  for (const name of ['simd', 'simd-threads', 'scalar']) {
    test(`${name}: no relaxed-SIMD op anywhere`, () => {
      const { total } = name === 'simd' ? plain : countOps(dist(name));
      assert.ok(total.get('func') > 100, 'the counter read the module\'s functions');
      assert.deepEqual([...total.keys()].filter((op) => op.includes('relaxed')), []);
    });
  }
  test('the counter finds loops and SIMD products in the plain SIMD build', () => {
    assert.ok(plain.inLoops.get('loop') > 100);
    assert.ok(plain.inLoops.get('f32x4.mul') >= 300 && plain.inLoops.get('f32x4.add') >= 300);
  });
});

// What createXattn picks, in a Node of its own with or without the flag: [default, threads 1, relaxedSimd
// false, relaxedSimd true on 2 threads], each as { simd, relaxedSimd, threads } or { error }.
function picks(flags) {
  const entry = new URL('../../js/node.js', import.meta.url).href;
  const script = `import { createXattn } from ${JSON.stringify(entry)};
    import { relaxedSimdSupported } from ${JSON.stringify(new URL('../../js/detect.js', import.meta.url).href)};
    const out = [];
    for (const o of [undefined, { threads: 1 }, { relaxedSimd: false }, { relaxedSimd: true, threads: 2 }]) {
      try {
        const xa = await createXattn(o);
        const q = { data: Float32Array.from({ length: 24 }, (_, i) => Math.sin(i)), shape: [2, 3, 4] };
        if (!(xa.scaledDotProductAttention(q, q, q).output.data.length === 24)) throw new Error('no output');
        out.push({ simd: xa.simd, relaxedSimd: xa.relaxedSimd, threads: xa.threads });
      } catch (e) { out.push({ error: e.message }); }
    }
    console.log(JSON.stringify({ supported: relaxedSimdSupported(), out }));`;
  return JSON.parse(execFileSync(process.execPath, [...flags, '--no-liftoff', '--input-type=module', '-e', script],
    { encoding: 'utf8', timeout: 60000 }));
}

describe('picking the build', () => {
  test(`with ${FLAG}, Node runs the relaxed builds by default, threaded or not, and { relaxedSimd: false } the plain one`, () => {
    const { supported, out } = picks([FLAG]);
    assert.equal(supported, true);
    const threads = out[0].threads;
    assert.ok(threads >= 1);
    assert.deepEqual(out, [
      { simd: true, relaxedSimd: true, threads },
      { simd: true, relaxedSimd: true, threads: 1 },
      { simd: true, relaxedSimd: false, threads },
      { simd: true, relaxedSimd: true, threads: 2 },
    ]);
  });

  test('without relaxed SIMD (Node 20 unflagged) the plain SIMD build runs, and asking for relaxed throws', () => {
    const { supported, out } = picks([]);
    if (supported) {  // a Node whose V8 has relaxed SIMD unflagged: nothing to fall back from
      assert.equal(out[0].relaxedSimd, true);
      return;
    }
    const threads = out[0].threads;
    assert.deepEqual(out.slice(0, 3), [
      { simd: true, relaxedSimd: false, threads },
      { simd: true, relaxedSimd: false, threads: 1 },
      { simd: true, relaxedSimd: false, threads },
    ]);
    assert.match(out[3].error, /^createXattn: this engine has no WebAssembly relaxed SIMD \(Chromium 114\+, Firefox 146\+; Node 20 needs --experimental-wasm-relaxed-simd\); use \{ relaxedSimd: false \} or leave relaxedSimd unset$/);
  });

  const flagged = process.execArgv.includes(FLAG);
  test(`this run has relaxed SIMD, so the fixture suites run the relaxed builds (npm test passes ${FLAG})`,
    { skip: !flagged && `this Node runs without ${FLAG}` }, () => {
      assert.equal(relaxedSimdSupported(), true);
    });
});

// A hash of every array a forward-and-backward call returns on the relaxed build, in a Node of its own with
// `flags` (V8's tiers), and how many outputs differ from the plain SIMD build's in the same process.
function relaxedRun(flags) {
  const script = `import { createHash } from 'node:crypto';
    import { createXattn } from ${JSON.stringify(new URL('../../js/node.js', import.meta.url).href)};
    const t = { data: Float32Array.from({ length: 4 * 200 * 48 }, (_, i) => Math.sin(i * 0.7) * 3), shape: [4, 200, 48] };
    const xa = await createXattn({ relaxedSimd: true, threads: 1 });
    const r = xa.scaledDotProductAttentionGrad(t, t, t, t, { needWeights: true });
    const hash = createHash('sha256');
    for (const k of ['output', 'weights', 'gradQuery', 'gradKey', 'gradValue']) hash.update(r[k].data);
    const plain = (await createXattn({ relaxedSimd: false, threads: 1 })).scaledDotProductAttention(t, t, t).output.data;
    const differ = plain.filter((x, i) => !Object.is(x, r.output.data[i])).length;
    console.log(JSON.stringify({ relaxedSimd: xa.relaxedSimd, sha256: hash.digest('hex'), differ }));`;
  return JSON.parse(execFileSync(process.execPath, [FLAG, ...flags, '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60000 }));
}

describe('relaxed and plain SIMD agree', { skip: !relaxedSimdSupported() && 'no relaxed SIMD in this engine' }, async () => {
  const [relaxed, plain] = await Promise.all([createXattn({ relaxedSimd: true, threads: 1 }), createXattn({ relaxedSimd: false, threads: 1 })]);


  test("V8's baseline and optimising tiers give the relaxed build the same bits", () => {
    const baseline = relaxedRun(['--liftoff', '--no-wasm-tier-up']), optimised = relaxedRun(['--no-liftoff']);
    assert.equal(baseline.relaxedSimd, true);
    assert.deepEqual(baseline, optimised);
  });

  test('within the golden tolerance on a forward and a backward over several key tiles (a fused madd rounds once)', () => {
    const t = normalTensor;
    const q = t([2, 3, 97, 40], 1), k = t([2, 3, 290, 40], 2), v = t([2, 3, 290, 24], 3), dO = t([2, 3, 97, 24], 4);
    for (const o of [{}, { isCausal: true, needWeights: true }]) {
      const a = relaxed.scaledDotProductAttentionGrad(q, k, v, dO, o), b = plain.scaledDotProductAttentionGrad(q, k, v, dO, o);
      for (const key of ['output', 'gradQuery', 'gradKey', 'gradValue', ...(o.needWeights ? ['weights'] : [])]) {
        a[key].data.forEach((x, i) => {
          const y = b[key].data[i];
          assert.ok(Math.abs(x - y) <= 1e-5 + 1e-4 * Math.abs(y), `${key}[${i}]: relaxed ${x}, plain ${y}`);
        });
      }
    }
  });
});
