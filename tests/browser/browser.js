// Headless Debian Chromium driven by playwright-core, against the demo served by scripts/test-web.sh
// (which passes the URL in XATTN_DEMO_URL). Every page records its console errors so tests can assert none.
import { chromium } from 'playwright-core';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const DEMO_URL = process.env.XATTN_DEMO_URL;
export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// Where a test saves a screenshot to look at: build/artifacts/<name>.png, or <name>-build.png in the
// production-build run (XATTN_DEMO_LABEL=build), so the two runs keep their own.
export function artifact(name) {
  const dir = path.join(REPO, 'build', 'artifacts');
  mkdirSync(dir, { recursive: true });
  const label = process.env.XATTN_DEMO_LABEL ? `-${process.env.XATTN_DEMO_LABEL}` : '';
  return path.join(dir, `${name}${label}.png`);
}
// Generous bounds on waiting for the page's own state; a test that hits one fails, nothing is timed.
export const WAIT = { timeout: 90_000 };

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// args: flags beyond FLAGS, for a test that needs the browser set up otherwise; context: more of
// playwright's context options (hasTouch: true for a phone's taps).
export async function launch({ args = [], context: contextOptions = {} } = {}) {
  if (!DEMO_URL) throw new Error('XATTN_DEMO_URL is not set: run the browser tests through scripts/test-web.sh');
  const profile = mkdtempSync(path.join(tmpdir(), 'xattn-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
    headless: true,
    args: [...FLAGS, ...args],
    viewport: { width: 1280, height: 800 },
    acceptDownloads: true,
    ...contextOptions,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

// A fresh page on the demo, with console errors and uncaught exceptions collected in page.errors.
export async function openDemo(context, { viewport } = {}) {
  const page = await context.newPage();
  if (viewport) await page.setViewportSize(viewport);
  page.errors = [];
  page.on('console', (m) => {
    if (m.type() === 'error') page.errors.push(`console: ${m.text()}`);
  });
  page.on('pageerror', (e) => page.errors.push(`pageerror: ${e.message}`));
  await page.goto(DEMO_URL);
  await settled(page, 1);
  return page;
}

// Waits until the page has finished at least `computes` computations and nothing is running in the worker.
export async function settled(page, computes) {
  await page.waitForFunction((n) => window.__xattnDemo && window.__xattnDemo.computes >= n && !window.__xattnDemo.busy, computes, WAIT);
}

export const computes = (page) => page.evaluate(() => window.__xattnDemo.computes);

// Waits until nothing is scheduled or running (a compute, a study, a comparison).
export async function idle(page) {
  await page.waitForFunction(() => window.__xattnDemo && !window.__xattnDemo.busy, null, WAIT);
}

// Worker requests the page has made so far.
export const requests = (page) => page.evaluate(() => window.__xattnDemo.requests);

// Types into a field as a person does: focus, select what is there, type the keys one by one (each key is an
// input event, so "20" passes through "2"). The field keeps the focus.
export async function typeInto(page, name, text) {
  const input = page.locator(`#controls [name="${name}"]`);
  await input.click();
  await input.press('Control+A');
  await page.keyboard.type(String(text), { delay: 30 });
}

// Sets a number field and lets the page react as it does to typing.
export async function setField(page, name, value) {
  await page.locator(`#controls [name="${name}"]`).fill(String(value));
}

// Sets several fields at once and announces one change, as a single edit would.
export async function setFields(page, values) {
  await page.evaluate((v) => {
    const form = document.getElementById('controls');
    for (const [name, value] of Object.entries(v)) form.elements[name].value = String(value);
    form.dispatchEvent(new Event('input', { bubbles: true }));
  }, values);
}

// The shape the trace shows for a tensor, e.g. '(4, 10, 64)'.
export function traceShape(page, tensor) {
  return page.locator(`#trace tr[data-tensor="${tensor}"] td.shape`).textContent();
}
