// The heads grid's thumbnails, made in the compute worker: every head's weights of one batch element,
// max-pooled so that many heads cost little to send. Pure given the held result.
import { downsampleAll, downsampleMax } from '../shared/downsample.js';
import { allowedMatrix } from '../masks/masks.js';

// Thumbnails of one row of the grid (batch element b) and of "every batch element", in cells per side.
export const THUMB = 48;
export const SMALL_THUMB = 32;

// Every head's weights of batch element b, max-pooled to at most size × size, with the mask's hidden cells.
// held: { dims, weights (B, H, L, S) }; allowed: batch element b's (L, S) allowed-matrix.
export function headThumbs(held, b, allowed, size) {
  const { L, S, H } = held.dims;
  const whole = { r0: 0, c0: 0, rows: L, cols: S };
  const hidden = allowed.map((a) => (a ? 0 : 1));
  const thumbs = [];
  for (let head = 0; head < H; head++) {
    const d = downsampleMax(held.weights.data.subarray((b * H + head) * L * S), S, whole, size, size);
    // Every head of b shares the mask, but each thumbnail is transferred, so each gets its own copy.
    thumbs.push({ head, data: d.data, rows: d.rows, cols: d.cols, hidden: downsampleAll(hidden, S, whole, d.blockR, d.blockC) });
  }
  return thumbs;
}

// The grid's "every batch element": the thumbnails of batch elements 0 … count − 1 (the page caps how many it
// shows), smaller than a single row's.
export function everyBatchThumbs(held, count) {
  if (!held.dims.useHeads) return [];
  const n = Math.min(held.dims.B, count);
  return Array.from({ length: n }, (_, b) => ({ b, thumbs: headThumbs(held, b, allowedMatrix(held.dims, held.mask, b), SMALL_THUMB) }));
}
