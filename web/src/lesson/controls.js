// The control form ↔ the page's settings. Reading never throws and never guesses: every numeric field goes
// through fields.js, and a field that fails names itself, its bounds and the text typed in `problems`
// (the page then computes nothing and says why).
import { FIELDS, checkHeads, parseField, parseScale } from '../shared/fields.js';

export const DIM_NAMES = ['B', 'H', 'Hkv', 'L', 'S', 'E', 'Ev'];

// { dims, gen, causal, alignment, paddingOn, problems: string[], invalid: field names }. H and Hkv are read
// only with heads on (they are disabled otherwise, and dims.H = dims.Hkv = 1 then).
export function readControls(form) {
  const f = form.elements;
  const problems = [];
  const invalid = [];
  const read = (name, spec = FIELDS[name]) => {
    const r = parseField(spec, f[name].value);
    if (r.problem) {
      problems.push(r.problem);
      invalid.push(name);
      return NaN;
    }
    return r.value;
  };
  const useHeads = f.useHeads.checked;
  const dims = { useHeads };
  for (const name of DIM_NAMES) {
    const headDim = name === 'H' || name === 'Hkv';
    dims[name] = headDim && !useHeads ? 1 : read(name);
  }
  if (useHeads && Number.isInteger(dims.H) && Number.isInteger(dims.Hkv)) {
    const heads = checkHeads(dims.H, dims.Hkv);
    if (heads.length) {
      problems.push(...heads);
      invalid.push('Hkv');
    }
  }
  const gen = { seed: read('seed'), distribution: f.distribution.value, spread: read('spread') };
  const scale = parseScale(f.scale.value);
  if (scale.problem) {
    problems.push(scale.problem);
    invalid.push('scale');
  }
  return {
    scale: scale.problem ? NaN : scale.value, // null: the default 1/√E
    dims,
    // The H and Hkv fields as they stand: with heads off they are not read (dims.H = 1), yet writing the
    // settings back (after a cancel) must leave them as they were.
    headFields: { H: f.H.value, Hkv: f.Hkv.value },
    gen,
    causal: f.causal.checked,
    alignment: form.querySelector('input[name="alignment"]:checked').value,
    paddingOn: f.padding.checked,
    problems,
    invalid,
  };
}

// Marks the fields that failed (aria-invalid, which the stylesheet outlines in red) and clears the others.
export function markInvalid(form, invalid) {
  for (const name of [...DIM_NAMES, 'seed', 'spread', 'scale']) {
    const input = form.elements[name];
    if (invalid.includes(name)) input.setAttribute('aria-invalid', 'true');
    else input.removeAttribute('aria-invalid');
  }
}

// Writes settings back (presets, imports, restoring after a cancel). `locked` maps dims fixed by imported
// files to the file that fixes them; those inputs are disabled.
export function writeControls(form, { dims, headFields, gen, scale, causal, alignment, paddingOn }, locked = {}) {
  const f = form.elements;
  for (const name of DIM_NAMES) {
    const headDim = name === 'H' || name === 'Hkv';
    if (headDim && !dims.useHeads && headFields) f[name].value = headFields[name];
    else if (Number.isFinite(dims[name])) f[name].value = String(dims[name]);
  }
  f.useHeads.checked = dims.useHeads;
  if (gen) {
    f.seed.value = String(gen.seed);
    f.distribution.value = gen.distribution;
    f.spread.value = String(gen.spread);
  }
  // A preset names no scale: it goes back to the default. A refused scale (NaN) is left as typed.
  if (scale === null || scale === undefined) f.scale.value = '';
  else if (Number.isFinite(scale)) f.scale.value = String(scale);
  if (causal !== undefined) f.causal.checked = causal;
  if (alignment) form.querySelector(`input[name="alignment"][value="${alignment}"]`).checked = true;
  if (paddingOn !== undefined) f.padding.checked = paddingOn;
  syncEnabled(form, locked);
}

// Enables what makes sense: H and Hkv only with heads, the alignment only with causal, nothing a file fixes.
export function syncEnabled(form, locked = {}) {
  const f = form.elements;
  for (const name of DIM_NAMES) {
    const headDim = name === 'H' || name === 'Hkv';
    f[name].disabled = Boolean(locked[name]) || (headDim && !f.useHeads.checked);
    f[name].title = locked[name] ? `set by the imported ${locked[name]}` : '';
  }
  f.useHeads.disabled = Boolean(locked.useHeads);
  for (const radio of form.querySelectorAll('input[name="alignment"]')) radio.disabled = !f.causal.checked;
}
