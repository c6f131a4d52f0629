// The "Build a GPT" Worker's protocol (web/src/gpt/PROTOCOL.md) through its host (gpt-host.js), in Node: init,
// probe, training with progress, evaluations, attention and samples, pause, export and import, generation, and
// errors that leave the run working. The model is the full 'gpt' stage on Tiny Shakespeare, trained a few steps.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createXattn } from 'xattn';
import { createGptHost } from '../../web/src/gpt/gpt-host.js';

const text = readFileSync(new URL('../../web/public/data/tinyshakespeare.txt', import.meta.url), 'utf8');

function host() {
  const messages = [];
  const waiting = [];
  const post = (m) => {
    messages.push(m);
    for (const w of [...waiting]) {
      if (w.type === m.type) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve(m);
      }
    }
  };
  const handle = createGptHost(post, (threads) => createXattn({ threads: threads ?? 1 }));
  const next = (type) => new Promise((resolve) => waiting.push({ type, resolve }));
  return { handle, messages, next, of: (type) => messages.filter((m) => m.type === type) };
}

test('init, probe, train with evaluations, done; export and import; generate', async () => {
  const h = host();
  await h.handle({ type: 'init', text, stage: 'gpt', seed: 7, steps: 4, evalEvery: 2, threads: 1 });
  const ready = h.of('ready')[0];
  assert.equal(ready.stage, 'gpt');
  assert.equal(ready.vocab.length, 65);
  assert.equal(ready.vocab[0], '\n');
  assert.equal(ready.parameterCount, 818176);
  assert.equal(ready.config.nLayer, 4);
  assert.equal(ready.config.steps, 4);

  await h.handle({ type: 'setProbe', text: 'ROMEO:' });
  const probe = h.of('attention').at(-1);
  assert.equal(probe.probe, 'ROMEO:');
  assert.equal(probe.layers.length, 4);
  for (const l of probe.layers) {
    assert.equal(l.weights.length, 4 * 6 * 6);
    for (let r = 0; r < 4 * 6; r++) {
      const row = l.weights.subarray(r * 6, r * 6 + 6);
      const t = r % 6;
      assert.ok(Math.abs(row.reduce((a, b) => a + b, 0) - 1) < 1e-5);
      assert.ok(row.subarray(t + 1).every((w) => w === 0), 'causal: no weight on later characters');
    }
  }

  await h.handle({ type: 'start' });
  const done = h.of('done')[0];
  assert.equal(done.step, 4);
  assert.ok(done.elapsedMs > 0);
  const evals = h.of('eval');
  assert.deepEqual(evals.map((e) => e.step), [2, 4]);
  assert.equal(done.valLoss, evals[1].valLoss);
  // From ln(65) ≈ 4.17 at the start, down a little in 4 steps.
  assert.ok(evals[1].valLoss < 4.2 && evals[1].valLoss > 3, `valLoss ${evals[1].valLoss}`);
  const progress = h.of('progress');
  assert.equal(progress.at(-1).step, 4);
  assert.ok(progress.every((p) => p.steps === 4 && Number.isFinite(p.trainLoss) && p.lr > 0));
  assert.deepEqual(h.of('sample').map((s) => s.step), [2, 4]);
  assert.ok(h.of('sample').every((s) => s.text.length === 120));
  assert.deepEqual(h.of('attention').slice(1).map((a) => a.probe), ['ROMEO:', 'ROMEO:']);

  await h.handle({ type: 'export' });
  const bytes = h.of('exported')[0].bytes;
  assert.ok(bytes instanceof ArrayBuffer && bytes.byteLength > 4 * 818176);
  await h.handle({ type: 'import', bytes });
  const imported = h.of('imported')[0];
  assert.equal(imported.step, 4);
  assert.equal(imported.stage, 'gpt');
  await h.handle({ type: 'export' });
  assert.deepEqual(new Uint8Array(h.of('exported')[1].bytes), new Uint8Array(bytes));

  await h.handle({ type: 'generate', prompt: 'ROMEO:', maxNew: 30, temperature: 0.8, topK: 10, seed: 3 });
  const tokens = h.of('token');
  assert.deepEqual(tokens.map((t) => t.index), [...Array(30).keys()]);
  assert.equal(tokens[0].attention.length, 4);
  assert.equal(tokens[0].attention[0].weights.length, 4 * 6);  // the prompt's 6 positions
  const generated = h.of('generated')[0];
  assert.equal(generated.text, tokens.map((t) => t.char).join(''));
  assert.ok(generated.charsPerSecond > 0);
  await h.handle({ type: 'generate', prompt: 'ROMEO:', maxNew: 30, temperature: 0.8, topK: 10, seed: 3 });
  assert.equal(h.of('generated')[1].text, generated.text);
  await h.handle({ type: 'dispose' });
});

test('pause stops training between steps; errors name the request and leave the run working', async () => {
  const h = host();
  await h.handle({ type: 'generate', prompt: '', maxNew: 3 });
  assert.match(h.of('error')[0].message, /init first/);
  // Sent together, as a page may: setProbe waits for the init before it.
  const initializing = h.handle({ type: 'init', text, stage: 'gpt', seed: 1, steps: 500, evalEvery: 400, threads: 1 });
  await h.handle({ type: 'setProbe', text: 'KING' });
  await initializing;
  assert.deepEqual(h.messages.slice(1).map((m) => m.type), ['ready', 'attention']);
  await h.handle({ type: 'init', text, stage: 'no such stage', seed: 1 });
  assert.match(h.of('error')[1].message, /stage must be one of 'bigram', .*, got "no such stage"/);
  const training = h.handle({ type: 'start' });
  await h.next('progress');
  await h.handle({ type: 'pause' });
  await training;
  const paused = h.of('paused')[0];
  assert.ok(paused.step >= 1 && paused.step < 500, `paused at ${paused.step}`);
  assert.equal(h.of('done').length, 0);
  await h.handle({ type: 'setProbe', text: 'ROMEO€' });
  assert.equal(h.of('error').at(-1).request, 'setProbe');
  assert.match(h.of('error').at(-1).message, /"€" at 5 is not in the vocabulary/);
  await h.handle({ type: 'init', text: 'To be, or not to be: that is the question.', stage: 'gpt', seed: 1 });
  assert.match(h.of('error').at(-1).message, /training part \(the first 90%\) has 37 characters; windows of 64 \+ 1 need at least 66/);
  await h.handle({ type: 'import', bytes: new ArrayBuffer(16) });
  assert.equal(h.of('error').at(-1).request, 'import');
  // Still working: a generation after the errors.
  await h.handle({ type: 'generate', prompt: '', maxNew: 5, temperature: 1, topK: 0, seed: 1 });
  assert.equal(h.of('generated')[0]?.text.length, 5, JSON.stringify(h.of('error')));
  await h.handle({ type: 'dispose' });
});

test('stopGenerate ends a generation early; dispose ends training, and the host wants an init after it', async () => {
  const h = host();
  await h.handle({ type: 'init', text, stage: 'four-heads', seed: 4, steps: 100000, threads: 1 });
  const generating = h.handle({ type: 'generate', prompt: 'KING', maxNew: 100000, temperature: 1, topK: 5, seed: 2 });
  await h.next('token');
  await h.handle({ type: 'stopGenerate' });
  await generating;
  const generated = h.of('generated')[0].text;
  assert.ok(generated.length >= 1 && generated.length < 1000, `${generated.length} characters`);
  assert.equal(generated, h.of('token').map((t) => t.char).join(''));

  const training = h.handle({ type: 'start' });
  await h.next('progress');
  await h.handle({ type: 'dispose' });
  await training;
  const count = h.messages.length;
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(h.messages.length, count, 'nothing after dispose');
  assert.equal(h.of('done').length, 0);
  await h.handle({ type: 'start' });
  assert.match(h.of('error').at(-1).message, /start: send init first/);
});
