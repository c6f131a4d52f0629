// The demo runs threaded: the server sends Cross-Origin-Opener-Policy and Cross-Origin-Embedder-Policy on every
// response the page and its Workers get, so the page is cross-origin isolated and the package's default is
// every thread (at most 4); the speed panel compares 1 thread with them; the threaded results are the
// package's 1-thread results, bit for bit, computed here in Node; and without the headers the page still
// works, on 1 thread, and says so. Run against the dev server and against `vite preview` (scripts/test-web.sh).
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { createXattn } from 'xattn';
import { formatMs } from '../../web/src/shared/timing.js';
import { DEMO_URL, WAIT, artifact, computes, launch, openDemo, setFields, settled, traceShape } from './browser.js';

const MAX_THREADS = 4; // the package's threaded build: the calling thread and a pool of 3
const ISOLATION = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };
const origin = new URL(DEMO_URL ?? 'http://127.0.0.1:1/').origin;

let browser;
let node; // the package in Node on 1 thread: the reference the page's threads must equal bit for bit
before(async () => {
  browser = await launch();
  // Relaxed SIMD, like the page's builds in Chromium: Node runs it with --experimental-wasm-relaxed-simd
  // (scripts/test-web.sh), and the fused multiply-adds of both engines round alike.
  node = await createXattn({ threads: 1, relaxedSimd: true });
});
after(async () => browser?.close());

// The thread count the page's default instance must run: min(4, navigator.hardwareConcurrency).
const expectedThreads = (page) => page.evaluate((most) => Math.min(most, navigator.hardwareConcurrency), MAX_THREADS);

async function runSpeed(page) {
  await page.locator('#run-speed').click();
  await page.waitForSelector('#speed-table:not([hidden])', WAIT);
  return page.locator('#speed-table tbody tr').evaluateAll((trs) =>
    trs.map((tr) => ({
      kind: tr.dataset.kind,
      threads: tr.dataset.threads,
      name: tr.querySelector('th').textContent,
      cells: [...tr.querySelectorAll('td')].map((td) => td.textContent),
    })),
  );
}

test('every response of the page and its Workers carries COOP and COEP, and the page is cross-origin isolated', async () => {
  const responses = [];
  const record = (r) => responses.push({ url: r.url(), headers: r.headers() });
  browser.context.on('response', record);
  let page;
  try {
    page = await openDemo(browser.context);
    // The speed comparison loads every build, the threaded one included, in the side worker.
    await runSpeed(page);
  } finally {
    browser.context.off('response', record);
  }
  assert.equal(await page.evaluate(() => crossOriginIsolated), true);
  assert.equal(await page.evaluate(() => typeof SharedArrayBuffer), 'function');
  const own = responses.filter((r) => r.url.startsWith(`${origin}/`));
  // The check means something only if it saw the page, its Workers' scripts and the .wasm files.
  assert.ok(own.some((r) => r.url === `${origin}/`), 'the page itself');
  assert.ok(own.some((r) => /worker/.test(new URL(r.url).pathname) && /\.js$/.test(new URL(r.url).pathname)), `a Worker's script among ${own.length}`);
  // Chromium runs relaxed SIMD unflagged, so the SIMD builds it picks are the relaxed ones.
  for (const build of ['xattn-relaxed-simd', 'xattn-scalar', 'xattn-relaxed-simd-threads']) {
    assert.ok(own.some((r) => new RegExp(`/${build}[-.][^/]*wasm$`).test(new URL(r.url).pathname) || new URL(r.url).pathname.endsWith(`/${build}.wasm`)), `${build}'s .wasm`);
  }
  for (const r of own) {
    for (const [name, value] of Object.entries(ISOLATION)) assert.equal(r.headers[name], value, `${name} on ${r.url}`);
  }
  // Nothing is loaded from elsewhere: require-corp would refuse it.
  const elsewhere = responses.filter((r) => !r.url.startsWith(`${origin}/`) && !/^(blob|data):/.test(r.url));
  assert.deepEqual(elsewhere.map((r) => r.url), []);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the compute workers run every thread: the status line says N = min(4, cores) threads', async () => {
  const page = await openDemo(browser.context);
  const n = await expectedThreads(page);
  assert.match(await page.locator('#build-info').textContent(), new RegExp(`^xattn \\d+\\.\\d+\\.\\d+ · WebAssembly relaxed-SIMD build · ${n}\\sthreads? · `));
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('the speed panel times the same call on 1 thread and on N = min(4, cores) threads, with both figures and the ratio', async () => {
  const page = await openDemo(browser.context);
  const n = await expectedThreads(page);
  const rows = await runSpeed(page);
  assert.deepEqual(rows.map((r) => r.kind), ['simd', 'threads', 'scalar', 'js']);
  const [one, all] = rows;
  assert.equal(one.name, 'WebAssembly SIMD, 1 thread');
  assert.equal(one.threads, '1');
  assert.equal(one.cells[4], 'reference');
  const line = page.locator('#speed-threads');
  assert.equal(await line.isVisible(), true);
  if (n === 1) {
    // A machine that reports one core: the row and the line say why, and no ratio is made up.
    assert.match(await line.textContent(), /^1 thread only: this browser reports 1 core/);
    assert.match(all.cells[0], /not available here/);
  } else {
    assert.equal(all.name, `WebAssembly SIMD, ${n} threads`);
    assert.equal(all.threads, String(n));
    for (const r of [one, all]) {
      assert.ok(Number(r.cells[0]) > 0, `${r.name}: ${r.cells[0]} ms`);
      assert.ok(Number(r.cells[2]) > 0, `${r.name}: ${r.cells[2]} GFLOP/s`);
    }
    // The package's results are the same at any thread count: the same bits as 1 thread.
    assert.equal(Number(all.cells[4]), 0, `${n} threads differ from 1 thread by ${all.cells[4]}`);
    const text = await line.textContent();
    const m = text.match(/^(\d) threads: ([\d.]+) ms per call, against ([\d.]+) ms on 1 thread: ([\d.]+)× as fast \(at most (\d)×\)\./);
    assert.ok(m, text);
    assert.deepEqual([Number(m[1]), m[2], m[3], Number(m[5])], [n, all.cells[0], one.cells[0], n]);
    const ratio = Number(await line.getAttribute('data-ratio'));
    assert.equal(m[4], ratio.toFixed(2));
    assert.ok(Math.abs(ratio - Number(one.cells[0]) / Number(all.cells[0])) <= 0.02 * ratio, `ratio ${ratio} from ${one.cells[0]} / ${all.cells[0]}`);
    assert.equal(formatMs(Number(all.cells[0])), all.cells[0]);
    console.log(`speed panel, ${await page.evaluate(() => document.getElementById('speed-intro').textContent.split(' with')[0])}: ${text}`);
  }
  // The chart has a bar for each, named with its thread count.
  const series = await page.locator('#speed-chart svg rect').evaluateAll((rs) => rs.map((r) => r.dataset.series));
  assert.deepEqual(series, rows.filter((r) => !/not available/.test(r.cells[0])).map((r) => r.kind));
  assert.match(await page.locator('#speed-chart .bar-legend').textContent(), new RegExp(`WebAssembly SIMD, 1 thread.*WebAssembly SIMD, ${n} thread`));
  await page.locator('section[aria-labelledby="speed-title"]').screenshot({ path: artifact('speed-threads') });
  assert.deepEqual(page.errors, []);
  await page.close();
});

// The page's tensor `name` as a Float32Array.
async function pageTensor(page, name) {
  const t = await page.evaluate((n) => window.__xattnDemo.tensor(n).then((x) => ({ shape: x.shape, data: [...x.data] })), name);
  return { shape: t.shape, data: Float32Array.from(t.data) };
}

// The page's output and weights against the package on 1 thread in Node, on the page's own Q, K, V.
async function assertSameBits(page, what) {
  const [q, k, v, output, weights] = await Promise.all(['query', 'key', 'value', 'output', 'weights'].map((n) => pageTensor(page, n)));
  const want = node.scaledDotProductAttention(q, k, v, { needWeights: true });
  for (const [name, got, expected] of [['output', output, want.output], ['weights', weights, want.weights]]) {
    assert.deepEqual(got.shape, expected.shape, `${what}: ${name} shape`);
    const a = new Uint32Array(got.data.buffer);
    const b = new Uint32Array(expected.data.buffer);
    let differ = 0;
    for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) differ++;
    assert.equal(differ, 0, `${what}: ${differ} of ${a.length} ${name} values differ from 1 thread in Node`);
  }
}

test("the lesson's example, and a problem big enough to share between threads, are 1 thread's results bit for bit", async () => {
  const page = await openDemo(browser.context);
  assert.equal(await traceShape(page, 'Q'), '(4, 10, 64)');
  assert.equal(await traceShape(page, 'output'), '(4, 10, 64)');
  await assertSameBits(page, "the lesson's example (4, 10, 64)");
  // 67 MFLOP, one call per batch element of 17 MFLOP each: far above what the package gives one thread.
  const n = await computes(page);
  await setFields(page, { L: 256, S: 256 });
  await settled(page, n + 1);
  assert.equal(await traceShape(page, 'weights'), '(4, 256, 256)');
  await assertSameBits(page, 'L = S = 256');
  assert.deepEqual(page.errors, []);
  await page.close();
});

test('without the headers the page works on 1 thread, with no console error, and the speed panel says why', async () => {
  // The document is fetched by the test and handed to the page without the two headers. A document handed
  // over this way has no address, so Chromium counts it as public and refuses its connections to loopback
  // (the dev server's live-reload socket); the real page comes from loopback, so that check is turned off.
  const plain = await launch({ args: ['--disable-features=LocalNetworkAccessChecks'] });
  try {
    await plain.context.route(DEMO_URL, async (route) => {
      const response = await route.fetch();
      const headers = Object.fromEntries(Object.entries(response.headers()).filter(([name]) => !(name in ISOLATION)));
      await route.fulfill({ response, headers });
    });
    const page = await openDemo(plain.context);
    assert.equal(await page.evaluate(() => crossOriginIsolated), false);
    assert.match(await page.locator('#build-info').textContent(), /^xattn \d+\.\d+\.\d+ · WebAssembly relaxed-SIMD build · 1\sthread · /);
    assert.equal(await traceShape(page, 'output'), '(4, 10, 64)');
    await assertSameBits(page, "the lesson's example, not isolated");
    assert.match(await page.locator('#speed-intro').textContent(), /not cross-origin isolated, so the package runs 1 thread only/);
    const rows = await runSpeed(page);
    assert.deepEqual(rows.map((r) => r.kind), ['simd', 'threads', 'scalar', 'js']);
    assert.match(rows[1].cells[0], /^not available here: this page is not cross-origin isolated/);
    assert.match(await page.locator('#speed-threads').textContent(), /^1 thread only: this page is not cross-origin isolated/);
    // The training and decoding panels' Workers started too, with nothing to report.
    await page.waitForFunction(() => window.__xattnDemo.decode.ready && window.__xattnDemo.training.ready && window.__xattnDemo.training.snapshots > 0, null, WAIT);
    assert.deepEqual(page.errors, []);
    await page.close();
  } finally {
    await plain.close();
  }
});
