// The multi-head walk's settings: the choices its menus offer and the rule menus cannot enforce (pure). Small
// on purpose: every number of every step is a cell a learner can see.
import { FIELDS, parseField } from '../shared/fields.js';
import { WALK_EXAMPLE } from './walk-inputs.js';

export const WALK_CHOICES = { B: [1, 2, 3, 4], L: [2, 3, 4, 5, 6, 8, 10, 12], E: [4, 8, 12, 16, 24, 32], H: [1, 2, 3, 4, 8] };

// raw: the controls' values as text. Returns { settings: { B, L, E, H, seed }, problems }.
export function readWalkSettings(raw) {
  const problems = [];
  const pick = (name) => {
    const v = Number(raw[name]);
    if (!WALK_CHOICES[name].includes(v)) problems.push(`${name} must be one of ${WALK_CHOICES[name].join(', ')}; got ${raw[name]}`);
    return v;
  };
  const settings = { B: pick('B'), L: pick('L'), E: pick('E'), H: pick('H') };
  const seed = parseField(FIELDS.seed, raw.seed);
  if (seed.problem) problems.push(seed.problem);
  settings.seed = seed.value;
  if (problems.length === 0 && settings.E % settings.H !== 0) {
    problems.push(`E = ${settings.E} features cannot be split into H = ${settings.H} heads: E must be a multiple of H`);
  }
  return { settings, problems };
}

export const WALK_DEFAULTS = WALK_EXAMPLE;
