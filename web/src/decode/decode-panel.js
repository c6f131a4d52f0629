// The "decoding one token at a time" panel: wires its form, its run (decode-run.js, on the package's
// createXattnWorker: the panel needs nothing but the package's calls, so it uses the package's own worker
// entry), the views of each step and the step-time study. The page's thread only reads controls and draws.
import { createXattnWorker } from 'xattn/worker';
import { fillDecodeControls, playSpeed, readDecodeControls } from './decode-controls.js';
import { DecodeRun } from './decode-run.js';
import { decodeButtons, decodeStatus } from './decode-status.js';
import { TriangleView } from './decode-triangle-view.js';
import { StepView } from './decode-step-view.js';
import { setupTimingPanel } from './decode-timing-panel.js';

// 1 thread: a step attends one query row per head to at most 32 positions (E ≤ 64), far below what the package
// would share between threads, so a threaded instance would only start a pool of Workers that never work,
// beside the page's compute workers.
const DECODE_THREADS = 1;

// runTiming() → a promise of the step-time study's result, run in the page's side worker.
export function setupDecodePanel(root, { runTiming }) {
  const $ = (id) => root.querySelector(`#${id}`);
  const form = $('decode-controls');
  const panel = { ready: false, head: 0, lastError: null, refused: null };
  const triangleView = new TriangleView({ canvas: $('decode-canvas'), readout: $('decode-readout'), legend: $('decode-legend') });
  const stepView = new StepView({ cache: $('decode-cache'), shapes: $('decode-shapes'), match: $('decode-match') });
  const xa = createXattnWorker({ threads: DECODE_THREADS });
  const run = new DecodeRun(xa, { speed: () => playSpeed(form), onChange: draw, onError: showError });
  fillDecodeControls(form);

  function showError(message) {
    panel.lastError = message;
    $('decode-error').hidden = !message;
    $('decode-error').textContent = message ?? '';
    draw();
  }

  function draw() {
    const buttons = decodeButtons(run, panel.refused);
    $('decode-step').disabled = !buttons.step;
    $('decode-play').disabled = !buttons.play;
    $('decode-reset').disabled = !buttons.reset;
    $('decode-play').textContent = run.playing ? 'Pause' : 'Play';
    $('decode-play').setAttribute('aria-pressed', String(run.playing));
    root.dataset.decoding = run.playing ? 'playing' : 'paused';
    $('decode-status').textContent = decodeStatus(run, playSpeed(form), panel.refused);
    triangleView.setData(run.triangle, panel.head);
    stepView.setData(run.settings, run.steps.at(-1) ?? null, run.worst);
  }

  function writeHeads() {
    const { H, Hkv } = run.settings;
    const select = $('decode-head');
    select.replaceChildren(...Array.from({ length: H }, (_, h) => new Option(`h = ${h} (k/v head ${Math.floor(h / (H / Hkv))})`, String(h))));
    panel.head = Math.min(panel.head, H - 1);
    select.value = String(panel.head);
  }

  // A new sequence from the controls; refused settings leave the panel empty, saying why.
  async function configure() {
    const { settings, problems } = readDecodeControls(form);
    if (problems.length) {
      panel.refused = problems.join('; ');
      showError(panel.refused);
      await run.configure(null);
      return;
    }
    await run.configure(settings);
    if (run.settings !== settings) return; // replaced meanwhile, or it failed (its error is shown)
    panel.refused = null;
    showError(null);
    panel.ready = true;
    writeHeads();
    draw();
  }

  form.addEventListener('submit', (e) => e.preventDefault());
  form.addEventListener('change', (e) => {
    if (e.target.closest('[data-run-setting]')) configure();
    if (e.target.name === 'speed') draw();
  });
  $('decode-step').addEventListener('click', () => run.step());
  $('decode-play').addEventListener('click', () => (run.playing ? run.pause() : run.play()));
  $('decode-reset').addEventListener('click', () => run.reset());
  $('decode-head').addEventListener('change', (e) => {
    panel.head = Number(e.target.value);
    draw();
  });
  const timing = setupTimingPanel(root, runTiming);
  xa.then(() => configure(), (err) => showError(`The decoding worker did not start: ${err.message}`));
  draw();

  // The page's test hook: settings, every step (its row of weights and its |Δ| from full attention), full
  // causal attention's weights, playing, and the last step-time study with what its chart was given.
  return {
    get ready() {
      return panel.ready;
    },
    get settings() {
      return run.settings;
    },
    get playing() {
      return run.playing;
    },
    get steps() {
      return run.steps;
    },
    get full() {
      return run.session?.full.weights ?? null;
    },
    get worst() {
      return run.worst;
    },
    get head() {
      return panel.head;
    },
    get lastError() {
      return panel.lastError;
    },
    get timing() {
      return timing.timing;
    },
  };
}
