// Adam as torch.optim.Adam computes it: the first steps by hand, and convergence on a quadratic.
import test from 'node:test';
import assert from 'node:assert/strict';
import { Adam } from '../../web/src/train/adam.js';

test('the first two steps, worked by hand', () => {
  const p = { w: Float32Array.of(1, -2) };
  const adam = new Adam(p, { lr: 0.1 });
  // Step 1: m̂ = g, v̂ = g², so every coordinate moves by lr · sign(g) (up to eps).
  adam.step(p, { w: Float32Array.of(0.5, -4) });
  assert.ok(Math.abs(p.w[0] - 0.9) < 1e-6 && Math.abs(p.w[1] - -1.9) < 1e-6, String([...p.w]));
  // Step 2 with g = (0.5, 0): m = (0.095, -0.36), v = (0.0004995, 0.015984); bias-corrected by 1 − β^2.
  adam.step(p, { w: Float32Array.of(0.5, 0) });
  const m = [0.9 * 0.05 + 0.05, 0.9 * -0.4];
  const v = [0.999 * 0.00025 + 0.00025, 0.999 * 0.016];
  const expected = [0.9, -1.9].map((x, k) => x - (0.1 * (m[k] / 0.19)) / (Math.sqrt(v[k] / (1 - 0.999 ** 2)) + 1e-8));
  for (let k = 0; k < 2; k++) assert.ok(Math.abs(p.w[k] - expected[k]) < 1e-6, `${p.w[k]} vs ${expected[k]}`);
});

test('minimises a quadratic', () => {
  const target = Float32Array.of(3, -1, 0.5);
  const p = { x: new Float32Array(3) };
  const adam = new Adam(p, { lr: 0.05 });
  for (let t = 0; t < 2000; t++) adam.step(p, { x: p.x.map((v, k) => 2 * (v - target[k])) });
  for (let k = 0; k < 3; k++) assert.ok(Math.abs(p.x[k] - target[k]) < 1e-2, `${p.x[k]} vs ${target[k]}`);
});

test('refuses a gradient of the wrong size or name', () => {
  const p = { w: new Float32Array(2) };
  const adam = new Adam(p);
  assert.throws(() => adam.step(p, { w: new Float32Array(3) }), /'w' has 2 values, its gradient 3/);
  assert.throws(() => adam.step(p, { nope: new Float32Array(2) }), /no parameter named 'nope'/);
});
