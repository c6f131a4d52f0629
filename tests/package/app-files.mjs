// The files of the throwaway projects that use the packed tarball. Each computes the lesson's
// example and reports the largest error against the PyTorch fixture.

// Shared by every browser page: compute, compare, publish window.__result.
export const pageCheck = `
async function lesson() {
  const c = await (await fetch(new URL('./case.json', location.href))).json();
  const inputs = ['query', 'key', 'value'].map((n) => ({ data: Float32Array.from(c[n].values), shape: c[n].shape }));
  const excess = (r) => {
    let maxExcess = 0;
    r.output.data.forEach((g, i) => {
      const w = c.output.values[i];
      maxExcess = Math.max(maxExcess, Math.abs(g - w) / (1e-5 + 1e-4 * Math.abs(w)));
    });
    return maxExcess;
  };
  return { inputs, excess };
}

// The page's Workers, counted from here on: the threaded build's pool is one per thread beside the caller.
function countWorkers() {
  const count = { made: 0, live: 0 };
  const Original = globalThis.Worker;
  if (typeof Original !== 'function') return count;
  globalThis.Worker = class extends Original {
    constructor(...args) {
      super(...args);
      count.made += 1;
      count.live += 1;
    }
    terminate() {
      if (!this.ended) count.live -= 1;
      this.ended = true;
      super.terminate();
    }
  };
  return count;
}

// Threads: where the page is isolated the default instance is threaded (its pool's workers started) and a call
// big enough to split (8 problems of 256 queries) gives the same bits as the one-thread build; instances made
// and disposed in a loop leave no worker running. Where the page is not isolated, the default runs on one thread
// and asking for two is refused with the reason.
async function threads(createXattn, xa, workers) {
  const out = { isolated: self.crossOriginIsolated === true, threads: xa.threads, cores: navigator.hardwareConcurrency };
  if (xa.threads > 1) {
    const data = new Float32Array(8 * 256 * 64).map((_, i) => Math.sin(i * 0.37));
    const t = { data, shape: [8, 256, 64] };
    out.poolWorkers = workers.made;
    const split = xa.scaledDotProductAttention(t, t, t).output.data;
    const one = await createXattn({ threads: 1 });
    out.sameBits = split.every((x, i) => Object.is(x, one.scaledDotProductAttention(t, t, t).output.data[i]));
    one.dispose();
    const live = workers.live;
    for (let i = 0; i < 5; i++) {
      const made = await createXattn();
      made.scaledDotProductAttention(t, t, t);
      made.dispose();
    }
    out.workersLeft = workers.live - live;
  }
  if (!out.isolated) {
    out.refused = await createXattn({ threads: 2 }).then(() => 'no error', (e) => String(e.message));
  }
  return out;
}

// The default instance (relaxed SIMD where the engine has it), and the plain SIMD build forced beside it.
export async function check(createXattn) {
  const { inputs, excess } = await lesson();
  const workers = countWorkers();
  const xa = await createXattn();
  const r = xa.scaledDotProductAttention(...inputs, { needWeights: true });
  const plain = await createXattn({ relaxedSimd: false, threads: 1 });
  return { simd: xa.simd, relaxedSimd: xa.relaxedSimd, shape: r.output.shape, maxExcess: excess(r),
    weightsShape: r.weights.shape, plain: { relaxedSimd: plain.relaxedSimd, maxExcess: excess(plain.scaledDotProductAttention(...inputs)) },
    ...(await threads(createXattn, xa, workers)) };
}

// options.wasmPaths as the page's query says: ?base=URL (a base, relative to the page), ?files=URL (a function
// that puts each file under that URL), or nothing (the package's default).
export function wasmPathsFromQuery() {
  const q = new URLSearchParams(location.search);
  if (q.has('base')) return q.get('base');
  if (q.has('files')) return (fileName) => new URL(fileName, new URL(q.get('files'), document.baseURI));
  return undefined;
}

// The same through 'xattn/worker': the page's thread stays free while the worker computes.
export async function checkWorker(createXattnWorker) {
  const { inputs, excess } = await lesson();
  const worker = await createXattnWorker();
  const r = await worker.scaledDotProductAttention(...inputs, { needWeights: true }, { transfer: true });
  const moved = inputs[0].data.length === 0;
  await worker.terminate();
  return { simd: worker.simd, relaxedSimd: worker.relaxedSimd, threads: worker.threads, shape: r.output.shape, maxExcess: excess(r),
    weightsShape: r.weights.shape, moved };
}
`;

export const plainHtml = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<script type="importmap">{ "imports": { "xattn": "./node_modules/xattn/js/browser.js" } }</script>
<script type="module">
  import { createXattn } from 'xattn';
  import { check } from './check.js';
  check(createXattn).then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e) }; });
</script>`;

// A page that computes through 'xattn/worker' (the bare name mapped to the package's browser worker entry).
export const asyncWorkerHtml = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<script type="importmap">{ "imports": { "xattn/worker": "./node_modules/xattn/js/worker.js" } }</script>
<script type="module">
  import { createXattnWorker } from 'xattn/worker';
  import { checkWorker } from './check.js';
  checkWorker(createXattnWorker).then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e) }; });
</script>`;

export const workerHtml = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<script type="module">
  const worker = new Worker(new URL('./worker.js', location.href), { type: 'module' });
  worker.onmessage = (e) => { window.__result = e.data; };
  worker.onerror = (e) => { window.__result = { error: String(e.message) }; };
</script>`;

// Module workers have no import maps: import the package's browser entry by path.
export const workerJs = `
import { createXattn } from './node_modules/xattn/js/browser.js';
import { check } from './check.js';
check(createXattn).then((r) => postMessage(r), (e) => postMessage({ error: String(e) }));
`;

// Every JS suite's checks (browser-suites.js) on the default instance: relaxed SIMD in Chromium, threaded
// where the page is isolated.
export const suitesHtml = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<script type="importmap">{ "imports": { "xattn": "./node_modules/xattn/js/browser.js" } }</script>
<script type="module">
  import { createXattn } from 'xattn';
  import { runSuites } from './browser-suites.js';
  const fetchText = async (file) => (await fetch(new URL('./golden/' + file, location.href))).text();
  createXattn().then((xa) => runSuites(xa, fetchText))
    .then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e?.stack ?? e) }; });
</script>`;

// A plain page (the package by an import map) and a page using 'xattn/worker', both given wasmPaths by the query.
const locatedPage = (specifier, file, factory, checkName) => `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<script type="importmap">{ "imports": { "${specifier}": "./node_modules/xattn/js/${file}" } }</script>
<script type="module">
  import { ${factory} } from '${specifier}';
  import { ${checkName}, wasmPathsFromQuery } from './check.js';
  const wasmPaths = wasmPathsFromQuery();
  ${checkName}((options) => ${factory}({ ...options, wasmPaths }))
    .then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e) }; });
</script>`;
export const locatedHtml = locatedPage('xattn', 'browser.js', 'createXattn', 'check');
export const locatedWorkerHtml = locatedPage('xattn/worker', 'worker.js', 'createXattnWorker', 'checkWorker');

// The package itself on another origin (a CDN), given by ?package=URL of its folder: createXattn and xattn/worker
// as they are, no wasmPaths.
export const cdnPackageHtml = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<script type="module">
  import { check, checkWorker } from './check.js';
  const pkg = new URLSearchParams(location.search).get('package');
  Promise.all([import(pkg + 'js/browser.js'), import(pkg + 'js/worker.js')])
    .then(([main, worker]) => Promise.all([check(main.createXattn), checkWorker(worker.createXattnWorker)]))
    .then(([main, worker]) => { window.__result = { ...main, worker }; }, (e) => { window.__result = { error: String(e) }; });
</script>`;

// An esbuild bundle: esbuild leaves new URL('../dist/…', import.meta.url) as it is, pointing beside the bundle,
// where no .wasm is; the page says where the files are by its query.
export const esbuildHtml = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<script type="module" src="./app/main.js"></script>`;

export const esbuildMain = `
import { createXattn } from 'xattn';
import { check, wasmPathsFromQuery } from './check.js';
const wasmPaths = wasmPathsFromQuery();
check((options) => createXattn({ ...options, wasmPaths }))
  .then((r) => { window.__result = r; }, (e) => { window.__result = { error: String(e) }; });
`;

export const viteHtml = `<!doctype html>
<meta charset="utf-8">
<link rel="icon" href="data:,">
<script type="module" src="./main.js"></script>`;

export const viteMain = `
import createXattn from 'xattn';
import { createXattnWorker } from 'xattn/worker';
import { check, checkWorker } from './check.js';
Promise.all([check(createXattn), checkWorker(createXattnWorker)])
  .then(([main, worker]) => { window.__result = { ...main, worker }; }, (e) => { window.__result = { error: String(e) }; });
`;


// Run with --experimental-wasm-relaxed-simd: the relaxed builds, one thread and two, beside the plain ones.
export const esmScript = (goldenUrl) => `
import createXattn, { createXattn as named } from 'xattn';
import { loadCases, mismatch, tensor } from '${goldenUrl}';
if (createXattn !== named) throw new Error('default and named exports differ');
const c = loadCases('sdpa.txt').find((x) => x.name === 'lesson_example_4x10x64');
for (const options of [{ simd: true, relaxedSimd: false, threads: 1 }, { simd: false }, { relaxedSimd: false, threads: 2 },
  { threads: 4 }, { relaxedSimd: true, threads: 1 }, { relaxedSimd: true, threads: 2 }]) {
  const xa = await createXattn(options);
  if (xa.threads !== (options.threads ?? 1)) throw new Error('ESM ' + JSON.stringify(options) + ': threads ' + xa.threads);
  if (xa.relaxedSimd !== (options.relaxedSimd ?? options.simd !== false)) throw new Error('ESM ' + JSON.stringify(options) + ': relaxedSimd ' + xa.relaxedSimd);
  const r = xa.scaledDotProductAttention(tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value));
  const bad = mismatch(r.output, c.tensors.output);
  if (bad) throw new Error('ESM ' + JSON.stringify(options) + ': ' + bad);
}
// Ending at all shows the threaded instances' worker threads let Node exit.
console.log('esm ok');
`;

// Run without the flag: Node 20 then falls back to the plain SIMD build.
export const cjsScript = (goldenPath) => `
const createXattn = require('xattn');
if (typeof createXattn !== 'function' || createXattn.createXattn !== createXattn || createXattn.default !== createXattn) {
  throw new Error('require("xattn") is not the createXattn factory');
}
(async () => {
  const { loadCases, mismatch, tensor } = await import(${JSON.stringify(goldenPath)});
  const c = loadCases('sdpa.txt').find((x) => x.name === 'causal_L_lt_S_bottom_right');
  for (const options of [{ simd: false }, { threads: 3 }]) {
    const xa = await createXattn.createXattn(options);
    if (xa.threads !== (options.threads ?? 1)) throw new Error('CJS: threads ' + xa.threads);
    if (xa.relaxedSimd !== false) throw new Error('CJS: relaxed SIMD without --experimental-wasm-relaxed-simd');
    const r = xa.scaledDotProductAttention(tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value),
      { isCausal: true, causalAlignment: 'bottom-right', needWeights: true });
    const bad = mismatch(r.weights, c.tensors.weights);
    if (bad) throw new Error('CJS: ' + bad);
  }
  console.log('cjs ok');
})().catch((e) => { console.error(e); process.exitCode = 1; });
`;

// 'xattn/worker' from Node: the lesson's example in a worker_threads Worker; the script never terminates the
// worker, so it ending at all shows an idle worker lets Node exit.
export const workerEsmScript = (goldenUrl) => `
import { createXattnWorker } from 'xattn/worker';
import { loadCases, mismatch, tensor } from '${goldenUrl}';
const c = loadCases('sdpa.txt').find((x) => x.name === 'lesson_example_4x10x64');
const worker = await createXattnWorker({ threads: 2 });
if (worker.threads !== 2) throw new Error('worker ESM: threads ' + worker.threads);
const r = await worker.scaledDotProductAttention(tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value), { needWeights: true });
const bad = mismatch(r.output, c.tensors.output) || mismatch(r.weights, c.tensors.weights);
if (bad) throw new Error('worker ESM: ' + bad);
console.log('worker esm ok');
`;

export const workerCjsScript = (goldenPath) => `
const { createXattnWorker } = require('xattn/worker');
(async () => {
  const { loadCases, mismatch, tensor } = await import(${JSON.stringify(goldenPath)});
  const c = loadCases('sdpa.txt').find((x) => x.name === 'lesson_example_4x10x64');
  const worker = await createXattnWorker({ simd: false });
  const r = await worker.scaledDotProductAttention(tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value));
  const bad = mismatch(r.output, c.tensors.output);
  if (bad) throw new Error('worker CJS: ' + bad);
  console.log('worker cjs ok');
})().catch((e) => { console.error(e); process.exitCode = 1; });
`;

// A project whose deploy moved the package's .wasm files and pthread worker scripts out of node_modules into
// ./assets (the threaded builds' CommonJS glues are copied there too: the package requires its own, and the pthread
// workers read the one beside their script). Without wasmPaths createXattn names the missing file; with a
// directory or a function it computes the lesson, on one thread and on two, and so does 'xattn/worker'.
export const movedEsmScript = (goldenUrl) => `
import createXattn from 'xattn';
import { createXattnWorker } from 'xattn/worker';
import { loadCases, mismatch, tensor } from '${goldenUrl}';
const c = loadCases('sdpa.txt').find((x) => x.name === 'lesson_example_4x10x64');
const inputs = () => [tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value)];
const missing = /^createXattn: could not load the scalar WebAssembly build: could not read \\/.*\\/node_modules\\/xattn\\/dist\\/xattn-scalar\\.wasm \\(ENOENT\\); if a bundler or a server moved the package's dist files, set options\\.wasmPaths to where they are$/;
await createXattn({ simd: false }).then(() => { throw new Error('loaded without its .wasm'); },
  (e) => { if (!missing.test(e.message)) throw e; });
const asked = [];
const located = (name) => { asked.push(name); return './assets/' + name; };
for (const wasmPaths of ['assets', new URL('./assets/', import.meta.url), located]) {
  for (const options of [{ simd: false }, { simd: true, threads: 1 }, { threads: 2 }]) {
    const xa = await createXattn({ ...options, wasmPaths });
    const what = 'ESM ' + JSON.stringify(options) + ' ' + String(wasmPaths).slice(0, 40);
    if (xa.threads !== (options.threads ?? 1)) throw new Error(what + ': threads ' + xa.threads);
    const bad = mismatch(xa.scaledDotProductAttention(...inputs()).output, c.tensors.output);
    if (bad) throw new Error(what + ': ' + bad);
  }
}
const want = ['xattn-scalar.wasm', 'xattn-simd.wasm', 'xattn-simd-threads.wasm', 'xattn-simd-threads-node.worker.cjs', 'xattn-simd-threads-node.cjs'];
if (asked.join() !== want.join()) throw new Error('the function was asked for ' + asked.join());
const worker = await createXattnWorker({ threads: 2, wasmPaths: (name) => new URL('./assets/' + name, import.meta.url) });
const r = await worker.scaledDotProductAttention(...inputs());
const bad = mismatch(r.output, c.tensors.output);
if (bad || worker.threads !== 2) throw new Error('worker: ' + (bad || 'threads ' + worker.threads));
await worker.terminate();
console.log('moved esm ok');
`;

export const movedCjsScript = (goldenPath) => `
const { join } = require('node:path');
const { createXattn } = require('xattn');
const { createXattnWorker } = require('xattn/worker');
(async () => {
  const { loadCases, mismatch, tensor } = await import(${JSON.stringify(goldenPath)});
  const c = loadCases('sdpa.txt').find((x) => x.name === 'lesson_example_4x10x64');
  const inputs = () => [tensor(c.tensors.query), tensor(c.tensors.key), tensor(c.tensors.value)];
  for (const wasmPaths of [join(__dirname, 'assets'), (name) => join(__dirname, 'assets', name)]) {
    const xa = await createXattn({ threads: 2, wasmPaths });
    const bad = mismatch(xa.scaledDotProductAttention(...inputs()).output, c.tensors.output);
    if (bad || xa.threads !== 2) throw new Error('CJS: ' + (bad || 'threads ' + xa.threads));
  }
  const worker = await createXattnWorker({ simd: false, wasmPaths: 'assets' });
  const bad = mismatch((await worker.scaledDotProductAttention(...inputs())).output, c.tensors.output);
  if (bad) throw new Error('CJS worker: ' + bad);
  await worker.terminate();
  console.log('moved cjs ok');
})().catch((e) => { console.error(e); process.exitCode = 1; });
`;

// What the README's examples need from Node's types (a TypeScript user has @types/node; this test installs nothing).
export const nodeShim = `declare module 'node:fs/promises' {
  export function readFile(path: string): Promise<Uint8Array>;
}
`;
