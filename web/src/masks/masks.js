// The page's three masks (causal, key padding per batch element, cells clicked by hand) turned into the
// options of the package's scaledDotProductAttention. SDPA's boolean polarity: true = may attend.
// PyTorch refuses attnMask together with isCausal, so causal is passed as isCausal only when it is the
// only mask; combined with others it is written into the boolean mask.
import { causalAllows } from '../shared/attention-reference.js';

// settings: { causal, alignment: 'top-left' | 'bottom-right', padding: number[] | null (valid keys per
// batch element; keys j ≥ padding[b] are padding), custom: Uint8Array (L·S, 1 = hidden by hand) | null }
export function hasMask(settings) {
  return Boolean(settings.causal || settings.padding || settings.custom);
}

// A default key padding: batch element b keeps S − 2b keys (at least 1), so rows differ visibly.
export function defaultPadding(B, S) {
  return Array.from({ length: B }, (_, b) => Math.max(1, S - 2 * b));
}

// Whether (b, i, j) may attend: the AND of every active mask.
function allows(dims, settings, b, i, j) {
  if (settings.padding && j >= settings.padding[b]) return false;
  if (settings.causal && !causalAllows(i, j, dims.L, dims.S, settings.alignment)) return false;
  if (settings.custom && settings.custom[i * dims.S + j]) return false;
  return true;
}

// The shape of the boolean attnMask the page passes (null when there is none: no mask, or causal alone,
// which goes as isCausal). Each mask only spans the dims it varies over and broadcasts over the rest:
//   padding only          → (B, 1, S), or (B, 1, 1, S) with heads
//   causal and/or custom  → (L, S)
//   padding and another   → (B, L, S), or (B, 1, L, S) with heads
export function maskShapeFor(dims, settings) {
  if (!hasMask(settings) || (settings.causal && !settings.padding && !settings.custom)) return null;
  const { B, L, S, useHeads } = dims;
  const rows = settings.causal || settings.custom ? L : 1;
  const lead = settings.padding ? (useHeads ? [B, 1] : [B]) : [];
  return [...lead, rows, S];
}

// The mask options for the package's scaledDotProductAttention, and the attnMask's shape for the trace.
export function sdpaMaskOptions(dims, settings) {
  const shape = maskShapeFor(dims, settings);
  if (!shape) {
    const options = settings.causal ? { isCausal: true, causalAlignment: settings.alignment } : {};
    return { options, maskShape: null };
  }
  const { S } = dims;
  const nb = settings.padding ? dims.B : 1;
  const rows = shape[shape.length - 2];
  const data = new Uint8Array(nb * rows * S);
  for (let b = 0; b < nb; b++) {
    for (let i = 0; i < rows; i++) {
      const base = (b * rows + i) * S;
      for (let j = 0; j < S; j++) data[base + j] = allows(dims, settings, b, i, j) ? 1 : 0;
    }
  }
  return { options: { attnMask: { data, shape } }, maskShape: shape };
}

// The (L, S) allowed-matrix of batch element b (every head shares it), for drawing masked cells.
export function allowedMatrix(dims, settings, b) {
  const { L, S } = dims;
  const out = new Uint8Array(L * S);
  for (let i = 0; i < L; i++) {
    for (let j = 0; j < S; j++) out[i * S + j] = allows(dims, settings, b, i, j) ? 1 : 0;
  }
  return out;
}

// Rows with no key left to attend to: their weights are all zero by policy, not by softmax.
export function fullyMaskedRows(allowed, L, S) {
  const out = new Uint8Array(L);
  for (let i = 0; i < L; i++) {
    let any = 0;
    for (let j = 0; j < S && !any; j++) any = allowed[i * S + j];
    out[i] = any ? 0 : 1;
  }
  return out;
}

// A short description for the page: which masks are on.
export function describeMask(settings) {
  const parts = [];
  if (settings.causal) parts.push(`causal (${settings.alignment})`);
  if (settings.padding) parts.push('key padding');
  if (settings.custom) parts.push('custom cells');
  return parts.length ? parts.join(' + ') : 'no mask';
}
