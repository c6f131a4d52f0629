// What the chapter writes from what the Worker sent (pure): losses, the course table's rows, the status line.
import { formatNumber } from '../shared/shapes.js';

// A loss to two decimals (the course quotes them so), or a dash for none yet.
export const formatLoss = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');

// The course's reference loss as it quotes it: "≈ 2.5", "1.88", or a dash where it gives none.
export function formatReference(ref) {
  if (ref == null) return '—';
  if (typeof ref === 'number') return ref.toFixed(2);
  if (typeof ref === 'string') return ref;
  return `${ref.approx ? '≈ ' : ''}${ref.value.toFixed(2)}`;
}

// One row per stage, in the course's order: { id, title, reference, loss, gain, state } where loss is this
// run's last validation loss for the stage, gain what it took off the loss of the stage before it that this
// run trained (negative: it lowered the loss), and state 'done', 'training', 'stopped' or 'not trained'.
// results: { [stageId]: { valLoss, done, step } }; current: the stage the Worker holds now.
export function courseRows(stages, results, current) {
  let previous = null;
  return stages.map((s) => {
    const r = results[s.id];
    const loss = r?.valLoss ?? null;
    const gain = loss != null && previous != null ? loss - previous : null;
    if (loss != null) previous = loss;
    const state = !r ? 'not trained' : r.done ? 'done' : s.id === current && r.running ? 'training' : 'stopped';
    return { id: s.id, title: s.title, reference: s.reference, loss, gain, state, step: r?.step ?? null };
  });
}

export function formatGain(gain) {
  if (gain == null) return '';
  return `${gain <= 0 ? '−' : '+'}${Math.abs(gain).toFixed(2)}`;
}

export function formatDuration(ms) {
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  return `${m} min ${String(Math.round(s - 60 * m)).padStart(2, '0')} s`;
}

export function formatCount(n) {
  return n.toLocaleString('en-US');
}

// The status line under the controls. state: { phase, stageTitle, step, steps, trainLoss, valLoss,
// stepsPerSecond, elapsedMs }; phase is 'loading', 'idle', 'starting', 'training', 'paused' or 'done'.
export function gptStatus(state) {
  if (state.phase === 'loading') return 'Loading the corpus and the model’s Worker…';
  if (state.phase === 'idle') return 'Ready: pick a stage of the course and train it.';
  if (state.phase === 'starting') return `${state.stageTitle}: building the model…`;
  const parts = [`${state.stageTitle}: step ${state.step} of ${state.steps}`];
  if (Number.isFinite(state.trainLoss)) parts.push(`training loss ${formatLoss(state.trainLoss)}`);
  if (Number.isFinite(state.valLoss)) parts.push(`validation loss ${formatLoss(state.valLoss)}`);
  if (state.stepsPerSecond) parts.push(`${formatNumber(state.stepsPerSecond)} steps/s`);
  if (Number.isFinite(state.elapsedMs)) parts.push(`${formatDuration(state.elapsedMs)} of training`);
  // What is left at the last pace (evaluations not counted), while there is something left.
  if (state.phase === 'training' && state.stepsPerSecond > 0 && state.steps > state.step) {
    parts.push(`about ${formatDuration((1000 * (state.steps - state.step)) / state.stepsPerSecond)} to go`);
  }
  const verb = { training: 'Training', paused: 'Paused', done: 'Trained' }[state.phase];
  return `${verb} · ${parts.join(' · ')}.`;
}

// A Worker's error as the chapter says it: the message without the code names it starts with ("import: ",
// "readSafetensors: "), which name the function for a developer and mean nothing to a learner; the rest is kept.
export function plainMessage(message) {
  const text = String(message ?? '').replace(/^(?:[A-Za-z_$][\w$.]*: )+/, '');
  return text ? text[0].toUpperCase() + text.slice(1) : 'something went wrong';
}
