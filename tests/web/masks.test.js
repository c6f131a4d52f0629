// The page's masks as package options: causal alone goes as isCausal, anything else as the smallest
// boolean attnMask that broadcasts (SDPA polarity: 1 = may attend).
import test from 'node:test';
import assert from 'node:assert/strict';
import { allowedMatrix, defaultPadding, fullyMaskedRows, maskShapeFor, sdpaMaskOptions } from '../../web/src/masks/masks.js';

const dims = { B: 2, L: 3, S: 4, E: 8, Ev: 8, useHeads: false };
const none = { causal: false, alignment: 'top-left', padding: null, custom: null };

test('no mask gives no options; causal alone gives isCausal with its alignment', () => {
  assert.deepEqual(sdpaMaskOptions(dims, none), { options: {}, maskShape: null });
  const causal = sdpaMaskOptions(dims, { ...none, causal: true, alignment: 'bottom-right' });
  assert.deepEqual(causal, { options: { isCausal: true, causalAlignment: 'bottom-right' }, maskShape: null });
});

test('key padding alone is (B, 1, S), or (B, 1, 1, S) with heads, hiding keys j ≥ kept[b]', () => {
  const { options, maskShape } = sdpaMaskOptions(dims, { ...none, padding: [4, 2] });
  assert.deepEqual(maskShape, [2, 1, 4]);
  assert.deepEqual([...options.attnMask.data], [1, 1, 1, 1, 1, 1, 0, 0]);
  assert.deepEqual(maskShapeFor({ ...dims, useHeads: true, H: 2, Hkv: 2 }, { ...none, padding: [4, 2] }), [2, 1, 1, 4]);
});

test('causal with padding is written into one (B, L, S) mask (PyTorch refuses attnMask with isCausal)', () => {
  const { options, maskShape } = sdpaMaskOptions(dims, { ...none, causal: true, padding: [4, 1] });
  assert.deepEqual(maskShape, [2, 3, 4]);
  assert.equal(options.isCausal, undefined);
  // b = 0: lower triangle; b = 1: only key 0.
  assert.deepEqual([...options.attnMask.data], [1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0]);
});

test('cells hidden by hand are an (L, S) mask shared by every batch element', () => {
  const custom = new Uint8Array(12);
  custom[1 * 4 + 2] = 1;
  const { options, maskShape } = sdpaMaskOptions(dims, { ...none, custom });
  assert.deepEqual(maskShape, [3, 4]);
  assert.equal(options.attnMask.data[1 * 4 + 2], 0);
  assert.equal(options.attnMask.data.reduce((a, b) => a + b, 0), 11);
});

test('bottom-right causal with L > S leaves the first L − S rows with no key: fully masked', () => {
  const tall = { ...dims, L: 5, S: 3 };
  const allowed = allowedMatrix(tall, { ...none, causal: true, alignment: 'bottom-right' }, 0);
  assert.deepEqual([...fullyMaskedRows(allowed, 5, 3)], [1, 1, 0, 0, 0]);
  const topLeft = allowedMatrix(tall, { ...none, causal: true }, 0);
  assert.deepEqual([...fullyMaskedRows(topLeft, 5, 3)], [0, 0, 0, 0, 0]);
});

test('the default padding keeps S − 2b keys, at least one', () => {
  assert.deepEqual(defaultPadding(4, 5), [5, 3, 1, 1]);
});
