// Drawing a matrix on a canvas: one pixel per cell (or per block of cells, max-pooled, when the matrix has
// more cells than the canvas has pixels), scaled up without smoothing so cells stay crisp squares.
import { SEQUENTIAL, cssColor, lutIndex } from './colormap.js';
import { downsampleAll, downsampleMax } from './downsample.js';

// A colour bar across the canvas: the scale from its first colour (left) to its last (right), for a heatmap's
// legend.
export function drawColorBar(canvas, lut = SEQUENTIAL) {
  const ctx = canvas.getContext('2d');
  for (let x = 0; x < canvas.width; x++) {
    ctx.fillStyle = cssColor(lut, Math.round((x / (canvas.width - 1)) * 255));
    ctx.fillRect(x, 0, 1, canvas.height);
  }
}

// Masked cells are a neutral grey that the viridis scale never produces; fully masked rows get red hatching.
// NaN (a weight that is not a number: the scores overflowed) is a loud pink that neither scale produces,
// so it can never pass for a small weight.
export const MASKED_RGB = [205, 210, 219];
export const NAN_RGB = [255, 45, 170];
export const HATCH_COLOUR = '#c23b3b';
export const HATCH_BACKGROUND = '#f6dede';

// Gives the canvas as many pixels as it has device pixels on screen; returns its size in device pixels.
export function fitCanvas(canvas) {
  const dpr = window.devicePixelRatio || 1;
  const rect = canvas.getBoundingClientRect();
  const w = Math.max(1, Math.round(rect.width * dpr));
  const h = Math.max(1, Math.round(rect.height * dpr));
  if (canvas.width !== w || canvas.height !== h) {
    canvas.width = w;
    canvas.height = h;
  }
  return { w, h, dpr };
}

let scratch = null;
function scratchCanvas(w, h) {
  scratch ??= document.createElement('canvas');
  scratch.width = w;
  scratch.height = h;
  return scratch;
}

// Draws window { r0, c0, rows, cols } of a matrix with `stride` columns into `area` { x, y, w, h } of ctx.
// hidden (optional, 1 = masked) colours masked cells grey. Returns the block size used: { blockR, blockC }.
export function drawMatrix(ctx, area, { data, stride, window, lo, hi, lut, hidden = null }) {
  const ds = downsampleMax(data, stride, window, Math.max(1, Math.floor(area.h)), Math.max(1, Math.floor(area.w)));
  const hiddenBlocks = hidden ? downsampleAll(hidden, stride, window, ds.blockR, ds.blockC) : null;
  const img = new ImageData(ds.cols, ds.rows);
  const px = img.data;
  for (let k = 0; k < ds.data.length; k++) {
    const o = 4 * k;
    const v = ds.data[k];
    if (hiddenBlocks && hiddenBlocks[k]) {
      px[o] = MASKED_RGB[0];
      px[o + 1] = MASKED_RGB[1];
      px[o + 2] = MASKED_RGB[2];
    } else if (v !== v) {
      px[o] = NAN_RGB[0];
      px[o + 1] = NAN_RGB[1];
      px[o + 2] = NAN_RGB[2];
    } else {
      const t = 3 * lutIndex(v, lo, hi);
      px[o] = lut[t];
      px[o + 1] = lut[t + 1];
      px[o + 2] = lut[t + 2];
    }
    px[o + 3] = 255;
  }
  const off = scratchCanvas(ds.cols, ds.rows);
  off.getContext('2d').putImageData(img, 0, 0);
  // The last block may be partial, so the image covers (rows·blockR) source rows; scale by source cells.
  const cellH = area.h / window.rows;
  const cellW = area.w / window.cols;
  ctx.save();
  ctx.beginPath();
  ctx.rect(area.x, area.y, area.w, area.h);
  ctx.clip();
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(off, area.x, area.y, ds.cols * ds.blockC * cellW, ds.rows * ds.blockR * cellH);
  ctx.restore();
  return { blockR: ds.blockR, blockC: ds.blockC };
}

let hatch = null;
function hatchPattern(ctx, dpr) {
  const size = Math.round(8 * dpr);
  if (!hatch || hatch.size !== size) {
    const c = document.createElement('canvas');
    c.width = c.height = size;
    const g = c.getContext('2d');
    g.fillStyle = HATCH_BACKGROUND;
    g.fillRect(0, 0, size, size);
    g.strokeStyle = HATCH_COLOUR;
    g.lineWidth = Math.max(1, 1.5 * dpr);
    g.beginPath();
    g.moveTo(-1, size + 1);
    g.lineTo(size + 1, -1);
    g.stroke();
    hatch = { size, canvas: c };
  }
  return ctx.createPattern(hatch.canvas, 'repeat');
}

// Hatches every fully masked row of the window, so "no key visible" never looks like "small weights".
export function hatchRows(ctx, area, window, fullRows, dpr) {
  const cellH = area.h / window.rows;
  ctx.save();
  ctx.fillStyle = hatchPattern(ctx, dpr);
  let start = -1;
  for (let i = 0; i <= window.rows; i++) {
    const on = i < window.rows && fullRows[window.r0 + i];
    if (on && start < 0) start = i;
    if (!on && start >= 0) {
      const y0 = Math.floor(area.y + start * cellH);
      const y1 = Math.max(y0 + 1, Math.floor(area.y + i * cellH));
      ctx.fillRect(area.x, y0, area.w, y1 - y0);
      start = -1;
    }
  }
  ctx.restore();
}

// Largest finite |x| (0 for all-zero data), for a diverging scale symmetric around zero. NaN and ±∞ are
// counted apart (finite.js) and said in the caption, never folded into the range.
export { finiteAbsMax as absMax } from './finite.js';
