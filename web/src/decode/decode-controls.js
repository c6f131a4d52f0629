// The decoding panel's form: its menus filled from decode-settings.js, and what they say, read and checked.
import { DECODE_CHOICES, DECODE_DEFAULTS, DECODE_SPEEDS, DEFAULT_SPEED, readDecodeSettings } from './decode-settings.js';

export function fillDecodeControls(form) {
  const fill = (name, values, selected) => {
    for (const v of values) form.elements[name].append(new Option(String(v), String(v), false, v === selected));
  };
  for (const name of ['H', 'Hkv', 'E', 'T']) fill(name, DECODE_CHOICES[name], DECODE_DEFAULTS[name]);
  form.elements.seed.value = String(DECODE_DEFAULTS.seed);
  for (const v of DECODE_SPEEDS) form.elements.speed.append(new Option(`${v} step${v === 1 ? '' : 's'}/s`, String(v), false, v === DEFAULT_SPEED));
}

// { settings, problems } from the form (readDecodeSettings: nothing runs while there is a problem).
export function readDecodeControls(form) {
  return readDecodeSettings(Object.fromEntries(['H', 'Hkv', 'E', 'T', 'seed'].map((k) => [k, form.elements[k].value])));
}

// Steps per second of Play, as the speed menu says.
export const playSpeed = (form) => Number(form.elements.speed.value);
