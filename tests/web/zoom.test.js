// The heatmap's window: zoom limits, what the wheel does, and the colour range of the cells in view.
import test from 'node:test';
import assert from 'node:assert/strict';
import { MIN_WINDOW, canZoom, colourRange, wheelAction, windowMax, zoomWindow, scoreRange } from '../../web/src/lesson/zoom.js';

const dims = { L: 1024, S: 1024 };
const fit = { r0: 0, c0: 0, rows: 1024, cols: 1024 };

test('zooming keeps the cell under the pointer in place and stops at the limits', () => {
  const w = zoomWindow(fit, dims, 0.5, { i: 512, j: 0 });
  assert.deepEqual(w, { r0: 256, c0: 0, rows: 512, cols: 512 });
  let small = fit;
  for (let k = 0; k < 12; k++) small = zoomWindow(small, dims, 0.5, { i: 100, j: 100 });
  assert.equal(small.rows, MIN_WINDOW);
  assert.equal(canZoom(small, dims, 0.5), false);
  assert.equal(canZoom(small, dims, 2), true);
  assert.equal(canZoom(fit, dims, 2), false);
});

test('the wheel zooms while it can; at a limit it scrolls the page unless the map has the focus', () => {
  assert.equal(wheelAction({ deltaY: -100, focused: false, win: fit, dims }), 'zoom');
  assert.equal(wheelAction({ deltaY: 100, focused: false, win: fit, dims }), 'scroll');
  assert.equal(wheelAction({ deltaY: 100, focused: true, win: fit, dims }), 'hold');
  const limit = { r0: 10, c0: 10, rows: MIN_WINDOW, cols: MIN_WINDOW };
  assert.equal(wheelAction({ deltaY: -100, focused: false, win: limit, dims }), 'scroll');
  assert.equal(wheelAction({ deltaY: 100, focused: false, win: limit, dims }), 'zoom');
});

test('the colour range follows the window, the slice or 0 … 1', () => {
  // A 4×4 slice whose largest weight (0.9) lies outside the top-left 2×2 window (largest 0.3).
  const w = Float32Array.of(0.1, 0.3, 0, 0, 0.2, 0.1, 0, 0, 0, 0, 0.9, 0, 0, 0, 0, NaN);
  const win = { r0: 0, c0: 0, rows: 2, cols: 2 };
  const whole = { r0: 0, c0: 0, rows: 4, cols: 4 };
  assert.ok(Math.abs(windowMax(w, 4, win) - 0.3) < 1e-7);
  assert.ok(Math.abs(colourRange('window', w, 4, win, whole).hi - 0.3) < 1e-7);
  assert.ok(Math.abs(colourRange('slice', w, 4, win, whole).hi - 0.9) < 1e-7);
  assert.deepEqual(colourRange('one', w, 4, win, whole), { lo: 0, hi: 1 });
  // A window of zeros (fully masked rows) keeps 0 … 1.
  assert.deepEqual(colourRange('window', w, 4, { r0: 2, c0: 0, rows: 2, cols: 2 }, whole), { lo: 0, hi: 1 });
});

test('scores are coloured around 0: ± the largest |score| in view or of the slice, masked cells left out', () => {
  // A 2 × 3 matrix of scores; cell (1, 2) is masked and holds the largest |score|.
  const scores = Float64Array.of(1, -4, 2, 0.5, 3, -9);
  const hidden = Uint8Array.of(0, 0, 0, 0, 0, 1);
  const whole = { r0: 0, c0: 0, rows: 2, cols: 3 };
  assert.deepEqual(scoreRange('slice', scores, 3, whole, whole, hidden), { lo: -4, hi: 4 });
  assert.deepEqual(scoreRange('window', scores, 3, { r0: 1, c0: 0, rows: 1, cols: 2 }, whole, hidden), { lo: -3, hi: 3 });
  assert.deepEqual(scoreRange('slice', new Float64Array(6), 3, whole, whole, null), { lo: -1, hi: 1 });
});
