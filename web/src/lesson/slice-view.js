// One (b, h) slice of the held result, as the page draws it: everything the heatmaps, the readout, the row
// statistics, the heads grid and the averaging card need, in transferable arrays. Made in the compute
// worker on each request, so the page never receives every weight. The readout's raw score q·k and the
// map's raw and scaled scores are computed on the page from the slice's Q and K, only when asked for.
import { matrixOf } from '../shared/tensors.js';
import { allowedMatrix, fullyMaskedRows } from '../masks/masks.js';
import { attentionGeometry } from '../shared/attention-reference.js';
import { rowEntropy, rowSums } from '../shared/row-stats.js';
import { THUMB, headThumbs } from '../heads/head-thumbs.js';
import { averagingSteps } from '../averaging/averaging.js';

export function sliceView(held, { b, h }) {
  const { dims } = held;
  const H = dims.useHeads ? dims.H : 1;
  const m = b * H + h;
  const { L, S } = dims;
  const geometry = attentionGeometry(held.query, held.key, held.value, { enableGqa: held.options.enableGqa });
  const weights = matrixOf(held.weights, m);
  const allowed = allowedMatrix(dims, held.mask, b);
  const query = matrixOf(held.query, m);
  const key = matrixOf(held.key, geometry.kvIndex(m));
  const value = matrixOf(held.value, geometry.kvIndex(m));
  const scale = held.options.scale ?? 1 / Math.sqrt(dims.E);
  return {
    b,
    h,
    L,
    S,
    E: dims.E,
    Ev: dims.Ev,
    scale,
    defaultScale: held.options.scale === undefined,
    weights,
    allowed,
    fullyMasked: fullyMaskedRows(allowed, L, S),
    rowSums: Float32Array.from(rowSums(weights, L, S)),
    rowEntropy: Float32Array.from(rowEntropy(weights, L, S)),
    query,
    key,
    value,
    output: matrixOf(held.output, m),
    thumbs: dims.useHeads ? headThumbs(held, b, allowed, THUMB) : [],
    // From averaging to attention, on this slice's first positions, with the lab's scale (the package is
    // loaded: it computed the held result).
    averaging: {
      ...averagingSteps({ query, key, value, L, S, E: dims.E, Ev: dims.Ev, scale }, (q, k, v, o) => held.lib.scaledDotProductAttention(q, k, v, o)),
      defaultScale: held.options.scale === undefined,
    },
  };
}
