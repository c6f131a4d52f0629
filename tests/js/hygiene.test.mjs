// Loading and using the package leaves the process alone: no process-wide handlers, no new globals.
import assert from 'node:assert/strict';
import { test } from 'node:test';

test('createXattn installs no process handlers and defines no globals', async () => {
  const events = ['uncaughtException', 'unhandledRejection', 'exit', 'warning'];
  const listeners = Object.fromEntries(events.map((e) => [e, process.listenerCount(e)]));
  const globals = new Set(Object.getOwnPropertyNames(globalThis));
  const { createXattn } = await import('../../js/node.js');
  for (const simd of [true, false]) {
    const xa = await createXattn({ simd });
    const x = { data: new Float32Array(8).fill(1), shape: [2, 4] };
    xa.scaledDotProductAttention(x, x, x);
    assert.throws(() => xa.scaledDotProductAttention(x, x, { data: new Float32Array(3), shape: [3] }));
  }
  for (const e of events) assert.equal(process.listenerCount(e), listeners[e], `${e} listeners`);
  const added = Object.getOwnPropertyNames(globalThis).filter((name) => !globals.has(name));
  assert.deepEqual(added, []);
});
