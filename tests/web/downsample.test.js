// Max-pooling for drawing big matrices: every source cell lands in exactly one block.
import test from 'node:test';
import assert from 'node:assert/strict';
import { downsampleAll, downsampleMax } from '../../web/src/shared/downsample.js';

test('a 5×5 matrix into at most 2×2 blocks of 3×3 (the last ones partial) keeps each block max', () => {
  const src = Float32Array.from({ length: 25 }, (_, k) => (k === 12 ? 100 : k));
  const d = downsampleMax(src, 5, { r0: 0, c0: 0, rows: 5, cols: 5 }, 2, 2);
  assert.deepEqual([d.rows, d.cols, d.blockR, d.blockC], [2, 2, 3, 3]);
  // blocks: rows 0–2 × cols 0–2 hold 100 (index 12); rows 0–2 × cols 3–4 max 14; rows 3–4 × cols 0–2 max 22; last 24.
  assert.deepEqual([...d.data], [100, 14, 22, 24]);
});

test('a window smaller than the output is copied cell by cell', () => {
  const src = Float32Array.from({ length: 16 }, (_, k) => k);
  const d = downsampleMax(src, 4, { r0: 1, c0: 2, rows: 2, cols: 2 }, 100, 100);
  assert.deepEqual([...d.data], [6, 7, 10, 11]);
  assert.deepEqual([d.blockR, d.blockC], [1, 1]);
});

test('AND-pooling marks a block hidden only when every cell in it is', () => {
  const hidden = Uint8Array.of(1, 1, 0, 1, 1, 1, 1, 1, 1);
  assert.deepEqual([...downsampleAll(hidden, 3, { r0: 0, c0: 0, rows: 3, cols: 3 }, 2, 2)], [1, 0, 1, 1]);
});
