// The multi-head walk's steps and their shapes, as the single-head trace writes them (pure): one input X
// (B, L, E) is projected to Q, K and V, each split into H heads of E/H features, attended per head,
// concatenated back to E features and projected out. Self-attention: S = L. Dims legend: B batch, L length,
// E embed dim, H heads, E/H features per head.
import { formatShape } from '../shared/shapes.js';

// dims: { B, L, E, H } with E a multiple of H. One row per step: { id, step, name, expr, shape, letters, note }.
export function walkShapes({ B, L, E, H }) {
  const d = E / H;
  return [
    { id: 'x', step: '', name: 'X', expr: 'input', shape: [B, L, E], letters: ['B', 'L', 'E'], note: 'one E-dim vector per position; Q, K and V all come from it' },
    {
      id: 'q',
      step: '1',
      name: 'Q, K, V',
      expr: 'X W_qᵀ + b_q (and W_k, W_v)',
      shape: [B, L, E],
      letters: ['B', 'L', 'E'],
      note: `in_proj_weight (${3 * E}, ${E}) holds W_q, W_k, W_v stacked; each maps E = ${E} features to E`,
    },
    {
      id: 'split',
      step: '2',
      name: 'split',
      expr: `Q.view(B, L, H, E/H)`,
      shape: [B, L, H, d],
      letters: ['B', 'L', 'H', 'E/H'],
      note: `the E = ${E} features cut into H = ${H} groups of E/H = ${d}: nothing is computed`,
    },
    {
      id: 'heads',
      step: '2',
      name: 'heads',
      expr: '.transpose(1, 2)',
      shape: [B, H, L, d],
      letters: ['B', 'H', 'L', 'E/H'],
      note: `heads next to the batch: ${B * H} independent (L, E/H) problems, for Q, K and V alike`,
    },
    {
      id: 'weights',
      step: '3',
      name: 'weights',
      expr: 'softmax(Q Kᵀ / √(E/H))',
      shape: [B, H, L, L],
      letters: ['B', 'H', 'L', 'S'],
      note: `each head's own (L, S) weights, scaled by 1/√${d}: the head's dim, not E`,
    },
    {
      id: 'headsOut',
      step: '3',
      name: 'per-head output',
      expr: 'weights @ V',
      shape: [B, H, L, d],
      letters: ['B', 'H', 'L', 'E/H'],
      note: `${formatShape([L, L])} × ${formatShape([L, d])} per head`,
    },
    {
      id: 'concat',
      step: '4',
      name: 'concatenated',
      expr: '.transpose(1, 2).reshape(B, L, E)',
      shape: [B, L, E],
      letters: ['B', 'L', 'E'],
      note: `the heads side by side again: ${H} × ${d} = ${E} features per position`,
    },
    {
      id: 'output',
      step: '5',
      name: 'output',
      expr: 'concat W_oᵀ + b_o',
      shape: [B, L, E],
      letters: ['B', 'L', 'E'],
      note: `out_proj.weight (${E}, ${E}) mixes what the heads found`,
    },
  ];
}

export const walkShape = (dims, id) => walkShapes(dims).find((r) => r.id === id).shape;
