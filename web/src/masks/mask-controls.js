// The Masks fieldset around its checkboxes: the key-padding inputs (built only while padding is on), the
// custom mask's note and buttons, and drawing on the weights map. The learner's padding counts and drawn
// cells live in a MaskState (mask-state.js), apart from the dims.
import { parseField } from '../shared/fields.js';
import { paddingSpec, renderPaddingInputs } from './padding-inputs.js';

// elements: { paddingInputs, note, clear, edit, canvas }; lab: { masks, paddingProblems };
// onChange(): the masks changed (a recompute); setEditing(on): the map's drawing mode.
export function setupMaskControls({ paddingInputs, note, clear, edit, canvas }, lab, { onChange, setEditing }) {
  function setDrawing(on) {
    edit.setAttribute('aria-pressed', String(on));
    edit.textContent = on ? 'Done drawing' : 'Draw mask by clicking cells';
    setEditing(on);
    if (on) canvas.focus({ preventScroll: true });
  }
  edit.addEventListener('click', () => setDrawing(edit.getAttribute('aria-pressed') !== 'true'));
  clear.addEventListener('click', () => {
    lab.masks.clearCells();
    onChange();
  });

  return {
    setDrawing,
    // A key-padding field: its value is the learner's, kept across B and S changes, once valid.
    readPaddingField(input) {
      const b = Number(input.dataset.b);
      const r = parseField(paddingSpec(b, Number(input.dataset.max)), input.value);
      if (r.problem) lab.paddingProblems.set(b, r.problem);
      else {
        lab.paddingProblems.delete(b);
        lab.masks.setKept(b, r.value);
      }
    },
    // Keeps the padding inputs, the note and the buttons in step with settings s.
    sync(s) {
      const { B, S, L } = s.dims;
      paddingInputs.hidden = !s.paddingOn;
      const dimsOk = s.invalid.length === 0 || (Number.isInteger(B) && Number.isInteger(S));
      if (!s.paddingOn) {
        // Nothing is built for a control that is off: B and S cost nothing while padding is hidden.
        if (paddingInputs.childElementCount) paddingInputs.replaceChildren();
        delete paddingInputs.dataset.shape;
        lab.paddingProblems.clear();
      } else if (dimsOk && Number.isInteger(B) && Number.isInteger(S) && paddingInputs.dataset.shape !== `${B}x${S}`) {
        renderPaddingInputs(paddingInputs, lab.masks.padding(B, S), S);
        lab.paddingProblems.clear();
      }
      for (const input of paddingInputs.querySelectorAll('input')) {
        input.toggleAttribute('aria-invalid', lab.paddingProblems.has(Number(input.dataset.b)));
      }
      const count = Number.isInteger(L) && Number.isInteger(S) ? lab.masks.countIn(L, S) : 0;
      const offScreen = lab.masks.cells.size - count;
      note.textContent =
        (count ? `${count} cell${count === 1 ? '' : 's'} hidden by hand, for every b and h.` : 'No cells drawn. Hidden cells apply to every b and h.') +
        (offScreen ? ` ${offScreen} more lie outside L × S and come back when it grows.` : '');
      clear.disabled = lab.masks.cells.size === 0;
    },
    // After a cancel: the inputs are rebuilt from the restored state on the next sync.
    forget() {
      paddingInputs.replaceChildren();
      delete paddingInputs.dataset.shape;
      lab.paddingProblems.clear();
    },
  };
}
