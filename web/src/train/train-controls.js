// The training panel's form: the task menu, the run's settings as the controls say them (checked), and the
// number of steps Start trains for.
import { FIELDS, parseField } from '../shared/fields.js';
import { DEFAULTS } from './trainer.js';
import { TASKS } from './tasks.js';

const STEPS = { label: 'steps', what: 'steps', kind: 'int', min: 1, max: 100000 };
const RUN_SETTINGS = ['task', 'H', 'E', 'L', 'lr', 'seed'];

export function fillTaskMenu(form) {
  for (const [name, task] of Object.entries(TASKS)) form.elements.task.append(new Option(task.label, name));
  form.elements.task.value = DEFAULTS.task;
}

// { settings, problem }: the run the controls describe; problem is a sentence (a bad seed) or null.
export function readTrainSettings(form) {
  const el = form.elements;
  const seed = parseField(FIELDS.seed, el.seed.value);
  return {
    problem: seed.problem ?? null,
    settings: { ...DEFAULTS, task: el.task.value, H: Number(el.H.value), E: Number(el.E.value), L: Number(el.L.value), lr: Number(el.lr.value), seed: seed.value },
  };
}

export function writeTrainSettings(form, s) {
  for (const k of RUN_SETTINGS) form.elements[k].value = String(s[k]);
}

// { value } or { problem }: how many steps Start trains for.
export const readSteps = (form) => parseField(STEPS, form.elements.steps.value);

// Steps per second of the pace menu; 0 is full speed.
export const readPace = (form) => Number(form.elements.pace.value);
