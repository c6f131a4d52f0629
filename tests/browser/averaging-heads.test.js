// "From averaging to attention" and "heads side by side" in real Chromium, on the page's own data.
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { WAIT, idle, launch, openDemo, setFields } from './browser.js';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => browser?.close());

const averaging = (page) => page.evaluate(() => ({ a: window.__xattnDemo.view.averaging, view: window.__xattnDemo.view, cell: window.__xattnDemo.averagingCell }));

test('averaging = softmax of zeros under −∞; the data-dependent step is the page’s own causal attention', async () => {
  const page = await openDemo(browser.context);
  let { a } = await averaging(page);
  assert.equal(a.n, 10); // the lesson's example: L = S = 10
  const n = a.n;
  // Step 1 is ones below the diagonal over the row count; step 2 (the package's softmax) is the same.
  for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) assert.equal(a.steps[0].weights[i * n + j], j <= i ? Math.fround(1 / (i + 1)) : 0);
  for (let k = 0; k < n * n; k++) assert.ok(Math.abs(a.steps[1].weights[k] - a.steps[0].weights[k]) < 1e-6, `cell ${k}`);
  assert.match(await page.locator('#averaging-steps').textContent(), /Largest difference from step 1: (0, identical|\d\.\de-\d)/);
  // With the causal mask on, the big heatmap's weights are what step 3 shows.
  await page.locator('#controls [name="causal"]').check();
  await page.waitForFunction(() => window.__xattnDemo.view.allowed[1] === 0, null, WAIT);
  await idle(page);
  const r = await averaging(page);
  a = r.a;
  for (let k = 0; k < n * n; k++) assert.ok(Math.abs(a.steps[2].weights[k] - r.view.weights[k]) < 1e-6, `weight ${k}: ${a.steps[2].weights[k]} vs ${r.view.weights[k]}`);
  for (let k = 0; k < n * r.view.Ev; k++) assert.ok(Math.abs(a.steps[2].output[k] - r.view.output[k]) < 1e-5);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the analogy follows the chosen cell, with the numbers of the live example', async () => {
  const page = await openDemo(browser.context);
  const map = page.locator('#averaging-steps canvas.avg-weights').nth(2);
  await map.scrollIntoViewIfNeeded();
  const box = await map.boundingBox();
  // Query 6, key 2: the centre of that cell.
  await page.mouse.click(box.x + (2.5 / 10) * box.width, box.y + (6.5 / 10) * box.height);
  const { a, cell } = await averaging(page);
  assert.deepEqual(cell, { i: 6, j: 2 });
  const text = await page.locator('#averaging-analogy').textContent();
  const w = a.steps[2].weights[6 * 10 + 2];
  assert.match(text, /Row 6 of Q is what position 6 is looking for/);
  assert.match(text, /Row 2 of K is what position 2 offers/);
  assert.ok(text.includes(`the weight ${Number(w.toPrecision(3))}`), text);
  assert.ok(text.includes(`q6·k2/√64 = ${Number(a.scores[62].toPrecision(3))}`), text);
  assert.match(text, /against 0\.143 in the plain average/); // 1/7
  // Arrow keys move the cell; above the diagonal the mask hides the key.
  await map.focus();
  for (let k = 0; k < 6; k++) await page.keyboard.press('ArrowRight');
  assert.deepEqual((await averaging(page)).cell, { i: 6, j: 8 });
  assert.match(await page.locator('#averaging-analogy').textContent(), /Key 8 comes after query 6: the mask hides it/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('heads side by side: one colour scale, every batch element on demand, each opens in the big view', async () => {
  const page = await openDemo(browser.context);
  await page.locator('#controls [name="useHeads"]').check();
  await page.waitForFunction(() => window.__xattnDemo.view?.thumbs.length === 4 && !window.__xattnDemo.busy, null, WAIT);
  // The scale is the largest weight of every thumbnail shown, not each thumbnail's own.
  const max = await page.evaluate(() => Math.max(...window.__xattnDemo.view.thumbs.flatMap((t) => [...t.data])));
  assert.equal(Number(await page.locator('#heads-grid').getAttribute('data-scale-max')), Math.fround(max));
  assert.match(await page.locator('#heads-hint').textContent(), /on one colour scale/);
  const requests = await page.evaluate(() => window.__xattnDemo.requests);
  await page.locator('#heads-every-b').check();
  await page.waitForFunction(() => document.querySelectorAll('#heads-grid button.head').length === 16, null, WAIT);
  assert.equal(await page.evaluate(() => window.__xattnDemo.requests), requests + 1);
  assert.deepEqual(await page.locator('#heads-grid .b-label').allTextContents(), ['b = 0', 'b = 1', 'b = 2', 'b = 3']);
  await page.locator('#heads-grid button.head[data-b="2"][data-h="3"]').click();
  await page.waitForFunction(() => window.__xattnDemo.view?.b === 2 && window.__xattnDemo.view?.h === 3, null, WAIT);
  assert.equal(await page.locator('#heads-grid button.head[data-b="2"][data-h="3"]').getAttribute('aria-pressed'), 'true');
  // Many heads and batch elements: at most 512 thumbnails, and the grid says which it shows.
  await setFields(page, { B: 64, H: 32, Hkv: 32 });
  await page.waitForFunction(() => document.querySelectorAll('#heads-grid button.head').length === 512, null, WAIT);
  assert.match(await page.locator('#heads-grid .more').textContent(), /The first 16 of B = 64 batch elements/);
  assert.deepEqual(page.errors, []);
  await page.close();
});
