// The page: reads the controls, keeps the shape trace live, asks the workers to compute, and hands each
// result to the views. Computing happens only in workers (worker.js, three of them: worker-pool.js),
// through the package's public API.
//
// The rules of a change: every field is validated before any work (fields.js), and an invalid one stops
// the work and marks the result panels stale; a change that changes nothing (the change event a field fires
// when it loses focus after its input events) does nothing; each real change is one worker request, which
// returns the attention and the slice shown; Cancel goes back to the last finished result, which the
// holder worker still has, without computing anything.
import './styles.css';
import { CancelledError } from './worker-client.js';
import { WorkerPool } from './worker-pool.js';
import { markInvalid, paddingSpec, readControls, renderPaddingInputs, syncEnabled, writeControls } from './controls.js';
import { parseField, headsHint } from './fields.js';
import { formatShape, traceShapes } from './shapes.js';
import { describeMask, maskShapeFor } from './masks.js';
import { MaskState } from './mask-state.js';
import { dimsFromImports } from './imports.js';
import { renderTrace, renderTraceProblems, setupQuiz } from './trace-view.js';
import { WeightsView } from './weights-view.js';
import { HeadsView, TensorViews } from './tensor-views.js';
import { ScalingView } from './scaling-view.js';
import { describeProblem, renderBench, renderSpeed } from './speed-view.js';
import { EXPORT_NAMES, setupDataPanel } from './io-view.js';
import { PRESETS } from './presets.js';
import { createStatus } from './status.js';
import { markStale, staleReason } from './stale.js';
import { setupTrainPanel } from './train/train-panel.js';
import { AveragingView } from './averaging-view.js';
import { setupDecodePanel } from './decode/decode-panel.js';

const $ = (id) => document.getElementById(id);
const form = $('controls');
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

const state = {
  masks: new MaskState(),
  paddingProblems: new Map(), // b → message, for padding fields holding an invalid value
  imported: {}, // query / key / value read from .npy files
  locked: {}, // dims fixed by imported files
  pick: { b: 0, h: 0 },
  wantedKey: null, // the settings the page last acted on (computing, or refusing as invalid)
  lastGood: null, // the last finished compute: its settings, masks and key, restored by Cancel
  dims: null, // dims of the result on screen
  view: null,
  computes: 0,
  study: { key: null, wanted: null, running: false, draw: 0 },
};

const pool = new WorkerPool({ onCrash: (message) => status.error(`The worker stopped: ${message}`) });
const resultCards = [$('weights-card'), $('tensors-card'), $('averaging-card'), $('heads-card')];

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
    nanSwatch: $('nan-swatch'),
    overflow: $('overflow-note'),
  },
  { onPaint: paintCustom, isHiddenByHand: (i, j) => state.masks.isHidden(i, j) },
);
const tensorViews = new TensorViews($('tensor-grid'));
const headsView = new HeadsView(
  { card: $('heads-card'), grid: $('heads-grid'), hint: $('heads-hint'), every: $('heads-every-b'), legend: $('heads-legend'), legendTicks: $('heads-legend-ticks') },
  (pick) => pickView(pick),
  (count) => pool.everyBatchThumbs(count),
);
const averagingView = new AveragingView({ steps: $('averaging-steps'), analogy: $('averaging-analogy'), intro: $('averaging-intro') });
const scalingView = new ScalingView({ charts: $('scaling-charts'), intro: $('scaling-intro'), summary: $('scaling-summary') });

// Everything one computation needs, from the controls and the page's state, with every problem found.
function settings() {
  const c = readControls(form);
  const problems = [...c.problems];
  const { B, L, S } = c.dims;
  const dimsOk = problems.length === 0;
  if (c.paddingOn) for (const [b, message] of state.paddingProblems) if (!dimsOk || b < B) problems.push(message);
  if (Object.keys(state.imported).length) problems.push(...dimsFromImports(c.dims, state.imported).problems);
  return {
    ...c,
    problems,
    mask: {
      causal: c.causal,
      alignment: c.alignment,
      padding: c.paddingOn && dimsOk ? state.masks.padding(B, S) : null,
      custom: dimsOk ? state.masks.custom(L, S) : null,
    },
  };
}

// What identifies a computation: equal keys, equal results.
function settingsKey(s) {
  const custom = s.mask.custom ? [...s.mask.custom.keys()].filter((k) => s.mask.custom[k]) : null;
  const imports = Object.entries(state.imported).map(([n, t]) => `${n}:${t.label}`);
  return JSON.stringify([s.dims, s.gen, s.mask.causal, s.mask.alignment, s.mask.padding, custom, imports]);
}

// Keeps the controls around the fields in step with them: enabled fields, padding inputs, hints, notes.
function syncControls(s) {
  syncEnabled(form, state.locked);
  markInvalid(form, s.invalid);
  const { B, S, L } = s.dims;
  const container = $('padding-inputs');
  container.hidden = !s.paddingOn;
  const dimsOk = s.invalid.length === 0 || (Number.isInteger(B) && Number.isInteger(S));
  if (!s.paddingOn) {
    // Nothing is built for a control that is off: B and S cost nothing while padding is hidden.
    if (container.childElementCount) container.replaceChildren();
    delete container.dataset.shape;
    state.paddingProblems.clear();
  } else if (dimsOk && Number.isInteger(B) && Number.isInteger(S) && container.dataset.shape !== `${B}x${S}`) {
    renderPaddingInputs(container, state.masks.padding(B, S), S);
    state.paddingProblems.clear();
  }
  for (const input of container.querySelectorAll('input')) {
    input.toggleAttribute('aria-invalid', state.paddingProblems.has(Number(input.dataset.b)));
  }
  const count = Number.isInteger(L) && Number.isInteger(S) ? state.masks.countIn(L, S) : 0;
  const offScreen = state.masks.cells.size - count;
  $('custom-mask-note').textContent =
    (count ? `${count} cell${count === 1 ? '' : 's'} hidden by hand, for every b and h.` : 'No cells drawn. Hidden cells apply to every b and h.') +
    (offScreen ? ` ${offScreen} more lie outside L × S and come back when it grows.` : '');
  $('clear-mask').disabled = state.masks.cells.size === 0;
  // The hint is written only for dims that passed every check, so it can never contradict an error.
  const hint = s.problems.length ? null : headsHint(s.dims);
  $('gqa-hint').hidden = hint === null;
  $('gqa-hint').textContent = hint ?? '';
}

function renderShapes(s) {
  const tbody = $('trace').querySelector('tbody');
  if (s.problems.length) {
    renderTraceProblems(tbody, s.problems);
    return;
  }
  const maskShape = maskShapeFor(s.dims, s.mask);
  const causalOnly = s.mask.causal && !maskShape;
  renderTrace(
    tbody,
    traceShapes(s.dims, {
      maskShape,
      maskKinds: describeMask(s.mask),
      maskRow: causalOnly
        ? {
            expr: 'isCausal=True',
            note: `causal (${s.mask.alignment}) alone needs no mask tensor: the package hides ${s.mask.alignment === 'top-left' ? 'j > i' : 'j > i + S − L'} itself`,
          }
        : { expr: '—', note: 'no mask: every query sees every key (try causal, padding or drawn cells)' },
    }),
  );
}

// A key-padding field: its value is the learner's, kept across B and S changes (mask-state.js), once valid.
function readPaddingField(input) {
  const b = Number(input.dataset.b);
  const S = Number(input.max);
  const r = parseField(paddingSpec(b, S), input.value);
  if (r.problem) state.paddingProblems.set(b, r.problem);
  else {
    state.paddingProblems.delete(b);
    state.masks.setKept(b, r.value);
  }
}

let debounce = null;
function onControlsChanged(event) {
  // The import inputs are handled by the Data panel; their change events bubbling here must not count as
  // an edit (they used to trigger a recompute whose success cleared the import's error message).
  if (event?.target?.matches?.('[data-import]')) return;
  if (event?.target?.matches?.('#padding-inputs input')) readPaddingField(event.target);
  const s = settings();
  syncControls(s);
  renderShapes(s);
  const key = s.problems.length ? `invalid ${JSON.stringify(s.problems)}` : settingsKey(s);
  if (key === state.wantedKey) return;
  state.wantedKey = key;
  status.clearError(); // the learner changed something: an old message no longer applies
  clearTimeout(debounce);
  debounce = null;
  if (s.problems.length) {
    // Nothing runs for settings that cannot be computed, and nothing older finishes in their place.
    computeSeq++;
    pool.cancelCompute();
    markStale(resultCards, staleReason(s.problems, state.dims));
    return;
  }
  markStale(resultCards, null);
  debounce = setTimeout(() => {
    debounce = null;
    compute(s, key);
  }, 120);
}

let computeSeq = 0;
async function compute(s, key) {
  const seq = ++computeSeq;
  // Anything still running was for older settings: stop it rather than wait for it.
  pool.cancelCompute();
  const H = s.dims.useHeads ? s.dims.H : 1;
  state.pick = { b: Math.min(state.pick.b, s.dims.B - 1), h: Math.min(state.pick.h, H - 1) };
  const payload = { dims: s.dims, gen: s.gen, mask: s.mask, imported: state.imported, pick: state.pick };
  try {
    const result = await status.track(pool.compute(payload, { onProgress: status.progress }), 'computing attention');
    if (seq !== computeSeq) return;
    status.setBuild(result.build, result.ms.attention);
    state.lastGood = { ...s, masks: state.masks.snapshot(), imported: state.imported, locked: state.locked, key };
    state.computes++;
    state.dims = s.dims;
    showView(result.view);
    maybeRunStudy(s);
  } catch (err) {
    if (err instanceof CancelledError || seq !== computeSeq) return;
    status.error(err.message);
    markStale(resultCards, staleReason([err.message.replace(/\.$/, '')], state.dims));
  }
}

function showView(view) {
  const dims = state.dims;
  const H = dims.useHeads ? dims.H : 1;
  $('pick-b').max = String(dims.B - 1);
  $('pick-b').value = String(view.b);
  $('pick-h').max = String(H - 1);
  $('pick-h').value = String(view.h);
  $('pick-h-label').hidden = !dims.useHeads;
  state.view = view;
  weightsView.setData(view);
  tensorViews.setData(view);
  headsView.setData(view, dims, state.computes);
  const n = view.averaging.n;
  averagingView.setData(
    view.averaging,
    `From the live example: b = ${view.b}${dims.useHeads ? `, h = ${view.h}` : ''}, ${n === view.L && n === view.S ? `all ${n} positions` : `its first n = ${n} positions`}, E = ${view.E}, Ev = ${view.Ev}`,
  );
}

async function pickView({ b = state.pick.b, h = state.pick.h }) {
  if (!state.dims) return;
  state.pick = { b, h };
  try {
    showView(await pool.view(state.pick));
  } catch (err) {
    if (!(err instanceof CancelledError)) status.error(err.message);
  }
}

// The study uses at most 128 queries and keys: enough rows for stable averages, quick at E = 1024. One
// study runs at a time; settings that change meanwhile are studied when it ends (the latest only).
async function maybeRunStudy(s, { force = false } = {}) {
  const L = Math.min(128, s.dims.L);
  const S = Math.min(128, s.dims.S);
  const study = state.study;
  const request = { gen: s.gen, L, S, draw: study.draw };
  const key = JSON.stringify(request);
  if (!force && key === study.key) return;
  study.wanted = request;
  if (study.running) return;
  study.running = true;
  try {
    while (study.wanted) {
      const next = study.wanted;
      study.wanted = null;
      const rows = await status.track(pool.sideJob('scaling', next, { onProgress: status.progress }), 'scaling study');
      study.key = JSON.stringify(next);
      scalingView.setData(rows, next);
    }
  } catch (err) {
    study.wanted = null;
    if (err instanceof CancelledError) $('scaling-summary').insertAdjacentHTML('afterbegin', '<p class="muted">Study cancelled: “New draw” runs it.</p>');
    else status.error(`Scaling study: ${err.message}`);
  } finally {
    study.running = false;
  }
}

function paintCustom(cells, hide) {
  state.masks.paint(cells, hide);
  onControlsChanged();
}

function writeImportNote() {
  const names = Object.entries(state.imported).map(([n, t]) => `${EXPORT_NAMES[n]} ${t.label} ${formatShape(t.shape)}`);
  $('import-note').hidden = names.length === 0;
  $('import-note').textContent = names.length ? `Imported: ${names.join(', ')}. Dims they fix are locked.` : '';
  $('clear-imports').disabled = names.length === 0;
}

// A file joins the others only if they all agree; a refused file changes nothing (no dim, no lock).
function acceptImport(name, tensor) {
  const next = { ...state.imported, [name]: tensor };
  const c = readControls(form);
  const { dims, locked, problems } = dimsFromImports(c.dims, next);
  if (problems.length) throw new Error(problems.join('; '));
  state.imported = next;
  state.locked = locked;
  writeControls(form, { ...c, dims }, locked);
  writeImportNote();
  onControlsChanged();
}

function wireControls() {
  form.addEventListener('input', onControlsChanged);
  form.addEventListener('change', onControlsChanged);
  form.addEventListener('submit', (e) => e.preventDefault());
  for (const button of form.querySelectorAll('[data-preset]')) {
    button.addEventListener('click', () => {
      state.imported = {};
      state.locked = {};
      writeImportNote();
      state.masks.clear();
      writeControls(form, PRESETS[button.dataset.preset], {});
      onControlsChanged();
    });
  }
  $('edit-mask').addEventListener('click', (e) => {
    const on = e.currentTarget.getAttribute('aria-pressed') !== 'true';
    e.currentTarget.setAttribute('aria-pressed', String(on));
    e.currentTarget.textContent = on ? 'Done drawing' : 'Draw mask by clicking cells';
    weightsView.setEditing(on);
    if (on) $('weights-canvas').focus({ preventScroll: true });
  });
  $('clear-mask').addEventListener('click', () => {
    state.masks.clearCells();
    onControlsChanged();
  });
  setupDataPanel(form, {
    fetchTensor: (name) => pool.tensor(name),
    onImport: acceptImport,
    onClear() {
      state.imported = {};
      state.locked = {};
      writeControls(form, readControls(form), {});
      writeImportNote();
      onControlsChanged();
    },
    onError: (err) => status.error(err.message),
  });
  $('pick-b').addEventListener('change', (e) => pickView({ b: clampInt(e.target.value, 0, state.dims.B - 1) }));
  $('pick-h').addEventListener('change', (e) => pickView({ h: clampInt(e.target.value, 0, (state.dims.useHeads ? state.dims.H : 1) - 1) }));
  $('zoom-in').addEventListener('click', () => weightsView.zoom(0.5, weightsView.cursor ?? weightsView.centre()));
  $('zoom-out').addEventListener('click', () => weightsView.zoom(2, weightsView.cursor ?? weightsView.centre()));
  $('zoom-reset').addEventListener('click', () => weightsView.fit());
  $('run-scaling').addEventListener('click', () => {
    if (!state.lastGood) return;
    state.study.draw++;
    maybeRunStudy(state.lastGood, { force: true });
  });
  $('run-speed').addEventListener('click', runSpeed);
  status.onCancel(cancelAll);
}

// The comparison times the result on screen, in the side worker: changing a control meanwhile does not stop
// it, and when it ends after such a change, the panel says which settings it timed.
async function runSpeed() {
  const g = state.lastGood;
  if (!g) return;
  const payload = { dims: g.dims, gen: g.gen, mask: g.mask, imported: g.imported };
  $('run-speed').disabled = true;
  try {
    const result = await status.track(pool.sideJob('speed', payload, { onProgress: status.progress }), 'speed comparison');
    renderSpeed({ table: $('speed-table'), intro: $('speed-intro'), chart: $('speed-chart'), threads: $('speed-threads') }, result);
    const moved = state.wantedKey !== g.key;
    $('speed-note').hidden = !moved;
    $('speed-note').textContent = moved
      ? `Timed for the settings shown when it started (${describeProblem(g.dims)}); the controls have changed since: run it again to time them.`
      : '';
  } catch (err) {
    if (err instanceof CancelledError) {
      $('speed-note').hidden = false;
      $('speed-note').textContent = 'Comparison cancelled.';
    } else status.error(`Speed: ${err.message}`);
  } finally {
    $('run-speed').disabled = false;
  }
}

// Cancel: stop whatever runs, and put the controls back to the last finished result, which is still on
// screen and still held by a worker. Nothing is recomputed.
function cancelAll() {
  clearTimeout(debounce);
  debounce = null;
  computeSeq++;
  pool.cancelCompute();
  pool.cancelSide();
  const g = state.lastGood;
  if (!g) {
    status.note('Cancelled. Change a control to compute again.');
    return;
  }
  state.masks = g.masks.snapshot();
  state.imported = g.imported;
  state.locked = g.locked;
  state.paddingProblems.clear();
  writeImportNote();
  writeControls(form, g, state.locked);
  $('padding-inputs').replaceChildren();
  delete $('padding-inputs').dataset.shape;
  const s = settings();
  syncControls(s);
  renderShapes(s);
  state.wantedKey = g.key;
  markStale(resultCards, null);
  status.note('Cancelled: back to the last finished result.');
}

function clampInt(text, lo, hi) {
  const v = Math.round(Number(text));
  return Number.isFinite(v) ? Math.min(hi, Math.max(lo, v)) : lo;
}

// For the browser tests and for curious people in the console: the page's own data, not pixels.
window.__xattnDemo = {
  get computes() {
    return state.computes;
  },
  // Busy while a compute is scheduled or any worker is working: tests wait for it to fall.
  get busy() {
    return debounce !== null || pool.busy;
  },
  // Worker requests made so far (one per change of the controls).
  get requests() {
    return pool.requests;
  },
  get renders() {
    return weightsView.renderCount;
  },
  get view() {
    return state.view;
  },
  // The averaging card's chosen cell (i, j).
  get averagingCell() {
    return averagingView.cell;
  },
  get dims() {
    return state.dims;
  },
  get lastError() {
    return status.lastError;
  },
  // The last scaling study: its rows as measured and, by chart, the series and value-axis ticks the charts
  // were given.
  get scaling() {
    return scalingView.rows ? { rows: scalingView.rows, plotted: scalingView.plotted(), ticks: { ...scalingView.ticks } } : null;
  },
  tensor: (name) => pool.tensor(name),
  // The training panel's state: step, running, settings, every held-out evaluation, the probe's weights,
  // the pattern found in them, steps per second (its own Worker; never counted in busy or requests).
  get training() {
    return training;
  },
  // The decoding panel's state: settings, every step (its row of weights and its |Δ| from full attention),
  // full causal attention's weights, playing, and the last step-time study with what its chart was given.
  get decode() {
    return decoding;
  },
};

setupQuiz({
  form: $('quiz'),
  counter: $('quiz-counter'),
  question: $('quiz-question'),
  label: $('quiz-label'),
  input: $('quiz-answer'),
  feedback: $('quiz-feedback'),
  next: $('quiz-next'),
});
wireControls();
onControlsChanged();
const training = setupTrainPanel($('train-card'));
// The step-time study runs in the side worker, with the page's progress bar and Cancel.
const decoding = setupDecodePanel($('decode-card'), {
  runTiming: () => status.track(pool.sideJob('decodeTiming', {}, { onProgress: status.progress }), 'timing decoding steps'),
});
renderBench($('bench'));
$('speed-intro').textContent =
  'Times the attention on screen with the SIMD build on 1 thread and on all threads, the scalar build and plain JavaScript, ' +
  'against the wasm SIMD peak measured in the same worker.' +
  (window.crossOriginIsolated ? '' : ' This page is not cross-origin isolated, so the package runs 1 thread only.');
