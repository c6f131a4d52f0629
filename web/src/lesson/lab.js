// The lab's cycle: the controls are read and checked on every change, the shape trace follows at once, each
// real change is one request to the compute workers, and the finished result goes to the views. Cancel goes
// back to the last finished result, which the holder worker still has, without computing anything.
//
// The rules of a change: every field is validated before any work (shared/fields.js), and an invalid one
// stops the work and marks the result panels stale; a change that changes nothing (the change event a field
// fires when it loses focus after its input events) does nothing.
import { syncEnabled, markInvalid, writeControls } from './controls.js';
import { headsHint } from '../shared/fields.js';
import { formatNumber } from '../shared/shapes.js';
import { markStale, staleReason } from '../shared/stale.js';
import { MaskState } from '../masks/mask-state.js';
import { setupMaskControls } from '../masks/mask-controls.js';
import { readSettings, settingsKey } from './lab-settings.js';
import { renderShapes } from './trace-panel.js';
import { setupImports } from './imported-files.js';
import { PRESETS } from './presets.js';

// Waits this long after the last keystroke before computing: typing "20" computes S = 20, not S = 2 first.
const DEBOUNCE_MS = 120;

// el: the elements the lab reads and writes; pool: the page's workers (worker-pool.js); status: the header's
// status line; views.show(view, dims, computes) draws a slice; views.setEditing(on) is the map's drawing mode;
// onComputed(settings) runs after each finished compute (the scaling study follows it).
export function setupLab(el, { pool, status, views, onComputed }) {
  const lab = {
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
  };
  const form = el.form;
  let debounce = null;
  let computeSeq = 0;

  const maskControls = setupMaskControls(el.masks, lab, { onChange: () => onControlsChanged(), setEditing: views.setEditing });
  const imports = setupImports(form, lab, { ...el.imports, fetchTensor: (name) => pool.tensor(name), onChange: () => onControlsChanged(), onError: (err) => status.error(err.message) });

  // Keeps the controls around the fields in step with them: enabled fields, mask inputs, hints.
  function syncControls(s) {
    syncEnabled(form, lab.locked);
    markInvalid(form, s.invalid);
    maskControls.sync(s);
    // The scale field shows the default it stands for while empty.
    if (Number.isInteger(s.dims.E)) form.elements.scale.placeholder = `1/√E = ${formatNumber(1 / Math.sqrt(s.dims.E))}`;
    // The hint is written only for dims that passed every check, so it can never contradict an error.
    const hint = s.problems.length ? null : headsHint(s.dims);
    el.gqaHint.hidden = hint === null;
    el.gqaHint.textContent = hint ?? '';
  }

  function onControlsChanged(event) {
    // The import inputs are handled by the Data panel; their change events bubbling here must not count as
    // an edit (they used to trigger a recompute whose success cleared the import's error message).
    if (event?.target?.matches?.('[data-import]')) return;
    if (event?.target?.matches?.('#padding-inputs input')) maskControls.readPaddingField(event.target);
    const s = readSettings(form, lab);
    syncControls(s);
    renderShapes(el.trace, s);
    const key = s.problems.length ? `invalid ${JSON.stringify(s.problems)}` : settingsKey(s, lab.imported);
    if (key === lab.wantedKey) return;
    lab.wantedKey = key;
    // The learner changed something: an old message no longer applies.
    status.clearError();
    imports.clearError();
    clearTimeout(debounce);
    debounce = null;
    if (s.problems.length) {
      // Nothing runs for settings that cannot be computed, and nothing older finishes in their place.
      computeSeq++;
      pool.cancelCompute();
      markStale(el.resultCards, staleReason(s.problems, lab.dims));
      return;
    }
    markStale(el.resultCards, null);
    debounce = setTimeout(() => {
      debounce = null;
      compute(s, key);
    }, DEBOUNCE_MS);
  }

  async function compute(s, key) {
    const seq = ++computeSeq;
    // Anything still running was for older settings: stop it rather than wait for it.
    pool.cancelCompute();
    const H = s.dims.useHeads ? s.dims.H : 1;
    lab.pick = { b: Math.min(lab.pick.b, s.dims.B - 1), h: Math.min(lab.pick.h, H - 1) };
    const payload = { dims: s.dims, gen: s.gen, scale: s.scale ?? null, mask: s.mask, imported: lab.imported, pick: lab.pick };
    try {
      const result = await status.track(pool.compute(payload, { onProgress: status.progress }), 'computing attention');
      if (seq !== computeSeq) return;
      status.setBuild(result.build, result.ms.attention);
      lab.lastGood = { ...s, masks: lab.masks.snapshot(), imported: lab.imported, locked: lab.locked, key };
      lab.computes++;
      lab.dims = s.dims;
      show(result.view);
      onComputed(s);
    } catch (err) {
      if (err.name === 'CancelledError' || seq !== computeSeq) return;
      status.error(err.message);
      markStale(el.resultCards, staleReason([err.message.replace(/\.$/, '')], lab.dims));
    }
  }

  function show(view) {
    // Which tensors came from files, by name (query → 'q.npy'), for the sentences about the view's numbers.
    view.sources = Object.fromEntries(Object.entries(lab.imported).map(([n, t]) => [n, t.label]));
    lab.view = view;
    views.show(view, lab.dims, lab.computes);
  }

  async function pick({ b = lab.pick.b, h = lab.pick.h }) {
    if (!lab.dims) return;
    lab.pick = { b, h };
    try {
      show(await pool.view(lab.pick));
    } catch (err) {
      if (err.name !== 'CancelledError') status.error(err.message);
    }
  }

  // Cancel: stop the compute, and put the controls back to the last finished result, which is still on
  // screen and still held by a worker. Nothing is recomputed.
  function cancel() {
    clearTimeout(debounce);
    debounce = null;
    computeSeq++;
    pool.cancelCompute();
    const g = lab.lastGood;
    if (!g) {
      status.note('Cancelled. Change a control to compute again.');
      return;
    }
    lab.masks = g.masks.snapshot();
    lab.imported = g.imported;
    lab.locked = g.locked;
    imports.writeNote();
    writeControls(form, g, lab.locked);
    maskControls.forget();
    const s = readSettings(form, lab);
    syncControls(s);
    renderShapes(el.trace, s);
    lab.wantedKey = g.key;
    markStale(el.resultCards, null);
    status.note('Cancelled: back to the last finished result.');
  }

  // A preset sets every control, and goes back to generated Q, K, V (saying so when files were in use).
  function usePreset(name, label) {
    imports.forget(`the preset “${label}” uses generated Q, K and V.`);
    maskControls.setDrawing(false);
    lab.masks.clear();
    writeControls(form, PRESETS[name], {});
    onControlsChanged();
  }

  form.addEventListener('input', onControlsChanged);
  form.addEventListener('change', onControlsChanged);
  form.addEventListener('submit', (e) => e.preventDefault());
  for (const button of form.querySelectorAll('[data-preset]')) button.addEventListener('click', () => usePreset(button.dataset.preset, button.textContent.trim()));
  onControlsChanged();

  return {
    lab,
    pick,
    cancel,
    // Painting cells on the map changes the custom mask.
    paint(cells, hide) {
      lab.masks.paint(cells, hide);
      onControlsChanged();
    },
    get busy() {
      return debounce !== null;
    },
  };
}
