// The training Worker: every step of training runs here, so the page's thread only draws what it is
// sent. It loads the package as a user would ('xattn'), drives a Trainer, and streams snapshots.
//
// Page → worker: { type: 'configure', settings } starts a new run (paused at step 0);
// { type: 'start', until, pace } trains until step `until` at full speed (pace 0) or `pace` steps per
// second; { type: 'pace', pace } changes the pace of the run in progress; { type: 'pause' }; { type: 'export' };
// { type: 'load', bytes, fallback } starts a run from an .npz (its settings from the archive comment, else
// `fallback`), at the step the file was trained to.
// Worker → page: { type: 'ready' }, { type: 'snapshot', … } while training and after each change (a new pace
// included: its `pace` is the one the steps now wait by),
// { type: 'exported', bytes, filename }, { type: 'loaded', settings, step }, { type: 'error', message }.
import { createXattn } from 'xattn';
import { Trainer } from './trainer.js';
import { decodeStateDict, encodeStateDict, taskFits } from './state-dict.js';
import { taskOf } from './tasks.js';

// Held-out accuracy is measured every EVAL_EVERY steps (and when training stops): a 256-sequence forward
// costs about one training step, so evaluating every 10 steps adds about a tenth.
const EVAL_EVERY = 10;
// Steps run back to back for at most SLICE_MS before the worker looks at its messages (a pause takes
// effect within a slice), and snapshots go out at most every SNAPSHOT_MS: the page redraws ~10 times a second.
const SLICE_MS = 40;
const SNAPSHOT_MS = 100;

// 1 thread: the model is tiny (E = 32, L = 8), so each call is far below what the package would share between
// threads, and training runs for as long as the learner watches, beside the page's compute workers; with
// threads it would only start a pool of Workers that never work.
const loading = createXattn({ threads: 1 });
let lib = null;
let trainer = null;
let run = 0; // which run a snapshot belongs to: the page ignores those of a replaced run
let running = false;
let pending = { losses: [], evals: [] }; // what the page has not been sent yet
// Since the last start: steps taken, the time spent computing them, and the wall time (which includes
// the snapshots, the pauses between slices and, at a pace, the waiting).
let rate = { steps: 0, ms: 0, since: 0 };
let lastEval = -1;
let trainedMs = 0; // wall time spent training this run, over every start
// Steps per second (0: full speed) of the run in progress, and where its count started: a 'pace' message
// changes it while training runs, the next step waits by the new pace.
let pacing = { pace: 0, t: 0, step: 0 };

const now = () => performance.now();
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// ms: the run's training wall time when this step finished (the 60 s goal is measured on it).
function evaluate(ms) {
  if (lastEval === trainer.step) return;
  lastEval = trainer.step;
  pending.evals.push({ step: trainer.step, ms, ...trainer.evaluate() });
}

function snapshot() {
  const message = {
    type: 'snapshot',
    run,
    step: trainer.step,
    running,
    settings: trainer.settings,
    losses: pending.losses,
    evals: pending.evals,
    probe: trainer.probeWeights(),
    pace: pacing.pace,
    stepsPerSecond: rate.steps > 0 ? (1000 * rate.steps) / (now() - rate.since) : null,
    computeStepsPerSecond: rate.ms > 0 ? (1000 * rate.steps) / rate.ms : null,
  };
  pending = { losses: [], evals: [] };
  self.postMessage(message, [message.probe.weights.buffer]);
}

// A new run from settings, or from loaded parameters at the step they were trained to.
function newRun(settings, params = null, step = 0) {
  trainer?.dispose();
  running = false;
  trainer = new Trainer(lib, settings, params);
  trainer.step = step;
  run++;
  pending = { losses: [], evals: [] };
  rate = { steps: 0, ms: 0, since: now() };
  lastEval = -1;
  trainedMs = 0;
  evaluate(0);
  snapshot();
}

function setPace(pace) {
  pacing = { pace, t: now(), step: trainer.step };
}

// A new pace during a run: steps per second are measured afresh from here (the time so far is kept), and a
// snapshot tells the page the pace the steps now wait by.
function changePace(pace) {
  if (!running) return;
  trainedMs += now() - rate.since;
  rate = { steps: 0, ms: 0, since: now() };
  setPace(pace);
  snapshot();
}

async function train({ until, pace }) {
  if (running) return;
  running = true;
  const mine = run;
  rate = { steps: 0, ms: 0, since: now() };
  setPace(pace);
  let lastSnapshot = 0;
  while (running && run === mine && trainer.step < until) {
    const slice = now();
    while (trainer.step < until && now() - slice < SLICE_MS) {
      // At a pace, a step waits for its turn: step k after the pace was set is due k / pace seconds after it.
      if (pacing.pace > 0 && trainer.step - pacing.step >= ((now() - pacing.t) / 1000) * pacing.pace) break;
      const t0 = now();
      const loss = trainer.trainStep();
      pending.losses.push({ step: trainer.step, loss });
      if (trainer.step % EVAL_EVERY === 0) evaluate(trainedMs + now() - rate.since);
      rate.ms += now() - t0;
      rate.steps++;
    }
    if (now() - lastSnapshot >= SNAPSHOT_MS) {
      lastSnapshot = now();
      snapshot();
    }
    // Lets 'pause', 'pace' and the other messages in; at a pace, sleeps until the next step is due.
    await pause(pacing.pace > 0 ? Math.max(1, 1000 / pacing.pace - 1) : 0);
  }
  if (run !== mine) return;
  trainedMs += now() - rate.since;
  evaluate(trainedMs);
  running = false;
  snapshot();
}

function load({ bytes, fallback }) {
  return decodeStateDict(new Uint8Array(bytes)).then(({ params, dims, meta }) => {
    const settings = { ...fallback, ...(meta ?? {}), vocab: dims.vocab, L: dims.L, E: dims.E };
    if (!taskFits(settings.task, dims)) {
      throw new RangeError(
        `its head has ${dims.classes} classes for a vocabulary of ${dims.vocab}, which does not fit the task “${taskOf(settings.task).label}”`,
      );
    }
    if (dims.E % settings.H !== 0) throw new RangeError(`E = ${dims.E} from the file is not a multiple of H = ${settings.H}`);
    newRun(settings, params, Number.isInteger(meta?.step) && meta.step >= 0 ? meta.step : 0);
    return { settings: trainer.settings, step: trainer.step, fromComment: meta !== null };
  });
}

function exportRun() {
  const s = trainer.settings;
  const meta = { task: s.task, H: s.H, seed: s.seed, step: trainer.step, batch: s.batch, lr: s.lr };
  const bytes = encodeStateDict(trainer.stateDict(), meta);
  return { bytes, filename: `attention-lab-${s.task}-H${s.H}-E${s.E}-step${trainer.step}.npz` };
}

self.onmessage = async ({ data }) => {
  try {
    lib = await loading;
    if (data.type === 'configure') newRun(data.settings);
    else if (data.type === 'start') await train(data);
    else if (data.type === 'pause') running = false;
    else if (data.type === 'pace') changePace(data.pace);
    else if (data.type === 'export') {
      const { bytes, filename } = exportRun();
      self.postMessage({ type: 'exported', bytes, filename }, [bytes.buffer]);
    } else if (data.type === 'load') {
      self.postMessage({ type: 'loaded', ...(await load(data)) });
    } else throw new Error(`unknown request '${data.type}'`);
  } catch (err) {
    running = false;
    self.postMessage({ type: 'error', message: err && err.message ? err.message : String(err), request: data.type });
  }
};

loading.then(
  (l) => self.postMessage({ type: 'ready', simd: l.simd, version: l.version }),
  (err) => self.postMessage({ type: 'error', message: `the package did not load: ${err.message}`, request: 'init' }),
);
