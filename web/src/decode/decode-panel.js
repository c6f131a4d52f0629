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
  const panel = new DecodePanel(root);
  listenToControls(panel);
  const timing = setupTimingPanel(root, runTiming);
  panel.xa.then(() => panel.configure(), (err) => panel.showError(`The decoding worker did not start: ${err.message}`));
  panel.draw();
  return decodeTestHook(panel, timing);
}

// The form's settings and speed, the step / play / reset buttons and the head menu.
function listenToControls(panel) {
  const { form, run } = panel;
  const $ = (id) => panel.$(id);
  form.addEventListener('submit', (e) => e.preventDefault());
  form.addEventListener('change', (e) => {
    if (e.target.closest('[data-run-setting]')) panel.configure();
    if (e.target.name === 'speed') panel.draw();
  });
  $('decode-step').addEventListener('click', () => run.step());
  $('decode-play').addEventListener('click', () => (run.playing ? run.pause() : run.play()));
  $('decode-reset').addEventListener('click', () => run.reset());
  $('decode-head').addEventListener('change', (e) => {
    panel.state.head = Number(e.target.value);
    panel.draw();
  });
}

// The page's test hook: settings, every step (its row of weights and its |Δ| from full attention), full
// causal attention's weights, playing, and the last step-time study with what its chart was given.
function decodeTestHook({ state, run }, timing) {
  return {
    get ready() {
      return state.ready;
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
      return state.head;
    },
    get lastError() {
      return state.lastError;
    },
    get timing() {
      return timing.timing;
    },
  };
}

// The panel's own state beside its run (decode-run.js): the head shown, and what it refuses or failed at.
class DecodePanel {
  constructor(root) {
    this.root = root;
    this.form = this.$('decode-controls');
    this.state = { ready: false, head: 0, lastError: null, refused: null };
    this.triangleView = new TriangleView({ canvas: this.$('decode-canvas'), readout: this.$('decode-readout'), legend: this.$('decode-legend') });
    this.stepView = new StepView({ cache: this.$('decode-cache'), shapes: this.$('decode-shapes'), match: this.$('decode-match') });
    this.xa = createXattnWorker({ threads: DECODE_THREADS });
    this.run = new DecodeRun(this.xa, { speed: () => playSpeed(this.form), onChange: () => this.draw(), onError: (message) => this.showError(message) });
    fillDecodeControls(this.form);
  }

  $(id) {
    return this.root.querySelector(`#${id}`);
  }

  showError(message) {
    this.state.lastError = message;
    this.$('decode-error').hidden = !message;
    this.$('decode-error').textContent = message ?? '';
    this.draw();
  }

  draw() {
    const { run, state } = this;
    const buttons = decodeButtons(run, state.refused);
    this.$('decode-step').disabled = !buttons.step;
    this.$('decode-play').disabled = !buttons.play;
    this.$('decode-reset').disabled = !buttons.reset;
    this.$('decode-play').textContent = run.playing ? 'Pause' : 'Play';
    this.$('decode-play').setAttribute('aria-pressed', String(run.playing));
    this.root.dataset.decoding = run.playing ? 'playing' : 'paused';
    this.$('decode-status').textContent = decodeStatus(run, playSpeed(this.form), state.refused);
    this.triangleView.setData(run.triangle, state.head);
    this.stepView.setData(run.settings, run.steps.at(-1) ?? null, run.worst);
  }

  // One option per query head, saying which key/value head it reads (H / Hkv query heads share one).
  writeHeads() {
    const { H, Hkv } = this.run.settings;
    const select = this.$('decode-head');
    select.replaceChildren(...Array.from({ length: H }, (_, h) => new Option(`h = ${h} (k/v head ${Math.floor(h / (H / Hkv))})`, String(h))));
    this.state.head = Math.min(this.state.head, H - 1);
    select.value = String(this.state.head);
  }

  // A new sequence from the controls; refused settings leave the panel empty, saying why.
  async configure() {
    const { settings, problems } = readDecodeControls(this.form);
    if (problems.length) {
      this.state.refused = problems.join('; ');
      this.showError(this.state.refused);
      await this.run.configure(null);
      return;
    }
    await this.run.configure(settings);
    if (this.run.settings !== settings) return; // replaced meanwhile, or it failed (its error is shown)
    this.state.refused = null;
    this.showError(null);
    this.state.ready = true;
    this.writeHeads();
    this.draw();
  }
}
