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
  const cycle = new LabCycle(el, { pool, status, views, onComputed });
  listenToControls(el.form, cycle);
  cycle.onControlsChanged();
  return {
    lab: cycle.lab,
    pick: (p) => cycle.pick(p),
    cancel: () => cycle.cancel(),
    // Painting cells on the map changes the custom mask.
    paint: (cells, hide) => cycle.paint(cells, hide),
    get busy() {
      return cycle.busy;
    },
  };
}

// Every edit of the form, and the preset buttons; the form itself never submits (that would reload the page).
function listenToControls(form, cycle) {
  const changed = (event) => cycle.onControlsChanged(event);
  form.addEventListener('input', changed);
  form.addEventListener('change', changed);
  form.addEventListener('submit', (e) => e.preventDefault());
  for (const button of form.querySelectorAll('[data-preset]')) button.addEventListener('click', () => cycle.usePreset(button.dataset.preset, button.textContent.trim()));
}

// What the page holds of the lab; the mask controls, the imports and the page's test hook share this object.
function newLabState() {
  return {
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
}

// The cycle itself: a change is read, checked and traced at once, then computed after a pause in the typing;
// a result is shown only if nothing newer was asked for meanwhile.
class LabCycle {
  constructor(el, { pool, status, views, onComputed }) {
    Object.assign(this, { el, form: el.form, pool, status, views, onComputed });
    this.lab = newLabState();
    this.debounce = null; // the timer of the compute waiting for the typing to pause
    // Counts every compute started and every one given up (invalid settings, Cancel): a compute whose number is
    // no longer the latest finishes unseen.
    this.computeSeq = 0;
    this.maskControls = setupMaskControls(el.masks, this.lab, { onChange: () => this.onControlsChanged(), setEditing: views.setEditing });
    this.imports = setupImports(this.form, this.lab, {
      ...el.imports,
      fetchTensor: (name) => this.pool.tensor(name),
      onChange: () => this.onControlsChanged(),
      onError: (err) => this.status.error(err.message),
    });
  }

  // A compute is waiting for the typing to pause.
  get busy() {
    return this.debounce !== null;
  }

  onControlsChanged(event) {
    // The import inputs are handled by the Data panel; their change events bubbling here must not count as
    // an edit (they used to trigger a recompute whose success cleared the import's error message).
    if (event?.target?.matches?.('[data-import]')) return;
    if (event?.target?.matches?.('#padding-inputs input')) this.maskControls.readPaddingField(event.target);
    const s = this.readControls();
    const key = s.problems.length ? `invalid ${JSON.stringify(s.problems)}` : settingsKey(s, this.lab.imported);
    if (key === this.lab.wantedKey) return;
    this.lab.wantedKey = key;
    // The learner changed something: an old message no longer applies.
    this.status.clearError();
    this.imports.clearError();
    this.unschedule();
    if (s.problems.length) this.refuse(s);
    else this.schedule(s, key);
  }

  // Reads and checks the settings, and shows them at once: the controls around the fields, the shape trace.
  readControls() {
    const s = readSettings(this.form, this.lab);
    this.syncControls(s);
    renderShapes(this.el.trace, s);
    return s;
  }

  // Keeps the controls around the fields in step with them: enabled fields, mask inputs, hints.
  syncControls(s) {
    syncEnabled(this.form, this.lab.locked);
    markInvalid(this.form, s.invalid);
    this.maskControls.sync(s);
    // The scale field shows the default it stands for while empty.
    if (Number.isInteger(s.dims.E)) this.form.elements.scale.placeholder = `1/√E = ${formatNumber(1 / Math.sqrt(s.dims.E))}`;
    // The hint is written only for dims that passed every check, so it can never contradict an error.
    const hint = s.problems.length ? null : headsHint(s.dims);
    this.el.gqaHint.hidden = hint === null;
    this.el.gqaHint.textContent = hint ?? '';
  }

  // Nothing runs for settings that cannot be computed, and nothing older finishes in their place.
  refuse(s) {
    this.computeSeq++;
    this.pool.cancelCompute();
    markStale(this.el.resultCards, staleReason(s.problems, this.lab.dims));
  }

  schedule(s, key) {
    markStale(this.el.resultCards, null);
    this.debounce = setTimeout(() => {
      this.debounce = null;
      this.compute(s, key);
    }, DEBOUNCE_MS);
  }

  unschedule() {
    clearTimeout(this.debounce);
    this.debounce = null;
  }

  async compute(s, key) {
    const seq = ++this.computeSeq;
    // Anything still running was for older settings: stop it rather than wait for it.
    this.pool.cancelCompute();
    const H = s.dims.useHeads ? s.dims.H : 1;
    this.lab.pick = { b: Math.min(this.lab.pick.b, s.dims.B - 1), h: Math.min(this.lab.pick.h, H - 1) };
    const payload = { dims: s.dims, gen: s.gen, scale: s.scale ?? null, mask: s.mask, imported: this.lab.imported, pick: this.lab.pick };
    try {
      const result = await this.status.track(this.pool.compute(payload, { onProgress: this.status.progress }), 'computing attention');
      if (seq !== this.computeSeq) return;
      this.finished(s, key, result);
    } catch (err) {
      if (err.name === 'CancelledError' || seq !== this.computeSeq) return;
      this.status.error(err.message);
      markStale(this.el.resultCards, staleReason([err.message.replace(/\.$/, '')], this.lab.dims));
    }
  }

  // A compute finished for the latest settings: it becomes what Cancel goes back to, and goes on screen.
  finished(s, key, result) {
    const lab = this.lab;
    this.status.setBuild(result.build, result.ms.attention);
    lab.lastGood = { ...s, masks: lab.masks.snapshot(), imported: lab.imported, locked: lab.locked, key };
    lab.computes++;
    lab.dims = s.dims;
    this.show(result.view);
    this.onComputed(s);
  }

  show(view) {
    // Which tensors came from files, by name (query → 'q.npy'), for the sentences about the view's numbers.
    view.sources = Object.fromEntries(Object.entries(this.lab.imported).map(([n, t]) => [n, t.label]));
    this.lab.view = view;
    this.views.show(view, this.lab.dims, this.lab.computes);
  }

  async pick({ b = this.lab.pick.b, h = this.lab.pick.h }) {
    if (!this.lab.dims) return;
    this.lab.pick = { b, h };
    try {
      this.show(await this.pool.view(this.lab.pick));
    } catch (err) {
      if (err.name !== 'CancelledError') this.status.error(err.message);
    }
  }

  // Cancel: stop the compute, and put the controls back to the last finished result, which is still on
  // screen and still held by a worker. Nothing is recomputed.
  cancel() {
    this.unschedule();
    this.computeSeq++;
    this.pool.cancelCompute();
    const g = this.lab.lastGood;
    if (!g) {
      this.status.note('Cancelled. Change a control to compute again.');
      return;
    }
    this.restore(g);
    markStale(this.el.resultCards, null);
    this.status.note('Cancelled: back to the last finished result.');
  }

  // Puts back the controls, masks and imports of a finished compute (g: lab.lastGood), as the page acting on it.
  restore(g) {
    const lab = this.lab;
    lab.masks = g.masks.snapshot();
    lab.imported = g.imported;
    lab.locked = g.locked;
    this.imports.writeNote();
    writeControls(this.form, g, lab.locked);
    this.maskControls.forget();
    this.readControls();
    lab.wantedKey = g.key;
  }

  // A preset sets every control, and goes back to generated Q, K, V (saying so when files were in use).
  usePreset(name, label) {
    this.imports.forget(`the preset “${label}” uses generated Q, K and V.`);
    this.maskControls.setDrawing(false);
    this.lab.masks.clear();
    writeControls(this.form, PRESETS[name], {});
    this.onControlsChanged();
  }

  paint(cells, hide) {
    this.lab.masks.paint(cells, hide);
    this.onControlsChanged();
  }
}
