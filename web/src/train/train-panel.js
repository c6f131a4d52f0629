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
  const $ = (id) => root.querySelector(`#${id}`);
  const form = $('train-controls');
  // What the worker last said, and the panel's own: the page's test hook reads it.
  const state = {
    run: 0,
    step: 0,
    running: false,
    settings: null,
    evals: [],
    probe: null,
    pattern: null,
    stepsPerSecond: null,
    computeStepsPerSecond: null,
    snapshots: 0,
    ready: false,
    lastError: null,
    refused: null, // a run setting the panel refuses (a bad seed): nothing trains until it is fixed
    loaded: null,
  };
  const charts = new TrainCharts($('train-charts'));
  const probeView = new ProbeView({ grid: $('train-probe'), answer: $('train-answer'), legend: $('train-legend') });
  fillTaskMenu(form);

  function showError(message) {
    state.lastError = message;
    $('train-error').hidden = !message;
    $('train-error').textContent = message ?? '';
  }

  function explain(task) {
    const t = TASKS[task];
    $('train-explain').innerHTML = `<strong>${t.label}.</strong> ${t.explain} <br /><strong>Pattern to expect:</strong> ${t.pattern}`;
  }

  // Start and Export act on the run on screen, so not while the controls describe another one they refuse.
  function syncButtons() {
    $('train-start').disabled = !state.ready || state.running || state.refused !== null;
    $('train-pause').disabled = !state.running;
    $('train-export').disabled = !state.ready || state.running || !state.settings || state.refused !== null;
    root.dataset.training = state.running ? 'running' : 'paused';
  }

  function draw() {
    $('train-status').textContent = trainStatus(state);
    $('train-pattern').innerHTML = patternHtml(state.pattern, state.probe?.L);
    syncButtons();
  }

  // A new run from the controls (a changed setting, Reset).
  function configure() {
    const { problem, settings } = readTrainSettings(form);
    state.refused = problem;
    syncButtons();
    if (problem) {
      showError(problem);
      return;
    }
    showError(null);
    state.loaded = null;
    explain(settings.task);
    client.configure(settings);
  }

  // Each snapshot the worker streams: the run's step, its curves and the probe's weights.
  function onSnapshot(m) {
    if (m.run !== state.run) {
      // A new run: its curves start empty.
      state.run = m.run;
      state.evals = [];
      charts.reset();
    }
    state.snapshots++;
    Object.assign(state, { step: m.step, running: m.running, settings: m.settings, probe: m.probe });
    state.stepsPerSecond = m.stepsPerSecond;
    state.computeStepsPerSecond = m.computeStepsPerSecond;
    state.evals.push(...m.evals);
    state.pattern = patternMatch(m.settings.task, m.probe.weights, m.probe);
    charts.add(m.losses, m.evals);
    probeView.setData(m.probe, m.settings.task, m.settings.vocab);
    draw();
  }

  function onLoaded({ settings, step, fromComment }) {
    state.loaded = settings;
    state.refused = null;
    writeTrainSettings(form, settings);
    explain(settings.task);
    $('train-io-note').textContent =
      `Loaded: trained ${step} steps with seed ${settings.seed}; Start goes on from step ${step} (Adam's running averages and the ` +
      `batches start afresh).` + (fromComment ? '' : ' The file does not say its task and heads: the panel’s are used.');
  }

  function onExported({ bytes, filename }) {
    download(bytes, filename);
    $('train-io-note').textContent = `Saved ${filename}: np.load it in Python, then {k: torch.from_numpy(v) for k, v in np.load(f).items()} is a state dict.`;
  }

  function onError({ message, request }) {
    state.running = false;
    showError(request === 'load' ? `Load: ${message}` : request === 'export' ? `Export: ${message}` : `Training: ${message}`);
    syncButtons();
  }

  function start() {
    const n = readSteps(form);
    if (n.problem) {
      showError(n.problem);
      return;
    }
    showError(null);
    state.running = true;
    syncButtons();
    client.start(state.step + n.value, readPace(form));
  }

  async function load(e) {
    const file = e.target.files[0];
    e.target.value = '';
    if (!file) return;
    showError(null);
    client.load(await file.arrayBuffer(), readTrainSettings(form).settings);
  }

  const client = new TrainClient({
    ready() {
      state.ready = true;
      configure();
    },
    snapshot: onSnapshot,
    exported: onExported,
    loaded: onLoaded,
    error: onError,
  });
  form.addEventListener('submit', (e) => e.preventDefault());
  form.addEventListener('change', (e) => {
    if (e.target.closest('[data-run-setting]')) configure();
    if (e.target.name === 'pace' && state.running) client.setPace(readPace(form));
  });
  $('train-start').addEventListener('click', start);
  $('train-pause').addEventListener('click', () => client.pause());
  $('train-reset').addEventListener('click', configure);
  $('train-export').addEventListener('click', () => client.exportParameters());
  $('train-load').addEventListener('change', load);
  explain(DEFAULTS.task);
  syncButtons();
  return state;
}
