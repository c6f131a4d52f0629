// One message format, whichever side found the problem (JS checks or the C++ core): shapes as "(2, 5, 8)",
// numbers as JS prints them. A matrix of refusals from every entry point, each message read for the spellings
// the two sides used to disagree on.
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { createXattn } from '../../js/node.js';

const xa = await createXattn();
const t = (shape) => ({ data: new Float32Array(shape.reduce((n, d) => n * d, 1)), shape });

function messageOf(call) {
  try {
    call();
  } catch (e) {
    return e.message;
  }
  assert.fail(`not refused: ${call}`);
}

// Spellings that must not appear: C++'s %f and lowercase non-finite numbers, JS's Array#toString of a shape.
const FOREIGN = [
  [/\d\.\d{6}\b/, 'a number printed with six decimals'],
  [/(^|[^A-Za-z])(nan|inf|-inf)([^A-Za-z]|$)/, 'a lowercase non-finite number'],
  [/\(shape \d|\d,\d/, 'dims joined without spaces'],
];

test('every refusal spells shapes and numbers one way, whichever side found it', () => {
  const q = t([2, 5, 8]);
  const sdpa = (...a) => () => xa.scaledDotProductAttention(...a);
  const mha = xa.createMultiheadAttention({ embedDim: 8, numHeads: 2 });
  const cases = [
    // C++ core
    [sdpa(q, t([2, 7, 6]), t([2, 7, 8])), /\(query \(2, 5, 8\), key \(2, 7, 6\), value \(2, 7, 8\)\)/],
    [sdpa(q, q, q, { scale: 1e39 }), /got 1e\+39 \(float32 Infinity\)/],
    [sdpa(q, q, q, { scale: 0 }), /got 0 \(float32 0\)/],
    [sdpa(q, q, q, { scale: NaN }), /got NaN/],
    [sdpa(q, q, q, { dropoutP: 1.5 }), /got 1\.5$/],
    [sdpa(q, q, q, { dropoutP: -Infinity }), /got -Infinity$/],
    [sdpa(q, q, q, { attnMask: { data: new Uint8Array(6), shape: [2, 3] } }), /attnMask shape \(2, 3\)/],
    [sdpa(t([5]), t([5]), t([5])), /\(5,\)/],
    [() => xa.scaledDotProductAttentionGrad(q, q, q, t([2, 5, 7])), /gradOutput shape \(2, 5, 7\) != output shape \(2, 5, 8\)/],
    [() => mha.forward(t([3, 2, 7]), t([3, 2, 8]), t([3, 2, 8])), /\(3, 2, 7\)/],
    // JS checks
    [sdpa({ data: new Float32Array(80), shape: [2, NaN, 8] }, q, q), /got NaN \(shape \(2, NaN, 8\)\)/],
    [sdpa({ data: new Float32Array(80), shape: [2, 5.5, 8] }, q, q), /got 5\.5 \(shape \(2, 5\.5, 8\)\)/],
    [sdpa({ data: new Float32Array(7), shape: [2, 5, 8] }, q, q), /has 7 values but its shape \(2, 5, 8\) needs 80/],
    [() => mha.setParameters({ 'out_proj.bias': new Float32Array(3) }), /shape \(8,\), got 3/],
    [() => mha.loadStateDict({ 'out_proj.weight': { data: new Float32Array(64), shape: [4, 16] } }), /has shape \(4, 16\), this module needs \(8, 8\)/],
    [() => xa.createMultiheadAttention({ embedDim: 8, numHeads: 2, initSeed: -0.5 }), /got -0\.5$/],
  ];
  for (const [call, expected] of cases) {
    const message = messageOf(call);
    assert.match(message, expected);
    for (const [pattern, what] of FOREIGN) assert.doesNotMatch(message, pattern, `${what} in: ${message}`);
  }
  mha.dispose();
});
