// "Multi-head attention, step by step" in real Chromium: every shape on screen, every step of the page's first
// example equal to torch.nn.MultiheadAttention's (tests/web/fixtures/mha_walk.txt), the package's module holding
// the weights shown, other settings and a refused one; phone and desktop widths.
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parseCases } from '../js/golden-cases.mjs';
import { WAIT, artifact, launch, openDemo } from './browser.js';

const fixture = parseCases(readFileSync(new URL('../web/fixtures/mha_walk.txt', import.meta.url), 'utf8'), 'mha_walk.txt')[0].tensors;
let browser;
before(async () => {
  browser = await launch();
});
after(async () => browser?.close());

const walk = (page) =>
  page.evaluate(() => {
    const m = window.__xattnDemo.multihead;
    const plain = (t) => ({ data: [...t.data], shape: t.shape });
    return m.walk && {
      dims: m.walk.dims,
      steps: Object.fromEntries(Object.entries(m.walk.steps).map(([k, t]) => [k, plain(t)])),
      module: { output: plain(m.walk.module.output), weights: plain(m.walk.module.weights) },
      parameters: Object.fromEntries(Object.entries(m.walk.parameters).map(([k, t]) => [k, plain(t)])),
      diff: m.walk.diff,
      error: m.lastError,
    };
  });
const rowShape = (page, id) => page.locator(`#walk-trace tr[data-step="${id}"] td.shape`).textContent();
const close = (got, want, label) => {
  assert.equal(got.length, want.length, label);
  for (let k = 0; k < want.length; k++) assert.ok(Math.abs(got[k] - want[k]) <= 1e-5 + 1e-4 * Math.abs(want[k]), `${label}[${k}]: ${got[k]}, want ${want[k]}`);
};

async function openWalk(viewport) {
  const page = await openDemo(browser.context, viewport ? { viewport } : {});
  await page.waitForFunction(() => window.__xattnDemo.multihead.ready, null, WAIT);
  await page.locator('#multihead-card').scrollIntoViewIfNeeded();
  return page;
}

test('the walk shows X → Q, K, V → H heads → attention per head → concatenated → output, as torch computes it', async () => {
  const page = await openWalk({ width: 1366, height: 900 });
  // Every shape on screen, in the lesson's letters.
  const shapes = { x: '(2, 5, 8)', q: '(2, 5, 8)', split: '(2, 5, 2, 4)', heads: '(2, 2, 5, 4)', weights: '(2, 2, 5, 5)', headsOut: '(2, 2, 5, 4)', concat: '(2, 5, 8)', output: '(2, 5, 8)' };
  for (const [id, shape] of Object.entries(shapes)) assert.equal(await rowShape(page, id), shape, id);
  assert.equal(await page.locator('#walk-trace tr[data-step="heads"] td.letters').textContent(), '(B, H, L, E/H)');
  // The numbers: the page's example is the fixture's, step by step, and the module's own forward is torch's.
  const w = await walk(page);
  assert.deepEqual(w.dims, { B: 2, L: 5, E: 8, H: 2, seed: 7 });
  assert.deepEqual(w.steps.x.data, [...Float32Array.from(fixture.x.values)]);
  for (const name of ['in_proj_weight', 'out_proj.weight']) assert.deepEqual(w.parameters[name].data, [...Float32Array.from(fixture[name].values)], name);
  for (const [step, name] of [['q', 'q'], ['k', 'k'], ['v', 'v'], ['heads', 'q_heads'], ['weights', 'weights'], ['headsOut', 'heads_output'], ['concat', 'concat'], ['output', 'output']]) {
    close(w.steps[step].data, fixture[name].values, step);
    assert.deepEqual(w.steps[step].shape, fixture[name].shape, step);
  }
  close(w.module.output.data, fixture.output.values, 'the module\'s output');
  close(w.module.weights.data, fixture.weights.values, 'the module\'s weights');
  // The page says how close its steps end to the module's forward, with the figures it has.
  const match = await page.locator('#walk-match').textContent();
  assert.match(match, /The last step is the module's own forward: max \|Δ\| \S+ from its output/);
  assert.equal(Number(await page.locator('#walk-match').getAttribute('data-output')), w.diff.output);
  assert.ok(w.diff.output < 1e-5 && w.diff.weights < 1e-5, JSON.stringify(w.diff));
  // A map for every step: X, Q, K, V; Q's H heads; each head's weights and output; the concatenation and the output.
  assert.deepEqual(await page.locator('#walk-maps .walk-group').evaluateAll((gs) => gs.map((g) => g.querySelectorAll('figure').length)), [4, 2, 4, 2]);
  assert.equal(await page.locator('#walk-weights figure').count(), 2);
  await page.locator('#multihead-card').screenshot({ path: artifact('multihead-1366') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('other settings: more heads, another batch element; E that does not split into H is refused', async () => {
  const page = await openWalk();
  const form = page.locator('#walk-controls');
  await form.locator('[name="H"]').selectOption('4');
  await page.waitForFunction(() => window.__xattnDemo.multihead.walk?.dims.H === 4, null, WAIT);
  assert.equal(await rowShape(page, 'heads'), '(2, 4, 5, 2)');
  assert.equal(await page.locator('#walk-maps .walk-group').nth(1).locator('figure').count(), 4);
  let w = await walk(page);
  assert.ok(w.diff.output < 1e-5, JSON.stringify(w.diff));
  await page.locator('#walk-b').selectOption('1');
  assert.equal(await page.locator('#walk-maps').getAttribute('data-b'), '1');
  assert.match(await page.locator('#walk-maps figcaption').first().textContent(), /b = 1/);
  await form.locator('[name="H"]').selectOption('3');
  await page.waitForFunction(() => window.__xattnDemo.multihead.lastError, null, WAIT);
  assert.match(await page.locator('#walk-error').textContent(), /E = 8 features cannot be split into H = 3 heads/);
  await form.locator('[name="E"]').selectOption('12');
  await page.waitForFunction(() => !window.__xattnDemo.multihead.lastError && window.__xattnDemo.multihead.walk?.dims.E === 12, null, WAIT);
  w = await walk(page);
  assert.deepEqual(w.steps.heads.shape, [2, 3, 5, 4]);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the walk at phone width: every map and row inside the screen', async () => {
  const page = await openWalk({ width: 390, height: 844 });
  assert.ok((await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)) <= 0);
  const card = await page.locator('#multihead-card').boundingBox();
  const outside = await page.locator('#multihead-card').evaluate((c, right) => [...c.querySelectorAll('figure, tr, td.shape')].filter((e) => e.getBoundingClientRect().right > right + 1).length, card.x + card.width);
  assert.equal(outside, 0);
  await page.locator('#multihead-card').screenshot({ path: artifact('multihead-390') });
  assert.deepEqual(page.errors, []);
  await page.close();
});
