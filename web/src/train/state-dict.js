// The trained model as a NumPy .npz of .npy files under PyTorch state-dict names (embedding.weight,
// pos_embedding, attn.in_proj_weight, …, head.bias), which
//   sd = {k: torch.from_numpy(v) for k, v in np.load('model.npz').items()}
// turns into a state dict. The settings a state dict cannot hold (the task, the heads H, the seed and
// step) travel in the archive's comment, which NumPy ignores; a file without it takes the panel's.
import { decodeNpy, encodeNpy } from '../shared/npy.js';
import { readZip, writeZip } from './npz.js';
import { TASKS, taskOf } from './tasks.js';
import { parameterShapes } from './model.js';

const COMMENT_TAG = 'xattn-lab ';

// entries: [{ name, data, shape }] (Trainer.stateDict()); meta: { task, H, seed, step, … } → .npz bytes.
export function encodeStateDict(entries, meta) {
  const files = entries.map(({ name, data, shape }) => ({ name: `${name}.npy`, bytes: encodeNpy({ data, shape }) }));
  return writeZip(files, COMMENT_TAG + JSON.stringify(meta));
}

// .npz bytes → { params: { name → Float32Array }, shapes, meta } where meta is the comment's settings
// (or null). Each array must be one of the model's and all of them must be there; the model's dims
// (vocab, L, E, classes) are read from the shapes and checked against each other.
export async function decodeStateDict(bytes) {
  const { files, comment } = await readZip(bytes);
  let meta = null;
  if (comment.startsWith(COMMENT_TAG)) {
    try {
      meta = JSON.parse(comment.slice(COMMENT_TAG.length));
    } catch {
      meta = null;
    }
  }
  const arrays = {};
  for (const { name, bytes: b } of files) {
    if (!name.endsWith('.npy')) continue;
    const key = name.slice(0, -4);
    try {
      arrays[key] = decodeNpy(b);
    } catch (err) {
      throw new RangeError(`${key}: ${err.message}`);
    }
  }
  const emb = arrays['embedding.weight'];
  const head = arrays['head.weight'];
  const pos = arrays.pos_embedding;
  if (!emb || !head || !pos) throw new RangeError(`the file needs embedding.weight, pos_embedding and head.weight; it has ${Object.keys(arrays).join(', ') || 'no arrays'}`);
  if (emb.shape.length !== 2 || pos.shape.length !== 2 || head.shape.length !== 2) throw new RangeError('embedding.weight, pos_embedding and head.weight must be matrices');
  const dims = { vocab: emb.shape[0], E: emb.shape[1], L: pos.shape[0], classes: head.shape[0] };
  const want = parameterShapes(dims);
  const params = {};
  for (const [name, shape] of Object.entries(want)) {
    const a = arrays[name];
    if (!a) throw new RangeError(`${name} is missing`);
    if (a.shape.join(',') !== shape.join(',')) {
      throw new RangeError(`${name} has shape (${a.shape.join(', ')}); with embedding.weight (${dims.vocab}, ${dims.E}) and pos_embedding (${dims.L}, ${dims.E}) it must be (${shape.join(', ')})`);
    }
    params[name] = a.data;
  }
  const extra = Object.keys(arrays).filter((k) => !(k in want));
  if (extra.length) throw new RangeError(`unexpected arrays: ${extra.join(', ')}`);
  return { params, dims, meta: checkMeta(meta) };
}

// Keeps only the settings the panel can use from the comment, so a hand-edited comment cannot inject
// anything else.
function checkMeta(meta) {
  if (!meta || typeof meta !== 'object') return null;
  const out = {};
  if (typeof meta.task === 'string' && meta.task in TASKS) out.task = meta.task;
  for (const k of ['H', 'seed', 'step', 'batch']) if (Number.isInteger(meta[k]) && meta[k] >= 0) out[k] = meta[k];
  if (typeof meta.lr === 'number' && meta.lr > 0) out.lr = meta.lr;
  return out;
}

// Whether a task's classes fit a file's head: reverse and shift have vocab classes, pair vocab².
export function taskFits(task, dims) {
  return taskOf(task).classes(dims.vocab) === dims.classes;
}
