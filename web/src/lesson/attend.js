// The lab's attention, in the compute worker: the inputs and the package's options for one set of settings,
// and the call itself (one call, or one per batch element so that a long run reports progress). What it
// returns is held by the worker, which answers the page's requests for one (b, h) slice at a time.
import { checkFootprint, generateInputs } from '../shared/tensors.js';
import { inputShapes } from '../shared/shapes.js';
import { sdpaMaskOptions } from '../masks/masks.js';
import { attentionFlops } from '../shared/timing.js';

// The page's own float32 data (Q, K, V, output, weights) is capped here; the package refuses any single
// tensor past 1 GiB itself, with its own message. Two workers of one tab can hold a result at once (the
// finished one and the one being computed), so each gets 1 GiB.
const FOOTPRINT_LIMIT = 2 ** 30;
// Above this many flops the attention runs one batch element per call, so progress can be reported.
const CHUNK_FLOPS = 5e7;

// The tensors of batch element b of a (B, …) tensor: a view, which the package accepts (non-zero byteOffset).
function batchSlice(t, b) {
  const per = t.data.length / t.shape[0];
  return { data: t.data.subarray(b * per, (b + 1) * per), shape: [1, ...t.shape.slice(1)] };
}

function maskSlice(options, b) {
  const mask = options.attnMask;
  if (!mask || mask.shape.length < 3 || mask.shape[0] === 1) return options;
  return { ...options, attnMask: batchSlice(mask, b) };
}

// The inputs and the package's options for one set of settings (also what the speed comparison times).
// scale: the lab's scale control, null for the package's default 1/√E.
export function prepare({ dims, gen, mask, imported, scale = null }) {
  const { query, key, value } = generateInputs(dims, gen, imported ?? {});
  const { options: maskOptions, maskShape } = sdpaMaskOptions(dims, mask);
  const options = { ...maskOptions, enableGqa: dims.useHeads && dims.Hkv !== dims.H };
  if (scale !== null) options.scale = scale;
  return { query, key, value, options, maskShape };
}

// The attention for one set of settings, with its weights. lib: the package instance; progress(done,
// total, label). Returns { held, summary }: what the worker keeps, and what the page is told.
export function attend(lib, payload, progress) {
  const { dims } = payload;
  const shapes = inputShapes(dims);
  const H = dims.useHeads ? dims.H : 1;
  const lead = dims.useHeads ? [dims.B, H] : [dims.B];
  const tooBig = checkFootprint(
    { Q: shapes.query.shape, K: shapes.key.shape, V: shapes.value.shape, output: [...lead, dims.L, dims.Ev], weights: [...lead, dims.L, dims.S] },
    FOOTPRINT_LIMIT,
  );
  if (tooBig) throw new RangeError(tooBig);
  progress(0, 3, 'generating Q, K, V');
  const t0 = performance.now();
  const prepared = prepare(payload);
  const { query, key, value, maskShape } = prepared;
  const tGen = performance.now() - t0;
  const options = { ...prepared.options, needWeights: true };
  const t1 = performance.now();
  let output;
  let weights;
  if (attentionFlops(dims) <= CHUNK_FLOPS || dims.B === 1) {
    progress(1, 3, 'attention');
    ({ output, weights } = lib.scaledDotProductAttention(query, key, value, options));
  } else {
    // One call per batch element, written into the full result, so a long run reports progress.
    output = { data: new Float32Array(dims.B * H * dims.L * dims.Ev), shape: [...lead, dims.L, dims.Ev] };
    weights = { data: new Float32Array(dims.B * H * dims.L * dims.S), shape: [...lead, dims.L, dims.S] };
    for (let b = 0; b < dims.B; b++) {
      progress(b, dims.B, `attention, batch element ${b + 1} of ${dims.B}`);
      const r = lib.scaledDotProductAttention(batchSlice(query, b), batchSlice(key, b), batchSlice(value, b), maskSlice(options, b));
      output.data.set(r.output.data, b * r.output.data.length);
      weights.data.set(r.weights.data, b * r.weights.data.length);
    }
  }
  const tAttn = performance.now() - t1;
  return {
    held: { dims, mask: payload.mask, query, key, value, output, weights, options, lib },
    summary: {
      shapes: { query: query.shape, key: key.shape, value: value.shape, output: output.shape, weights: weights.shape, mask: maskShape },
      ms: { generate: tGen, attention: tAttn },
    },
  };
}
