// Export of Q, K, V, weights and output as .npy downloads, and import of Q, K, V from .npy files.
import { decodeNpy, encodeNpy } from '../shared/npy.js';
import { normaliseImport } from './imports.js';
import { download } from '../shared/download.js';

export const EXPORT_NAMES = { query: 'Q', key: 'K', value: 'V', weights: 'weights', output: 'output' };

// fetchTensor(name) → Promise<{ data, shape }> from the worker.
export async function exportTensor(name, fetchTensor) {
  const t = await fetchTensor(name);
  download(encodeNpy(t), `${EXPORT_NAMES[name]}.npy`);
  return t.shape;
}

// A chosen file → { tensor } in the page's ranks, or { error } naming the file and what is wrong.
export async function readImport(name, file) {
  try {
    const decoded = decodeNpy(new Uint8Array(await file.arrayBuffer()));
    const r = normaliseImport(name, decoded);
    return r.error ? { error: `${file.name}: ${r.error}` } : { tensor: r.tensor };
  } catch (err) {
    return { error: `${file.name}: ${err.message}` };
  }
}

// Wires the Data fieldset: export buttons ([data-export]), file inputs ([data-import]) and #clear-imports.
// onImport(name, tensor) may throw to refuse a file; a refused file goes to onImportError, a failed export to
// onError, each with a readable message.
export function setupDataPanel(form, { fetchTensor, onImport, onClear, onError, onImportError }) {
  for (const button of form.querySelectorAll('[data-export]')) {
    button.addEventListener('click', async () => {
      try {
        await exportTensor(button.dataset.export, fetchTensor);
      } catch (err) {
        // A cancel (the worker was restarted) is not a failure of the export.
        if (err.name !== 'CancelledError') onError(prefixed('Export', err));
      }
    });
  }
  for (const input of form.querySelectorAll('[data-import]')) {
    input.addEventListener('change', async () => {
      const file = input.files[0];
      if (!file) return;
      const name = input.dataset.import;
      const { tensor, error } = await readImport(name, file);
      input.value = ''; // choosing the same file again is a new change
      try {
        if (error) throw new Error(error);
        onImport(name, { ...tensor, label: file.name });
      } catch (err) {
        onImportError(err);
      }
    });
  }
  form.querySelector('#clear-imports').addEventListener('click', onClear);
}

function prefixed(what, err) {
  return new Error(`${what}: ${err.message}`);
}
