// End-to-end: the served demo in headless Chromium, read through its DOM and its data hook
// (window.__xattnDemo), never through pixels.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { decodeNpy, encodeNpy } from '../../web/src/shared/npy.js';
import { STUDY_ES } from '../../web/src/scaling/scaling-study.js';
import { DEMO_URL, WAIT, artifact, computes, idle, launch, openDemo, setField, setFields, settled, traceShape } from './browser.js';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

test("loads with no console errors and shows the lesson's example already computed", async () => {
  const page = await openDemo(browser.context);
  assert.equal(await traceShape(page, 'Q'), '(4, 10, 64)');
  assert.equal(await traceShape(page, 'Kᵀ'), '(4, 64, 10)');
  assert.equal(await traceShape(page, 'scores'), '(4, 10, 10)');
  assert.equal(await traceShape(page, 'scaled scores'), '(4, 10, 10)');
  assert.equal(await traceShape(page, 'weights'), '(4, 10, 10)');
  assert.equal(await traceShape(page, 'output'), '(4, 10, 64)');
  const weights = await page.evaluate(() => window.__xattnDemo.tensor('weights').then((t) => ({ shape: t.shape, data: [...t.data] })));
  assert.deepEqual(weights.shape, [4, 10, 10]);
  for (let row = 0; row < 40; row++) {
    const sum = weights.data.slice(row * 10, row * 10 + 10).reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(sum - 1) < 1e-5, `row ${row} sums to ${sum}`);
  }
  assert.match(await page.locator('#build-info').textContent(), /xattn \d+\.\d+\.\d+ · WebAssembly (relaxed-SIMD|SIMD|scalar) build/);
  assert.equal(await page.locator('#error').isHidden(), true);
  await page.screenshot({ path: artifact('demo-1280x800') });
  await page.screenshot({ path: artifact('demo-full-page'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('changing controls updates the shapes at once and redraws the heatmap', async () => {
  const page = await openDemo(browser.context);
  const before = await computes(page);
  const renders = await page.evaluate(() => window.__xattnDemo.renders);
  await setField(page, 'L', 7);
  await setField(page, 'Ev', 16);
  assert.equal(await traceShape(page, 'Q'), '(4, 7, 64)');
  assert.equal(await traceShape(page, 'scores'), '(4, 7, 10)');
  assert.equal(await traceShape(page, 'output'), '(4, 7, 16)');
  await page.waitForFunction(() => window.__xattnDemo.view?.L === 7 && window.__xattnDemo.view?.Ev === 16, null, WAIT);
  await settled(page, before + 1);
  assert.ok((await page.evaluate(() => window.__xattnDemo.renders)) > renders);
  assert.equal(await page.locator('#weights-canvas').getAttribute('data-rows'), '7');
  assert.match(await page.locator('#axis-left').textContent(), /L = 7/);

  // Heads with GQA: the trace shows H, Hkv and the repeat step; the heads grid appears.
  await page.locator('#controls [name="useHeads"]').check();
  await setField(page, 'H', 4);
  await setField(page, 'Hkv', 2);
  assert.equal(await traceShape(page, 'Q'), '(4, 4, 7, 64)');
  assert.equal(await traceShape(page, 'K'), '(4, 2, 10, 64)');
  assert.equal(await traceShape(page, 'K, V per query head'), '(4, 4, 10, 64)');
  assert.equal(await traceShape(page, 'weights'), '(4, 4, 7, 10)');
  await page.waitForFunction(() => window.__xattnDemo.view?.thumbs.length === 4, null, WAIT);
  await settled(page, before + 2);
  assert.equal(await page.locator('#heads-grid button.head').count(), 4);
  assert.equal(await page.locator('#heads-card').isVisible(), true);
  // Picking a head from the grid shows that head.
  await page.locator('#heads-grid button.head').nth(3).click();
  await page.waitForFunction(() => window.__xattnDemo.view?.h === 3, null, WAIT);

  // An impossible setting reads as a message in place of the table.
  await setField(page, 'Hkv', 3);
  assert.match(await page.locator('#trace tbody').textContent(), /H must be a multiple of Hkv/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the causal mask makes every weight above the diagonal exactly zero', async () => {
  const page = await openDemo(browser.context);
  const n = await computes(page);
  await page.locator('#controls [name="causal"]').check();
  await settled(page, n + 1);
  const w = await page.evaluate(() => window.__xattnDemo.tensor('weights').then((t) => ({ shape: t.shape, data: [...t.data] })));
  assert.deepEqual(w.shape, [4, 10, 10]);
  let above = 0;
  for (let b = 0; b < 4; b++) {
    for (let i = 0; i < 10; i++) {
      let sum = 0;
      for (let j = 0; j < 10; j++) {
        const x = w.data[(b * 10 + i) * 10 + j];
        sum += x;
        if (j > i) {
          assert.equal(x, 0, `weight (${b}, ${i}, ${j}) above the diagonal is ${x}`);
          above++;
        } else {
          assert.ok(x > 0, `weight (${b}, ${i}, ${j}) on or below the diagonal should be positive`);
        }
      }
      assert.ok(Math.abs(sum - 1) < 1e-5);
    }
  }
  assert.equal(above, 4 * 45);

  // Bottom-right with L > S: the first L − S query rows see no key at all and are shown as fully masked.
  await setField(page, 'L', 12);
  await page.locator('#controls input[name="alignment"][value="bottom-right"]').check();
  await page.waitForFunction(() => window.__xattnDemo.view?.L === 12, null, WAIT);
  await settled(page, n + 2);
  const view = await page.evaluate(() => {
    const v = window.__xattnDemo.view;
    return { fully: [...v.fullyMasked], weights: [...v.weights] };
  });
  assert.deepEqual(view.fully, [1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  assert.deepEqual(view.weights.slice(0, 20), new Array(20).fill(0));
  for (let i = 2; i < 12; i++) {
    for (let j = 0; j < 10; j++) assert.equal(view.weights[i * 10 + j] === 0, j > i - 2, `(${i}, ${j})`);
  }
  assert.match(await page.locator('#row-summary').textContent(), /2 fully masked rows sum to 0/);
  assert.equal(await traceShape(page, 'weights'), '(4, 12, 10)');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('key padding per batch element and cells clicked by hand hide exactly those keys', async () => {
  const page = await openDemo(browser.context);
  let n = await computes(page);
  await page.locator('#controls [name="padding"]').check();
  await page.locator('#padding-inputs input[data-b="1"]').fill('3');
  await page.locator('#padding-inputs input[data-b="2"]').fill('0');
  await settled(page, n + 1);
  n = await computes(page);
  assert.match(await page.locator('#trace tr[data-tensor="mask"] td.note-col').textContent(), /^key padding, broadcast to \(4, 10, 10\)/);
  assert.equal(await page.locator('#trace tr[data-tensor="mask"] td.shape').textContent(), '(4, 1, 10)');
  const w = await page.evaluate(() => window.__xattnDemo.tensor('weights').then((t) => [...t.data]));
  for (let i = 0; i < 10; i++) {
    for (let j = 0; j < 10; j++) {
      assert.equal(w[(1 * 10 + i) * 10 + j] === 0, j >= 3, `b = 1 (${i}, ${j})`);
      assert.equal(w[(2 * 10 + i) * 10 + j], 0, 'b = 2 keeps no key: every row fully masked');
    }
  }
  // Draw a mask: click the cell (query 4, key 6) of the 10×10 map.
  await page.locator('#edit-mask').click();
  assert.equal(await page.locator('#edit-mask').getAttribute('aria-pressed'), 'true');
  const box = await page.locator('#weights-canvas').boundingBox();
  await page.mouse.click(box.x + box.width * 0.65, box.y + box.height * 0.45);
  await settled(page, n + 1);
  assert.match(await page.locator('#custom-mask-note').textContent(), /1 cell hidden by hand/);
  assert.equal(await page.locator('#trace tr[data-tensor="mask"] td.shape').textContent(), '(4, 10, 10)');
  assert.match(await page.locator('#trace tr[data-tensor="mask"] td.note-col').textContent(), /^key padding \+ custom cells, broadcast/);
  const v = await page.evaluate(() => ({ b: window.__xattnDemo.view.b, w: [...window.__xattnDemo.view.weights], allowed: [...window.__xattnDemo.view.allowed] }));
  assert.equal(v.b, 0);
  assert.equal(v.allowed[4 * 10 + 6], 0);
  assert.equal(v.w[4 * 10 + 6], 0);
  assert.ok(v.w[4 * 10 + 5] > 0);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the quiz accepts (8, 128, 64) and rejects a wrong answer', async () => {
  const page = await openDemo(browser.context);
  const input = page.locator('#quiz-answer');
  await input.fill('(8, 128, 128)');
  await input.press('Enter');
  await page.waitForFunction(() => document.querySelector('#quiz-feedback').textContent !== '');
  assert.match(await page.locator('#quiz-feedback').getAttribute('class'), /bad/);
  assert.match(await page.locator('#quiz-feedback').textContent(), /attention weights/);
  assert.equal(await input.getAttribute('aria-invalid'), 'true');
  await input.fill('(8, 128, 64)');
  await page.locator('#quiz button[type="submit"]').click();
  await page.waitForFunction(() => /Correct/.test(document.querySelector('#quiz-feedback').textContent));
  assert.match(await page.locator('#quiz-feedback').getAttribute('class'), /good/);
  assert.equal(await input.getAttribute('aria-invalid'), 'false');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('export gives valid .npy files of the page\'s tensors, and an imported Q sets the dims', async () => {
  const page = await openDemo(browser.context);
  for (const [name, file, shape] of [
    ['weights', 'weights.npy', [4, 10, 10]],
    ['output', 'output.npy', [4, 10, 64]],
    ['query', 'Q.npy', [4, 10, 64]],
  ]) {
    const [download] = await Promise.all([page.waitForEvent('download', WAIT), page.locator(`[data-export="${name}"]`).click()]);
    assert.equal(download.suggestedFilename(), file);
    const npy = decodeNpy(readFileSync(await download.path()));
    assert.equal(npy.descr, '<f4');
    assert.deepEqual(npy.shape, shape);
    const fromPage = await page.evaluate((n) => window.__xattnDemo.tensor(n).then((t) => [...t.data]), name);
    assert.deepEqual([...npy.data], fromPage);
  }
  // Import a (2, 5, 8) Q: B, L and E follow it and are locked; the trace shows the new shapes.
  const n = await computes(page);
  const q = { data: Float32Array.from({ length: 80 }, (_, k) => Math.cos(k)), shape: [2, 5, 8] };
  await page.locator('input[data-import="query"]').setInputFiles({ name: 'q.npy', mimeType: 'application/octet-stream', buffer: Buffer.from(encodeNpy(q)) });
  await settled(page, n + 1);
  assert.equal(await traceShape(page, 'Q'), '(2, 5, 8)');
  assert.equal(await traceShape(page, 'weights'), '(2, 5, 10)');
  assert.equal(await page.locator('#controls [name="L"]').isDisabled(), true);
  const back = await page.evaluate(() => window.__xattnDemo.tensor('query').then((t) => [...t.data]));
  assert.deepEqual(back, [...q.data]);
  // A file that is not .npy is a readable error, and the page keeps working.
  await page.locator('input[data-import="key"]').setInputFiles({ name: 'k.npy', mimeType: 'application/octet-stream', buffer: Buffer.from('hello') });
  await page.waitForSelector('#import-error:not([hidden])', WAIT);
  assert.match(await page.locator('#import-error').textContent(), /k\.npy: not a \.npy file/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('shapes too big for memory give a readable message, not a blank page', async () => {
  const page = await openDemo(browser.context);
  await setField(page, 'B', 64);
  await setField(page, 'L', 4096);
  await setField(page, 'S', 4096);
  await page.waitForSelector('#error:not([hidden])', WAIT);
  assert.match(await page.locator('#error-text').textContent(), /GiB/);
  assert.equal(await traceShape(page, 'weights'), '(64, 4096, 4096)');
  // Back to a small shape: the page computes again and the message goes away.
  const n = await computes(page);
  await page.locator('[data-preset="lesson"]').click();
  await settled(page, n + 1);
  assert.equal(await page.locator('#error').isHidden(), true);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('long work shows progress and can be cancelled, going back to the last finished result', async () => {
  const page = await openDemo(browser.context);
  const n = await computes(page);
  // About 34 GFLOP, computed one batch element per call: long enough to be caught running.
  await setFields(page, { B: 16, L: 2048, S: 2048, E: 128, Ev: 128 });
  assert.equal(await traceShape(page, 'weights'), '(16, 2048, 2048)');
  await page.waitForFunction(() => /batch element \d+ of 16/.test(document.getElementById('progress-label').textContent), null, WAIT);
  assert.equal(await page.locator('#progress').isVisible(), true);
  await page.locator('#cancel').click();
  // The last finished result is still on screen and still held by a worker: nothing is recomputed.
  await idle(page);
  assert.equal(await computes(page), n);
  assert.equal(await page.locator('#controls [name="L"]').inputValue(), '10');
  assert.equal(await traceShape(page, 'weights'), '(4, 10, 10)');
  assert.equal(await page.evaluate(() => window.__xattnDemo.view.L), 10);
  assert.match(await page.locator('#build-info').textContent(), /Cancelled/);
  assert.equal(await page.locator('#error').isHidden(), true);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('L = S = 1024 is drawn downsampled, zooms, and reads cells from the keyboard', async () => {
  const page = await openDemo(browser.context);
  const n = await computes(page);
  await page.locator('[data-preset="long"]').click();
  await page.waitForFunction(() => window.__xattnDemo.view?.L === 1024, null, WAIT);
  await settled(page, n + 1);
  assert.equal(await traceShape(page, 'weights'), '(1, 1024, 1024)');
  const canvas = page.locator('#weights-canvas');
  assert.match(await canvas.getAttribute('aria-label'), /largest of a \d+ by \d+ block/);
  await canvas.focus();
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowDown');
  assert.match(await page.locator('#readout').textContent(), /i = 1.*j = 1/s);
  for (let k = 0; k < 4; k++) await page.keyboard.press('+');
  assert.match(await page.locator('#axis-top').textContent(), /of S = 1024/);
  assert.doesNotMatch(await canvas.getAttribute('aria-label'), /block/);
  // The readout's weight is the page's own number for that cell.
  const readout = await page.locator('#readout dd').nth(4).textContent();
  const w11 = await page.evaluate(() => window.__xattnDemo.view.weights[1 * 1024 + 1]);
  assert.ok(Math.abs(Number(readout) - w11) <= 1e-4 * Math.abs(w11) + 1e-12, `${readout} vs ${w11}`);
  await page.keyboard.press('0');
  assert.match(await page.locator('#axis-top').textContent(), /\(S = 1024\)/);
  await page.screenshot({ path: artifact('demo-1024') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the scaling panel plots the measured gradients reaching Q and K: unscaled, the typical one vanishes at large E', async () => {
  const page = await openDemo(browser.context);
  await page.waitForFunction(() => document.querySelectorAll('#scaling-charts .uplot').length === 5 && window.__xattnDemo.scaling, null, WAIT);
  const { rows, plotted } = await page.evaluate(() => window.__xattnDemo.scaling);
  assert.deepEqual(rows.map((r) => r.E), STUDY_ES);
  // The charts hold exactly the worker's measurements: [E, scaled, unscaled] per chart.
  for (const key of ['maxWeight', 'entropy', 'gradNorm', 'gradQueryMedian', 'gradKeyMedian']) {
    assert.deepEqual(plotted[key], [STUDY_ES, rows.map((r) => r.scaled[key]), rows.map((r) => r.unscaled[key])], key);
  }
  const [, scaledQ, unscaledQ] = plotted.gradQueryMedian;
  const [, scaledK] = plotted.gradKeyMedian;
  const last = STUDY_ES.length - 1;
  for (const v of [...scaledQ, ...unscaledQ, ...scaledK]) assert.ok(v > 0 && Number.isFinite(v), `plotted norm ${v}`);
  // Unscaled at E = 1024 the median query row gets a small fraction of the scaled gradient, and of its own
  // gradient at E = 4.
  assert.ok(unscaledQ[last] < 0.1 * scaledQ[last], `‖dQᵢ‖ at E = 1024: unscaled ${unscaledQ[last]}, scaled ${scaledQ[last]}`);
  assert.ok(unscaledQ[last] < 0.1 * unscaledQ[0], `unscaled ‖dQᵢ‖: ${unscaledQ[0]} at E = 4, ${unscaledQ[last]} at E = 1024`);
  // Scaled, the gradients reaching Q and K stay within ×2 of each other across E = 4 … 1024.
  for (const [name, series] of [['‖dQᵢ‖', scaledQ], ['‖dKⱼ‖', scaledK]]) {
    assert.ok(Math.max(...series) < 2 * Math.min(...series), `scaled ${name} over E: ${series}`);
  }
  assert.match(await page.locator('#scaling-summary').textContent(), /Unscaled, at E = 1024/);
  assert.match(await page.locator('#scaling-summary').textContent(), /for most rows the gradient vanishes/);
  assert.equal(await page.locator('#scaling-charts figure[aria-label^="gradient reaching Q"] .uplot').count(), 1);
  assert.equal(await page.locator('#scaling-charts figure[aria-label^="gradient reaching K"] .uplot').count(), 1);
  await page.locator('#scaling-charts').screenshot({ path: artifact('scaling-panel') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the speed panel times four implementations that agree', async () => {
  const page = await openDemo(browser.context);
  await page.locator('#run-speed').click();
  await page.waitForSelector('#speed-table:not([hidden])', WAIT);
  const rows = await page.locator('#speed-table tbody tr').evaluateAll((trs) =>
    trs.map((tr) => ({ kind: tr.dataset.kind, cells: [...tr.querySelectorAll('td')].map((td) => td.textContent) })),
  );
  // The SIMD build on 1 thread and on all (isolation.test.js checks the count), scalar, plain JS.
  assert.deepEqual(rows.map((r) => r.kind), ['simd', 'threads', 'scalar', 'js']);
  for (const r of rows) {
    assert.ok(Number(r.cells[0]) > 0, `${r.kind} time ${r.cells[0]}`);
    assert.ok(Number(r.cells[2]) > 0, `${r.kind} GFLOP/s ${r.cells[2]}`);
  }
  assert.equal(rows[0].cells[4], 'reference');
  for (const r of rows.slice(1)) assert.ok(Number(r.cells[4]) < 1e-4, `${r.kind} differs from SIMD by ${r.cells[4]}`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('readable at phone width, with the controls first', async () => {
  const page = await openDemo(browser.context, { viewport: { width: 390, height: 844 } });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 0, `the page is ${overflow}px wider than the screen`);
  assert.equal(await traceShape(page, 'output'), '(4, 10, 64)');
  await page.screenshot({ path: artifact('demo-phone'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

// Every layout of the shape table (stacked on phones, two lines a step where its card is narrow, six columns
// where it is wide) keeps each cell's text inside the cell: a name, expression or shape that does not fit
// wraps rather than running over its neighbour. Checked with heads, GQA, a mask of two kinds and the
// largest B and H the controls take, which make the longest names, expressions and shapes.
test('the shape table keeps every cell\'s text inside its cell, and the controls their panel, at every width', async () => {
  const page = await openDemo(browser.context);
  const spilling = () =>
    page.locator('#trace').evaluate((table) =>
      [...table.querySelectorAll('th, td')]
        .filter((c) => c.getClientRects().length > 0 && c.scrollWidth > c.clientWidth)
        .map((c) => `"${c.textContent}" needs ${c.scrollWidth} px, has ${c.clientWidth}`),
    );
  const widths = [390, 700, 1024, 1280, 1400, 1600, 1920];
  const check = async (state) => {
    for (const width of widths) {
      await page.setViewportSize({ width, height: 900 });
      assert.deepEqual(await spilling(), [], `${state} at ${width} px`);
      // And nothing in the controls (a fieldset takes its widest content's width unless told otherwise).
      const controls = await page.locator('#controls').evaluate((f) => f.scrollWidth - f.clientWidth);
      assert.ok(controls <= 0, `the controls' content is ${controls} px wider than the panel at ${width} px`);
    }
  };
  await check("the lesson's example");
  await page.locator('#controls [name="useHeads"]').check();
  await setFields(page, { B: 64, H: 32, Hkv: 8 });
  await page.locator('#controls [name="causal"]').check();
  await page.locator('#controls [name="alignment"][value="bottom-right"]').check();
  await page.locator('#controls [name="padding"]').check();
  await idle(page);
  assert.equal(await traceShape(page, 'K, V per query head'), '(64, 32, 10, 64)');
  assert.match(await page.locator('#trace tr[data-tensor="mask"] td.note-col').textContent(), /^causal \(bottom-right\) \+ key padding, broadcast to \(64, 32, 10, 10\)/);
  await check('64 batches of 32 query heads over 8 key/value heads, causal and padded');
  await page.setViewportSize({ width: 1280, height: 800 });
  assert.deepEqual(page.errors, []);
  await page.close();
});
