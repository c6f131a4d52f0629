// The "Build a GPT" benchmark: nanoGPT's cheap configuration trained for N steps by the chapter's Worker
// (web/src/gpt/gpt-worker.js) in headless Chromium, on the package's threads, and by PyTorch on the CPU
// (bench/gpt/train_torch.py) for the same steps on the same number of threads, the two in turns of 100 steps.
// Prints both wall times, the time per step and the validation losses at steps 500, 1000, 1500 and 2000 (and at
// the last step).
//
//     npm run bench:gpt                          # 2000 steps, 2 threads
//     npm run bench:gpt -- --steps 20 --threads 1
//     npm run bench:gpt -- --skip-torch          # the browser only
//
// The browser side runs on Vite's dev server (started here as scripts/test-web.sh starts it: a free port, the
// demo's config, cross-origin isolated so the package can use threads); the page is the corpus file itself, so no
// panel of the lab computes beside the Worker. Training time excludes the evaluations on both sides. A shared
// machine makes the figures vary with what else runs.
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { parseArgs } from 'node:util';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { cpuIdentity } from '../js/machine.mjs';
import { simdPeakGflops } from '../js/wasm-probes.mjs';
import { gptSection, withGptSection } from './gpt-results.mjs';
import { GPT_CONFIG } from '../../web/src/gpt/schedule.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const { values: args } = parseArgs({
  options: {
    steps: { type: 'string', default: '2000' },
    threads: { type: 'string', default: '2' },
    seed: { type: 'string', default: '1337' },
    'skip-torch': { type: 'boolean', default: false },
  },
});
const steps = Number(args.steps);
const threads = Number(args.threads);
if (!Number.isInteger(steps) || steps < 1) throw new RangeError(`--steps must be an integer ≥ 1, got ${args.steps}`);
if (!Number.isInteger(threads) || threads < 1 || threads > 4) throw new RangeError(`--threads must be 1 to 4, got ${args.threads}`);

const freePort = () => new Promise((resolve, reject) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const { port } = s.address();
    s.close(() => resolve(port));
  });
  s.on('error', reject);
});

// Vite's dev server on a free port; resolves { url, stop } once it answers.
async function serve() {
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const server = spawn(process.execPath, [path.join(REPO, 'node_modules/vite/bin/vite.js'), '--config', 'web/vite.config.js', '--clearScreen', 'false'], {
      cwd: REPO, env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'],
    });
    const url = `http://127.0.0.1:${port}/`;
    for (let k = 0; k < 120 && server.exitCode === null; k++) {
      const ok = await fetch(url).then((r) => r.ok, () => false);
      if (ok) return { url, stop: () => server.kill() };
      await new Promise((r) => setTimeout(r, 500));
    }
    server.kill();
  }
  throw new Error('bench-gpt: the dev server did not start');
}

// The chapter's Worker in a page of headless Chromium, trained in turns: runUntil(step) trains until the Worker has
// passed that step (it pauses between two steps) or is done, and resolves { step, done }. result() is what the run
// reported; close() ends the browser.
async function startBrowser(url) {
  process.env.XATTN_DEMO_URL = url;
  const { launch } = await import('../../tests/browser/browser.js');
  const browser = await launch();
  const page = await browser.context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.exposeFunction('benchLog', (line) => console.log(`  browser: ${line}`));
  await page.goto(new URL('data/tinyshakespeare.txt', url).href);
  await page.evaluate(async ({ steps, threads, seed }) => {
    const text = await (await fetch('/data/tinyshakespeare.txt')).text();
    const worker = new Worker('/src/gpt/gpt-worker.js', { type: 'module' });
    const bench = { worker, evals: {}, info: { isolated: self.crossOriginIsolated, cores: navigator.hardwareConcurrency }, lastLog: 0, turn: null, failed: null };
    self.__bench = bench;
    await new Promise((resolve, reject) => {
      worker.onerror = (e) => { bench.failed = new Error(`worker: ${e.message}`); reject(bench.failed); };
      worker.onmessage = ({ data: m }) => {
        const turn = bench.turn;
        if (m.type === 'error') {
          bench.failed = new Error(`${m.request}: ${m.message}`);
          reject(bench.failed);
          turn?.reject(bench.failed);
        } else if (m.type === 'ready') {
          Object.assign(bench.info, { parameterCount: m.parameterCount, threads: m.config.threads, config: { ...m.config, vocab: m.vocab.length } });
          self.benchLog(`ready: ${m.parameterCount} parameters, ${m.config.threads} thread(s), cross-origin isolated: ${bench.info.isolated}`);
          resolve();
        } else if (m.type === 'progress') {
          if (m.step - bench.lastLog >= 100 || m.step === steps) {
            bench.lastLog = m.step;
            self.benchLog(`step ${m.step}  train loss ${m.trainLoss.toFixed(4)}  ${(1000 / m.stepsPerSecond).toFixed(1)} ms/step  ${(m.elapsedMs / 1000).toFixed(1)} s of training so far`);
          }
          if (turn && !turn.pausing && m.step >= turn.until) {
            turn.pausing = true;
            worker.postMessage({ type: 'pause' });
          }
        } else if (m.type === 'eval') {
          bench.evals[m.step] = m.valLoss;
          self.benchLog(`step ${m.step}  validation loss ${m.valLoss.toFixed(4)}`);
        } else if (m.type === 'paused') {
          bench.turn = null;
          turn?.resolve({ step: m.step, done: false });
        } else if (m.type === 'done') {
          Object.assign(bench.info, { elapsedMs: m.elapsedMs, step: m.step });
          bench.turn = null;
          turn?.resolve({ step: m.step, done: true });
        }
      };
      worker.postMessage({ type: 'init', text, stage: 'gpt', seed, steps, evalEvery: 500, threads });
    });
  }, { steps, threads, seed: Number(args.seed) });
  return {
    runUntil: (until) => page.evaluate((until) => new Promise((resolve, reject) => {
      const bench = self.__bench;
      if (bench.failed) return reject(bench.failed);
      bench.turn = { until, pausing: false, resolve, reject };
      bench.worker.postMessage({ type: 'resume' });
    }), until),
    async result() {
      if (errors.length) throw new Error(`page errors: ${errors.join('; ')}`);
      return page.evaluate(() => ({ ...self.__bench.info, evals: self.__bench.evals }));
    },
    close: () => browser.close(),
  };
}

// train_torch.py --interleave: runUntil(step) has it train up to that step and resolves the step reached;
// result() is its total training time and validation losses once it has finished.
function startTorch() {
  const py = spawn('/usr/bin/python3', [path.join(REPO, 'bench/gpt/train_torch.py'), '--steps', String(steps), '--threads', String(threads), '--interleave'], { cwd: REPO });
  let out = '';
  let pending = '';
  let waiting = null;
  const closed = new Promise((resolve) => py.on('close', resolve));
  py.stdout.on('data', (d) => {
    out += d;
    pending += d;
    const lines = pending.split('\n');
    pending = lines.pop();
    for (const line of lines) {
      const at = line.match(/^at (\d+)$/);
      if (at) {
        waiting?.resolve(Number(at[1]));
        waiting = null;
      } else if (line.trim()) {
        console.log(`  torch: ${line}`);
      }
    }
  });
  py.stderr.on('data', (d) => process.stderr.write(d));
  closed.then((code) => waiting?.reject(new Error(`train_torch.py exited with ${code}`)));
  const next = () => new Promise((resolve, reject) => { waiting = { resolve, reject }; });
  const started = next();  // its first 'at 0', once the model is built
  // runUntil awaits it; handled here too, so that a run that dies before then (no torch) is not an unhandled
  // rejection, which would end this process before the finally blocks stop the browser and the dev server.
  started.catch(() => {});
  return {
    async runUntil(until) {
      await started;
      const reached = next();
      py.stdin.write(`to ${until}\n`);
      return reached;
    },
    async result() {
      py.stdin.end();
      const code = await closed;
      if (code !== 0) throw new Error(`train_torch.py exited with ${code}`);
      const total = out.match(/(\d+) steps in ([\d.]+) s of training/);
      const evals = {};
      for (const m of out.matchAll(/step +(\d+) +validation loss ([\d.]+)/g)) evals[Number(m[1])] = Number(m[2]);
      return { elapsedMs: total ? 1000 * Number(total[2]) : NaN, evals };
    },
    stop: () => py.kill(),
  };
}

// The two sides take turns of TURN steps, so that both train through the same stretches of a shared host (one
// after the other, a run of several minutes each, the host's speed moved between them by 5% and more).
const TURN = 100;
const server = await serve();
let browser;
let torch = null;
try {
  console.log(`xattn in headless Chromium (the chapter's Worker) ${args['skip-torch'] ? 'alone' : `and PyTorch (bench/gpt/train_torch.py) in turns of ${TURN} steps`}, ${steps} steps, ${threads} thread(s):`);
  const page = await startBrowser(server.url);
  const py = args['skip-torch'] ? null : startTorch();
  try {
    let pageDone = false, torchDone = py === null, torchFailed = null;
    for (let until = TURN; !(pageDone && torchDone); until += TURN) {
      if (!pageDone) pageDone = (await page.runUntil(until)).done;
      if (!torchDone) {
        // A failed PyTorch run (no torch, not OpenBLAS: bench/gpt/setup.sh) still leaves the browser's figures printed.
        torchDone = await py.runUntil(until).then((at) => at >= steps, (err) => {
          torchFailed = err;
          return true;
        });
      }
    }
    browser = await page.result();
    if (py && !torchFailed) torch = await py.result().catch((err) => { torchFailed = err; return null; });
    if (torchFailed) console.error(`PyTorch's side did not run: ${torchFailed.message}`);
  } finally {
    py?.stop();
    await page.close();
  }
} finally {
  server.stop();
}

const marks = [500, 1000, 1500, 2000, steps].filter((s, i, a) => s <= steps && a.indexOf(s) === i);
const row = (name, r) => `${name.padEnd(24)} ${(r.elapsedMs / 1000).toFixed(1).padStart(8)} s ${(r.elapsedMs / steps).toFixed(1).padStart(9)} ms/step  `
  + marks.map((s) => (r.evals[s] === undefined ? '     —' : r.evals[s].toFixed(4).padStart(6))).join('  ');
console.log(`\n${'side'.padEnd(24)} ${'training'.padStart(10)} ${'per step'.padStart(15)}  validation loss at ${marks.join(', ')}`);
console.log(row(`xattn, Chromium, ${browser.threads} thr`, browser));
if (torch) console.log(row(`PyTorch CPU, ${threads} thr`, torch));

// The plain wasm SIMD peak on as many threads as both sides trained on, timed here after the runs.
const peak = await simdPeakGflops(threads);
const section = gptSection({ steps, threads, config: browser.config, browser, torch, peakGflops: peak });
console.log(`\nProducts of a training step: ${(section.flopsPerStep / 1e9).toFixed(2)} GFLOP; wasm SIMD peak on ${threads} thread(s), timed here: ${peak.toFixed(1)} GFLOP/s`);
console.log(`xattn: ${section.xattn.gflops} GFLOP/s, ${section.xattnPercentOfPeak}% of the peak` +
  (section.pytorch ? `; PyTorch: ${section.pytorch.gflops} GFLOP/s; xattn at ${section.speedVsPytorch}× PyTorch's speed; twice PyTorch's would be ${section.twiceTorchPercentOfPeak}% of the peak in products alone` : ''));
// A full run (the configuration's steps on both sides) is the one the performance page shows.
if (steps === GPT_CONFIG.maxIters && torch) {
  const file = path.join(REPO, 'bench/results.json');
  const previous = JSON.parse(readFileSync(file, 'utf8'));
  writeFileSync(file, `${JSON.stringify(withGptSection(previous, cpuIdentity().kind, section), null, 2)}\n`);
  console.log('Written to bench/results.json (npm run docs:perf puts it on docs/performance.md).');
}
