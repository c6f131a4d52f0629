// The multi-head walk's input X and the module's parameters, drawn from the page's seeded generator with
// PyTorch's default initialisation of nn.MultiheadAttention: in_proj_weight Xavier-uniform, out_proj.weight
// U(±1/√E), both biases 0. X is U(−1, 1). Uniform draws only (no Box–Muller), so that the fixture's
// generator (tests/web/fixtures/make_mha_walk_fixture.py) reproduces every value bit for bit from the seed.
import { randomValues } from '../shared/prng.js';

// The walk's first example, the one checked against torch.nn.MultiheadAttention (tests/web/fixtures/mha_walk.txt).
export const WALK_EXAMPLE = { B: 2, L: 5, E: 8, H: 2, seed: 7 };

// Streams of the seed, one per tensor, clear of the lab's own (0 … 18) and the training panel's (200 +).
export const WALK_STREAMS = { x: 300, in_proj_weight: 301, 'out_proj.weight': 302 };

const uniform = (n, seed, stream, bound) => randomValues(n, { seed, stream, distribution: 'uniform', scale: bound });

// { x: (B, L, E), parameters: PyTorch's names → Float32Array } for dims { B, L, E } and a seed.
export function walkInputs({ B, L, E, seed }) {
  return {
    x: { data: uniform(B * L * E, seed, WALK_STREAMS.x, 1), shape: [B, L, E] },
    parameters: {
      in_proj_weight: uniform(3 * E * E, seed, WALK_STREAMS.in_proj_weight, Math.sqrt(6 / (E + 3 * E))), // (3E, E)
      in_proj_bias: new Float32Array(3 * E), // (3E,)
      'out_proj.weight': uniform(E * E, seed, WALK_STREAMS['out_proj.weight'], 1 / Math.sqrt(E)), // (E, E)
      'out_proj.bias': new Float32Array(E), // (E,)
    },
  };
}
