// Every numeric field of the page, with its bounds, and the one function that reads what a person typed.
// Validation happens here, before any work is planned: a value out of bounds never reaches the worker, and
// the message quotes the text as typed ("got −3", "got 2.5", "got 1e5"), never a parsed NaN.
//
// The bounds are what the page can show and compute without freezing: B ≤ 64 keeps the per-batch-element
// controls (key padding) and the worker's chunked loop small; L, S ≤ 4096 and E, Ev ≤ 1024 match the
// lesson's range and the memory check in the worker.

export const FIELDS = {
  B: { label: 'B', what: 'batch', kind: 'int', min: 1, max: 64 },
  H: { label: 'H', what: 'query heads', kind: 'int', min: 1, max: 32 },
  Hkv: { label: 'Hkv', what: 'key/value heads', kind: 'int', min: 1, max: 32 },
  L: { label: 'L', what: 'query length', kind: 'int', min: 1, max: 4096 },
  S: { label: 'S', what: 'key length', kind: 'int', min: 1, max: 4096 },
  E: { label: 'E', what: 'query/key dim', kind: 'int', min: 1, max: 1024 },
  Ev: { label: 'Ev', what: 'value dim', kind: 'int', min: 1, max: 1024 },
  seed: { label: 'seed', what: 'seed', kind: 'int', min: 0, max: 4294967295 },
  // The data spread σ: N(0, σ²) or U(−σ, σ). Up to float32's largest value, so a learner can push the
  // scores into overflow and see what that does (NaN weights), which is worth seeing once.
  spread: { label: 'data spread', what: 'data spread', kind: 'positive', min: 0, max: 3.4e38 },
  // Attention's scale (PyTorch's `scale`), empty for its default 1/√E. Above 0 (the package refuses 0): a tiny
  // scale flattens every row towards the plain average, a large one towards one key.
  scale: { label: 'scale', what: 'attention scale', kind: 'positive', min: 0, max: 1e6, orDefault: '1/√E' },
};

// Writes the bounds of a field the way a person reads them: "a whole number from 1 to 64".
export function describeBounds(spec) {
  if (spec.kind === 'int') return `a whole number from ${spec.min} to ${spec.max}`;
  const empty = spec.orDefault ? `, or empty for ${spec.orDefault}` : '';
  return `a number above ${spec.min} and at most ${spec.max.toExponential(1).replace('e+', 'e')}${empty}`;
}

// The text as the learner typed it, for messages: trimmed, each hyphen as a typographic minus, or "empty".
// Every numeric field of the page is a text field (inputmode numeric where a phone should offer digits): a
// number field hands scripts '' for text it cannot read, such as "6e" or "1-2", which would then be misquoted.
export function quoteTyped(text) {
  const t = String(text ?? '').trim();
  return t === '' ? 'an empty field' : t.replace(/-/g, '−');
}

// Reads one field. Returns { value } or { problem } where the problem names the field, its bounds and what
// was typed. `spec` may be a FIELDS entry or any object of the same form (the padding fields use one whose
// max is the current S).
export function parseField(spec, text) {
  const t = String(text ?? '').trim();
  // Number() also reads '1e3', '0x10' and '' (as 0); only plain decimal notation is taken as a number here,
  // and '' is refused explicitly.
  const plain = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t);
  const v = plain ? Number(t) : NaN;
  const bad = () => ({ problem: `${spec.label} must be ${describeBounds(spec)}; got ${quoteTyped(text)}` });
  if (!Number.isFinite(v)) return bad();
  if (spec.kind === 'int') {
    // Exponent notation is refused for whole numbers: "1e3" in a count field is far more often a slip than
    // a wish for 1000, and it would hide how big the number is.
    if (/[eE.]/.test(t) || !Number.isInteger(v) || v < spec.min || v > spec.max) return bad();
    return { value: v };
  }
  if (!(v > spec.min) || v > spec.max) return bad();
  return { value: v };
}

// The scale field: empty is PyTorch's default (null here, 1/√E in the package), else a number in its bounds.
export function parseScale(text) {
  return String(text ?? '').trim() === '' ? { value: null } : parseField(FIELDS.scale, text);
}

// The head dims depend on each other: checked after each one reads as a number.
export function checkHeads(H, Hkv) {
  if (Hkv > H) return [`Hkv = ${Hkv} key/value heads cannot be more than H = ${H} query heads`];
  if (H % Hkv !== 0) return [`H = ${H} query heads cannot share Hkv = ${Hkv} key/value heads: H must be a multiple of Hkv`];
  return [];
}

// The GQA hint under the head fields. It is only written for dims that passed the checks, so it can never
// contradict an error message; `null` hides it.
export function headsHint({ useHeads, H, Hkv }) {
  if (!useHeads) return null;
  const heads = (n, what) => `${n} ${what} head${n === 1 ? '' : 's'}`;
  if (Hkv === H) return `Hkv = H: each of the ${heads(H, 'query')} has its own keys and values. Make Hkv smaller for GQA.`;
  const group = H / Hkv;
  return `GQA: ${heads(H, 'query')} share ${heads(Hkv, 'key/value')}, ${group} query heads per key/value head (enableGqa).`;
}
