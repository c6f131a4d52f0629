// The page: reads the controls, keeps the shape trace live, asks the worker to compute, and hands each
// result to the views. Computing happens only in the worker (worker.js), through the package's public API.
import './styles.css';
import { WorkerClient, CancelledError } from './worker-client.js';
import { checkGen, readControls, readPaddingInputs, renderPaddingInputs, syncEnabled, writeControls } from './controls.js';
import { checkDims, formatShape, traceShapes } from './shapes.js';
import { defaultPadding, describeMask, maskShapeFor } from './masks.js';
import { dimsFromImports } from './imports.js';
import { renderTrace, renderTraceProblems, setupQuiz } from './trace-view.js';
import { WeightsView } from './weights-view.js';
import { HeadsView, TensorViews } from './tensor-views.js';
import { ScalingView } from './scaling-view.js';
import { renderBench, renderSpeed } from './speed-view.js';
import { EXPORT_NAMES, setupDataPanel } from './io-view.js';
import { PRESETS } from './presets.js';
import { createStatus } from './status.js';

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
  padding: [], // keys kept per batch element when key padding is on
  custom: null, // Uint8Array (L·S), 1 = hidden by hand; sized for customSize
  customSize: null,
  imported: {}, // query / key / value read from .npy files
  locked: {}, // dims fixed by imported files
  pick: { b: 0, h: 0 },
  lastGood: null, // settings of the last finished compute, restored after a cancel
  studyKey: null,
  computes: 0,
  view: null,
};

const client = new WorkerClient({ onCrash: (message) => status.error(`The worker stopped: ${message}`) });

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
  },
  { onPaint: paintCustom, isHiddenByHand: (i, j) => Boolean(state.custom && state.custom[i * state.customSize.S + j]) },
);
const tensorViews = new TensorViews($('tensor-grid'));
const headsView = new HeadsView({ card: $('heads-card'), grid: $('heads-grid'), hint: $('heads-hint') }, (h) => pickView({ h }));
const scalingView = new ScalingView({ charts: $('scaling-charts'), intro: $('scaling-intro'), summary: $('scaling-summary') });

// Everything the worker needs for one computation, from the controls and the page's state.
function settings() {
  const c = readControls(form);
  const customActive = state.custom && state.custom.some((x) => x);
  return {
    ...c,
    mask: {
      causal: c.causal,
      alignment: c.alignment,
      padding: c.paddingOn ? state.padding.slice() : null,
      custom: customActive ? state.custom : null,
    },
  };
}

function problemsOf(s) {
  const problems = [...checkDims(s.dims), ...checkGen(s.gen)];
  if (Object.keys(state.imported).length) problems.push(...dimsFromImports(s.dims, state.imported).problems);
  return problems;
}

// Keeps the page's own state in step with the controls: padding per batch element, the drawn mask's size.
function syncState() {
  const c = readControls(form);
  syncEnabled(form, state.locked);
  const { B, S, L } = c.dims;
  const container = $('padding-inputs');
  if (Number.isInteger(B) && Number.isInteger(S) && B >= 1 && S >= 1) {
    const fresh = defaultPadding(B, S);
    const kept = readPaddingInputs(container, state.padding, S);
    const next = fresh.map((v, b) => (b < kept.length ? kept[b] : v));
    const rebuild = next.length !== state.padding.length || container.childElementCount !== next.length || container.querySelector('input')?.max !== String(S);
    state.padding = next;
    if (rebuild) renderPaddingInputs(container, state.padding, S);
  }
  container.hidden = !c.paddingOn;
  if (Number.isInteger(L) && Number.isInteger(S) && state.custom && (state.customSize.L !== L || state.customSize.S !== S)) {
    // Keep the drawn cells that still exist when L or S changes.
    const next = new Uint8Array(L * S);
    for (let i = 0; i < Math.min(L, state.customSize.L); i++) {
      for (let j = 0; j < Math.min(S, state.customSize.S); j++) next[i * S + j] = state.custom[i * state.customSize.S + j];
    }
    state.custom = next;
    state.customSize = { L, S };
  }
  writeCustomNote();
  const hint = $('gqa-hint');
  hint.hidden = !c.dims.useHeads;
  if (c.dims.useHeads) {
    hint.textContent =
      c.dims.Hkv < c.dims.H
        ? `GQA: ${c.dims.H} query heads share ${c.dims.Hkv} key/value heads (enableGqa).`
        : 'Hkv = H: every query head has its own keys and values. Make Hkv smaller for GQA.';
  }
}

function writeCustomNote() {
  const count = state.custom ? state.custom.reduce((n, x) => n + x, 0) : 0;
  $('custom-mask-note').textContent = count
    ? `${count} cell${count === 1 ? '' : 's'} hidden by hand, for every b and h.`
    : 'No cells drawn. Hidden cells apply to every b and h.';
  $('clear-mask').disabled = count === 0;
}

function renderShapes(s) {
  const problems = problemsOf(s);
  const tbody = $('trace').querySelector('tbody');
  if (problems.length) {
    renderTraceProblems(tbody, problems);
    return problems;
  }
  const maskShape = maskShapeFor(s.dims, s.mask);
  renderTrace(tbody, traceShapes(s.dims, { maskShape, maskLabel: `mask: ${describeMask(s.mask)}` }));
  return problems;
}

let debounce = null;
function onControlsChanged() {
  syncState();
  const s = settings();
  if (renderShapes(s).length) return;
  clearTimeout(debounce);
  debounce = setTimeout(() => {
    debounce = null;
    compute(s);
  }, 120);
}

let computeSeq = 0;
async function compute(s = settings()) {
  if (problemsOf(s).length) return;
  const seq = ++computeSeq;
  // Anything still running was for older settings: stop it rather than wait for it.
  if (client.busy) client.cancel();
  const payload = { dims: s.dims, gen: s.gen, mask: s.mask, imported: state.imported };
  try {
    const summary = await status.track(client.request('compute', payload, { onProgress: status.progress }), 'computing attention');
    if (seq !== computeSeq) return;
    status.setBuild(summary.build, summary.ms.attention);
    state.lastGood = snapshot(s);
    state.computes++;
    state.dims = s.dims;
    await showView(seq);
    status.clearError();
    maybeRunStudy(s);
  } catch (err) {
    if (err instanceof CancelledError) return;
    if (seq === computeSeq) status.error(err.message);
  }
}

function snapshot(s) {
  return { ...s, padding: state.padding.slice(), custom: state.custom && state.custom.slice(), customSize: state.customSize };
}

async function showView(seq = computeSeq) {
  const dims = state.dims;
  const H = dims.useHeads ? dims.H : 1;
  state.pick.b = Math.min(state.pick.b, dims.B - 1);
  state.pick.h = Math.min(state.pick.h, H - 1);
  $('pick-b').max = String(dims.B - 1);
  $('pick-b').value = String(state.pick.b);
  $('pick-h').max = String(H - 1);
  $('pick-h').value = String(state.pick.h);
  $('pick-h-label').hidden = !dims.useHeads;
  const view = await client.request('view', { ...state.pick });
  if (seq !== computeSeq) return;
  state.view = view;
  weightsView.setData(view);
  tensorViews.setData(view);
  headsView.setData(view, dims);
}

async function pickView({ b = state.pick.b, h = state.pick.h }) {
  if (!state.dims) return;
  state.pick = { b, h };
  try {
    await showView();
  } catch (err) {
    if (!(err instanceof CancelledError)) status.error(err.message);
  }
}

// The study uses at most 128 queries and keys: enough rows for stable averages, quick at E = 1024.
async function maybeRunStudy(s, force = false) {
  const L = Math.min(128, s.dims.L);
  const S = Math.min(128, s.dims.S);
  const key = JSON.stringify([s.gen, L, S]);
  if (!force && key === state.studyKey) return;
  try {
    const rows = await status.track(client.request('scaling', { gen: s.gen, L, S }, { onProgress: status.progress }), 'scaling study');
    state.studyKey = key;
    scalingView.setData(rows, { L, S, gen: s.gen });
  } catch (err) {
    if (!(err instanceof CancelledError)) status.error(`Scaling study: ${err.message}`);
  }
}

function paintCustom(cells, hide) {
  const { L, S } = readControls(form).dims;
  if (!state.custom) {
    state.custom = new Uint8Array(L * S);
    state.customSize = { L, S };
  }
  for (const [i, j] of cells) state.custom[i * S + j] = hide ? 1 : 0;
  onControlsChanged();
}

function applyImports() {
  const s = readControls(form);
  const { dims, locked, problems } = dimsFromImports(s.dims, state.imported);
  state.locked = locked;
  writeControls(form, { ...s, dims }, locked);
  const names = Object.entries(state.imported).map(([n, t]) => `${EXPORT_NAMES[n]} ${t.label} ${formatShape(t.shape)}`);
  $('import-note').hidden = names.length === 0;
  $('import-note').textContent = names.length ? `Imported: ${names.join(', ')}. Dims they fix are locked.` : '';
  $('clear-imports').disabled = names.length === 0;
  return problems;
}

function wireControls() {
  form.addEventListener('input', onControlsChanged);
  form.addEventListener('change', onControlsChanged);
  form.addEventListener('submit', (e) => e.preventDefault());
  for (const button of form.querySelectorAll('[data-preset]')) {
    button.addEventListener('click', () => {
      state.imported = {};
      applyImports();
      state.custom = null;
      writeControls(form, PRESETS[button.dataset.preset], {});
      onControlsChanged();
    });
  }
  $('edit-mask').addEventListener('click', (e) => {
    const on = e.currentTarget.getAttribute('aria-pressed') !== 'true';
    e.currentTarget.setAttribute('aria-pressed', String(on));
    e.currentTarget.textContent = on ? 'Done drawing' : 'Draw mask by clicking cells';
    weightsView.setEditing(on);
    if (on) $('weights-canvas').focus();
  });
  $('clear-mask').addEventListener('click', () => {
    state.custom = null;
    onControlsChanged();
  });
  setupDataPanel(form, {
    fetchTensor: (name) => client.request('tensor', { name }),
    // A new file joins the others; if the files then disagree, it is dropped again and the page says why.
    onImport(name, tensor) {
      const before = state.imported;
      state.imported = { ...before, [name]: tensor };
      const problems = applyImports();
      if (problems.length) {
        state.imported = before;
        applyImports();
        throw new Error(problems.join('; '));
      }
      onControlsChanged();
    },
    onClear() {
      state.imported = {};
      applyImports();
      onControlsChanged();
    },
    onError: (err) => status.error(err.message),
  });
  $('pick-b').addEventListener('change', (e) => pickView({ b: clampInt(e.target.value, 0, state.dims.B - 1) }));
  $('pick-h').addEventListener('change', (e) => pickView({ h: clampInt(e.target.value, 0, (state.dims.useHeads ? state.dims.H : 1) - 1) }));
  $('zoom-in').addEventListener('click', () => weightsView.zoom(0.5, weightsView.cursor ?? weightsView.centre()));
  $('zoom-out').addEventListener('click', () => weightsView.zoom(2, weightsView.cursor ?? weightsView.centre()));
  $('zoom-reset').addEventListener('click', () => weightsView.fit());
  $('run-scaling').addEventListener('click', () => maybeRunStudy(settings(), true));
  $('run-speed').addEventListener('click', runSpeed);
  status.onCancel(() => {
    client.cancel();
    restoreLastGood();
  });
}

async function runSpeed() {
  try {
    const result = await status.track(client.request('speed', {}, { onProgress: status.progress }), 'speed comparison');
    renderSpeed($('speed-table'), $('speed-intro'), result);
  } catch (err) {
    if (!(err instanceof CancelledError)) status.error(`Speed: ${err.message}`);
  }
}

// After a cancel the fresh worker holds nothing: go back to the last settings that finished, and recompute them.
function restoreLastGood() {
  const g = state.lastGood;
  if (!g) {
    status.note('Cancelled. Change a control to compute again.');
    return;
  }
  state.padding = g.padding;
  state.custom = g.custom;
  state.customSize = g.customSize;
  writeControls(form, g, state.locked);
  renderPaddingInputs($('padding-inputs'), state.padding, g.dims.S);
  syncState();
  renderShapes(settings());
  status.note('Cancelled: back to the last finished result.');
  compute(settings());
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
  // Busy while a compute is scheduled or the worker is working: tests wait for it to fall.
  get busy() {
    return debounce !== null || client.busy;
  },
  get renders() {
    return weightsView.renderCount;
  },
  get view() {
    return state.view;
  },
  get dims() {
    return state.dims;
  },
  get lastError() {
    return status.lastError;
  },
  // The last scaling study: its rows as measured and, by chart, the series the charts were given.
  get scaling() {
    return scalingView.rows ? { rows: scalingView.rows, plotted: scalingView.plotted() } : null;
  },
  tensor: (name) => client.request('tensor', { name }),
};

setupQuiz({ form: $('quiz'), question: $('quiz-question'), input: $('quiz-answer'), feedback: $('quiz-feedback') });
wireControls();
syncState();
renderShapes(settings());
compute();
renderBench($('bench'));
$('speed-intro').textContent = 'Times the current attention with the SIMD build, the scalar build and plain JavaScript.';
