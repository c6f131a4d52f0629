// The "watch attention learn" panel: its controls, the training Worker (train-client.js) and the views
// of what it sends (curves, every head's weights for the probe sequence, the pattern found). The page's
// thread only reads controls and draws; every training step runs in the Worker.
import { FIELDS, parseField } from '../fields.js';
import { download } from '../io-view.js';
import { formatNumber } from '../shapes.js';
import { DEFAULTS } from './trainer.js';
import { TASKS, patternMatch } from './tasks.js';
import { TrainClient } from './train-client.js';
import { ProbeView } from './probe-view.js';
import { TrainCharts } from './train-charts.js';

const STEPS = { label: 'steps', what: 'steps', kind: 'int', min: 1, max: 100000 };
const pct = (x) => `${(100 * x).toFixed(1)}%`;

export function setupTrainPanel(root) {
  const $ = (id) => root.querySelector(`#${id}`);
  const form = $('train-controls');
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
    loaded: null,
  };
  const charts = new TrainCharts($('train-charts'));
  const probeView = new ProbeView({ grid: $('train-probe'), answer: $('train-answer'), legend: $('train-legend') });

  for (const [name, task] of Object.entries(TASKS)) form.elements.task.append(new Option(task.label, name));
  form.elements.task.value = DEFAULTS.task;

  // The settings the controls say; problems (a bad seed) are shown and stop the run from being replaced.
  function readSettings() {
    const el = form.elements;
    const seed = parseField(FIELDS.seed, el.seed.value);
    return {
      problem: seed.problem ?? null,
      settings: {
        ...DEFAULTS,
        task: el.task.value,
        H: Number(el.H.value),
        E: Number(el.E.value),
        L: Number(el.L.value),
        lr: Number(el.lr.value),
        seed: seed.value,
      },
    };
  }

  function writeSettings(s) {
    const el = form.elements;
    for (const k of ['task', 'H', 'E', 'L', 'lr', 'seed']) el[k].value = String(s[k]);
  }

  function showError(message) {
    state.lastError = message;
    $('train-error').hidden = !message;
    $('train-error').textContent = message ?? '';
  }

  function explain(task) {
    const t = TASKS[task];
    $('train-explain').innerHTML = `<strong>${t.label}.</strong> ${t.explain} <br /><strong>Pattern to expect:</strong> ${t.pattern}`;
  }

  function configure() {
    const { problem, settings } = readSettings();
    if (problem) {
      showError(problem);
      return;
    }
    showError(null);
    state.loaded = null;
    explain(settings.task);
    client.configure(settings);
  }

  function syncButtons() {
    $('train-start').disabled = !state.ready || state.running;
    $('train-pause').disabled = !state.running;
    $('train-export').disabled = !state.ready || state.running || !state.settings;
    root.dataset.training = state.running ? 'running' : 'paused';
  }

  function writeStatus() {
    const last = state.evals.at(-1);
    const speed = state.stepsPerSecond
      ? ` · ${formatNumber(state.stepsPerSecond)} steps/s` +
        (state.computeStepsPerSecond && state.computeStepsPerSecond > 1.5 * state.stepsPerSecond
          ? ` (full speed would be about ${formatNumber(state.computeStepsPerSecond)})`
          : '')
      : '';
    const held = last ? ` · held-out (${last.step === state.step ? 'now' : `step ${last.step}`}): exact sequences ${pct(last.sequence)}, tokens ${pct(last.token)}, loss ${formatNumber(last.loss)}` : '';
    $('train-status').textContent = `${state.running ? 'Training' : 'Paused'} at step ${state.step}${speed}${held}.`;
    const lines = (state.pattern ?? []).map(
      (m) =>
        `<li>${m.role}: head ${m.head} puts ${formatNumber(m.meanWeight)} of each row's weight there on average; ` +
        `it is the row's largest weight in ${m.rowsDominated} of ${state.probe.L} rows.</li>`,
    );
    $('train-pattern').innerHTML = lines.length ? `<p><strong>In the probe's weights now</strong></p><ul>${lines.join('')}</ul>` : '';
  }

  const client = new TrainClient({
    ready() {
      state.ready = true;
      configure();
    },
    snapshot(m) {
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
      writeStatus();
      syncButtons();
    },
    exported({ bytes, filename }) {
      download(bytes, filename);
      $('train-io-note').textContent = `Saved ${filename}: np.load it in Python, then {k: torch.from_numpy(v) for k, v in np.load(f).items()} is a state dict.`;
    },
    loaded({ settings, fromComment }) {
      state.loaded = settings;
      writeSettings(settings);
      explain(settings.task);
      $('train-io-note').textContent =
        `Loaded: trained ${settings.step ?? '?'} steps with seed ${settings.seed}.` +
        (fromComment ? '' : ' The file does not say its task and heads: the panel’s are used.');
    },
    error({ message, request }) {
      state.running = false;
      showError(request === 'load' ? `Load: ${message}` : request === 'export' ? `Export: ${message}` : `Training: ${message}`);
      syncButtons();
    },
  });

  form.addEventListener('submit', (e) => e.preventDefault());
  form.addEventListener('change', (e) => {
    if (e.target.closest('[data-run-setting]')) configure();
  });
  $('train-start').addEventListener('click', () => {
    const n = parseField(STEPS, form.elements.steps.value);
    if (n.problem) {
      showError(n.problem);
      return;
    }
    showError(null);
    state.running = true;
    syncButtons();
    client.start(state.step + n.value, Number(form.elements.pace.value));
  });
  $('train-pause').addEventListener('click', () => client.pause());
  $('train-reset').addEventListener('click', configure);
  $('train-export').addEventListener('click', () => client.exportParameters());
  $('train-load').addEventListener('change', async (e) => {
    const file = e.target.files[0];
    e.target.value = '';
    if (!file) return;
    showError(null);
    const { settings } = readSettings();
    client.load(await file.arrayBuffer(), settings);
  });
  explain(DEFAULTS.task);
  syncButtons();
  return state;
}
