// The .safetensors export and import of web/src/gpt/checkpoint.js: the committed export of a seeded tiny GPT
// (fixtures/make_gpt_export.mjs) loads into bench/gpt/model.py's GPT in PyTorch, whose logits
// (fixtures/make_gpt_golden.py) the re-imported model reproduces; exports are deterministic and round-trip.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createXattn } from 'xattn';
import { GPT } from '../../web/src/gpt/model.js';
import { readModel, readModelParameters, writeModel, writeSafetensors } from '../../web/src/gpt/checkpoint.js';
import { readSafetensors } from '../../js/safetensors.js';
import { B, T, TINY, readGolden, worst } from './gpt-golden.js';

const xa = await createXattn({ threads: 1 });
const golden = readGolden();
const file = new Uint8Array(readFileSync(new URL('./fixtures/gpt_export.safetensors', import.meta.url)));
const idx = Int32Array.from(golden.get('idx').data);
const chars = [...'\n !abcdefgh'];

test('the imported export gives the logits PyTorch computes from the same file', () => {
  const { model, metadata } = readModel(xa, file);
  assert.deepEqual(model.config, TINY);
  assert.deepEqual(JSON.parse(metadata.vocab), chars);
  assert.equal(metadata.stage, 'gpt');
  const { logits } = model.forward(idx, B, T);
  const w = worst(logits.data, golden.get('export_logits').data, { atol: 1e-5, rtol: 1e-5 });
  assert.ok(w.ratio <= 1, `logits at ${w.at}: ${w.got} vs ${w.want}`);
  model.dispose();
});

test('an export is F32 under model.py’s names, 8-byte aligned, the same bytes for the same seed, and round-trips', () => {
  const model = new GPT(xa, TINY, { seed: 3 });
  const bytes = writeModel(model, { chars, stage: 'gpt', step: 0 });
  assert.deepEqual(bytes, file);
  const n = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  assert.equal((8 + n) % 8, 0);
  const entries = readSafetensors('test', bytes);
  assert.deepEqual([...entries.keys()], Object.keys(model.params));
  assert.ok([...entries.values()].every((e) => e.dtype === 'F32'));
  const back = readModelParameters(bytes);
  for (const [name, p] of Object.entries(model.params)) assert.deepEqual(back.params[name], p, name);
  model.dispose();
});

test('a file without metadata needs nHead; one that does not fit the model is refused, naming what is wrong', () => {
  const model = new GPT(xa, TINY, { seed: 3 });
  const shapes = Object.fromEntries(Object.entries(readModelParameters(file).params).map(([n]) => [n, readSafetensors('t', file).get(n).shape]));
  const bare = writeSafetensors(model.params, shapes);
  assert.throws(() => readModelParameters(bare), /give nHead/);
  assert.deepEqual(readModelParameters(bare, { nHead: 2 }).config, TINY);
  const { 'head.weight': _, ...noHead } = model.params;
  assert.throws(() => readModelParameters(writeSafetensors(noHead, shapes, { config: JSON.stringify(TINY) })), /missing head\.weight/);
  const extra = writeSafetensors({ ...model.params, stray: new Float32Array(2) }, { ...shapes, stray: [2] }, { config: JSON.stringify(TINY) });
  assert.throws(() => readModelParameters(extra), /unexpected stray/);
  assert.throws(() => readModelParameters(new Uint8Array(4)), /not a valid safetensors file/);
  model.dispose();
});
