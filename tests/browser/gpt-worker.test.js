// The "Build a GPT" Worker (web/src/gpt/gpt-worker.js) in Chromium, as the chapter's page starts it: a module
// Worker loading the package by its name through Vite, cross-origin isolated. The course's bigram stage (small and
// quick) trains with progress, evaluations and samples, generates with its tokens, exports and imports; the full
// GPT initialises at nanoGPT's size on the package's threads. The protocol's details are tested in Node
// (tests/web/gpt-worker.test.js); this checks that the Worker runs where the page runs it.
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { DEMO_URL, WAIT, launch } from './browser.js';

let browser;
let page;
before(async () => {
  browser = await launch();
  page = await browser.context.newPage();
  page.errors = [];
  page.on('pageerror', (e) => page.errors.push(e.message));
  // The corpus as the page: no panel of the lab computes beside the Worker.
  await page.goto(new URL('data/tinyshakespeare.txt', DEMO_URL).href);
});
after(async () => browser?.close());

// Sends requests to a fresh Worker, and after a reply of type t the request then[t] (an exported file is sent
// back to import), collecting every reply until `until(message)` is true (or an error).
function session(requests, until, then = {}) {
  return page.evaluate(async ({ requests, until, then }) => {
    const text = await (await fetch('/data/tinyshakespeare.txt')).text();
    const worker = new Worker('/src/gpt/gpt-worker.js', { type: 'module' });
    const stop = new Function('m', `return (${until})(m);`);
    const replies = [];
    return new Promise((resolve) => {
      worker.onerror = (e) => resolve({ replies, failure: `worker error: ${e.message}`, isolated: self.crossOriginIsolated });
      worker.onmessage = ({ data: m }) => {
        // Float32Arrays do not cross page.evaluate: their lengths and sums do.
        const plain = JSON.parse(JSON.stringify(m, (k, v) => (v instanceof Float32Array ? { length: v.length, sum: v.reduce((a, b) => a + b, 0) } : v instanceof ArrayBuffer ? { bytes: v.byteLength } : v)));
        replies.push(plain);
        if (m.type === 'exported') worker.postMessage({ type: 'import', bytes: m.bytes }, [m.bytes]);
        else if (then[m.type]) worker.postMessage(then[m.type]);
        if (m.type === 'error' || stop(m)) {
          worker.terminate();
          resolve({ replies, isolated: self.crossOriginIsolated });
        }
      };
      for (const r of requests) worker.postMessage(r.type === 'init' ? { ...r, text } : r);
    });
  }, { requests, until: until.toString(), then });
}

test('the bigram stage trains, evaluates, samples, generates, exports and imports in the Worker', async () => {
  const { replies, failure } = await session([
    { type: 'init', stage: 'bigram', seed: 3, steps: 30, evalEvery: 10 },
    { type: 'start' },
  ], (m) => m.type === 'imported', {
    done: { type: 'generate', prompt: 'KING', maxNew: 20, temperature: 1, topK: 0, seed: 1 },
    generated: { type: 'export' },
  });
  assert.equal(failure, undefined);
  const of = (type) => replies.filter((m) => m.type === type);
  assert.deepEqual(of('error'), []);
  assert.equal(of('ready')[0].vocab.length, 65);
  assert.equal(of('ready')[0].parameterCount, 65 * 65);
  assert.deepEqual(of('eval').map((e) => e.step), [10, 20, 30]);
  // The bigram starts from N(0, 1) logits, as the course's does (its first loss ~4.9, above ln 65 = 4.17), and
  // falls at every evaluation.
  const losses = of('eval').map((e) => e.valLoss);
  assert.ok(losses.every((l) => l > 3 && l < 5.5), `validation losses ${losses}`);
  assert.ok(losses.every((l, i) => i === 0 || l < losses[i - 1]), `validation losses ${losses} fall at every evaluation`);
  assert.equal(of('done')[0].step, 30);
  assert.equal(of('sample').length, 3);
  assert.equal(of('token').length, 20);
  assert.equal(of('generated')[0].text, of('token').map((t) => t.char).join(''));
  assert.equal(of('imported')[0].step, 30);
  assert.deepEqual(page.errors, []);
});

test('the full GPT initialises at nanoGPT’s size on the package’s threads, and its probe attention arrives', async () => {
  const { replies, isolated } = await session([
    { type: 'init', stage: 'gpt', seed: 1 },
    { type: 'setProbe', text: 'ROMEO:' },
  ], (m) => m.type === 'attention');
  assert.equal(isolated, true);
  const ready = replies.find((m) => m.type === 'ready');
  assert.ok(ready, JSON.stringify(replies));
  assert.equal(ready.parameterCount, 818176);
  assert.ok(ready.config.threads >= 1);
  const attention = replies.find((m) => m.type === 'attention');
  assert.equal(attention.layers.length, 4);
  // Each of the 4 heads' 6 causal rows sums to 1.
  for (const l of attention.layers) {
    assert.equal(l.weights.length, 4 * 36);
    assert.ok(Math.abs(l.weights.sum - 24) < 1e-4);
  }
}, WAIT);
