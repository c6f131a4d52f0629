// The decoding panel's settings: the choices its menus offer, the defaults, and the one rule menus cannot
// enforce (pure). Small on purpose: every weight of a 32 × 32 triangle is a cell a learner can see.
import { FIELDS, parseField } from '../shared/fields.js';

export const DECODE_CHOICES = {
  H: [1, 2, 4, 8],
  Hkv: [1, 2, 4, 8],
  E: [4, 8, 16, 32, 64],
  T: [6, 8, 12, 16, 24, 32],
};
// H = 4 query heads over Hkv = 2 key/value heads: the grouped-query layout decoders use, in miniature.
export const DECODE_DEFAULTS = { H: 4, Hkv: 2, E: 16, T: 12, seed: 42 };
// Steps per second of Play.
export const DECODE_SPEEDS = [1, 2, 4, 8, 16];
export const DEFAULT_SPEED = 2;

// raw: the controls' values as text. Returns { settings, problems }: settings { H, Hkv, E, Ev, T, seed }
// (Ev = E here), problems as sentences; nothing runs while there is one.
export function readDecodeSettings(raw) {
  const problems = [];
  const pick = (name) => {
    const v = Number(raw[name]);
    if (!DECODE_CHOICES[name].includes(v)) problems.push(`${name} must be one of ${DECODE_CHOICES[name].join(', ')}; got ${raw[name]}`);
    return v;
  };
  const H = pick('H');
  const Hkv = pick('Hkv');
  const E = pick('E');
  const T = pick('T');
  const seed = parseField(FIELDS.seed, raw.seed);
  if (seed.problem) problems.push(seed.problem);
  if (problems.length === 0 && H % Hkv !== 0) {
    problems.push(`H = ${H} query heads cannot share Hkv = ${Hkv} key/value heads: H must be a multiple of Hkv`);
  }
  return { settings: { H, Hkv, E, Ev: E, T, seed: seed.value }, problems };
}
