// The chapter's data and schedule against bench/gpt/model.py's (fixtures/make_gpt_golden.py): Tiny Shakespeare's
// vocabulary and split, the validation windows, and nanoGPT's learning-rate schedule; and the training batches.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { makeCorpus } from '../../web/src/gpt/corpus.js';
import { BatchSource, validationOffsets, windows } from '../../web/src/gpt/batches.js';
import { GPT_CONFIG, lrAt } from '../../web/src/gpt/schedule.js';
import { readGolden } from './gpt-golden.js';

const golden = readGolden();
const text = readFileSync(new URL('../../web/public/data/tinyshakespeare.txt', import.meta.url), 'utf8');
const corpus = makeCorpus(text);

test('the vocabulary and the 90/10 split are model.py’s', () => {
  const [vocab, nTrain, nVal] = golden.get('corpus.sizes').data;
  assert.equal(corpus.chars.length, vocab);
  assert.deepEqual(corpus.chars.map((c) => c.codePointAt(0)), Array.from(golden.get('corpus.vocab').data));
  assert.equal(corpus.train.length, nTrain);
  assert.equal(corpus.val.length, nVal);
  assert.equal(corpus.decode(corpus.train.subarray(0, 14)), text.slice(0, 14));
  assert.equal(corpus.decode(corpus.val.subarray(0, 20)), text.slice(nTrain, nTrain + 20));
  assert.throws(() => corpus.encode('abc€'), /"€" at 3 is not in the vocabulary/);
});

test('characters are code points, sorted by code point as Python sorts them', () => {
  const c = makeCorpus('b😀a\uffff😀b');
  assert.deepEqual(c.chars, ['a', 'b', '\uffff', '😀']);
  assert.deepEqual(Array.from(c.encode('😀a')), [3, 0]);
  assert.equal(c.train.length + c.val.length, 6);
  assert.equal(c.train.length, 5);
  assert.throws(() => c.encode('ab😁'), /"😁" at 2 is not in the vocabulary/);
  // A lone surrogate is a character of its own, as in Python.
  const lone = makeCorpus('a\ud800b\ud800');
  assert.deepEqual(lone.chars, ['a', 'b', '\ud800']);
  assert.deepEqual(Array.from(lone.encode('\ud800a')), [2, 0]);
});

test('the validation windows and the training estimate’s windows are model.py’s', () => {
  const c = GPT_CONFIG;
  assert.deepEqual(validationOffsets(corpus.val.length, c.evalBatches, c.batchSize, c.blockSize), Array.from(golden.get('val_offsets').data));
  assert.deepEqual(validationOffsets(corpus.train.length, c.evalBatches, c.batchSize, c.blockSize), Array.from(golden.get('train_offsets').data));
});

test('the learning rate follows nanoGPT’s warmup and cosine', () => {
  const its = golden.get('lr_its').data;
  const want = golden.get('lr_at').data;
  its.forEach((it, k) => assert.ok(Math.abs(lrAt(it) - want[k]) <= 1e-18 + 1e-15 * want[k], `lr at ${it}: ${lrAt(it)} vs ${want[k]}`));
});

test('training batches: seeded windows whose targets are the next characters', () => {
  const a = new BatchSource(corpus.train, { B: 12, T: 64, seed: 3 });
  const b = new BatchSource(corpus.train, { B: 12, T: 64, seed: 3 });
  const first = a.next();
  assert.deepEqual(first, b.next());
  assert.notDeepEqual(first.x, a.next().x);
  for (let r = 0; r < 12; r++) {
    assert.deepEqual(first.y.subarray(r * 64, r * 64 + 63), first.x.subarray(r * 64 + 1, r * 64 + 64));
  }
  const w = windows(Int32Array.from([0, 1, 2, 3, 4, 5]), [0, 2], 3);
  assert.deepEqual(Array.from(w.x), [0, 1, 2, 2, 3, 4]);
  assert.deepEqual(Array.from(w.y), [1, 2, 3, 3, 4, 5]);
});
