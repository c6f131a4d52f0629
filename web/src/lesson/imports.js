// Dims from imported .npy tensors. Q (B, L, E), K (B, S, E), V (B, S, Ev); with heads (B, H, L, E),
// (B, Hkv, S, E), (B, Hkv, S, Ev). A 2-dim (L, E) file is read as one batch element: (1, L, E). A file whose
// dims the lab's fields could not hold (L = 5000 > 4096) is refused at import, so no locked field is ever out
// of its bounds.
import { FIELDS } from '../shared/fields.js';
import { formatShape } from '../shared/shapes.js';

const LETTERS = {
  3: { query: ['B', 'L', 'E'], key: ['B', 'S', 'E'], value: ['B', 'S', 'Ev'] },
  4: { query: ['B', 'H', 'L', 'E'], key: ['B', 'Hkv', 'S', 'E'], value: ['B', 'Hkv', 'S', 'Ev'] },
};
const LABEL = { query: 'Q', key: 'K', value: 'V' };

// A decoded tensor in the page's ranks (3 or 4), or a message saying why it cannot be used.
export function normaliseImport(name, tensor) {
  const { shape } = tensor;
  if (shape.length === 2) return { tensor: { data: tensor.data, shape: [1, ...shape] } };
  if (shape.length === 3 || shape.length === 4) {
    if (shape.some((d) => d === 0)) return { error: `${LABEL[name]} ${formatShape(shape)} has an empty dim` };
    return { tensor };
  }
  return { error: `${LABEL[name]} must have 3 dims (B, L, E) or 4 (B, H, L, E); the file holds ${formatShape(shape)}` };
}

// Merges the imported tensors' dims into `dims`. Returns { dims, locked, problems }: locked names the dims
// the files fix (their inputs are disabled), problems says which files disagree, in the legend's letters.
export function dimsFromImports(dims, imported) {
  const names = ['query', 'key', 'value'].filter((n) => imported[n]);
  const problems = [];
  if (names.length === 0) return { dims, locked: {}, problems };
  const ranks = new Set(names.map((n) => imported[n].shape.length));
  if (ranks.size > 1) {
    problems.push(`the imported files mix 3-dim and 4-dim tensors: ${names.map((n) => `${LABEL[n]} ${formatShape(imported[n].shape)}`).join(', ')}`);
    return { dims, locked: {}, problems };
  }
  const rank = [...ranks][0];
  const next = { ...dims, useHeads: rank === 4 };
  const locked = { useHeads: true };
  const source = {};
  for (const n of names) {
    const shape = imported[n].shape;
    const file = imported[n].label ? `${imported[n].label}: ` : '';
    LETTERS[rank][n].forEach((letter, k) => {
      const { max } = FIELDS[letter];
      if (shape[k] > max) {
        problems.push(`${file}${letter} = ${shape[k]} in ${LABEL[n]} ${formatShape(shape)} is more than the lab takes: ${letter} is at most ${max}`);
      }
      if (letter in source && next[letter] !== shape[k]) {
        problems.push(`${letter} is ${next[letter]} in ${source[letter]} but ${shape[k]} in ${LABEL[n]} ${formatShape(shape)}`);
        return;
      }
      next[letter] = shape[k];
      source[letter] = `${LABEL[n]} ${formatShape(shape)}`;
      locked[letter] = LABEL[n];
    });
  }
  if (rank === 4) {
    // With only Q imported, K and V follow Q's heads; with only K or V, Q follows theirs.
    if (!('H' in source)) next.H = next.Hkv;
    if (!('Hkv' in source)) next.Hkv = next.H;
    if (next.H % next.Hkv !== 0) problems.push(`H = ${next.H} query heads is not a multiple of Hkv = ${next.Hkv} key/value heads`);
  }
  return { dims: next, locked, problems };
}
