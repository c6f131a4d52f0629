// The Data fieldset's side of the lab: .npy exports of the held tensors, imports of Q, K, V that fix the dims
// they carry (their fields are locked), and the note saying which files are in use. A refused file changes
// nothing (no dim, no lock).
import { formatShape } from '../shared/shapes.js';
import { EXPORT_NAMES, setupDataPanel } from './io-view.js';
import { readControls, writeControls } from './controls.js';
import { dimsFromImports } from './imports.js';

// lab: { imported, locked }; el: { note, clear, error } (the note on the files in use, "Back to generated", the
// refusals' line beside the file inputs, where the learner is looking); fetchTensor(name) → Promise of a held
// tensor; onChange(): the dims changed; onError(err): a failed export (the page's banner).
export function setupImports(form, lab, { note, clear, error, fetchTensor, onChange, onError }) {
  function writeNote() {
    const names = Object.entries(lab.imported).map(([n, t]) => `${EXPORT_NAMES[n]} ${t.label} ${formatShape(t.shape)}`);
    note.hidden = names.length === 0;
    note.textContent = names.length ? `Imported: ${names.join(', ')}. Dims they fix are locked.` : '';
    clear.disabled = names.length === 0;
  }

  // A refusal stays beside the file inputs until the learner changes something (clearError).
  function showError(err) {
    error.hidden = false;
    error.textContent = err.message;
  }

  function clearError() {
    error.hidden = true;
    error.textContent = '';
  }

  // A file joins the others only if they all agree, and fit the lab's fields.
  function accept(name, tensor) {
    const next = { ...lab.imported, [name]: tensor };
    const c = readControls(form);
    const { dims, locked, problems } = dimsFromImports(c.dims, next);
    if (problems.length) throw new Error(problems.join('; '));
    lab.imported = next;
    lab.locked = locked;
    writeControls(form, { ...c, dims }, locked);
    writeNote();
    onChange();
  }

  // Back to generated Q, K, V. why: what replaced the files (a preset), said in the note so that the files do
  // not vanish unremarked; without it the note goes.
  function forget(why = null) {
    const files = Object.values(lab.imported).map((t) => t.label);
    lab.imported = {};
    lab.locked = {};
    writeNote();
    if (why && files.length) {
      note.hidden = false;
      note.textContent = `${files.join(', ')} ${files.length === 1 ? 'is' : 'are'} no longer used: ${why} Import ${files.length === 1 ? 'it' : 'them'} again to use ${files.length === 1 ? 'it' : 'them'}.`;
    }
  }

  setupDataPanel(form, {
    fetchTensor,
    onImport: accept,
    onClear() {
      forget();
      writeControls(form, readControls(form), {});
      onChange();
    },
    onError,
    onImportError: showError,
  });
  return { writeNote, forget, clearError };
}
