// The "Build a GPT" host's import (PROTOCOL.md's import): a run from a .safetensors file over the current run's text.
// A file the lab exported says its vocabulary, stage and step. One without them (PyTorch's model.py saved with
// safetensors.torch.save_file) is read as nanoGPT's model (its 4 heads; the shapes give the rest) over this
// text's vocabulary, which is how load_corpus builds it, when its token embedding has that many rows.
import { GptRun } from './gpt-run.js';
import { stageOf } from './course.js';
import { readModel } from './checkpoint.js';

// The vocabulary the file's metadata lists (an array of characters), or null when it lists none readable.
function listedVocabulary(metadata) {
  try {
    return JSON.parse(metadata.vocab ?? 'null');
  } catch {
    return null;
  }
}

// Whether the model read from the file was trained over the characters `ours` (the current text's).
function fitsVocabulary(model, metadata, ours) {
  const chars = listedVocabulary(metadata);
  if (Array.isArray(chars)) return chars.length === ours.length && chars.every((c, i) => c === ours[i]);
  return metadata.vocab === undefined && model.config.vocab === ours.length;
}

function vocabularyMismatch(model, metadata, ours) {
  const chars = listedVocabulary(metadata);
  const theirs = Array.isArray(chars) ? `${chars.length} characters` : `${model.config.vocab} ids`;
  return new RangeError(`import: the file's vocabulary (${theirs}) is not this text's (${ours.length} characters)`);
}

// xa: the package; run: the current run (its text and seed carry over); bytes: the file. Returns { next, step }:
// the new run at the file's step. Throws, with nothing left allocated, when the file does not fit the text.
export function importedRun(xa, run, bytes) {
  if (!(bytes instanceof ArrayBuffer)) throw new TypeError('import: bytes must be an ArrayBuffer (a .safetensors file)');
  const { model, metadata } = readModel(xa, new Uint8Array(bytes), { nHead: stageOf('gpt').model.nHead });
  const ours = run.corpus.chars;
  if (!fitsVocabulary(model, metadata, ours)) {
    model.dispose();
    throw vocabularyMismatch(model, metadata, ours);
  }
  const step = Number.isSafeInteger(Number(metadata.step)) ? Number(metadata.step) : 0;
  try {
    return { next: new GptRun(xa, run.corpus, { stage: metadata.stage ?? 'gpt', seed: run.seed, model, step }), step };
  } catch (err) {
    model.dispose();
    throw err;
  }
}
