// An instance's lifetime: dispose() (and Symbol.dispose) stops its threads and lets its memory go, and so does
// garbage collection of an instance nobody holds; modules and caches keep their instance alive and die with it.
// The process's OS threads and resident memory are read before and after, around 50 default (threaded)
// instances that each made one large call.
//
// Run with --expose-gc (npm test does); without it the collection tests are skipped.
//
// Resident memory is read with glibc returning freed memory to the system at once (M_TRIM_THRESHOLD 0). By default
// glibc keeps what the instances' worker threads freed in its arenas: 40–80 MiB of resident memory stayed after
// 50 released instances with nothing held (the JS heap, external memory and the OS threads all back at their
// start, and a second and third round of 50 adding nothing), which is the allocator's cache, not the instances.
// glibc reads the setting at start-up, so without it this file runs itself again in a child process that has it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { createXattn } from '../../js/node.js';
import { randomTensor } from '../js/test-data.mjs';

const MiB = 2 ** 20;
const noGc = typeof globalThis.gc !== 'function' && 'needs --expose-gc';
const osThreads = () => readdirSync('/proc/self/task').length;
const rss = () => process.memoryUsage().rss;
// Collects until done() or about fifteen seconds: a dropped threaded instance's memory goes only once its
// finalizer has run and its worker threads have exited, which the other work of a loaded host can hold back for
// seconds (five were seen to fall short on a host running two builds beside the suite).
const settle = async (done, rounds = 750) => {
  for (let round = 0; round < rounds && !done(); round++) {
    globalThis.gc();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

// One large call: 16 MiB of weights ((1024, 1024) floats × 4 heads), which the instance's memory keeps: 50
// instances kept would hold 800 MiB more.
const q = randomTensor([4, 1024, 16], 1);
const large = (xa) => xa.scaledDotProductAttention(q, q, q, { needWeights: true }).weights.data.length;

// Node starts some threads of its own lazily (its file-system pool, on the first read of a .wasm): one instance
// made and released first, so that the counts before and after differ only by what instances hold.
let warm = null;
const warmUp = () => (warm ??= (async () => {
  const xa = await createXattn();
  large(xa);
  xa.dispose();
  await settle(() => false, 50);
})());

const TRIMMED = process.env.MALLOC_TRIM_THRESHOLD_ === '0';

if (!TRIMMED) {
  test('instances with a lifetime (in a child process where glibc returns freed memory at once)', () => {
    // Not as a test runner's child (NODE_TEST_CONTEXT): the file run directly reports in TAP on its stdout.
    const { NODE_TEST_CONTEXT, ...env } = process.env;
    const child = spawnSync(process.execPath, [...process.execArgv.filter((a) => !a.startsWith('--test')),
      fileURLToPath(import.meta.url)], { env: { ...env, MALLOC_TRIM_THRESHOLD_: '0' }, encoding: 'utf8', timeout: 540_000 });
    const report = `${child.stdout ?? ''}${child.stderr ?? ''}`;
    assert.equal(child.status, 0, `the child's tests failed:\n${report}`);
    const passed = Number(/^# pass (\d+)$/m.exec(report)?.[1] ?? 0);
    assert.ok(passed >= 4 && /^# fail 0$/m.test(report), `the child ran too few tests:\n${report}`);
    for (const line of report.split('\n').filter((l) => /^\s*ok \d+/.test(l))) console.log(line.trim());
  });
}

describe('instances with a lifetime', { skip: !TRIMMED && 'run in the child process above' }, () => {
  test('dispose() stops the threads and releases the memory of 50 default instances', { skip: noGc }, async () => {
    await warmUp();
    const threads0 = osThreads(), rss0 = rss();
    let peakThreads = 0;
    for (let i = 0; i < 50; i++) {
      const xa = await createXattn();
      assert.equal(large(xa), 4 * 1024 * 1024);
      peakThreads = Math.max(peakThreads, osThreads());
      xa.dispose();
      assert.equal(xa.disposed, true);
    }
    await settle(() => osThreads() <= threads0 && rss() < rss0 + 64 * MiB);
    const first = await createXattn();
    if (first.threads > 1) assert.ok(peakThreads > threads0, 'the instances ran threads of their own');
    first.dispose();
    await settle(() => osThreads() <= threads0);
    assert.ok(osThreads() <= threads0, `${osThreads()} OS threads after, ${threads0} before`);
    assert.ok(rss() < rss0 + 64 * MiB, `resident ${(rss() / MiB).toFixed(0)} MiB after, ${(rss0 / MiB).toFixed(0)} MiB before`);
  });

  test('50 default instances dropped without dispose() are released by garbage collection', { skip: noGc }, async () => {
    await warmUp();
    const threads0 = osThreads(), rss0 = rss();
    // Each instance made in a function that returns: a suspended async function may keep its last locals.
    const useAndDrop = async () => {
      const xa = await createXattn();
      assert.equal(large(xa), 4 * 1024 * 1024);
    };
    for (let i = 0; i < 50; i++) await useAndDrop();
    await settle(() => osThreads() <= threads0 && rss() < rss0 + 64 * MiB);
    assert.ok(osThreads() <= threads0, `${osThreads()} OS threads after, ${threads0} before`);
    assert.ok(rss() < rss0 + 64 * MiB, `resident ${(rss() / MiB).toFixed(0)} MiB after, ${(rss0 / MiB).toFixed(0)} MiB before`);
  });

  test('a module or cache keeps its instance alive; dropping them all releases it', { skip: noGc }, async () => {
    await warmUp();
    const threads0 = osThreads();
    let mha = await (async () => (await createXattn({ threads: 2 })).createMultiheadAttention({ embedDim: 8, numHeads: 2 }))();
    const x = randomTensor([3, 1, 8], 2);
    await settle(() => false, 50);  // collect what can be collected: the instance must not be
    assert.deepEqual(mha.forward(x, x, x).output.shape, [3, 1, 8]);
    mha = null;
    await settle(() => osThreads() <= threads0);
    assert.ok(osThreads() <= threads0, `${osThreads()} OS threads after, ${threads0} before`);
  });

  test('after dispose() every call throws, its modules and caches included, and dispose() is idempotent', async () => {
    const xa = await createXattn({ threads: 2 });
    const mha = xa.createMultiheadAttention({ embedDim: 8, numHeads: 2 });
    const cache = xa.createKvCache({ kvHeads: 1, headDim: 8, capacity: 4 });
    xa[Symbol.dispose]();
    xa.dispose();
    const gone = { message: 'xattn: this instance was disposed; create a new one with createXattn()' };
    const x = randomTensor([3, 1, 8], 3);
    assert.throws(() => xa.scaledDotProductAttention(x, x, x), gone);
    assert.throws(() => xa.memoryBytes(), gone);
    assert.throws(() => xa.createMultiheadAttention({ embedDim: 8, numHeads: 2 }), gone);
    assert.throws(() => mha.forward(x, x, x), gone);
    assert.throws(() => mha.parameters(), gone);
    assert.throws(() => cache.attend(randomTensor([1, 1, 1, 8], 4)), gone);
    assert.throws(() => cache.length, gone);
    mha.dispose();
    cache.dispose();
    const again = await createXattn({ threads: 2 });
    assert.deepEqual(again.scaledDotProductAttention(x, x, x).output.shape, [3, 1, 8]);
    again.dispose();
  });
});
