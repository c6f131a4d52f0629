// Shapes through the four steps of attention, written the way the lesson writes them: (4, 10, 64).
// Dimension legend: B batch, H query heads (Hkv key/value heads under GQA), L query length,
// S key length, E query/key dim (d_k), Ev value dim (d_v).

// (4, 10, 64); a 1-dim shape keeps Python's trailing comma, (4,), and no dims is ().
export function formatShape(shape) {
  if (shape.length === 1) return `(${shape[0]},)`;
  return `(${shape.join(', ')})`;
}

// The letters of a shape, for the legend column: (B, H, L, E).
export function formatLetters(letters) {
  return `(${letters.join(', ')})`;
}

// Reads a shape typed by a person: "(8, 128, 64)", "8,128,64", "[8, 128, 64]", "8 x 128 x 64",
// "torch.Size([8, 128, 64])". Returns the dims, or null when the text is not a list of whole numbers.
export function parseShape(text) {
  const body = String(text)
    .trim()
    .replace(/^torch\.Size\s*/i, '')
    .replace(/^[([]+|[)\]]+$/g, '')
    .trim();
  if (body === '') return null;
  const parts = body.split(/\s*[,x×*]\s*|\s+/i).filter((p) => p !== '');
  if (parts.length === 0 || !parts.every((p) => /^\d+$/.test(p))) return null;
  return parts.map(Number);
}

export function sameShape(a, b) {
  return a.length === b.length && a.every((d, i) => d === b[i]);
}

// The tensors' shapes for one set of dims. With heads, Q is (B, H, L, E) and K, V carry Hkv heads.
export function inputShapes({ B, H = 1, Hkv = H, L, S, E, Ev, useHeads = false }) {
  const qLead = useHeads ? [B, H] : [B];
  const kvLead = useHeads ? [B, Hkv] : [B];
  const qLetters = useHeads ? ['B', 'H'] : ['B'];
  const kvLetters = useHeads ? ['B', Hkv === H ? 'H' : 'Hkv'] : ['B'];
  return {
    query: { shape: [...qLead, L, E], letters: [...qLetters, 'L', 'E'] },
    key: { shape: [...kvLead, S, E], letters: [...kvLetters, 'S', 'E'] },
    value: { shape: [...kvLead, S, Ev], letters: [...kvLetters, 'S', 'Ev'] },
  };
}

// One row per step of the lesson: { step, name, expr, shape, letters, note }. `maskShape` adds the mask
// row when a mask tensor is in use, `maskKinds` saying what it is made of (e.g. 'key padding + custom cells').
// `maskRow` (the page's) always adds one: without a mask tensor it says so ({ expr, note } given, shape null),
// so the table keeps its height when a mask is turned on and the heatmap below it does not jump under the
// pointer. The row is named 'mask' whatever it holds, and its note says the kinds: a name of one line keeps
// the row's height the same as masks come and go. Shapes follow PyTorch's scaled_dot_product_attention.
// `scale`: the scale set by hand, or null for PyTorch's default 1/√E.
export function traceShapes(dims, { maskShape = null, maskKinds = 'the mask', maskRow = null, scale = null } = {}) {
  const { B, L, S, E, Ev, useHeads = false } = dims;
  const H = useHeads ? dims.H : 1;
  const Hkv = useHeads ? dims.Hkv ?? H : 1;
  const { query, key, value } = inputShapes({ ...dims, H, Hkv });
  // What every step's shape starts with: (B) per batch element, (B, H) per head.
  const lead = { shape: useHeads ? [B, H] : [B], letters: useHeads ? ['B', 'H'] : ['B'], per: useHeads ? 'head' : 'batch element' };
  const rows = [
    { step: '', name: 'Q', expr: 'query', ...query, note: 'one E-dim query per position' },
    { step: '', name: 'K', expr: 'key', ...key, note: 'one E-dim key per position' },
    { step: '', name: 'V', expr: 'value', ...value, note: 'one Ev-dim value per position' },
  ];
  if (useHeads && Hkv !== H) rows.push(gqaRow({ B, H, Hkv, S, E, Ev }));
  rows.push(...scoreRows(lead, { L, S, E }), scaleRow(lead, { L, S, E }, scale));
  const mask = maskRowOf(lead, { L, S }, { maskShape, maskKinds, maskRow });
  if (mask) rows.push(mask);
  rows.push(...weightedSumRows(lead, { L, S, Ev }));
  return rows;
}

// GQA: each key/value head repeated for the H / Hkv query heads that share it.   (B, Hkv, S, E) -> (B, H, S, E)
function gqaRow({ B, H, Hkv, S, E, Ev }) {
  const group = H / Hkv;
  return {
    step: 'GQA',
    name: 'K, V per query head',
    expr: `repeat_interleave(${group}, dim=-3)`,
    shape: [B, H, S, E],
    letters: ['B', 'H', 'S', 'E'],
    note: `each of the Hkv = ${Hkv} key/value heads serves ${group} query heads (V becomes ${formatShape([B, H, S, Ev])})`,
  };
}

// Step 1: Kᵀ (…, E, S), and the scores Q @ Kᵀ (…, L, S).
function scoreRows(lead, { L, S, E }) {
  return [
    { step: '1', name: 'Kᵀ', expr: 'K.transpose(-2, -1)', shape: [...lead.shape, E, S], letters: [...lead.letters, 'E', 'S'], note: 'swap the last two dims' },
    {
      step: '1',
      name: 'scores',
      expr: 'Q @ Kᵀ',
      shape: [...lead.shape, L, S],
      letters: [...lead.letters, 'L', 'S'],
      note: `${formatShape([L, E])} × ${formatShape([E, S])} per ${lead.per}: a score per (i, j)`,
    },
  ];
}

// Step 2: the scaled scores (…, L, S), by PyTorch's default 1/√E (scale null) or by the scale set by hand.
function scaleRow(lead, { L, S, E }, scale) {
  const byDefault = scale === null;
  return {
    step: '2',
    name: 'scaled scores',
    expr: byDefault ? `scores / √${E}` : `scores × ${formatNumber(scale)}`,
    shape: [...lead.shape, L, S],
    letters: [...lead.letters, 'L', 'S'],
    note: byDefault
      ? `× 1/√E = ${formatNumber(1 / Math.sqrt(E))}; same shape`
      : `× ${formatNumber(scale)}, set by hand (1/√E would be ${formatNumber(1 / Math.sqrt(E))}); same shape`,
  };
}

// Step 2's mask row: the mask tensor's when there is one, else the page's stand-in (maskRow), else none.
function maskRowOf(lead, { L, S }, { maskShape, maskKinds, maskRow }) {
  if (maskShape) {
    return {
      step: '2',
      name: 'mask',
      expr: 'where(mask, scaled, −∞)',
      shape: maskShape,
      letters: null,
      note: `${maskKinds}, broadcast to ${formatShape([...lead.shape, L, S])}; false = this key is hidden from this query`,
    };
  }
  if (maskRow) return { step: '2', name: 'mask', expr: maskRow.expr, shape: null, letters: null, note: maskRow.note };
  return null;
}

// Steps 3 and 4: the weights (…, L, S), and the output weights @ V (…, L, Ev).
function weightedSumRows(lead, { L, S, Ev }) {
  return [
    {
      step: '3',
      name: 'weights',
      expr: 'softmax(scaled, dim=-1)',
      shape: [...lead.shape, L, S],
      letters: [...lead.letters, 'L', 'S'],
      note: 'each row sums to 1 over the S keys',
    },
    {
      step: '4',
      name: 'output',
      expr: 'weights @ V',
      shape: [...lead.shape, L, Ev],
      letters: [...lead.letters, 'L', 'Ev'],
      note: `${formatShape([L, S])} × ${formatShape([S, Ev])} per ${lead.per}: weighted sums of values`,
    },
  ];
}

// Short numbers for notes: 0.125, 0.0442.
export function formatNumber(x) {
  if (x === 0) return '0';
  const a = Math.abs(x);
  if (a >= 1e4 || a < 1e-3) return x.toExponential(2);
  return String(Number(x.toPrecision(3)));
}

export function elementCount(shape) {
  return shape.reduce((n, d) => n * d, 1);
}
