// The lab's third pass (issue 58): one test per finding of a learner's walk through the page at 390×844, 1366 and
// 1920 px wide, and the lessons the page did not yet teach (the quiz's score and head split, the scores' heatmap
// and the scale control; the multi-head walk has its own file). Each drives the page as a learner does and
// checks its DOM and window.__xattnDemo.
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { encodeNpy } from '../../web/src/shared/npy.js';
import { EVEN } from '../../web/src/speed/speed-story.js';
import { WAIT, artifact, computes, idle, launch, openDemo, setField, setFields, settled, traceShape, typeInto } from './browser.js';

let browser;
let touch; // a phone's browser: taps, not a mouse
before(async () => {
  browser = await launch();
  touch = await launch({ context: { hasTouch: true, isMobile: true } });
});
after(async () => {
  await browser?.close();
  await touch?.close();
});

const PHONE = { width: 390, height: 844 };
const traceText = (page) => page.locator('#trace tbody').textContent();
const npyFile = (name, tensor) => ({ name, mimeType: 'application/octet-stream', buffer: Buffer.from(encodeNpy(tensor)) });
const sideways = (page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
const banner = (page) => page.evaluate(() => (document.getElementById('error').hidden ? null : document.getElementById('error-text').textContent));
const speedCard = (page) => page.locator('section[aria-labelledby="speed-title"]');
// What the training panel's state says now (its probe and curves left out).
const trainingNow = () => {
  const { run, step, running, pace, stepsPerSecond } = window.__xattnDemo.training;
  return { run, step, running, pace, stepsPerSecond };
};

async function runSpeed(page) {
  await page.locator('#run-speed').click();
  await page.waitForSelector('#speed-table:not([hidden])', WAIT);
  await idle(page);
}

test('item 1: after a speed comparison the card fits a phone, and resizing a desktop window shows no error', async () => {
  const page = await openDemo(browser.context, { viewport: PHONE });
  await idle(page);
  await runSpeed(page);
  await page.waitForTimeout(500); // the charts' resize observers have answered by now
  assert.ok((await sideways(page)) <= 0, `the page scrolls sideways by ${await sideways(page)} px`);
  const card = await speedCard(page).boundingBox();
  assert.ok(card.x >= 0 && card.x + card.width <= PHONE.width, `the speed card spans ${card.x} … ${card.x + card.width} px`);
  // Every chart and table inside it is as wide as the card at most (a wide table scrolls in its own box).
  const spill = await speedCard(page).evaluate((c) =>
    [...c.querySelectorAll('svg, .table-wrap, #speed-table, .bench-chart, p')].filter((e) => e.getBoundingClientRect().right > c.getBoundingClientRect().right + 1).map((e) => e.tagName + (e.id ? `#${e.id}` : '')),
  );
  assert.deepEqual(spill, []);
  assert.equal(await banner(page), null);
  await speedCard(page).screenshot({ path: artifact('third-speed-phone') });
  assert.deepEqual(page.errors, []);
  await page.close();

  const desk = await openDemo(browser.context, { viewport: { width: 1366, height: 900 } });
  await idle(desk);
  await runSpeed(desk);
  for (const width of [1100, 820, 1366]) {
    await desk.setViewportSize({ width, height: 900 });
    await desk.waitForTimeout(400);
    assert.equal(await banner(desk), null, `after resizing to ${width} px`);
    assert.ok((await sideways(desk)) <= 0, `sideways at ${width} px`);
  }
  assert.equal(await desk.evaluate(() => window.__xattnDemo.lastError), null);
  assert.deepEqual(desk.errors, []);
  await desk.close();
});

test('item 2: on a phone a tap on the heatmap reads that cell, and the readout is on screen with the map', async () => {
  const page = await openDemo(touch.context, { viewport: PHONE });
  await idle(page);
  const canvas = page.locator('#weights-canvas');
  await page.evaluate(() => document.getElementById('weights-canvas').scrollIntoView({ block: 'start' }));
  const box = await canvas.boundingBox();
  // Query 3, key 5 of the 10 × 10 map.
  await page.touchscreen.tap(box.x + box.width * 0.55, box.y + box.height * 0.35);
  await page.waitForFunction(() => /i = 3/.test(document.getElementById('readout').textContent), null, WAIT);
  assert.match(await page.locator('#readout').textContent(), /i = 3.*j = 5/s);
  const w = await page.evaluate(() => window.__xattnDemo.view.weights[3 * 10 + 5]);
  assert.ok(Math.abs(Number(await page.locator('#readout dd').nth(4).textContent()) - w) <= 1e-4 * w);
  // The readout is on the screen the learner taps on, not below the fold.
  const readout = await page.locator('#readout').boundingBox();
  assert.ok(readout.y >= 0 && readout.y + Math.min(readout.height, 120) <= PHONE.height, `readout at ${readout.y} … ${readout.y + readout.height}`);
  // A tap elsewhere moves it; a drag still pans and reads nothing new.
  await page.touchscreen.tap(box.x + box.width * 0.05, box.y + box.height * 0.95);
  await page.waitForFunction(() => /i = 9/.test(document.getElementById('readout').textContent), null, WAIT);
  assert.match(await page.locator('#readout').textContent(), /i = 9.*j = 0/s);
  await page.screenshot({ path: artifact('third-tap-phone') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 3: at data spread 1e20 the scaling panel says the scores overflow, and every claim fits its figures', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  await setField(page, 'spread', '1e20');
  await page.waitForFunction(() => /data spread 1(\.00)?e\+?20/.test(document.getElementById('scaling-intro').textContent), null, WAIT);
  await idle(page);
  const summary = await page.locator('#scaling-summary').textContent();
  assert.match(summary, /overflow/);
  assert.doesNotMatch(summary, /NaN×|deviation NaN|gradient survives|still small/, summary);
  assert.match(await page.locator('#scaling-charts').textContent(), /overflow/, 'the empty charts say why');
  // Uniform data at spread 1: "almost no gradient" only where the measured ratio is small.
  await page.locator('#controls [name="distribution"]').selectOption('uniform');
  await setField(page, 'spread', '1');
  await page.waitForFunction(() => /uniform, data spread 1\)/.test(document.getElementById('scaling-intro').textContent), null, WAIT);
  await idle(page);
  const rows = await page.evaluate(() => window.__xattnDemo.scaling.rows);
  const ratio = rows.at(-1).unscaled.gradNorm / rows[0].unscaled.gradNorm;
  const text = await page.locator('#scaling-summary').textContent();
  assert.ok(text.includes(`${Number(ratio.toPrecision(3))}×`), `the summary gives the ratio ${ratio}: ${text}`);
  if (ratio > 0.1) assert.doesNotMatch(text, /almost no gradient/, `ratio ${ratio}`);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 4: an import error is said next to the Data controls, in the learner\'s words', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  const n = await computes(page);
  await page.locator('input[data-import="key"]').setInputFiles({ name: 'notes.npy', mimeType: 'text/plain', buffer: Buffer.from('hello') });
  await page.waitForSelector('#import-error:not([hidden])', WAIT);
  const message = await page.locator('#import-error').textContent();
  assert.match(message, /notes\.npy/);
  assert.match(message, /not a \.npy file/);
  assert.match(message, /np\.save/);
  assert.doesNotMatch(message, /\\x93|NUMPY/);
  // Where the learner is looking: inside the Data fieldset, beside the file inputs.
  assert.equal(await page.locator('fieldset:has(input[data-import]) #import-error').count(), 1);
  assert.equal(await banner(page), null, 'not (only) in the banner at the top');
  await page.waitForTimeout(700);
  assert.equal(await page.locator('#import-error').isVisible(), true);
  assert.equal(await computes(page), n);
  // A change by the learner clears it.
  await page.locator('#controls [name="causal"]').check();
  assert.equal(await page.locator('#import-error').isVisible(), false);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 5: a refusal quotes what was typed, whatever it is', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  for (const [typed, shown] of [['6e', '6e'], ['--5', '−−5'], ['1-2', '1−2'], ['abc', 'abc']]) {
    await typeInto(page, 'E', typed);
    assert.equal(await page.locator('#controls [name="E"]').inputValue(), typed);
    assert.match(await traceText(page), new RegExp(`E must be a whole number from 1 to 1024; got ${shown}`), typed);
    assert.doesNotMatch(await traceText(page), /empty field/, typed);
  }
  await typeInto(page, 'E', '64');
  await idle(page);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 6: imports are checked against the lab\'s bounds; NaN in a file is said as such; a preset says it drops them', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  let n = await computes(page);
  // L = 5000 is more than the lab's 4096: refused at import, nothing locked, nothing changed.
  await page.locator('input[data-import="query"]').setInputFiles(npyFile('long.npy', { data: new Float32Array(5000 * 8), shape: [1, 5000, 8] }));
  await page.waitForSelector('#import-error:not([hidden])', WAIT);
  assert.match(await page.locator('#import-error').textContent(), /long\.npy: L = 5000 .*4096/);
  assert.equal(await page.locator('#controls [name="L"]').isDisabled(), false);
  assert.equal(await page.locator('#controls [name="L"]').inputValue(), '10');
  assert.doesNotMatch(await traceText(page), /5000/);
  assert.equal(await computes(page), n);
  // NaN from the file: the note says the file holds it, not that the spread is too large.
  const q = Float32Array.from({ length: 5 * 8 }, (_, k) => Math.sin(k));
  q[2 * 8 + 3] = NaN;
  await page.locator('input[data-import="query"]').setInputFiles(npyFile('nan.npy', { data: q, shape: [1, 5, 8] }));
  await settled(page, n + 1);
  const note = await page.locator('#overflow-note').textContent();
  assert.match(note, /1 of 5 rows holds weights that are not numbers/);
  assert.match(note, /nan\.npy|imported/);
  assert.doesNotMatch(note, /data spread/);
  // The 1024² preset replaces the imported Q with generated data, and says so.
  n = await computes(page);
  await page.locator('[data-preset="long"]').click();
  await settled(page, n + 1);
  assert.match(await page.locator('#import-note').textContent(), /nan\.npy.*(no longer|dropped|replaced)/);
  assert.equal(await page.locator('#import-note').isVisible(), true);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 7: the training panel: a refused seed stops Start, the worker takes a new pace mid-run, a loaded run keeps its step, the pace menu fits', async (t) => {
  const page = await openDemo(browser.context, { viewport: { width: 1366, height: 900 } });
  await page.waitForFunction(() => window.__xattnDemo.training.ready && window.__xattnDemo.training.snapshots > 0, null, WAIT);
  await page.locator('#train-card').scrollIntoViewIfNeeded();
  // The pace menu shows its whole label at 1366 px.
  const pace = page.locator('#train-controls [name="pace"]');
  const fits = await pace.evaluate((select) => {
    const ctx = document.createElement('canvas').getContext('2d');
    const style = getComputedStyle(select);
    ctx.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const text = ctx.measureText(select.selectedOptions[0].textContent).width;
    const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 16; // the arrow
    return { text, room };
  });
  assert.ok(fits.text <= fits.room, `the pace label needs ${fits.text} px, the menu shows ${fits.room}`);
  // A refused seed: its message, and Start is off until it is fixed.
  const seed = page.locator('#train-controls [name="seed"]');
  await seed.fill('-5');
  await seed.dispatchEvent('change');
  await page.waitForFunction(() => window.__xattnDemo.training.lastError, null, WAIT);
  assert.match(await page.locator('#train-error').textContent(), /seed must be a whole number from 0 to 4294967295; got −5/);
  assert.equal(await page.locator('#train-start').isDisabled(), true);
  await seed.fill('1');
  await seed.dispatchEvent('change');
  await page.waitForFunction(() => !window.__xattnDemo.training.lastError && window.__xattnDemo.training.step === 0, null, WAIT);
  assert.equal(await page.locator('#train-start').isEnabled(), true);
  // Pace: start very slowly, switch to full speed while it runs: the worker says it now runs at full speed, in the
  // same run, without a new Start, and goes on training. (What the steps wait by is the pace the worker reports;
  // how fast they then go depends on the machine, and is printed only.)
  await pace.selectOption('4');
  await page.locator('#train-controls [name="steps"]').fill('100000');
  await page.click('#train-start');
  await page.waitForFunction(() => window.__xattnDemo.training.running && window.__xattnDemo.training.step >= 2, null, WAIT);
  const slow = await page.evaluate(trainingNow);
  assert.equal(slow.pace, 4, 'the worker runs at the pace Start asked for');
  assert.match(await page.locator('#train-status').textContent(), /^Training at a pace of 4 steps\/s: step \d+/);
  await pace.selectOption('0');
  await page.waitForFunction(() => window.__xattnDemo.training.running && window.__xattnDemo.training.pace === 0, null, WAIT);
  assert.match(await page.locator('#train-status').textContent(), /^Training at full speed: step \d+/);
  assert.equal(await page.locator('#train-start').isDisabled(), true, 'no new Start was needed, nor possible');
  const fast = await page.evaluate(trainingNow);
  assert.equal(fast.run, slow.run, 'the same run goes on');
  await page.waitForFunction((s) => window.__xattnDemo.training.step > s && window.__xattnDemo.training.pace === 0, fast.step, WAIT);
  const after = await page.evaluate(trainingNow);
  assert.equal(after.running, true);
  t.diagnostic(`steps/s at a pace of 4: ${slow.stepsPerSecond?.toFixed(1)}; at full speed: ${after.stepsPerSecond?.toFixed(1)} (step ${fast.step} → ${after.step})`);
  await page.click('#train-pause');
  await page.waitForFunction(() => !window.__xattnDemo.training.running, null, WAIT);
  // Export the run, reset, load it back: the panel says the step the file was trained to.
  const step = await page.evaluate(() => window.__xattnDemo.training.step);
  const [download] = await Promise.all([page.waitForEvent('download', WAIT), page.click('#train-export')]);
  const file = await download.path();
  await page.click('#train-reset');
  await page.waitForFunction(() => window.__xattnDemo.training.step === 0, null, WAIT);
  await page.locator('#train-load').setInputFiles(file);
  await page.waitForFunction((s) => window.__xattnDemo.training.step === s, step, WAIT);
  assert.match(await page.locator('#train-status').textContent(), new RegExp(`^Paused at step ${step}\\b`));
  assert.deepEqual(page.errors, []);
  await page.close();
});

// The implementations of the two speed charts, by the name each chart gives them.
const SAME_IMPLEMENTATION = { simd: 'xattnSimd', scalar: 'xattnScalar', js: 'plainJs' };

test('item 8: the speed figures come with their story, one colour per implementation, the peak named in the key and no label on a bar', async () => {
  const page = await openDemo(browser.context, { viewport: { width: 1366, height: 900 } });
  await page.waitForSelector('#bench svg', WAIT);
  await idle(page);
  await runSpeed(page);
  // The story follows this machine's figures (unrounded, from the table's rows), whichever way they went;
  // tests/web/speed-story.test.js pins the sentences of each way on fixed figures.
  const rows = await page.locator('#speed-table tbody tr[data-gflops]').evaluateAll((trs) => trs.map((tr) => [tr.dataset.kind, Number(tr.dataset.gflops)]));
  const g = Object.fromEntries(rows);
  assert.ok(g.simd > 0 && g.scalar > 0, JSON.stringify(g));
  const story = await page.locator('#speed-story').textContent();
  const notes = (await page.locator('#speed-story').getAttribute('data-notes')).split(' ');
  const builds = g.scalar > EVEN * g.simd ? 'scalar' : g.simd > EVEN * g.scalar ? 'simd' : 'even';
  assert.equal(notes[0], builds, `${JSON.stringify(g)}: ${story}`);
  const why = /(SIMD makes only the arithmetic faster|the arithmetic dominates, and SIMD, which makes it faster, should lead)/.source;
  assert.match(story, new RegExp({ scalar: `The scalar build was faster than SIMD here.*${why}`, even: `The scalar build ran about as fast as SIMD here.*${why}`, simd: 'SIMD was [\\d.]+× the scalar build: .*four float32 numbers at once' }[builds]), story);
  const ratio = Number(await page.locator('#speed-threads').getAttribute('data-ratio'));
  if (ratio) {
    const threads = ratio > EVEN ? 'threads-help' : ratio < 1 / EVEN ? 'threads' : 'threads-even';
    assert.equal(notes.at(-1), threads, `ratio ${ratio}: ${story}`);
    assert.match(story, threads === 'threads-help' ? /threads were [\d.]+× as fast as 1 thread: .*a core of its own/ : /threads (were slower than|ran about as fast as) 1 thread here .*a core to itself/, story);
  } else assert.doesNotMatch(story, /threads (were|ran)/, 'a page on 1 thread compares no threads');
  // One colour per implementation, in both charts: the same implementation the same colour, two never share one.
  const colours = (chart) => page.locator(`${chart} svg rect[data-series]`).evaluateAll((rs) => rs.map((r) => [r.dataset.series, r.getAttribute('fill')]));
  const live = new Map(await colours('#speed-chart'));
  const bench = new Map(await colours('#bench'));
  for (const [kind, key] of Object.entries(SAME_IMPLEMENTATION)) {
    if (live.has(kind) && bench.has(key)) assert.equal(live.get(kind), bench.get(key), `${kind} / ${key}`);
  }
  const owner = new Map();
  for (const [name, colour] of [...[...live].map(([k, c]) => [SAME_IMPLEMENTATION[k] ?? k, c]), ...bench]) {
    assert.ok(!owner.has(colour) || owner.get(colour) === name, `${colour} is both ${owner.get(colour)} and ${name}`);
    owner.set(colour, name);
  }
  // The peak is named in each chart's key, with its figure, not written across the plot; no text of a chart
  // (a bar's value, a tick, a label, the key) lies on a bar.
  for (const chart of ['#speed-chart', '#bench']) {
    const { peak, key, texts, bars, overlaps } = await page.locator(chart).evaluate((box) => {
      const svg = box.querySelector('svg');
      const rects = [...svg.querySelectorAll('rect[data-series]')].map((r) => r.getBoundingClientRect());
      const hit = (a, b) => a.left < b.right - 0.5 && b.left < a.right - 0.5 && a.top < b.bottom - 0.5 && b.top < a.bottom - 0.5;
      const labels = [...svg.querySelectorAll('text'), ...box.querySelectorAll('.bar-legend li')];
      return {
        peak: svg.querySelector('line.peak')?.dataset.value ?? null,
        key: [...box.querySelectorAll('.bar-legend li.peak-key')].map((li) => li.textContent),
        texts: labels.length,
        bars: rects.length,
        overlaps: labels.filter((t) => rects.some((b) => hit(t.getBoundingClientRect(), b))).map((t) => t.textContent),
      };
    });
    assert.ok(bars > 0 && texts > 0, `${chart}: ${bars} bars and ${texts} labels to check`);
    assert.ok(peak !== null, `${chart} draws its peak line`);
    assert.equal(key.length, 1, `${chart}: the peak in the key`);
    const figure = Number(peak) >= 100 ? Number(peak).toFixed(0) : Number(peak) >= 10 ? Number(peak).toFixed(1) : Number(peak).toFixed(2);
    assert.match(key[0], new RegExp(`peak.*: ${figure.replace('.', '\\.')} GFLOP/s$`), `${chart}: ${key[0]}`);
    assert.deepEqual(overlaps, [], `${chart}: text over a bar`);
  }
  await speedCard(page).screenshot({ path: artifact('third-speed-desktop') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 9: heads side by side says how to see it, wraps many heads, follows its checkbox, and shows the picked head', async () => {
  const page = await openDemo(browser.context, { viewport: { width: 1366, height: 900 } });
  await idle(page);
  assert.equal(await page.locator('#heads-card').isVisible(), true, 'the card is there before heads are on');
  assert.match(await page.locator('#heads-hint').textContent(), /heads/);
  await page.locator('#heads-on').click();
  assert.equal(await page.locator('#controls [name="useHeads"]').isChecked(), true);
  await setFields(page, { H: 32, Hkv: 8 });
  await page.waitForFunction(() => window.__xattnDemo.view?.thumbs.length === 32, null, WAIT);
  await idle(page);
  await page.locator('#heads-every-b').check();
  await page.waitForFunction(() => document.querySelectorAll('#heads-grid button.head').length === 4 * 32, null, WAIT);
  assert.doesNotMatch(await page.locator('#heads-hint').textContent(), /for b = 0/);
  const grid = page.locator('#heads-grid');
  assert.ok(await grid.evaluate((g) => g.scrollWidth <= g.clientWidth + 1), 'no thumbnail beyond the card');
  const lines = await page.locator('#heads-grid button.head span').evaluateAll((spans) =>
    spans.map((s) => s.getBoundingClientRect().height / parseFloat(getComputedStyle(s).lineHeight)),
  );
  assert.ok(Math.max(...lines) < 1.5, `a label takes ${Math.max(...lines)} lines`);
  await page.locator('#heads-grid button.head[data-b="3"][data-h="30"]').scrollIntoViewIfNeeded();
  await page.locator('#heads-grid button.head[data-b="3"][data-h="30"]').click();
  await page.waitForFunction(() => window.__xattnDemo.view?.b === 3 && window.__xattnDemo.view?.h === 30, null, WAIT);
  await page.waitForTimeout(300);
  const map = await page.locator('#weights-canvas').boundingBox();
  assert.ok(map.y >= -map.height / 2 && map.y < 900, `the big map is at ${map.y} px, off screen`);
  await page.locator('#heads-card').screenshot({ path: artifact('third-heads') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 10: Cancel leaves the disabled H and Hkv as they were', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  const n = await computes(page);
  await setFields(page, { B: 16, L: 2048, S: 2048, E: 128, Ev: 128 });
  await page.waitForFunction(() => /batch element \d+ of 16/.test(document.getElementById('progress-label').textContent), null, WAIT);
  await page.locator('#cancel').click();
  await idle(page);
  assert.equal(await computes(page), n);
  assert.equal(await page.locator('#controls [name="H"]').inputValue(), '4');
  assert.equal(await page.locator('#controls [name="Hkv"]').inputValue(), '4');
  assert.equal(await page.locator('#controls [name="H"]').isDisabled(), true);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('item 11: the wording: whole sentences, the right direction, labels, agreement, a panel that says it is refused', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  // Too big for memory: the stale note is two sentences, not "because These shapes".
  await setFields(page, { B: 64, L: 4096, S: 4096 });
  await page.waitForSelector('#error:not([hidden])', WAIT);
  await page.waitForFunction(() => !document.querySelector('#weights-card .stale-note').hidden, null, WAIT);
  const stale = await page.locator('#weights-card .stale-note').textContent();
  assert.doesNotMatch(stale, /because These/);
  assert.match(stale, /These shapes need/);
  let n = await computes(page);
  await page.locator('[data-preset="lesson"]').click();
  await settled(page, n + 1);
  // The status line's time says what it is.
  assert.match(await page.locator('#build-info').textContent(), /attention (computed )?in \d/);
  // A NaN weight's readout points at the note where it is: below the map.
  n = await computes(page);
  await setField(page, 'spread', '1e20');
  await settled(page, n + 1);
  await page.locator('#weights-canvas').focus();
  await page.keyboard.press('ArrowRight');
  const readout = await page.locator('#readout').textContent();
  assert.match(readout, /NaN/);
  assert.doesNotMatch(readout, /above the map/);
  assert.match(readout, /below the map/);
  // Drawing mode ends with a preset.
  await page.locator('#edit-mask').click();
  assert.equal(await page.locator('#edit-mask').getAttribute('aria-pressed'), 'true');
  n = await computes(page);
  await page.locator('[data-preset="lesson"]').click();
  await settled(page, n + 1);
  assert.equal(await page.locator('#edit-mask').getAttribute('aria-pressed'), 'false');
  assert.equal(await page.locator('#weights-canvas').evaluate((c) => c.classList.contains('editing')), false);
  // The decoding panel does not say "Ready" with the old shapes after refusing H = 4 over Hkv = 8.
  await page.waitForFunction(() => window.__xattnDemo.decode.ready, null, WAIT);
  await page.selectOption('#decode-controls [name="Hkv"]', '8');
  await page.waitForFunction(() => window.__xattnDemo.decode.lastError, null, WAIT);
  const status = await page.locator('#decode-status').textContent();
  assert.doesNotMatch(status, /Ready/);
  assert.match(status, /refused|fix/i);
  assert.equal(await page.locator('#decode-cache .kv-slot').count(), 0, 'no cache of the old shapes on screen');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the quiz keeps a score, and asks how multi-head attention splits Q into heads', async () => {
  const page = await openDemo(browser.context);
  const answers = { output: '(8, 128, 64)', weights: '(8, 128, 128)', kT: '(8, 32, 128)', ev: '(8, 128, 16)', heads: '(8, 4, 128, 8)' };
  const score = () => page.locator('#quiz-score').evaluate((s) => [Number(s.dataset.right), Number(s.dataset.answered), s.textContent]);
  const seen = [];
  for (let k = 0; k < 5; k++) {
    const id = await page.locator('#quiz').getAttribute('data-question');
    seen.push(id);
    // Question 2 (weights) is answered wrong first, then right: it counts as wrong.
    if (id === 'weights') {
      await page.locator('#quiz-answer').fill('(8, 128, 64)');
      await page.locator('#quiz-answer').press('Enter');
    }
    await page.locator('#quiz-answer').fill(answers[id]);
    await page.locator('#quiz-answer').press('Enter');
    assert.match(await page.locator('#quiz-feedback').textContent(), /^Correct/, id);
    await page.locator('#quiz-next').click();
  }
  assert.deepEqual(seen, ['output', 'weights', 'kT', 'ev', 'heads']);
  const [right, answered, text] = await score();
  assert.deepEqual([right, answered], [4, 5]);
  assert.match(text, /4 of 5 right first time/);
  // Round again: the finished round's score stays until the first question is answered again.
  assert.match(await page.locator('#quiz-counter').textContent(), /Question 1 of 5/);
  assert.deepEqual((await score()).slice(0, 2), [4, 5]);
  await page.locator('#quiz-answer').fill(answers.output);
  await page.locator('#quiz-answer').press('Enter');
  assert.deepEqual((await score()).slice(0, 2), [1, 1]);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the heatmap shows the raw scores, the scaled scores or the weights; a scale control changes the attention', async () => {
  const page = await openDemo(browser.context);
  await idle(page);
  const view = await page.evaluate(() => {
    const v = window.__xattnDemo.view;
    return { q: [...v.query], k: [...v.key], E: v.E, S: v.S, weights: [...v.weights] };
  });
  const dot = (i, j) => view.q.slice(i * view.E, (i + 1) * view.E).reduce((a, x, e) => a + x * view.k[j * view.E + e], 0);
  const show = page.locator('#show-matrix');
  for (const [what, want] of [['raw', dot(2, 7)], ['scaled', dot(2, 7) / 8], ['weights', view.weights[2 * 10 + 7]]]) {
    await show.selectOption(what);
    await page.waitForFunction((w) => document.getElementById('weights-canvas').dataset.showing === w, what, WAIT);
    const shown = await page.evaluate(() => window.__xattnDemo.shownMatrix);
    assert.ok(Math.abs(shown[2 * 10 + 7] - want) <= 1e-4 * Math.abs(want) + 1e-6, `${what}: ${shown[2 * 10 + 7]} vs ${want}`);
    assert.match(await page.locator('#weights-canvas').getAttribute('aria-label'), what === 'weights' ? /^Attention weights/ : what === 'raw' ? /^Raw scores/ : /^Scaled scores/);
  }
  // The map's colours are signed for scores: a negative score is blue, not the dark of a small weight.
  await show.selectOption('raw');
  assert.match(await page.locator('#legend-ticks').textContent(), /−/);
  await show.selectOption('weights');
  // The scale control: a tiny scale flattens every row to the plain average 1/S, and the trace and the readout
  // say the scale used.
  const n = await computes(page);
  await setField(page, 'scale', '1e-9');
  await settled(page, n + 1);
  const flat = await page.evaluate(() => [...window.__xattnDemo.view.weights]);
  for (const w of flat) assert.ok(Math.abs(w - 0.1) < 1e-6, `weight ${w}`);
  assert.match(await page.locator('#trace tr[data-tensor="scaled scores"]').textContent(), /× 1\.00e-9/);
  await page.locator('#weights-canvas').focus();
  assert.match(await page.locator('#readout').textContent(), /scaled × 1e-9/);
  for (const bad of ['x', '0', '-1']) {
    await setField(page, 'scale', bad);
    assert.match(await traceText(page), /scale must be a number above 0 and at most 1\.0e6, or empty for 1\/√E/, bad);
  }
  await setField(page, 'scale', '');
  await settled(page, n + 2);
  assert.ok(Math.abs((await page.evaluate(() => window.__xattnDemo.view.weights[27])) - view.weights[27]) < 1e-7, 'an empty scale is 1/√E again');
  assert.match(await page.locator('#trace tr[data-tensor="scaled scores"]').textContent(), /1\/√E/);
  await page.locator('#weights-card').screenshot({ path: artifact('third-scores') });
  assert.deepEqual(page.errors, []);
  await page.close();
});
