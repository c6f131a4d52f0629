// The Data fieldset's side of the lab: .npy exports of the held tensors, imports of Q, K, V that fix the dims
// they carry (their fields are locked), and the note saying which files are in use. A refused file changes
// nothing (no dim, no lock).
import { formatShape } from '../shared/shapes.js';
import { EXPORT_NAMES, setupDataPanel } from './io-view.js';
import { readControls, writeControls } from './controls.js';
import { dimsFromImports } from './imports.js';

// lab: { imported, locked }; fetchTensor(name) → Promise of a held tensor; onChange(): the dims changed;
// onError(err): a refused file or a failed export.
export function setupImports(form, lab, { note, clear, fetchTensor, onChange, onError }) {
  function writeNote() {
    const names = Object.entries(lab.imported).map(([n, t]) => `${EXPORT_NAMES[n]} ${t.label} ${formatShape(t.shape)}`);
    note.hidden = names.length === 0;
    note.textContent = names.length ? `Imported: ${names.join(', ')}. Dims they fix are locked.` : '';
    clear.disabled = names.length === 0;
  }

  // A file joins the others only if they all agree.
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

  function forget() {
    lab.imported = {};
    lab.locked = {};
    writeNote();
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
  });
  return { writeNote, forget };
}
