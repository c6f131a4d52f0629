// The heatmap's window arithmetic and its colour range, without the DOM: which cells are visible after a
// zoom, whether a wheel turn zooms or scrolls the page, and what range the colours span.

export const MIN_WINDOW = 4; // never zoom to fewer cells than this per side

const clamp = (x, lo, hi) => Math.min(hi, Math.max(lo, x));

// The window after zooming by `factor` (< 1 zooms in) around cell `at`, which stays where it is on screen.
export function zoomWindow(win, { L, S }, factor, at) {
  const rows = clamp(Math.round(win.rows * factor), Math.min(L, MIN_WINDOW), L);
  const cols = clamp(Math.round(win.cols * factor), Math.min(S, MIN_WINDOW), S);
  const r0 = clamp(Math.round(at.i - ((at.i - win.r0) * rows) / win.rows), 0, L - rows);
  const c0 = clamp(Math.round(at.j - ((at.j - win.c0) * cols) / win.cols), 0, S - cols);
  return { r0, c0, rows, cols };
}

// Whether zooming by `factor` would show a different window (false at the zoom limits).
export function canZoom(win, dims, factor) {
  const next = zoomWindow(win, dims, factor, { i: win.r0, j: win.c0 });
  return next.rows !== win.rows || next.cols !== win.cols;
}

// What a wheel turn over the map does: 'zoom' when zooming that way is possible; otherwise 'hold' while the
// map has the keyboard focus (the learner is working in it, the page should not jump), else 'scroll', so a
// learner scrolling down the page is never trapped by a map that cannot zoom any further.
export function wheelAction({ deltaY, focused, win, dims }) {
  if (deltaY === 0) return 'scroll';
  if (canZoom(win, dims, deltaY < 0 ? 0.5 : 2)) return 'zoom';
  return focused ? 'hold' : 'scroll';
}

// Largest finite value in a window of a matrix with `stride` columns (0 when there is none).
export function windowMax(data, stride, { r0, c0, rows, cols }) {
  let m = 0;
  for (let i = r0; i < r0 + rows; i++) {
    const base = i * stride;
    for (let j = c0; j < c0 + cols; j++) {
      const v = data[base + j];
      if (v > m && v !== Infinity) m = v;
    }
  }
  return m;
}

// The colour range of the weights map. 'window': 0 … the largest weight in view, so a zoomed-in window of
// near-uniform weights still shows its differences; 'slice': 0 … the largest weight of the whole (b, h)
// slice, so windows compare with each other; 'one': 0 … 1, the weights' full possible range. An all-zero
// range (every row in view fully masked) keeps 0 … 1 rather than a meaningless tiny one.
export function colourRange(mode, weights, stride, win, whole) {
  if (mode === 'one') return { lo: 0, hi: 1 };
  const hi = windowMax(weights, stride, mode === 'slice' ? whole : win);
  return { lo: 0, hi: hi || 1 };
}

// Largest finite |x| in a window (0 when there is none). Masked cells are left out by the caller's `hidden`
// (1 = masked): their raw score exists but is not in play.
export function windowAbsMax(data, stride, { r0, c0, rows, cols }, hidden = null) {
  let m = 0;
  for (let i = r0; i < r0 + rows; i++) {
    const base = i * stride;
    for (let j = c0; j < c0 + cols; j++) {
      if (hidden && hidden[base + j]) continue;
      const a = Math.abs(data[base + j]);
      if (a > m && a !== Infinity) m = a;
    }
  }
  return m;
}

// The colour range of a map of scores, symmetric around 0 (scores are signed): ± the largest |score| in view,
// or of the whole slice ('slice' and 'one', which means nothing for scores).
export function scoreRange(mode, scores, stride, win, whole, hidden) {
  const a = windowAbsMax(scores, stride, mode === 'window' ? win : whole, hidden);
  return { lo: -(a || 1), hi: a || 1 };
}
