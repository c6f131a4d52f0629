// Heads out of rows and back. A projection writes (B, T, ·) rows; attention takes (B, H, T, D). splitHeads takes
// channels offset .. offset + H·D of every row, head h's D of them at h·D, into (B, H, T, D); mergeHeads puts a
// (B, H, T, D) output back side by side as (B, T, H·D). `stride`: the values from one row to the next (H·D, or
// 3·C for the packed query, key and value of an in-projection). Both write into `out` when given.
export function splitHeads(rows, { B, T, H, D, stride = H * D, offset = 0 }, out = new Float32Array(B * H * T * D)) {
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < T; t++) {
      const from = (b * T + t) * stride + offset;
      for (let h = 0; h < H; h++) out.set(rows.subarray(from + h * D, from + (h + 1) * D), ((b * H + h) * T + t) * D);
    }
  }
  return out;
}

export function mergeHeads(heads, { B, T, H, D }, out = new Float32Array(B * T * H * D)) {
  for (let b = 0; b < B; b++) {
    for (let h = 0; h < H; h++) {
      for (let t = 0; t < T; t++) {
        const from = ((b * H + h) * T + t) * D;
        out.set(heads.subarray(from, from + D), (b * T + t) * H * D + h * D);
      }
    }
  }
  return out;
}
