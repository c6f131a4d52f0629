// Everything one computation of the lab needs, read from its form and its state, with every problem found;
// and the key that identifies a computation (equal keys, equal results). Pure given the form.
import { readControls } from './controls.js';
import { dimsFromImports } from './imports.js';

// lab: { masks (MaskState), paddingProblems (b → message), imported ({ query, key, value } from files) }.
export function readSettings(form, lab) {
  const c = readControls(form);
  const problems = [...c.problems];
  const { B, L, S } = c.dims;
  const dimsOk = problems.length === 0;
  if (c.paddingOn) for (const [b, message] of lab.paddingProblems) if (!dimsOk || b < B) problems.push(message);
  if (Object.keys(lab.imported).length) problems.push(...dimsFromImports(c.dims, lab.imported).problems);
  return {
    ...c,
    problems,
    mask: {
      causal: c.causal,
      alignment: c.alignment,
      padding: c.paddingOn && dimsOk ? lab.masks.padding(B, S) : null,
      custom: dimsOk ? lab.masks.custom(L, S) : null,
    },
  };
}

export function settingsKey(s, imported) {
  const custom = s.mask.custom ? [...s.mask.custom.keys()].filter((k) => s.mask.custom[k]) : null;
  const files = Object.entries(imported).map(([n, t]) => `${n}:${t.label}`);
  return JSON.stringify([s.dims, s.gen, s.scale ?? null, s.mask.causal, s.mask.alignment, s.mask.padding, custom, files]);
}
