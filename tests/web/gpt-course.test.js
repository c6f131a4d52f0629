// The course's stages (web/src/gpt/course.js): each one's idea and reference loss, each early model's gradients
// (stack.js: bigram, averaging, one head, four heads, + feed-forward) against central differences of its loss,
// the averaging mixer's weights, and every stage through the Worker's host (init, generate). The blocks and the
// full GPT are model.js's GPT, checked against PyTorch in gpt-model.test.js.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createXattn } from 'xattn';
import { COURSE, stageOf } from '../../web/src/gpt/course.js';
import { Stack } from '../../web/src/gpt/stack.js';
import { GPT } from '../../web/src/gpt/model.js';
import { createGptHost } from '../../web/src/gpt/gpt-host.js';
import { Prng } from '../../web/src/shared/prng.js';
import { centralDifference } from './train-gradcheck.js';

const xa = await createXattn({ threads: 1 });
const V = 7;
const B = 2;
const T = 5;

test('the course runs from the bigram to the full GPT, each stage with its idea', () => {
  assert.deepEqual(COURSE.map((s) => s.id), ['bigram', 'average', 'one-head', 'four-heads', 'feed-forward', 'blocks', 'gpt']);
  assert.deepEqual(COURSE.map((s) => s.referenceLoss), [2.5, null, 2.4, 2.28, 2.24, 2.08, 1.88]);
  assert.ok(COURSE.every((s) => s.idea.length > 40 && s.title.length > 0));
  assert.throws(() => stageOf('trigram'), /stage must be one of 'bigram', .*'gpt', got "trigram"/);
});

function batch(seed) {
  const rng = new Prng(seed, 0);
  const draw = () => Int32Array.from({ length: B * T }, () => Math.floor(rng.nextFloat() * V));
  return { tokens: draw(), targets: draw() };
}

// float32 forward: central differences with h = 1e-2 on weights of std 0.5 agree to ~1e-5 (as in
// train-model.test.js); the bound still catches a wrong or missing path (a factor, a sign, a dropped term).
const close = (a, b) => Math.abs(a - b) <= 3e-4 + 3e-3 * Math.abs(b);
// The ReLU's kink: a nudge of 1e-2 can carry a pre-activation across 0 (this batch has one 0.0027 from it), where
// the difference quotient is not the derivative; 1e-3 stays on one side, and float32's rounding of the loss
// (~1e-7) over 2e-3 is still well inside the bound.
const STEP = { 'feed-forward': 1e-3 };

for (const id of ['bigram', 'average', 'one-head', 'four-heads', 'feed-forward']) {
  test(`${id}: every parameter's gradient matches central differences of the loss`, () => {
    const stage = stageOf(id);
    const config = { ...stage.model, vocab: V, blockSize: T, ...(stage.model.bigram ? {} : { nEmbd: 8 }), ...(stage.model.nHead === 4 ? { nHead: 2 } : {}) };
    const model = new Stack(xa, config, { seed: 5, std: 0.5 });
    const { tokens, targets } = batch(3);
    const { grads, loss } = model.lossAndGradients(tokens, targets, B, T);
    assert.deepEqual(Object.keys(grads), Object.keys(model.params));
    assert.ok(Math.abs(loss - model.loss(tokens, targets, B, T)) < 1e-6);
    const rng = new Prng(11, 0);
    for (const [name, p] of Object.entries(model.params)) {
      let moved = 0;
      for (let j = 0; j < 6; j++) {
        const k = Math.floor(rng.nextFloat() * p.length);
        const want = centralDifference(() => {
          model.sync();
          return model.loss(tokens, targets, B, T);
        }, p, k, STEP[id]);
        model.sync();
        assert.ok(close(grads[name][k], want), `${id} ${name}[${k}]: ${grads[name][k]} vs ${want}`);
        if (Math.abs(want) > 1e-3) moved++;
      }
      assert.ok(moved > 0 || name.endsWith('bias') || name === 'token_embedding.weight', `${id} ${name}: no sampled gradient is away from 0`);
    }
    model.dispose();
  });
}

test('the averaging stage: every position is the mean of the ones so far, shown as one head of 1/(t + 1)', () => {
  const model = new Stack(xa, { vocab: V, nEmbd: 4, blockSize: T, mixer: 'average' }, { seed: 2, std: 1 });
  const { tokens } = batch(4);
  const { x, a } = model.forward(tokens, B, T);
  for (const [b, t, c] of [[0, 0, 1], [1, 3, 2], [1, 4, 0]]) {
    let s = 0;
    for (let u = 0; u <= t; u++) s += x.data[(b * T + u) * 4 + c];
    assert.ok(Math.abs(a.data[(b * T + t) * 4 + c] - s / (t + 1)) < 1e-6);
  }
  const [w] = model.attention(tokens.subarray(0, 3));
  assert.deepEqual(Array.from(w.weights), [1, 0, 0, 0.5, 0.5, 0, 1 / 3, 1 / 3, 1 / 3].map(Math.fround));
});

test('the blocks stage is a GPT of 3 layers over 32 channels', () => {
  const model = stageOf('blocks').build(xa, 65, 1);
  assert.ok(model instanceof GPT);
  assert.deepEqual(model.config, { vocab: 65, nLayer: 3, nHead: 4, nEmbd: 32, blockSize: 8 });
  model.dispose();
});

test('the Worker’s host takes every stage: ready, a generation with its attention rows, export and import', async () => {
  const text = readFileSync(new URL('../../web/public/data/tinyshakespeare.txt', import.meta.url), 'utf8');
  const messages = [];
  const handle = createGptHost((m) => messages.push(m), () => createXattn({ threads: 1 }));
  for (const { id } of COURSE) {
    messages.length = 0;
    await handle({ type: 'init', text, stage: id, seed: 2, threads: 1 });
    const ready = messages.find((m) => m.type === 'ready');
    assert.ok(ready, `${id}: ${JSON.stringify(messages)}`);
    assert.equal(ready.stage, id);
    await handle({ type: 'generate', prompt: 'To be', maxNew: 4, temperature: 1, topK: 0, seed: 1 });
    const tokens = messages.filter((m) => m.type === 'token');
    assert.equal(tokens.length, 4, id);
    const layers = { bigram: 0, average: 1, 'one-head': 1, 'four-heads': 1, 'feed-forward': 1, blocks: 3, gpt: 4 }[id];
    assert.equal(tokens[0].attention.length, layers, id);
    if (layers > 0) assert.equal(tokens[0].attention[0].weights.length, tokens[0].attention[0].heads * 5, id);
    assert.equal(messages.find((m) => m.type === 'generated').text.length, 4);
    await handle({ type: 'export' });
    await handle({ type: 'import', bytes: messages.find((m) => m.type === 'exported').bytes });
    const imported = messages.find((m) => m.type === 'imported');
    assert.ok(imported, `${id}: ${JSON.stringify(messages.filter((m) => m.type === 'error'))}`);
    assert.equal(imported.stage, id);
    assert.deepEqual(imported.config, ready.config);
  }
  await handle({ type: 'dispose' });
});
