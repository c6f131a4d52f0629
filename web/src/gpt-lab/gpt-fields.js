// The "Build a GPT" chapter's fields, read and checked before anything reaches the model's Worker (pure):
// the training steps and seed, the probe line, and the generation settings. Each refusal is a sentence that
// names the field and quotes what was typed, as the rest of the page does (shared/fields.js).
import { FIELDS, parseField, quoteTyped } from '../shared/fields.js';

export const GPT_FIELDS = {
  // Empty: the course's own number of steps for the stage.
  steps: { label: 'steps', what: 'training steps', kind: 'int', min: 1, max: 100000 },
  seed: FIELDS.seed,
  maxNew: { label: 'length', what: 'characters to generate', kind: 'int', min: 1, max: 2000 },
};
// Above 10 every character is about as likely as any other: nothing is left to see.
export const MAX_TEMPERATURE = 10;

// Characters of `text` the vocabulary lacks, each once, in order of appearance.
export function unknownChars(text, vocab) {
  const known = new Set(vocab);
  return [...new Set([...text].filter((c) => !known.has(c)))];
}

// A character as a message shows it: quoted, with the invisible ones named.
export function showChar(c) {
  if (c === '\n') return 'a line break';
  if (c === '\t') return 'a tab';
  if (c === ' ') return 'a space';
  return `“${c}”`;
}

function unknownProblem(what, chars) {
  const shown = chars.slice(0, 5).map(showChar).join(', ') + (chars.length > 5 ? ` and ${chars.length - 5} more` : '');
  return `${what} has ${chars.length === 1 ? 'a character' : 'characters'} the training text never uses (${shown}): the model has no token for ${chars.length === 1 ? 'it' : 'them'}`;
}

// { value } or { problem }: the steps field; empty is { value: null }, the course's number for the stage.
export function readSteps(text) {
  return String(text ?? '').trim() === '' ? { value: null } : parseField(GPT_FIELDS.steps, text);
}

export const readSeed = (text) => parseField(GPT_FIELDS.seed, text);

// { value, note } or { problem }: the probe line whose attention the chapter draws, every character in the
// vocabulary. A model sees at most `maxLength` characters at once (the early stages 8, the GPT 64): a longer
// line is cut to its first maxLength, and the note says so (null when nothing was cut).
export function readProbe(text, vocab, maxLength) {
  const t = String(text ?? '');
  if (t.length === 0) return { problem: 'The probe line is empty: type a line of the training text’s characters to see where each one looks' };
  const unknown = unknownChars(t, vocab);
  if (unknown.length) return { problem: unknownProblem('The probe line', unknown) };
  if (t.length > maxLength) {
    return { value: t.slice(0, maxLength), note: `This model sees ${maxLength} characters at once: the maps show the line’s first ${maxLength}, “${t.slice(0, maxLength)}”.` };
  }
  return { value: t, note: null };
}

// { settings: { prompt, maxNew, temperature, topK } } or { problem }: the generation form as typed. topK
// empty is every character of the vocabulary (no cut).
export function readGenerate({ prompt, maxNew, temperature, topK }, vocab) {
  const p = String(prompt ?? '');
  if (p.length === 0) return { problem: 'The prompt is empty: type at least one character for the model to continue (a line break is enough)' };
  const unknown = unknownChars(p, vocab);
  if (unknown.length) return { problem: unknownProblem('The prompt', unknown) };
  const n = parseField(GPT_FIELDS.maxNew, maxNew);
  if (n.problem) return n;
  const t = String(temperature ?? '').trim();
  const temp = /^[+-]?(\d+\.?\d*|\.\d+)$/.test(t) ? Number(t) : NaN;
  if (!(temp > 0) || temp > MAX_TEMPERATURE) {
    return { problem: `temperature must be a number above 0 and at most ${MAX_TEMPERATURE} (1 samples as the model learned, lower is more predictable); got ${quoteTyped(temperature)}` };
  }
  const kText = String(topK ?? '').trim();
  let k = vocab.length;
  if (kText !== '') {
    const r = parseField({ label: 'top-k', kind: 'int', min: 1, max: vocab.length }, kText);
    if (r.problem) return { problem: `${r.problem} (empty keeps every character)` };
    k = r.value;
  }
  return { settings: { prompt: p, maxNew: n.value, temperature: temp, topK: k } };
}
