// The multi-head walk, computed. The package's MultiheadAttention, holding the walk's parameters, gives the
// output and every head's weights; the steps between are shown from the weights the module reports holding
// (parameters()): the in-projection, the head split and the concatenation by the float64 reference
// (shared/mha-reference.js), and each head's attention by the package's scaledDotProductAttention on those
// heads. The walk then says how far its last step is from the module's own output (float32 rounding).
// `xa` is the package's API through its worker (createXattnWorker): every call is awaited.
import { linear, mergeHeads, splitHeads } from '../shared/mha-reference.js';
import { walkInputs } from './walk-inputs.js';

const maxAbsDiff = (a, b) => a.reduce((m, x, k) => Math.max(m, Math.abs(x - b[k])), 0);
const tensor = (data, shape) => ({ data: Float32Array.from(data), shape });

// dims: { B, L, E, H, seed } (E a multiple of H). Returns { dims, x, parameters, steps, module, diff }: steps
// maps each row of walkShapes to its tensor { data, shape }; module is the module's { output, weights }.
export async function computeWalk(xa, dims) {
  const { B, L, E, H } = dims;
  const hd = E / H;
  const { x, parameters: drawn } = walkInputs(dims);
  const mha = await xa.createMultiheadAttention({ embedDim: E, numHeads: H, batchFirst: true });
  try {
    await mha.setParameters(drawn);
    const parameters = await mha.parameters(); // what the module computes with: a state dict of { data, shape }
    const module = await mha.forward(x, x, x, { needWeights: true, averageAttnWeights: false });
    // 1. In-projection: in_proj_weight (3E, E) is W_q, W_k, W_v stacked; in_proj_bias likewise.   (B·L, E) each
    const W = parameters.in_proj_weight.data; // (3E, E)
    const b = parameters.in_proj_bias.data; // (3E,)
    const [q, k, v] = [0, 1, 2].map((p) => linear(x.data, B * L, W.subarray(p * E * E, (p + 1) * E * E), b.subarray(p * E, (p + 1) * E), E, E));
    // 2. The head split, for Q, K and V.   (B, L, E) -> (B, H, L, E/H)
    const [qHeads, kHeads, vHeads] = [q, k, v].map((t) => tensor(splitHeads(t, B, L, H, hd), [B, H, L, hd]));
    // 3. Attention per head, by the package.   weights (B, H, L, L), output (B, H, L, E/H)
    const perHead = await xa.scaledDotProductAttention(qHeads, kHeads, vHeads, { needWeights: true });
    // 4. Concatenate, 5. project out.   (B, H, L, E/H) -> (B, L, E) -> (B, L, E)
    const concat = mergeHeads(perHead.output.data, B, L, H, hd);
    const output = linear(concat, B * L, parameters['out_proj.weight'].data, parameters['out_proj.bias'].data, E, E);
    const steps = {
      x,
      q: tensor(q, [B, L, E]),
      k: tensor(k, [B, L, E]),
      v: tensor(v, [B, L, E]),
      split: tensor(q, [B, L, H, hd]), // Q's numbers in Q's order, viewed with a head dim
      heads: qHeads,
      kHeads,
      vHeads,
      weights: perHead.weights,
      headsOut: perHead.output,
      concat: tensor(concat, [B, L, E]),
      output: tensor(output, [B, L, E]),
    };
    return {
      dims,
      x,
      parameters,
      steps,
      module: { output: module.output, weights: module.weights },
      diff: { output: maxAbsDiff(steps.output.data, module.output.data), weights: maxAbsDiff(perHead.weights.data, module.weights.data) },
    };
  } finally {
    await mha.dispose();
  }
}
