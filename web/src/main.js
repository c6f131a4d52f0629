// The page's wiring: the status line, the compute workers, and each chapter's panel, connected to one
// another; and window.__xattnDemo, the page's data for the browser tests and the console. What each chapter
// does lives in its folder (lesson, masks, heads, averaging, multihead, scaling, speed, train, decode, gpt-lab).
import './styles.css';
import { WorkerPool } from './worker-pool.js';
import { createStatus } from './shared/status.js';
import { setupLab } from './lesson/lab.js';
import { setupQuiz } from './lesson/trace-view.js';
import { setupSliceViews } from './lesson/slice-views.js';
import { setupScalingPanel } from './scaling/scaling-panel.js';
import { setupSpeedPanel } from './speed/speed-panel.js';
import { setupTrainPanel } from './train/train-panel.js';
import { setupDecodePanel } from './decode/decode-panel.js';
import { setupWalkPanel } from './multihead/walk-panel.js';
import { setupGptPanel } from './gpt-lab/gpt-panel.js';
import { COURSE } from './gpt/course.js';

const $ = (id) => document.getElementById(id);

const status = createStatus({
  build: $('build-info'),
  box: $('progress'),
  label: $('progress-label'),
  bar: $('progress-bar'),
  cancel: $('cancel'),
  error: $('error'),
  errorText: $('error-text'),
  dismiss: $('error-dismiss'),
});
const pool = new WorkerPool({ onCrash: (message) => status.error(`The worker stopped: ${message}`) });

// The views of one (b, h) slice of the lab's result: the heatmap, Q, K, V and the output, the heads grid, the
// averaging card, and the b / h fields and zoom buttons that drive them.
const slice = setupSliceViews({ pool, lab: () => lab });
const scaling = setupScalingPanel(
  { charts: $('scaling-charts'), intro: $('scaling-intro'), summary: $('scaling-summary'), newDraw: $('run-scaling') },
  { pool, status, lastGood: () => lab.lab.lastGood },
);
const lab = setupLab(
  {
    form: $('controls'),
    trace: $('trace'),
    gqaHint: $('gqa-hint'),
    resultCards: [$('weights-card'), $('tensors-card'), $('averaging-card'), $('heads-card')],
    masks: { paddingInputs: $('padding-inputs'), note: $('custom-mask-note'), clear: $('clear-mask'), edit: $('edit-mask'), canvas: $('weights-canvas') },
    imports: { note: $('import-note'), clear: $('clear-imports'), error: $('import-error') },
  },
  { pool, status, views: slice, onComputed: (s) => scaling.run(s) },
);

setupSpeedPanel(
  { run: $('run-speed'), table: $('speed-table'), intro: $('speed-intro'), chart: $('speed-chart'), threads: $('speed-threads'), story: $('speed-story'), note: $('speed-note'), bench: $('bench') },
  { pool, status, lab: () => lab.lab },
);
// Cancel stops whatever runs: the lab goes back to its last finished result, the side worker stops its study.
status.onCancel(() => {
  lab.cancel();
  pool.cancelSide();
});
setupQuiz({
  form: $('quiz'),
  counter: $('quiz-counter'),
  score: $('quiz-score'),
  question: $('quiz-question'),
  label: $('quiz-label'),
  input: $('quiz-answer'),
  feedback: $('quiz-feedback'),
  next: $('quiz-next'),
});
const multihead = setupWalkPanel($('multihead-card'));
const training = setupTrainPanel($('train-card'));
// The step-time study runs in the side worker, with the page's progress bar and Cancel.
const decoding = setupDecodePanel($('decode-card'), {
  runTiming: () => status.track(pool.sideJob('decodeTiming', {}, { onProgress: status.progress }), 'timing decoding steps'),
});
// Build a GPT: the course's stages, each trained in the chapter's own Worker.
const gpt = setupGptPanel(
  $('gpt-card'),
  COURSE.map(({ id, title, idea, referenceLoss }) => ({ id, title, idea, reference: referenceLoss })),
);

// For the browser tests and for curious people in the console: the page's own data, not pixels.
window.__xattnDemo = {
  get computes() {
    return lab.lab.computes;
  },
  // Busy while a compute is scheduled or any worker is working: tests wait for it to fall.
  get busy() {
    return lab.busy || pool.busy;
  },
  // Worker requests made so far (one per change of the controls).
  get requests() {
    return pool.requests;
  },
  get renders() {
    return slice.weightsView.renderCount;
  },
  get view() {
    return lab.lab.view;
  },
  // The matrix the big map shows (weights, scaled or raw scores, as its "show" menu says), as an array.
  get shownMatrix() {
    return lab.lab.view ? Array.from(slice.weightsView.matrix()) : null;
  },
  // The averaging card's chosen cell (i, j).
  get averagingCell() {
    return slice.averagingView.cell;
  },
  get dims() {
    return lab.lab.dims;
  },
  get lastError() {
    return status.lastError;
  },
  // The last scaling study: its rows as measured and, by chart, the series and value-axis ticks the charts
  // were given.
  get scaling() {
    const v = scaling.view;
    return v.rows ? { rows: v.rows, plotted: v.plotted(), ticks: { ...v.ticks } } : null;
  },
  tensor: (name) => pool.tensor(name),
  // The training panel's state: step, running, settings, every held-out evaluation, the probe's weights,
  // the pattern found in them, steps per second (its own Worker; never counted in busy or requests).
  training,
  // The decoding panel's state: settings, every step (its row of weights and its |Δ| from full attention),
  // full causal attention's weights, playing, and the last step-time study with what its chart was given.
  decode: decoding,
  // The multi-head walk: its settings, every step, the module's own output and weights, and the gap between.
  multihead,
  // Build a GPT: the stage the Worker holds, its step and losses, each stage's result (validation loss, sample),
  // the probe's attention, the last generation, exports and imports, the chapter's last error.
  gpt,
};
