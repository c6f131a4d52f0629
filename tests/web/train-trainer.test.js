// A whole training run in Node through the package: seeded (the same losses twice), and the default
// task learns; the exported .npz loads back to the same held-out accuracy.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createXattn } from 'xattn';
import { DEFAULTS, Trainer } from '../../web/src/train/trainer.js';
import { decodeStateDict, encodeStateDict, taskFits } from '../../web/src/train/state-dict.js';
import { readZip, writeZip, crc32 } from '../../web/src/train/npz.js';
import { patternMatch } from '../../web/src/train/tasks.js';

const xa = await createXattn();
const fixture = (name) => new Uint8Array(readFileSync(new URL(`./fixtures/${name}`, import.meta.url)));

test('the same seed gives the same run; another seed another', () => {
  const losses = (seed) => {
    const t = new Trainer(xa, { seed });
    const out = Array.from({ length: 5 }, () => t.trainStep());
    t.dispose();
    return out;
  };
  assert.deepEqual(losses(7), losses(7));
  assert.notDeepEqual(losses(7), losses(8));
});

test('the default task reaches 95% exact sequences on held-out data, and its weights reverse', () => {
  const t = new Trainer(xa, {});
  const before = t.evaluate();
  for (let s = 0; s < 300; s++) t.trainStep();
  const after = t.evaluate();
  assert.equal(DEFAULTS.task, 'reverse');
  assert.ok(before.sequence < 0.05, `before: ${before.sequence}`);
  assert.ok(after.sequence >= 0.95, `after 300 steps: ${after.sequence}`);
  const probe = t.probeWeights();
  const [match] = patternMatch('reverse', probe.weights, probe);
  assert.equal(match.rowsDominated, probe.L);
  assert.deepEqual([...probe.predicted], [...probe.targets]);
  t.dispose();
});

test('export → .npz → load gives the same parameters and the same held-out accuracy', async () => {
  const t = new Trainer(xa, { seed: 4 });
  for (let s = 0; s < 60; s++) t.trainStep();
  const acc = t.evaluate();
  const bytes = encodeStateDict(t.stateDict(), { task: 'reverse', H: t.settings.H, seed: 4, step: t.step });
  const { params, dims, meta } = await decodeStateDict(bytes);
  assert.deepEqual(dims, { vocab: 8, E: 32, L: 8, classes: 8 });
  assert.deepEqual(meta, { task: 'reverse', H: t.settings.H, seed: 4, step: 60 });
  for (const [name, p] of Object.entries(t.model.params)) assert.deepEqual(params[name], p, name);
  const loaded = new Trainer(xa, { seed: 4 }, params);
  assert.deepEqual(loaded.evaluate(), acc);
  assert.ok(taskFits('reverse', dims) && !taskFits('pair', dims));
  t.dispose();
  loaded.dispose();
});

test('reads NumPy’s own .npz, stored (np.savez) and deflated (np.savez_compressed)', async () => {
  for (const name of ['stored.npz', 'deflated.npz']) {
    const { files } = await readZip(fixture(name));
    assert.deepEqual(files.map((f) => f.name).sort(), ['head.bias.npy', 'pos_embedding.npy'], name);
  }
  await assert.rejects(decodeStateDict(fixture('stored.npz')), /needs embedding.weight, pos_embedding and head.weight; it has head.bias, pos_embedding/);
});

test('zip: CRC-32 of a known string, and damage is refused', async () => {
  assert.equal(crc32(new TextEncoder().encode('123456789')), 0xcbf43926); // the standard check value
  const zip = writeZip([{ name: 'a.npy', bytes: Uint8Array.of(1, 2, 3) }], 'hello');
  const back = await readZip(zip);
  assert.equal(back.comment, 'hello');
  assert.deepEqual([...back.files[0].bytes], [1, 2, 3]);
  zip[31 + 5] ^= 0xff; // a data byte of the first entry (30-byte header + 5-byte name)
  await assert.rejects(readZip(zip), /a.npy is damaged/);
  await assert.rejects(readZip(Uint8Array.of(1, 2, 3)), /not a zip archive/);
});

test('a state dict with a wrong shape is refused with the shape it needs', async () => {
  const t = new Trainer(xa, {});
  const entries = t.stateDict().map((e) => (e.name === 'attn.out_proj.bias' ? { ...e, data: new Float32Array(31), shape: [31] } : e));
  await assert.rejects(decodeStateDict(encodeStateDict(entries, {})), /attn.out_proj.bias has shape \(31\); .* it must be \(32\)/);
  t.dispose();
});
