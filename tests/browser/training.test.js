// "Watch attention learn" in real Chromium: the default task trains to ≥ 95% held-out exact sequences in
// a fixed number of steps within 60 s, the reversal shows in the weights, the page's thread stays free
// while the Worker trains (the input latency seen is printed), pause/seed/reset behave, the heads
// specialise on the two-position task, and the exported .npz loads back to the same accuracy.
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { WAIT, launch, openDemo } from './browser.js';

// Steps of the accuracy test. Measured here (headless Chromium, 2 shared cores): about 300 steps/s at full
// speed, and 95% held-out exact sequences at about step 110 for the default seed; 1000 steps take a few
// seconds, long enough to measure input latency while the Worker trains, and far inside 60 s.
const STEPS = 1000;
const LABEL = process.env.XATTN_DEMO_LABEL || 'dev';
let browser;
before(async () => {
  browser = await launch();
  mkdirSync('build/artifacts', { recursive: true });
});
after(async () => browser?.close());

const training = (page) => page.evaluate(() => {
  const t = window.__xattnDemo.training;
  return { step: t.step, running: t.running, settings: t.settings, evals: t.evals, probe: t.probe, pattern: t.pattern, sps: t.stepsPerSecond, error: t.lastError, run: t.run };
});

async function openTraining(viewport) {
  const page = await openDemo(browser.context, viewport ? { viewport } : {});
  await page.waitForFunction(() => window.__xattnDemo.training.ready && window.__xattnDemo.training.snapshots > 0, null, WAIT);
  return page;
}

// Sets the panel's controls and waits for the first snapshot of the run they make. Each changed run setting
// starts a run of its own, so the wait is for the run whose settings are all the values given (the last one):
// waiting for any new run let a later one land after the caller had read `run`, and pass for a Load.
async function configure(page, values) {
  const run = (await training(page)).run;
  for (const [name, value] of Object.entries(values)) {
    const field = page.locator(`#train-controls [name="${name}"]`);
    if ((await field.evaluate((e) => e.tagName)) === 'SELECT') await field.selectOption(String(value));
    else await field.fill(String(value)).then(() => field.dispatchEvent('change'));
  }
  await page.waitForFunction(
    ([r, want]) => {
      const t = window.__xattnDemo.training;
      const asked = Object.entries(want).every(([k, v]) => !(k in t.settings) || String(t.settings[k]) === String(v));
      return t.run > r && t.step === 0 && asked;
    },
    [run, values],
    WAIT,
  );
}

async function trainSteps(page, steps) {
  await page.locator('#train-controls [name="steps"]').fill(String(steps));
  const from = (await training(page)).step;
  await page.click('#train-start');
  await page.waitForFunction((until) => window.__xattnDemo.training.step >= until && !window.__xattnDemo.training.running, from + steps, { timeout: 120_000 });
}

// Rows (of L) in which the mirror key j = L − 1 − i holds the row's largest weight, for each head.
function antiDiagonalRows(probe) {
  const { H, L, weights } = probe;
  return Array.from({ length: H }, (_, h) => {
    let rows = 0;
    for (let i = 0; i < L; i++) {
      const row = Array.from({ length: L }, (_, j) => weights[(h * L + i) * L + j]);
      const j = L - 1 - i;
      if (row.every((w, k) => k === j || w < row[j])) rows++;
    }
    return rows;
  });
}

test('the default task reaches 95% held-out exact sequences; the page handles input while the Worker trains', async () => {
  const page = await openTraining();
  const start = await training(page);
  assert.deepEqual(
    { task: start.settings.task, H: start.settings.H, E: start.settings.E, L: start.settings.L, lr: start.settings.lr, seed: start.settings.seed },
    { task: 'reverse', H: 2, E: 32, L: 8, lr: 0.001, seed: 1 },
  );
  assert.ok(start.evals[0].sequence < 0.05, `untrained: ${start.evals[0].sequence}`);
  assert.ok(antiDiagonalRows(start.probe).every((r) => r < 8), 'no reversal before training');

  await page.selectOption('#train-controls [name="pace"]', '0'); // full speed: the goal is about time
  // What the page's thread sees while the Worker trains: the gaps between animation frames, the delay of
  // each click's handler (event time → handler), and long tasks (over 50 ms) on the thread.
  await page.evaluate(() => {
    const lat = (window.__latency = { frames: [], clicks: [], longTasks: [], on: true });
    const frame = (t) => {
      lat.frames.push(t);
      if (lat.on) requestAnimationFrame(frame);
    };
    requestAnimationFrame(frame);
    document.getElementById('train-status').addEventListener('pointerdown', (e) => lat.clicks.push(performance.now() - e.timeStamp));
    new PerformanceObserver((list) => lat.longTasks.push(...list.getEntries().map((e) => e.duration))).observe({ type: 'longtask' });
  });
  await page.locator('#train-controls [name="steps"]').fill(String(STEPS));
  const t0 = Date.now();
  await page.click('#train-start');
  const status = await page.locator('#train-status').boundingBox();
  while (await page.evaluate(() => window.__xattnDemo.training.running || window.__xattnDemo.training.step === 0)) {
    await page.mouse.click(status.x + 20, status.y + status.height / 2);
    await page.waitForTimeout(150);
    assert.ok(Date.now() - t0 < 90_000, 'training is taking far too long');
  }
  const wall = (Date.now() - t0) / 1000;
  const lat = await page.evaluate(() => {
    window.__latency.on = false;
    return window.__latency;
  });
  const t = await training(page);
  assert.equal(t.step, STEPS);
  assert.equal(t.error, null);
  const last = t.evals.at(-1);
  const first95 = t.evals.find((e) => e.sequence >= 0.95);
  const gaps = lat.frames.slice(1).map((f, k) => f - lat.frames[k]).sort((a, b) => a - b);
  const clicks = [...lat.clicks].sort((a, b) => a - b);
  const q = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
  console.log(
    `[${LABEL}] training: ${STEPS} steps in ${wall.toFixed(1)} s of wall time (${(last.ms / 1000).toFixed(1)} s in the Worker), ` +
      `${t.sps.toFixed(0)} steps/s; held-out exact sequences ${(100 * last.sequence).toFixed(1)}%, tokens ${(100 * last.token).toFixed(1)}%; ` +
      `95% first at step ${first95?.step} after ${first95 ? (first95.ms / 1000).toFixed(2) : '?'} s`,
  );
  console.log(
    `[${LABEL}] input latency during training: ${clicks.length} clicks, handler delay median ${q(clicks, 0.5)?.toFixed(1)} ms, max ${clicks.at(-1)?.toFixed(1)} ms; ` +
      `${gaps.length} frames, gap median ${q(gaps, 0.5)?.toFixed(1)} ms, p95 ${q(gaps, 0.95)?.toFixed(1)} ms, max ${gaps.at(-1)?.toFixed(1)} ms; ` +
      `long tasks: ${lat.longTasks.length} (longest ${Math.max(0, ...lat.longTasks).toFixed(0)} ms)`,
  );
  // The goal: ≥ 95% held-out exact sequences. How long it took, and the latencies above, are figures printed for
  // a reader, not assertions: this machine is shared, and a timed check fails on a busy host, not on a slow page.
  assert.ok(last.sequence >= 0.95, `held-out exact sequences after ${STEPS} steps: ${last.sequence}`);
  assert.ok(first95, 'no evaluation reached 95%');
  // The reversal: some head's weight on the anti-diagonal is the largest of every row, and the model
  // reverses the probe.
  const rows = antiDiagonalRows(t.probe);
  assert.ok(rows.some((r) => r === t.probe.L), `anti-diagonal rows per head: ${rows}`);
  assert.match(await page.locator('#train-answer').textContent(), /model.*H\s*G\s*F\s*E\s*D\s*C\s*B\s*A\s*✓ right/s);
  assert.match(await page.locator('#train-status').textContent(), /Paused at step 1000 · .* exact sequences (9[5-9]|100)\.\d%/);
  // Responsive: the page's thread handled clicks and drew frames while the Worker trained (the training runs off
  // that thread; a page that trained on it would handle none until the end).
  assert.ok(clicks.length >= 3, `only ${clicks.length} clicks landed during training`);
  assert.ok(gaps.length >= 3, `only ${gaps.length + 1} frames were drawn during training`);
  assert.deepEqual(page.errors, []);
  await page.locator('#train-card').screenshot({ path: `build/artifacts/training-${LABEL}-1280.png` });
  await page.close();
});

test('pause stops training; a new seed starts a new run from step 0 with other weights', async () => {
  const page = await openTraining();
  await page.selectOption('#train-controls [name="pace"]', '20');
  await page.click('#train-start');
  await page.waitForFunction(() => window.__xattnDemo.training.step >= 5, null, WAIT);
  await page.click('#train-pause');
  await page.waitForFunction(() => !window.__xattnDemo.training.running, null, WAIT);
  const paused = (await training(page)).step;
  await page.waitForTimeout(600);
  assert.equal((await training(page)).step, paused, 'no steps after Pause');
  assert.equal(await page.locator('#train-start').isEnabled(), true);
  assert.equal(await page.locator('#train-pause').isEnabled(), false);
  // At 20 steps/s the run cannot have raced ahead: slow motion is slow.
  assert.ok(paused < 40, `paused at step ${paused}`);
  const before = (await training(page)).probe.weights;
  await configure(page, { seed: 2 });
  const after = await training(page);
  assert.equal(after.settings.seed, 2);
  assert.equal(after.evals.length, 1); // the curves start again
  assert.notDeepEqual(after.probe.weights, before);
  // Reset re-initialises the same seed: the same weights as the first snapshot of seed 2.
  await trainSteps(page, 10);
  const run = (await training(page)).run;
  await page.click('#train-reset');
  await page.waitForFunction((r) => window.__xattnDemo.training.run > r, run, WAIT);
  assert.deepEqual((await training(page)).probe.weights, after.probe.weights);
  // A seed outside its bounds is refused with a message, and the run is left alone.
  await page.locator('#train-controls [name="seed"]').fill('-3');
  await page.locator('#train-controls [name="seed"]').dispatchEvent('change');
  assert.match(await page.locator('#train-error').textContent(), /seed must be a whole number from 0 to 4294967295; got −3/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('first-and-previous with H = 2: one head takes key 0, the other key i − 1', async () => {
  const page = await openTraining();
  await configure(page, { task: 'pair', pace: '0' });
  assert.match(await page.locator('#train-explain').textContent(), /first token .* token before this one/);
  await trainSteps(page, 800);
  const t = await training(page);
  const last = t.evals.at(-1);
  assert.ok(last.sequence >= 0.95, `held-out exact sequences: ${last.sequence}`);
  // Checked from the raw weights: in every row, head A's largest weight is on key 0 and head B's on i − 1.
  const { H, L, weights } = t.probe;
  const argmax = (h, i) => {
    let best = 0;
    for (let j = 1; j < L; j++) if (weights[(h * L + i) * L + j] > weights[(h * L + i) * L + best]) best = j;
    return best;
  };
  const takes = (h, want) => Array.from({ length: L }, (_, i) => argmax(h, i) === want(i)).every(Boolean);
  const first = [...Array(H).keys()].filter((h) => takes(h, () => 0));
  const previous = [...Array(H).keys()].filter((h) => takes(h, (i) => (i - 1 + L) % L));
  assert.equal(first.length, 1, `heads on key 0: ${first}`);
  assert.equal(previous.length, 1, `heads on key i − 1: ${previous}`);
  assert.notEqual(first[0], previous[0]);
  assert.match(await page.locator('#train-pattern').textContent(), /the first key \(0\): head \d .* 8 of 8 rows/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('Export .npz, then Load it back: the same held-out accuracy', async () => {
  const page = await openTraining();
  await configure(page, { pace: '0', seed: 3 });
  await trainSteps(page, 60); // part-trained, so the accuracy is neither 0 nor 1 and pins the weights
  const trained = (await training(page)).evals.at(-1);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#train-export')]);
  assert.match(download.suggestedFilename(), /^attention-lab-reverse-H2-E32-step60\.npz$/);
  const file = `build/artifacts/${download.suggestedFilename()}`;
  await download.saveAs(file);
  // Another task and seed on the panel: the file's comment must bring reverse, H = 2 and seed 3 back.
  await configure(page, { task: 'shift', H: '4', seed: 9 });
  const run = (await training(page)).run;
  await page.setInputFiles('#train-load', file);
  await page.waitForFunction((r) => window.__xattnDemo.training.run > r, run, WAIT);
  const loaded = await training(page);
  assert.deepEqual([loaded.settings.task, loaded.settings.H, loaded.settings.seed], ['reverse', 2, 3]);
  assert.equal(await page.locator('#train-controls [name="task"]').inputValue(), 'reverse');
  // The loaded run goes on from the step the file was trained to.
  const back = loaded.evals.at(-1);
  assert.equal(back.step, 60);
  assert.equal(loaded.step, 60);
  assert.match(await page.locator('#train-status').textContent(), /^Paused at step 60\b/);
  assert.deepEqual([back.sequence, back.token, back.loss], [trained.sequence, trained.token, trained.loss]);
  assert.ok(trained.token > 0.2 && trained.sequence < 1, JSON.stringify(trained));
  assert.match(await page.locator('#train-io-note').textContent(), /Loaded: trained 60 steps with seed 3/);
  // A file that is not an .npz is refused with a message, and the loaded run stays.
  await page.setInputFiles('#train-load', { name: 'bad.npz', mimeType: 'application/octet-stream', buffer: Buffer.from('not a zip') });
  await page.waitForFunction(() => /Load: not a zip archive/.test(document.getElementById('train-error').textContent), null, WAIT);
  assert.equal((await training(page)).run, loaded.run);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the training panel at phone and desktop widths', async () => {
  for (const viewport of [{ width: 390, height: 844 }, { width: 1920, height: 1080 }]) {
    const page = await openTraining(viewport);
    await page.selectOption('#train-controls [name="pace"]', '0');
    await trainSteps(page, 300);
    const card = page.locator('#train-card');
    // Nothing wider than the card, and every head's map on screen at a readable size.
    const overflow = await card.evaluate((c) => c.scrollWidth - c.clientWidth);
    assert.ok(overflow <= 0, `the card overflows by ${overflow}px at ${viewport.width}px`);
    const maps = await page.locator('#train-probe canvas').evaluateAll((cs) => cs.map((c) => c.getBoundingClientRect().width));
    assert.equal(maps.length, 2);
    assert.ok(maps.every((w) => w >= 120), `probe maps ${maps} px wide`);
    await card.screenshot({ path: `build/artifacts/training-${LABEL}-${viewport.width}.png` });
    assert.deepEqual(page.errors, []);
    await page.close();
  }
});
