// The page's wiring: the status line, the compute workers, and each chapter's panel, connected to one
// another; and window.__xattnDemo, the page's data for the browser tests and the console. What each chapter
// does lives in its folder (lesson, masks, heads, averaging, multihead, scaling, speed, train, decode).
import './styles.css';
import { WorkerPool } from './worker-pool.js';
import { createStatus } from './shared/status.js';
import { setupLab } from './lesson/lab.js';
import { setupQuiz } from './lesson/trace-view.js';
import { WeightsView } from './lesson/weights-view.js';
import { TensorViews } from './lesson/tensor-views.js';
import { HeadsView } from './heads/heads-view.js';
import { AveragingView } from './averaging/averaging-view.js';
import { setupScalingPanel } from './scaling/scaling-panel.js';
import { setupSpeedPanel } from './speed/speed-panel.js';
import { setupTrainPanel } from './train/train-panel.js';
import { setupDecodePanel } from './decode/decode-panel.js';
import { setupWalkPanel } from './multihead/walk-panel.js';

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

// The views of one (b, h) slice of the lab's result.
const weightsView = new WeightsView(
  {
    canvas: $('weights-canvas'),
    strip: $('rows-canvas'),
    axisTop: $('axis-top'),
    axisLeft: $('axis-left'),
    readout: $('readout'),
    legendCanvas: $('legend-canvas'),
    legendTicks: $('legend-ticks'),
    rowSummary: $('row-summary'),
    colourRange: $('colour-range'),
    show: $('show-matrix'),
    title: $('weights-title'),
    nanSwatch: $('nan-swatch'),
    overflow: $('overflow-note'),
  },
  { onPaint: (cells, hide) => lab.paint(cells, hide), isHiddenByHand: (i, j) => lab.lab.masks.isHidden(i, j) },
);
const tensorViews = new TensorViews($('tensor-grid'));
// A thumbnail opens its (b, h) in the big map, which is brought on screen (it can be far above the grid).
const headsView = new HeadsView(
  {
    card: $('heads-card'),
    grid: $('heads-grid'),
    hint: $('heads-hint'),
    every: $('heads-every-b'),
    legend: $('heads-legend'),
    legendTicks: $('heads-legend-ticks'),
    headsOn: $('heads-on'),
    toolbar: $('heads-toolbar'),
  },
  (pick) => lab.pick(pick).then(() => bringOnScreen($('weights-canvas'))),
  (count) => pool.everyBatchThumbs(count),
  () => {
    const box = $('controls').elements.useHeads;
    box.checked = true;
    box.dispatchEvent(new Event('change', { bubbles: true }));
  },
);

function bringOnScreen(element) {
  const r = element.getBoundingClientRect();
  if (r.bottom < 0 || r.top > window.innerHeight) element.scrollIntoView({ block: 'center' });
}
const averagingView = new AveragingView({ steps: $('averaging-steps'), analogy: $('averaging-analogy'), intro: $('averaging-intro') });

function showSlice(view, dims, computes) {
  const H = dims.useHeads ? dims.H : 1;
  $('pick-b').max = String(dims.B - 1);
  $('pick-b').value = String(view.b);
  $('pick-h').max = String(H - 1);
  $('pick-h').value = String(view.h);
  $('pick-h-label').hidden = !dims.useHeads;
  weightsView.setData(view);
  tensorViews.setData(view);
  headsView.setData(view, dims, computes);
  const n = view.averaging.n;
  averagingView.setData(
    view.averaging,
    `From the live example: b = ${view.b}${dims.useHeads ? `, h = ${view.h}` : ''}, ${n === view.L && n === view.S ? `all ${n} positions` : `its first n = ${n} positions`}, E = ${view.E}, Ev = ${view.Ev}`,
  );
}

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
  { pool, status, views: { show: showSlice, setEditing: (on) => weightsView.setEditing(on) }, onComputed: (s) => scaling.run(s) },
);

const clampInt = (text, lo, hi) => {
  const v = Math.round(Number(text));
  return Number.isFinite(v) ? Math.min(hi, Math.max(lo, v)) : lo;
};
$('pick-b').addEventListener('change', (e) => lab.pick({ b: clampInt(e.target.value, 0, lab.lab.dims.B - 1) }));
$('pick-h').addEventListener('change', (e) => lab.pick({ h: clampInt(e.target.value, 0, (lab.lab.dims.useHeads ? lab.lab.dims.H : 1) - 1) }));
$('zoom-in').addEventListener('click', () => weightsView.zoom(0.5, weightsView.cursor ?? weightsView.centre()));
$('zoom-out').addEventListener('click', () => weightsView.zoom(2, weightsView.cursor ?? weightsView.centre()));
$('zoom-reset').addEventListener('click', () => weightsView.fit());

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
    return weightsView.renderCount;
  },
  get view() {
    return lab.lab.view;
  },
  // The matrix the big map shows (weights, scaled or raw scores, as its "show" menu says), as an array.
  get shownMatrix() {
    return lab.lab.view ? Array.from(weightsView.matrix()) : null;
  },
  // The averaging card's chosen cell (i, j).
  get averagingCell() {
    return averagingView.cell;
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
};
