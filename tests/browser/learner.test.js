// A learner's session through the lab, one test per finding of issue 12 ("The lab as a learner meets it").
// Each test drives the page as a first-time learner would (typing, clicking, the wheel, files) and checks
// the page's own state (its DOM and window.__xattnDemo); pixels only where the finding was about pixels.
import test, { before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { encodeNpy } from '../../web/src/shared/npy.js';
import { REPO, WAIT, artifact, computes, idle, launch, openDemo, requests, setField, setFields, settled, traceShape, typeInto } from './browser.js';

let browser;
before(async () => {
  browser = await launch();
});
after(async () => {
  await browser?.close();
});

const traceText = (page) => page.locator('#trace tbody').textContent();
const importErrorShown = (page) => page.locator('#import-error').isVisible();
const npyFile = (name, tensor) => ({ name, mimeType: 'application/octet-stream', buffer: Buffer.from(encodeNpy(tensor)) });

// Draws one cell of the weights map by hand: edit mode on, click the cell's centre, edit mode off.
async function drawCell(page, i, j) {
  const n = await computes(page);
  await page.locator('#edit-mask').click();
  const { L, S } = await page.evaluate(() => window.__xattnDemo.view);
  await page.locator('#weights-canvas').scrollIntoViewIfNeeded();
  const box = await page.locator('#weights-canvas').boundingBox();
  await page.mouse.click(box.x + (box.width * (j + 0.5)) / S, box.y + (box.height * (i + 0.5)) / L);
  await page.locator('#edit-mask').click();
  await settled(page, n + 1);
}

test('item 1: B beyond 64 is refused before any work, and hidden per-batch inputs cost nothing', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  const n = await computes(page);
  const r = await requests(page);
  // Key padding is off: no per-batch-element input exists, whatever B is.
  assert.equal(await page.locator('#padding-inputs input').count(), 0);
  await setField(page, 'B', 100000);
  assert.match(await traceText(page), /B must be a whole number from 1 to 64; got 100000/);
  assert.equal(await page.locator('#controls [name="B"]').getAttribute('aria-invalid'), 'true');
  await page.waitForTimeout(400); // past the page's 120 ms debounce: nothing may have been scheduled
  assert.equal(await page.evaluate(() => window.__xattnDemo.busy), false);
  assert.equal(await requests(page), r);
  assert.equal(await computes(page), n);
  // The next change is handled (it used to block the tab for over a minute, building an input per refused batch
  // element): the click takes effect, and no input was built for the refused B.
  const causal = await page.evaluate(() => {
    const box = document.querySelector('#controls [name="causal"]');
    const before = box.checked;
    box.click();
    return { before, after: box.checked };
  });
  assert.equal(causal.after, !causal.before);
  assert.equal(await page.locator('#padding-inputs input').count(), 0);
  // At the largest B, padding builds one input per batch element, and only while it is on.
  await setField(page, 'B', 64);
  await page.locator('#controls [name="padding"]').check();
  assert.equal(await page.locator('#padding-inputs input').count(), 64);
  await page.locator('#controls [name="padding"]').uncheck();
  assert.equal(await page.locator('#padding-inputs input').count(), 0);
  await settled(page, n + 1);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 2: an import error stays until the learner changes something, and a rejected file changes nothing', async () => {
  const page = await openDemo(browser.context);
  let n = await computes(page);
  await page.locator('input[data-import="query"]').setInputFiles(npyFile('q.npy', { data: new Float32Array(80).fill(0.5), shape: [2, 5, 8] }));
  await settled(page, n + 1);
  await idle(page);
  n = await computes(page);
  const before = await traceShape(page, 'K');
  // K whose E (9) differs from Q's (8), and whose S (7) differs from the form's (10).
  await page.locator('input[data-import="key"]').setInputFiles(npyFile('k.npy', { data: new Float32Array(2 * 7 * 9), shape: [2, 7, 9] }));
  await page.waitForSelector('#import-error:not([hidden])', WAIT);
  assert.match(await page.locator('#import-error').textContent(), /E is 8 in Q \(2, 5, 8\) but 9 in K \(2, 7, 9\)/);
  await page.waitForTimeout(1500); // the message used to vanish after ~130 ms
  assert.equal(await importErrorShown(page), true);
  assert.equal(await page.locator('#controls [name="S"]').inputValue(), '10');
  assert.equal(await page.locator('#controls [name="S"]').isDisabled(), false);
  assert.equal(await traceShape(page, 'K'), before);
  assert.doesNotMatch(await page.locator('#import-note').textContent(), /k\.npy/);
  assert.equal(await computes(page), n);
  // Files that are not usable say so, and the message stays as well.
  const bytes = Buffer.from(encodeNpy({ data: new Float32Array(80), shape: [2, 5, 8] }));
  for (const [file, why] of [
    [{ name: 'notes.npy', mimeType: 'text/plain', buffer: Buffer.from('hello') }, /notes\.npy: not a \.npy file/],
    [npyFile('flat.npy', { data: new Float32Array(5), shape: [5] }), /flat\.npy: K must have 3 dims/],
    [{ name: 'cut.npy', mimeType: 'application/octet-stream', buffer: bytes.subarray(0, bytes.length - 40) }, /cut\.npy/],
  ]) {
    await page.locator('input[data-import="key"]').setInputFiles(file);
    await page.waitForFunction((src) => new RegExp(src).test(document.getElementById('import-error').textContent), why.source, WAIT);
    await page.waitForTimeout(700);
    assert.equal(await importErrorShown(page), true, String(why));
    assert.equal(await computes(page), n);
  }
  // A change by the learner clears it.
  await page.locator('#controls [name="causal"]').check();
  assert.equal(await importErrorShown(page), false);
  await settled(page, n + 1);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 3: Cancel goes back to the last result without running the cancelled job, and a change is one request', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  // One request per change (the hover's scores no longer cost a second one).
  let r = await requests(page);
  let n = await computes(page);
  await page.locator('#controls [name="causal"]').check();
  await settled(page, n + 1);
  await idle(page);
  assert.equal(await requests(page), r + 1);
  await page.locator('#controls [name="causal"]').uncheck();
  // The B = 32, L = 2048, with E = Ev = 256 so that S = 2048 takes seconds and the Cancel lands.
  await setFields(page, { B: 32, L: 2048, E: 256, Ev: 256 });
  await settled(page, n + 2);
  await idle(page);
  n = await computes(page);
  // Type S = 2048 into the field, then click Cancel: the click blurs the field, which fires a change event.
  await typeInto(page, 'S', '2048');
  await page.waitForFunction(() => /batch element/.test(document.getElementById('progress-label').textContent) && !document.getElementById('progress').hidden, null, WAIT);
  await page.locator('#progress').waitFor({ state: 'visible', ...WAIT });
  await page.locator('#cancel').click();
  r = await requests(page);
  await page.waitForTimeout(600);
  assert.equal(await page.evaluate(() => window.__xattnDemo.busy), false);
  assert.equal(await requests(page), r, 'no request after the cancel');
  assert.equal(await computes(page), n);
  assert.equal(await page.locator('#controls [name="S"]').inputValue(), '10');
  assert.equal(await traceShape(page, 'weights'), '(32, 2048, 10)');
  assert.equal(await page.locator('#weights-canvas').getAttribute('data-cols'), '10');
  // The finished result is still held: picking another batch element is answered at once.
  await page.locator('#pick-b').fill('3');
  await page.locator('#pick-b').dispatchEvent('change');
  await page.waitForFunction(() => window.__xattnDemo.view.b === 3 && window.__xattnDemo.view.S === 10, null, WAIT);
  // Cancelling the scaling study stops the study only: no attention is recomputed, nothing reruns. The
  // 1024² preset makes the study its largest (128 queries and keys), a few seconds long.
  await page.locator('[data-preset="long"]').click();
  await settled(page, n + 1);
  await idle(page);
  n = await computes(page);
  await page.locator('#run-scaling').click();
  await page.waitForFunction(() => /E = \d+/.test(document.getElementById('progress-label').textContent), null, WAIT);
  r = await requests(page);
  await page.locator('#cancel').click();
  await idle(page);
  await page.waitForTimeout(400);
  assert.equal(await requests(page), r);
  assert.equal(await computes(page), n);
  assert.equal(await page.evaluate(() => window.__xattnDemo.view.L), 1024);
  assert.match(await page.locator('#scaling-summary').textContent(), /Study cancelled/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 4: typing a new S keeps key padding and drawn cells; they are clipped only while S is small', async () => {
  const page = await openDemo(browser.context);
  let n = await computes(page);
  await page.locator('#controls [name="padding"]').check();
  for (const [b, v] of [[0, 9], [1, 7], [2, 5], [3, 3]]) await page.locator(`#padding-inputs input[data-b="${b}"]`).fill(String(v));
  await settled(page, n + 1);
  await drawCell(page, 4, 6);
  n = await computes(page);
  // "20" typed key by key passes through S = 2; "12" would pass through S = 1.
  await typeInto(page, 'S', '2');
  await settled(page, n + 1);
  assert.deepEqual(await page.locator('#padding-inputs input').evaluateAll((els) => els.map((e) => e.value)), ['2', '2', '2', '2']);
  await typeInto(page, 'S', '1');
  await settled(page, n + 2);
  assert.match(await page.locator('#custom-mask-note').textContent(), /1 more lie outside L × S/);
  await typeInto(page, 'S', '20');
  await page.waitForFunction(() => window.__xattnDemo.view?.S === 20, null, WAIT);
  await idle(page);
  assert.deepEqual(await page.locator('#padding-inputs input').evaluateAll((els) => els.map((e) => e.value)), ['9', '7', '5', '3']);
  const v = await page.evaluate(() => ({ allowed: [...window.__xattnDemo.view.allowed], S: window.__xattnDemo.view.S }));
  assert.equal(v.allowed[4 * 20 + 6], 0, 'the drawn cell (4, 6) is back');
  assert.equal(v.allowed[4 * 20 + 5], 1);
  const w = await page.evaluate(() => window.__xattnDemo.tensor('weights').then((t) => [...t.data]));
  for (let j = 0; j < 20; j++) assert.equal(w[(1 * 10 + 0) * 20 + j] === 0, j >= 7, `b = 1 keeps 7 keys: (0, ${j})`);
  assert.match(await page.locator('#custom-mask-note').textContent(), /^1 cell hidden by hand/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 5: at data spread 0.1 the "why scale" text agrees with its charts; New draw draws again, visibly', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  const first = await page.evaluate(() => window.__xattnDemo.scaling.rows.map((r) => r.scoreStd));
  await setField(page, 'spread', 0.1);
  await page.waitForFunction(() => /data spread 0\.1/.test(document.getElementById('scaling-intro').textContent), null, WAIT);
  await idle(page);
  const rows = await page.evaluate(() => window.__xattnDemo.scaling.rows);
  const ratio = rows.at(-1).unscaled.gradNorm / rows[0].unscaled.gradNorm;
  assert.ok(ratio > 0.5, `unscaled gradient ratio ${ratio}: the figures show no saturation`);
  const summary = await page.locator('#scaling-summary').textContent();
  assert.doesNotMatch(summary, /the softmax saturates/);
  assert.match(summary, /the softmax does not saturate/);
  // Back to spread 1, then a new draw: other numbers, and the page says which draw it shows.
  await setField(page, 'spread', 1);
  await page.waitForFunction(() => /data spread 1\)/.test(document.getElementById('scaling-intro').textContent), null, WAIT);
  await idle(page);
  assert.match(await page.locator('#scaling-summary').textContent(), /the softmax saturates/);
  assert.deepEqual(await page.evaluate(() => window.__xattnDemo.scaling.rows.map((r) => r.scoreStd)), first);
  await page.locator('#run-scaling').click();
  await page.waitForFunction(() => document.getElementById('scaling-intro').dataset.draw === '1', null, WAIT);
  assert.match(await page.locator('#scaling-intro').textContent(), /^Draw 2\./);
  assert.notDeepEqual(await page.evaluate(() => window.__xattnDemo.scaling.rows.map((r) => r.scoreStd)), first);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 6: overflow at data spread 1e20 is shown as NaN, in the map, its key and the text', async () => {
  const page = await openDemo(browser.context);
  const n = await computes(page);
  await setField(page, 'spread', '1e20');
  await settled(page, n + 1);
  assert.equal(await page.evaluate(() => Number.isNaN(window.__xattnDemo.view.weights[0])), true);
  assert.equal(await page.locator('#overflow-note').isVisible(), true);
  const why = await page.locator('#overflow-note').textContent();
  assert.match(why, /10 of 10 rows hold weights that are not numbers/);
  assert.match(why, /overflow to ±∞, the softmax computes ∞ − ∞ = NaN/);
  assert.equal(await page.locator('#nan-swatch').isVisible(), true);
  const summary = await page.locator('#row-summary').textContent();
  assert.doesNotMatch(summary, /sum to 1|largest error NaN/);
  assert.match(summary, /10 rows hold NaN/);
  const caption = await page.locator('#tensor-grid figure').nth(3).getAttribute('data-range');
  assert.match(caption, /^640 NaN/);
  assert.doesNotMatch(caption, /all 0/);
  // The map itself: a NaN cell is pink, not the dark colour of a zero weight.
  const px = await page.evaluate(() => {
    const c = document.getElementById('weights-canvas');
    return [...c.getContext('2d').getImageData(Math.floor(c.width * 0.55), Math.floor(c.height * 0.55), 1, 1).data];
  });
  assert.deepEqual(px, [255, 45, 170, 255]);
  await page.locator('#weights-card').screenshot({ path: artifact('learner-overflow') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 7: invalid inputs mark the results stale; hints agree with errors; messages quote what was typed', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  for (const [typed, shown] of [['-3', '−3'], ['2.5', '2.5'], ['1e3', '1e3']]) {
    await setField(page, 'B', typed);
    assert.match(await traceText(page), new RegExp(`B must be a whole number from 1 to 64; got ${shown.replace('.', '\\.')}`));
    assert.doesNotMatch(await traceText(page), /NaN/);
  }
  assert.equal(await page.locator('#weights-card').getAttribute('data-stale'), '');
  assert.match(await page.locator('#weights-card .stale-note').textContent(), /Not updated: still showing B = 4, L = 10/);
  assert.equal(await page.locator('#tensors-card .stale-note').isVisible(), true);
  const n = await computes(page);
  await setField(page, 'B', 4);
  assert.equal(await page.locator('#weights-card').getAttribute('data-stale'), null);
  // Heads: the hint never contradicts the error beside it.
  await page.locator('#controls [name="useHeads"]').check();
  await setField(page, 'H', 8);
  for (const [hkv, error] of [['3', /H must be a multiple of Hkv/], ['16', /Hkv = 16 key\/value heads cannot be more than H = 8/], ['0', /Hkv must be a whole number from 1 to 32; got 0/]]) {
    await setField(page, 'Hkv', hkv);
    assert.match(await traceText(page), error);
    assert.equal(await page.locator('#gqa-hint').isVisible(), false, `hint beside Hkv = ${hkv}`);
  }
  await setField(page, 'Hkv', 2);
  assert.equal(await page.locator('#gqa-hint').textContent(), 'GQA: 8 query heads share 2 key/value heads, 4 query heads per key/value head (enableGqa).');
  await settled(page, n + 1);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 8: drawing a mask does not move the heatmap under the pointer', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  // The map's place in the document (a box relative to the viewport would move with scrolling).
  const mapTop = () => page.locator('#weights-canvas').evaluate((c) => c.getBoundingClientRect().top + window.scrollY);
  const y0 = await mapTop();
  await drawCell(page, 2, 3);
  assert.equal(await mapTop(), y0);
  assert.match(await traceText(page), /custom cells, broadcast to \(4, 10, 10\)/);
  const n = await computes(page);
  await page.locator('#controls [name="causal"]').check();
  await settled(page, n + 1);
  assert.equal(await mapTop(), y0);
  await page.locator('#clear-mask').click();
  await settled(page, n + 2);
  await page.locator('#controls [name="causal"]').uncheck();
  await settled(page, n + 3);
  assert.equal(await mapTop(), y0);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 9: speed results are bar charts against the measured peak, with exact numbers and readable names', async () => {
  const bench = JSON.parse(readFileSync(path.join(REPO, 'bench', 'results.json'), 'utf8')).runs[0];  // the newest run
  const impls = Object.keys(bench.results[0]).filter((k) => typeof bench.results[0][k]?.gflops === 'number');
  const page = await openDemo(browser.context, { viewport: { width: 1920, height: 1080 } });
  await page.waitForSelector('#bench svg', WAIT);
  // One bar per shape and implementation, each carrying the file's figure.
  const bars = await page.locator('#bench svg rect').evaluateAll((rs) => rs.map((r) => [r.dataset.series, r.dataset.group, Number(r.dataset.value)]));
  assert.equal(bars.length, bench.results.length * impls.length);
  for (const [series, group, value] of bars) {
    const record = bench.results.find((r) => r.shape.join('×') === group);
    assert.equal(value, record[series].gflops, `${series} ${group}`);
  }
  // The file's measured wasm SIMD peak is the chart's ceiling line.
  assert.ok(bench.wasmSimdPeakGflops > 0, 'bench/results.json records the peak npm run bench measured');
  assert.equal(Number(await page.locator('#bench svg .peak').getAttribute('data-value')), bench.wasmSimdPeakGflops);
  const meta = await page.locator('#bench .bench-meta').textContent();
  // The machine's name is text, not a pattern: Intel's read 'Intel(R) Xeon(R) …', whose brackets a RegExp takes as groups.
  const literal = (text) => String(text).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  assert.match(meta, new RegExp(`^${literal(bench.machine)} · ${bench.cpus} CPUs · .*${bench.date.slice(0, 10)}`));
  // The full table is behind a toggle, with names a reader knows and exact counts.
  assert.equal(await page.locator('#bench table').isVisible(), false);
  await page.locator('#bench summary').click();
  assert.equal(await page.locator('#bench table').isVisible(), true);
  const groups = await page.locator('#bench thead th.group').allTextContents();
  // Every object of a record is a group, except the relaxed build and its comparison, which the table leaves out.
  const LEFT_OUT = ['xattnRelaxed', 'relaxedVsSimd'];
  const objects = Object.keys(bench.results[0]).filter((k) => !LEFT_OUT.includes(k) && bench.results[0][k] !== null && typeof bench.results[0][k] === 'object' && !Array.isArray(bench.results[0][k]));
  assert.deepEqual(groups, objects.map((k) => ({
    xattnSimd: 'xattn SIMD', xattnRelaxed: 'xattn relaxed SIMD', xattnScalar: 'xattn scalar', ortWeb: 'onnxruntime-web', tfjsWasm: 'tfjs-wasm',
    plainJs: 'plain JS', ortNode: 'onnxruntime-node', relaxedVsSimd: 'relaxed SIMD ÷ SIMD',
  })[k]));
  const heads = await page.locator('#bench thead th').allTextContents();
  assert.equal(heads.filter((h) => h === 'GFLOP/s').length, impls.filter((k) => !LEFT_OUT.includes(k)).length);
  assert.ok(!heads.some((h) => /xattnSimd|\./.test(h)), heads.join(' | '));
  assert.equal(await page.locator('#bench tbody tr').first().locator('td').nth(1).textContent(), '4,194,304');
  assert.ok(await page.locator('#bench .table-wrap').evaluate((el) => el.scrollWidth <= el.clientWidth + 1), 'the table fits at 1920 px');
  // The live comparison, drawn the same way; a control changed meanwhile is said, not silently dropped.
  await page.locator('#run-speed').click();
  await page.waitForFunction(() => /timing/.test(document.getElementById('progress-label').textContent), null, WAIT);
  const n = await computes(page);
  await page.locator('#controls [name="causal"]').check();
  await page.waitForSelector('#speed-chart svg', WAIT);
  await settled(page, n + 1);
  const live = await page.locator('#speed-chart svg rect').evaluateAll((rs) => rs.map((r) => [r.dataset.series, Number(r.dataset.value)]));
  const table = await page.locator('#speed-table tbody tr').evaluateAll((trs) => trs.map((tr) => [tr.dataset.kind, Number(tr.querySelectorAll('td')[2].textContent)]));
  assert.deepEqual(live.map(([k]) => k), table.map(([k]) => k));
  for (const [k, g] of live) assert.ok(g > 0, `${k} ${g}`);
  const peak = Number(await page.locator('#speed-chart .peak').getAttribute('data-value'));
  assert.ok(peak > 0, `peak ${peak}`);
  assert.match(await page.locator('#speed-note').textContent(), /the controls have changed since/);
  await page.locator('section[aria-labelledby="speed-title"]').screenshot({ path: artifact('learner-speed') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 10: at 390×844 the results come first, the shape column is on screen, the map is wide enough', async () => {
  const page = await openDemo(browser.context, { viewport: { width: 390, height: 844 } });
  await idle(page);
  assert.ok((await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)) <= 0, 'no sideways scrolling');
  for (const box of await page.locator('#trace td.shape').evaluateAll((tds) => tds.map((td) => td.getBoundingClientRect().toJSON()))) {
    assert.ok(box.width > 0 && box.right <= 390, `a shape cell ends at ${box.right}`);
  }
  const top = async (sel) => (await page.locator(sel).boundingBox()).y;
  assert.ok((await top('#trace-card')) < (await top('#weights-card')), 'the trace before the weights');
  assert.ok((await top('#weights-card')) < (await top('#controls-panel')), 'the weights before the controls');
  assert.ok((await top('#trace-card')) < 844, 'the trace starts on the first screen');
  const map = await page.locator('#weights-canvas').boundingBox();
  assert.ok(map.width >= 250, `map ${map.width} px wide`);
  const [a, b] = await page.locator('.strip-head .short').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON()));
  assert.ok(a.width > 0 && a.right <= b.left, 'the strip headers do not run together');
  await page.screenshot({ path: artifact('learner-phone') });
  await page.screenshot({ path: artifact('learner-phone-full'), fullPage: true });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 11: at 1920×1080 the map uses the width and fits on the first screen', async () => {
  const page = await openDemo(browser.context, { viewport: { width: 1920, height: 1080 } });
  await idle(page);
  const map = await page.locator('#weights-canvas').boundingBox();
  const card = await page.locator('#weights-card').boundingBox();
  assert.ok(map.width >= 600, `map ${map.width} px wide`);
  assert.ok(map.y + map.height <= 1080, `map bottom at ${map.y + map.height}`);
  // Beside the map there is no empty half: the strip and the card's edge follow it closely.
  assert.ok(card.x + card.width - (map.x + map.width) < 160, `${card.x + card.width - (map.x + map.width)} px beside the map`);
  assert.ok((await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)) <= 0);
  await page.screenshot({ path: artifact('learner-desktop') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 12: a 1024² map rescales its colours to the window, the wheel scrolls at limits, the cursor shows', async () => {
  const page = await openDemo(browser.context, { viewport: { width: 1280, height: 800 } });
  const n = await computes(page);
  await page.locator('[data-preset="long"]').click();
  await settled(page, n + 1);
  const canvas = page.locator('#weights-canvas');
  // The window on screen, from the map's own description.
  const windowOf = async () => {
    const m = (await canvas.getAttribute('aria-label')).match(/rows (\d+) to (\d+) and columns (\d+) to (\d+)/);
    const [r0, r1, c0, c1] = m.slice(1).map(Number);
    return { r0, c0, rows: r1 - r0 + 1, cols: c1 - c0 + 1 };
  };
  const maxIn = (win) =>
    page.evaluate((w) => {
      const v = window.__xattnDemo.view;
      let m = 0;
      for (let i = w.r0; i < w.r0 + w.rows; i++) for (let j = w.c0; j < w.c0 + w.cols; j++) m = Math.max(m, v.weights[i * v.S + j]);
      return m;
    }, win);
  await canvas.scrollIntoViewIfNeeded();
  const box = await canvas.boundingBox();
  // Wheel down at the fitted view: nothing to zoom out of, so the page scrolls.
  await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
  let scroll = await page.evaluate(() => window.scrollY);
  await page.mouse.wheel(0, 200);
  await page.waitForFunction((y) => window.scrollY !== y, scroll, WAIT);
  assert.equal((await windowOf()).rows, 1024);
  // Wheel up zooms in (six turns: 1024 → 16 rows), and the page stays where it is.
  const b2 = await canvas.boundingBox();
  await page.mouse.move(b2.x + b2.width / 2, b2.y + b2.height / 2);
  scroll = await page.evaluate(() => window.scrollY);
  for (let rows = 512; rows >= 16; rows /= 2) {
    await page.mouse.wheel(0, -100);
    await page.waitForFunction(
      (r) => {
        const m = /rows (\d+) to (\d+) and/.exec(document.getElementById('weights-canvas').getAttribute('aria-label'));
        return m && Number(m[2]) - Number(m[1]) + 1 === r;
      },
      rows,
      WAIT,
    );
  }
  assert.equal(await page.evaluate(() => window.scrollY), scroll);
  const win = await windowOf();
  assert.equal(win.rows, 16);
  // The colours span the window's own weights, not the slice's.
  const hiWindow = Number(await canvas.getAttribute('data-colour-hi'));
  assert.ok(Math.abs(hiWindow - (await maxIn(win))) < 1e-6, `${hiWindow} vs ${await maxIn(win)}`);
  const sliceMax = await maxIn({ r0: 0, c0: 0, rows: 1024, cols: 1024 });
  assert.ok(hiWindow < sliceMax, `window max ${hiWindow} < slice max ${sliceMax}`);
  await page.locator('#colour-range').selectOption('slice');
  assert.ok(Math.abs(Number(await canvas.getAttribute('data-colour-hi')) - sliceMax) < 1e-6);
  await page.locator('#colour-range').selectOption('window');
  // At the zoom limit (4 rows) the wheel up scrolls the page again.
  for (let k = 0; k < 3; k++) await page.mouse.wheel(0, -100);
  await page.waitForFunction(() => /rows (\d+) to (\d+)/.exec(document.getElementById('weights-canvas').getAttribute('aria-label')).slice(1).map(Number).reduce((a, b) => b - a) === 3, null, WAIT);
  scroll = await page.evaluate(() => window.scrollY);
  await page.mouse.wheel(0, -120);
  await page.waitForFunction((y) => window.scrollY !== y, scroll, WAIT);
  assert.equal(await canvas.getAttribute('data-last-wheel'), 'scroll');
  // The hover cursor on the fitted map (cells under a pixel) is drawn big enough to see.
  await page.locator('#zoom-reset').click();
  const b3 = await canvas.boundingBox();
  await page.mouse.move(b3.x + b3.width * 0.3, b3.y + b3.height * 0.3);
  await page.waitForFunction(() => document.getElementById('weights-canvas').dataset.cursorBox, null, WAIT);
  const [x, y, w, h] = (await canvas.getAttribute('data-cursor-box')).split(',').map(Number);
  assert.ok(w >= 12 && h >= 12, `cursor box ${w}×${h}`);
  const edge = await page.evaluate(([cx, cy]) => {
    const c = document.getElementById('weights-canvas');
    const dpr = c.width / c.getBoundingClientRect().width;
    // One device pixel inside the box's left edge: the middle of its 3-pixel white frame.
    return [...c.getContext('2d').getImageData(Math.round(cx * dpr) + 1, Math.round(cy * dpr), 1, 1).data];
  }, [x, y + h / 2]);
  assert.deepEqual(edge, [255, 255, 255, 255], 'white edge of the cursor box');
  await page.locator('#weights-card').screenshot({ path: artifact('learner-1024') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 13: the wording: data spread, a first line that says what to do, a quiz of several questions', async () => {
  const page = await openDemo(browser.context);
  // "scale" is attention's own (1/√E unless set), never the data's spread.
  assert.match(await page.locator('#controls [name="scale"]').locator('xpath=..').textContent(), /1\/√E/);
  assert.match(await page.locator('#controls [name="spread"]').locator('xpath=..').textContent(), /data spread/);
  assert.match(await page.locator('#controls [name="distribution"]').textContent(), /N\(0, σ²\)/);
  const start = page.locator('#start-here');
  assert.match(await start.textContent(), /^\s*Start here:/);
  assert.ok((await start.boundingBox()).y < (await page.locator('#trace-card').boundingBox()).y);
  assert.doesNotMatch(await page.locator('#quiz-answer').getAttribute('placeholder'), /[BLSE]/);
  const answers = { output: '(8, 128, 64)', weights: '(8, 128, 128)', kT: '(8, 32, 128)', ev: '(8, 128, 16)', heads: '(8, 4, 128, 8)' };
  const seen = [];
  for (let k = 0; k < 5; k++) {
    const id = await page.locator('#quiz').getAttribute('data-question');
    seen.push(id);
    await page.locator('#quiz-answer').fill('(8, 128, 32)');
    await page.locator('#quiz-answer').press('Enter');
    assert.match(await page.locator('#quiz-feedback').getAttribute('class'), /bad/, id);
    await page.locator('#quiz-answer').fill(answers[id]);
    await page.locator('#quiz button[type="submit"]').click();
    assert.match(await page.locator('#quiz-feedback').textContent(), /^Correct/, id);
    await page.locator('#quiz-next').click();
  }
  assert.deepEqual(seen, ['output', 'weights', 'kT', 'ev', 'heads']);
  assert.equal(await page.locator('#quiz').getAttribute('data-question'), 'output');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 14: padding bounds, singular counts, chart values under the cursor, gradient axis ticks, file buttons', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  let n = await computes(page);
  await page.locator('#controls [name="padding"]').check();
  await settled(page, n + 1);
  for (const [typed, shown] of [['99', '99'], ['-2', '−2']]) {
    await page.locator('#padding-inputs input[data-b="1"]').fill(typed);
    assert.match(await traceText(page), new RegExp(`keys kept by b = 1 must be a whole number from 0 to 10; got ${shown}`));
    assert.equal(await page.locator('#padding-inputs input[data-b="1"]').getAttribute('aria-invalid'), '');
  }
  await page.locator('#padding-inputs input[data-b="1"]').fill('4');
  await page.locator('#controls [name="padding"]').uncheck();
  // One fully masked row: bottom-right causal with L = S + 1.
  await page.locator('#controls [name="causal"]').check();
  await page.locator('#controls input[name="alignment"][value="bottom-right"]').check();
  n = await computes(page);
  await setField(page, 'L', 11);
  await page.waitForFunction(() => window.__xattnDemo.view?.L === 11, null, WAIT);
  assert.match(await page.locator('#row-summary').textContent(), /1 fully masked row sums to 0/);
  // One key/value head.
  await page.locator('#controls [name="useHeads"]').check();
  await setField(page, 'Hkv', 1);
  assert.match(await page.locator('#gqa-hint').textContent(), /share 1 key\/value head,/);
  await page.waitForFunction(() => /Hkv = 1 key\/value head, shared by all 4/.test(document.getElementById('heads-hint').textContent), null, WAIT);
  await idle(page);
  // The scaling charts give values under the cursor, and the softmax-gradient axis has several ticks.
  const chart = page.locator('#scaling-charts figure').nth(0);
  await chart.scrollIntoViewIfNeeded();
  const plot = await chart.locator('.u-over').boundingBox();
  await page.mouse.move(plot.x + plot.width * 0.5, plot.y + plot.height * 0.5);
  const values = await chart.locator('.u-legend .u-value').allTextContents();
  assert.ok(values.some((v) => /\d/.test(v)), `legend values ${values}`);
  const ticks = await page.evaluate(() => window.__xattnDemo.scaling.ticks.gradNorm);
  assert.ok(ticks.length >= 3, `softmax-gradient axis ticks: ${ticks}`);
  // The file inputs' buttons match the page's own buttons.
  const radius = await page.locator('input[data-import="query"]').evaluate((el) => getComputedStyle(el, '::file-selector-button').borderTopLeftRadius);
  assert.equal(radius, '6px');
  assert.deepEqual(page.errors, []);
  await page.close();
});
