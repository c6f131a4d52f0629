// Shrinks an (rows, cols) matrix window to at most (outRows, outCols) cells by taking the max of each block,
// so a 1024×1024 weight matrix fits a few hundred canvas pixels and a single sharp weight stays visible
// (a mean would blur it away). A block holding a NaN is NaN: a max that skipped it would show overflowed
// weights as dark, small ones.

// window: { r0, c0, rows, cols } inside a matrix of `stride` columns. Returns { data, rows, cols, blockR, blockC }:
// each output cell covers blockR × blockC source cells (the last ones may cover fewer).
export function downsampleMax(src, stride, window, outRows, outCols) {
  const { r0, c0, rows, cols } = window;
  const blockR = Math.max(1, Math.ceil(rows / outRows));
  const blockC = Math.max(1, Math.ceil(cols / outCols));
  const nr = Math.ceil(rows / blockR);
  const nc = Math.ceil(cols / blockC);
  const data = new Float32Array(nr * nc);
  for (let r = 0; r < nr; r++) {
    const rEnd = Math.min(rows, (r + 1) * blockR);
    for (let c = 0; c < nc; c++) {
      const cEnd = Math.min(cols, (c + 1) * blockC);
      let m = -Infinity;
      for (let i = r * blockR; i < rEnd; i++) {
        const base = (r0 + i) * stride + c0;
        for (let j = c * blockC; j < cEnd; j++) {
          const v = src[base + j];
          if (v > m || v !== v) m = v;
        }
      }
      data[r * nc + c] = m;
    }
  }
  return { data, rows: nr, cols: nc, blockR, blockC };
}

// The same blocks for a 0/1 matrix, reduced with AND: a block counts as "all hidden" only if every cell is.
export function downsampleAll(src, stride, window, blockR, blockC) {
  const { r0, c0, rows, cols } = window;
  const nr = Math.ceil(rows / blockR);
  const nc = Math.ceil(cols / blockC);
  const data = new Uint8Array(nr * nc);
  for (let r = 0; r < nr; r++) {
    for (let c = 0; c < nc; c++) {
      let all = 1;
      for (let i = r * blockR; i < Math.min(rows, (r + 1) * blockR) && all; i++) {
        const base = (r0 + i) * stride + c0;
        for (let j = c * blockC; j < Math.min(cols, (c + 1) * blockC); j++) {
          if (!src[base + j]) {
            all = 0;
            break;
          }
        }
      }
      data[r * nc + c] = all;
    }
  }
  return data;
}
