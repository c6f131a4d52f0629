// The "Build a GPT" host's training loop (PROTOCOL.md's start/resume): steps until the run's step count, a pause
// or a replaced run, with `progress` at most ~10 times a second, an evaluation (`eval`, `attention`, `sample`)
// every evalEvery steps and at the last, and `done` at the end. It yields after every step, so the requests that
// arrive meanwhile are handled between steps; a generation runs alone, and training waits for it.
import { yieldToEvents } from './yield-to-events.js';

const PROGRESS_MS = 100; // progress at most ~10 times a second
const SAMPLE_CHARS = 120; // the sample sent with each evaluation

const now = () => performance.now();

// The evaluation messages of the run at its step; returns the validation loss.
function sendEvaluation(host) {
  const { run } = host;
  const { trainLoss, valLoss } = run.evaluate();
  host.send({ type: 'eval', step: run.step, trainLoss, valLoss });
  host.sendAttention();
  host.send({ type: 'sample', step: run.step, text: run.sample(SAMPLE_CHARS) });
  return valLoss;
}

// Progress messages: at most one per PROGRESS_MS (and at the last step), each with the steps per second of
// training time since the one before.
class Progress {
  constructor(step) {
    this.last = -Infinity;
    this.since = { step, ms: 0 };
  }

  // A step of dt ms finished; the message to send now, or null.
  after(dt, { run, steps, trainedMs }, { loss, lr }, last) {
    this.since.ms += dt;
    if (now() - this.last < PROGRESS_MS && !last) return null;
    this.last = now();
    const taken = run.step - this.since.step;
    const stepsPerSecond = this.since.ms > 0 ? (1000 * taken) / this.since.ms : 0;
    this.since = { step: run.step, ms: 0 };
    return { type: 'progress', step: run.step, steps, trainLoss: loss, lr, stepsPerSecond, elapsedMs: trainedMs };
  }
}

// host: the GptHost (its run, steps, evalEvery, the training flags and trainedMs, which this loop updates).
export async function train(host) {
  if (host.training) {
    host.wantPause = false; // a resume before the loop saw the pause: it goes on
    return;
  }
  if (host.run.step >= host.steps) {
    host.send({ type: 'done', step: host.run.step, valLoss: host.run.estimate(host.run.corpus.val), elapsedMs: host.trainedMs });
    return;
  }
  host.training = true;
  host.wantPause = false;
  const mine = host.runId;
  const stillMine = () => host.runId === mine && !host.wantPause;
  try {
    await trainSteps(host, stillMine);
  } finally {
    if (host.runId === mine) host.training = false;
  }
  if (host.runId === mine && host.wantPause && host.run.step < host.steps) host.send({ type: 'paused', step: host.run.step });
}

async function trainSteps(host, stillMine) {
  const progress = new Progress(host.run.step);
  while (stillMine() && host.run.step < host.steps) {
    if (host.generation) await host.generation.done;
    if (!stillMine()) break;
    const t0 = now();
    const result = host.run.trainStep();
    const dt = now() - t0;
    host.trainedMs += dt;
    const last = host.run.step >= host.steps;
    const message = progress.after(dt, host, result, last);
    if (message) host.send(message);
    let valLoss = null;
    if (host.run.step % host.evalEvery === 0 || last) valLoss = sendEvaluation(host);
    if (last) host.send({ type: 'done', step: host.run.step, valLoss, elapsedMs: host.trainedMs });
    await yieldToEvents();
  }
}
