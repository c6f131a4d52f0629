// Large calls (npm run test:long): a call whose key and value take 1.5 GiB of the 2 GiB WebAssembly memory runs
// to the end, and so does a backward over 4,000,000 keys (tests/js/boundary.test.mjs has the calls past the
// limit, refused).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';

import { createXattn } from '../../js/node.js';
import { checkSdpaFixture } from '../js/golden.mjs';

const GiB = 2 ** 30;
const t = (shape, fill = 0) => ({ data: new Float32Array(shape.reduce((n, d) => n * d, 1)).fill(fill), shape });


describe('calls that fit run to the end', async () => {
  test('forward over 12,582,912 keys (1.5 GiB of key and value) runs and averages V exactly', async () => {
    const xa = await createXattn();
    const S = 3 * 2 ** 22;
    const key = t([1, S, 16], 0);  // every score 0: uniform weights
    const value = t([1, S, 16], 0);
    for (let j = 0; j < S; j++) value.data[j * 16 + (j % 16)] = 16;  // each column's mean is exactly 1
    const r = xa.scaledDotProductAttention(t([1, 2, 16], 0.3), key, value);
    assert.deepEqual(r.output.shape, [1, 2, 16]);
    for (const x of r.output.data) assert.ok(Math.abs(x - 1) < 1e-2, `output ${x}, want 1`);
    assert.ok(xa.memoryBytes() > 1.5 * GiB);
    checkSdpaFixture(xa);
    xa.dispose();
  });

  test('backward: the query (1, 1, 16) against 4,000,000 keys that once aborted the module runs', async () => {
    const xa = await createXattn();
    // 256 MB of key and value: the fused backward's scratch is O(tile) plus (L, E), so it fits.
    const kv = t([1, 4e6, 16], 0.25);  // every score equal: uniform weights, output = the value rows' mean
    const small = t([1, 1, 16], 0.5);
    const r = xa.scaledDotProductAttentionGrad(small, kv, kv, small);
    for (const x of r.output.data) assert.ok(Math.abs(x - 0.25) < 1e-3, `output ${x}`);
    // dV_j = P_j dO = dO / S for every key; dQ = scale · Σ_j P_j (dP_j − D) K_j = 0 (every dP_j equals D).
    for (let j = 0; j < 4e6; j += 999983) assert.ok(Math.abs(r.gradValue.data[j * 16] - 0.5 / 4e6) < 1e-9);
    for (const x of r.gradQuery.data) assert.ok(Math.abs(x) < 1e-6, `gradQuery ${x}`);
    checkSdpaFixture(xa);
  });
});
