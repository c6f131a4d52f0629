// The "watch attention learn" panel: wires its form (train-controls.js), the training Worker
// (train-client.js) and the views of what it sends (curves, every head's weights for the probe sequence,
// the pattern found). The page's thread only reads controls and draws; every training step runs in the Worker.
import { download } from '../shared/download.js';
import { DEFAULTS } from './trainer.js';
import { TASKS, patternMatch } from './tasks.js';
import { TrainClient } from './train-client.js';
import { ProbeView } from './probe-view.js';
import { TrainCharts } from './train-charts.js';
import { fillTaskMenu, readPace, readSteps, readTrainSettings, writeTrainSettings } from './train-controls.js';
import { patternHtml, trainStatus } from './train-status.js';

export function setupTrainPanel(root) {
  const panel = new TrainPanel(root);
  listenToControls(panel);
  panel.explain(DEFAULTS.task);
  panel.syncButtons();
  return panel.state;
}

// The form's settings and pace, and the panel's buttons.
function listenToControls(panel) {
  const { form, client } = panel;
  const $ = (id) => panel.$(id);
  form.addEventListener('submit', (e) => e.preventDefault());
  form.addEventListener('change', (e) => {
    if (e.target.closest('[data-run-setting]')) panel.configure();
    if (e.target.name === 'pace' && panel.state.running) client.setPace(readPace(form));
  });
  $('train-start').addEventListener('click', () => panel.start());
  $('train-pause').addEventListener('click', () => client.pause());
  $('train-reset').addEventListener('click', () => panel.configure());
  $('train-export').addEventListener('click', () => client.exportParameters());
  $('train-load').addEventListener('change', (e) => panel.load(e));
}

// What the worker last said, and the panel's own: the page's test hook reads it.
function newTrainState() {
  return {
    run: 0,
    step: 0,
    running: false,
    settings: null,
    evals: [],
    probe: null,
    pattern: null,
    pace: null, // steps per second the worker's run waits by (0: full speed), as the worker last said
    stepsPerSecond: null,
    computeStepsPerSecond: null,
    snapshots: 0,
    ready: false,
    lastError: null,
    refused: null, // a run setting the panel refuses (a bad seed): nothing trains until it is fixed
    loaded: null,
  };
}

// The panel's state and views, and its answers to the learner (configure, start, load) and to the worker's
// messages (the on… methods).
class TrainPanel {
  constructor(root) {
    this.root = root;
    this.form = this.$('train-controls');
    this.state = newTrainState();
    this.charts = new TrainCharts(this.$('train-charts'));
    this.probeView = new ProbeView({ grid: this.$('train-probe'), answer: this.$('train-answer'), legend: this.$('train-legend') });
    fillTaskMenu(this.form);
    this.client = new TrainClient({
      ready: () => this.onReady(),
      snapshot: (m) => this.onSnapshot(m),
      exported: (m) => this.onExported(m),
      loaded: (m) => this.onLoaded(m),
      error: (m) => this.onError(m),
    });
  }

  $(id) {
    return this.root.querySelector(`#${id}`);
  }

  showError(message) {
    this.state.lastError = message;
    this.$('train-error').hidden = !message;
    this.$('train-error').textContent = message ?? '';
  }

  explain(task) {
    const t = TASKS[task];
    this.$('train-explain').innerHTML = `<strong>${t.label}.</strong> ${t.explain} <br /><strong>Pattern to expect:</strong> ${t.pattern}`;
  }

  // Start and Export act on the run on screen, so not while the controls describe another one they refuse.
  syncButtons() {
    const state = this.state;
    this.$('train-start').disabled = !state.ready || state.running || state.refused !== null;
    this.$('train-pause').disabled = !state.running;
    this.$('train-export').disabled = !state.ready || state.running || !state.settings || state.refused !== null;
    this.root.dataset.training = state.running ? 'running' : 'paused';
  }

  draw() {
    this.$('train-status').textContent = trainStatus(this.state);
    this.$('train-pattern').innerHTML = patternHtml(this.state.pattern, this.state.probe?.L);
    this.syncButtons();
  }

  // A new run from the controls (a changed setting, Reset).
  configure() {
    const { problem, settings } = readTrainSettings(this.form);
    this.state.refused = problem;
    this.syncButtons();
    if (problem) {
      this.showError(problem);
      return;
    }
    this.showError(null);
    this.state.loaded = null;
    this.explain(settings.task);
    this.client.configure(settings);
  }

  start() {
    const n = readSteps(this.form);
    if (n.problem) {
      this.showError(n.problem);
      return;
    }
    this.showError(null);
    this.state.running = true;
    this.syncButtons();
    this.client.start(this.state.step + n.value, readPace(this.form));
  }

  async load(e) {
    const file = e.target.files[0];
    e.target.value = '';
    if (!file) return;
    this.showError(null);
    this.client.load(await file.arrayBuffer(), readTrainSettings(this.form).settings);
  }

  // The worker has loaded the package: the run the controls describe can be made.
  onReady() {
    this.state.ready = true;
    this.configure();
  }

  // Each snapshot the worker streams: the run's step, its curves and the probe's weights.
  onSnapshot(m) {
    const state = this.state;
    if (m.run !== state.run) {
      // A new run: its curves start empty.
      state.run = m.run;
      state.evals = [];
      this.charts.reset();
    }
    state.snapshots++;
    Object.assign(state, { step: m.step, running: m.running, settings: m.settings, probe: m.probe, pace: m.pace });
    state.stepsPerSecond = m.stepsPerSecond;
    state.computeStepsPerSecond = m.computeStepsPerSecond;
    state.evals.push(...m.evals);
    state.pattern = patternMatch(m.settings.task, m.probe.weights, m.probe);
    this.charts.add(m.losses, m.evals);
    this.probeView.setData(m.probe, m.settings.task, m.settings.vocab);
    this.draw();
  }

  onLoaded({ settings, step, fromComment }) {
    this.state.loaded = settings;
    this.state.refused = null;
    writeTrainSettings(this.form, settings);
    this.explain(settings.task);
    this.$('train-io-note').textContent =
      `Loaded: trained ${step} steps with seed ${settings.seed}; Start goes on from step ${step} (Adam's running averages and the ` +
      `batches start afresh).` + (fromComment ? '' : ' The file does not say its task and heads: the panel’s are used.');
  }

  onExported({ bytes, filename }) {
    download(bytes, filename);
    this.$('train-io-note').textContent = `Saved ${filename}: np.load it in Python, then {k: torch.from_numpy(v) for k, v in np.load(f).items()} is a state dict.`;
  }

  onError({ message, request }) {
    this.state.running = false;
    this.showError(request === 'load' ? `Load: ${message}` : request === 'export' ? `Export: ${message}` : `Training: ${message}`);
    this.syncButtons();
  }
}
