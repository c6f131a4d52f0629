// The "decoding one token at a time" panel: its controls, the decoding Worker (decode-worker.js, through
// the page's WorkerClient) and the views of what each step returns, plus the step-time study, which runs in
// the page's side worker (runTiming) so the page's progress bar and Cancel apply to it. The page's thread
// only reads controls and draws.
import { CancelledError, WorkerClient } from '../worker-client.js';
import { DECODE_CHOICES, DECODE_DEFAULTS, DECODE_SPEEDS, DEFAULT_SPEED, readDecodeSettings } from './decode-settings.js';
import { WeightTriangle } from './decode-rows.js';
import { TriangleView } from './decode-triangle-view.js';
import { StepView } from './decode-step-view.js';
import { DecodeChart } from './decode-chart.js';
import { TIMING_LENGTHS, TIMING_SHAPE } from './decode-timing.js';
import { timingSummary } from './decode-timing-summary.js';

// runTiming(onProgress) → a promise of timeDecodeSteps's result (rejects with CancelledError on Cancel).
export function setupDecodePanel(root, { runTiming }) {
  const $ = (id) => root.querySelector(`#${id}`);
  const form = $('decode-controls');
  const state = {
    ready: false,
    run: 0, // which sequence a step belongs to: a step of a replaced one is dropped
    settings: null,
    full: null, // full causal attention's weights (1, H, T, T), from the Worker
    steps: [], // every step of this run: { t, length, weights, output, diff, … }
    worst: { weights: 0, output: 0 },
    playing: false,
    head: 0,
    lastError: null,
    timing: null,
    timingSummary: null,
  };
  let triangle = null;
  let stepping = null; // the step request in flight
  let timer = null;

  const client = new WorkerClient({
    create: () => new Worker(new URL('./decode-worker.js', import.meta.url), { type: 'module' }),
    onCrash: (message) => showError(`The decoding worker stopped: ${message}`),
  });
  const triangleView = new TriangleView({ canvas: $('decode-canvas'), readout: $('decode-readout'), legend: $('decode-legend') });
  const stepView = new StepView({ cache: $('decode-cache'), shapes: $('decode-shapes'), match: $('decode-match') });
  const chart = new DecodeChart($('decode-chart'));

  const fill = (name, values, selected) => {
    for (const v of values) form.elements[name].append(new Option(String(v), String(v), false, v === selected));
  };
  for (const name of ['H', 'Hkv', 'E', 'T']) fill(name, DECODE_CHOICES[name], DECODE_DEFAULTS[name]);
  form.elements.seed.value = String(DECODE_DEFAULTS.seed);
  for (const v of DECODE_SPEEDS) form.elements.speed.append(new Option(`${v} step${v === 1 ? '' : 's'}/s`, String(v), false, v === DEFAULT_SPEED));

  function showError(message) {
    state.lastError = message;
    $('decode-error').hidden = !message;
    $('decode-error').textContent = message ?? '';
  }

  function syncButtons() {
    const done = state.settings && state.steps.length >= state.settings.T;
    const usable = state.ready && state.settings && !state.lastError;
    $('decode-step').disabled = !usable || state.playing || done;
    $('decode-play').disabled = !usable || (done && !state.playing);
    $('decode-play').textContent = state.playing ? 'Pause' : 'Play';
    $('decode-play').setAttribute('aria-pressed', String(state.playing));
    $('decode-reset').disabled = !usable;
    root.dataset.decoding = state.playing ? 'playing' : 'paused';
  }

  function writeStatus() {
    const s = state.settings;
    if (!s) return;
    const n = state.steps.length;
    const speed = Number(form.elements.speed.value);
    $('decode-status').textContent =
      n === 0
        ? `Ready: ${s.T} positions to decode, the cache empty.`
        : `${state.playing ? `Playing at ${speed} step${speed === 1 ? '' : 's'}/s` : n >= s.T ? 'Done' : 'Paused'}: step ${n - 1} decoded, ` +
          `${n} of ${s.T} positions in the cache.`;
  }

  function draw() {
    if (!state.settings) return;
    triangleView.setData(triangle, state.head);
    stepView.setData(state.settings, state.steps.at(-1) ?? null, state.worst);
    writeStatus();
    syncButtons();
  }

  function writeHeads() {
    const { H, Hkv } = state.settings;
    const select = $('decode-head');
    select.replaceChildren(...Array.from({ length: H }, (_, h) => new Option(`h = ${h} (k/v head ${Math.floor(h / (H / Hkv))})`, String(h))));
    state.head = Math.min(state.head, H - 1);
    select.value = String(state.head);
  }

  // A new sequence from the controls (also what a changed setting does): stops playing, empties the triangle.
  async function configure() {
    pause();
    const raw = Object.fromEntries(['H', 'Hkv', 'E', 'T', 'seed'].map((k) => [k, form.elements[k].value]));
    const { settings, problems } = readDecodeSettings(raw);
    const run = ++state.run;
    if (problems.length) {
      showError(problems.join('; '));
      syncButtons();
      return;
    }
    showError(null);
    try {
      const r = await client.request('configure', settings);
      if (run !== state.run) return;
      Object.assign(state, { settings, full: r.full, steps: [], worst: { weights: 0, output: 0 }, ready: true });
      triangle = new WeightTriangle(settings.H, settings.T);
      writeHeads();
      draw();
    } catch (err) {
      if (run === state.run) showError(`Decoding: ${err.message}`);
      syncButtons();
    }
  }

  // One step: append the next position, attend its query row. Resolves when it is drawn.
  function step() {
    if (stepping || !state.settings || state.steps.length >= state.settings.T) return stepping;
    const run = state.run;
    stepping = client
      .request('step', {})
      .then((s) => {
        if (run !== state.run) return;
        state.steps.push(s);
        triangle.addRow(s.t, s.weights);
        state.worst = { weights: Math.max(state.worst.weights, s.diff.weights), output: Math.max(state.worst.output, s.diff.output) };
        if (state.steps.length >= state.settings.T) pause();
        draw();
      })
      .catch((err) => {
        if (run === state.run) {
          pause();
          showError(`Decoding: ${err.message}`);
        }
      })
      .finally(() => {
        stepping = null;
      });
    return stepping;
  }

  // Play: a step, then a wait so that steps start 1/speed s apart, until Pause or the last position.
  function play() {
    if (state.playing) return;
    state.playing = true;
    syncButtons();
    writeStatus();
    const tick = async () => {
      const started = performance.now();
      await step();
      if (!state.playing) return;
      const wait = Math.max(0, 1000 / Number(form.elements.speed.value) - (performance.now() - started));
      timer = setTimeout(tick, wait);
    };
    tick();
  }

  function pause() {
    clearTimeout(timer);
    timer = null;
    if (!state.playing) return;
    state.playing = false;
    syncButtons();
    writeStatus();
  }

  async function reset() {
    pause();
    const run = ++state.run;
    await client.request('reset', {});
    if (run !== state.run) return;
    state.steps = [];
    state.worst = { weights: 0, output: 0 };
    triangle = new WeightTriangle(state.settings.H, state.settings.T);
    draw();
  }

  async function time() {
    $('decode-time').disabled = true;
    $('decode-timing-note').hidden = true;
    try {
      const result = await runTiming();
      state.timing = result;
      chart.setData(result);
      const summary = timingSummary(result);
      state.timingSummary = summary;
      $('decode-timing-summary').innerHTML = summary.html;
    } catch (err) {
      $('decode-timing-note').hidden = false;
      $('decode-timing-note').textContent = err instanceof CancelledError ? 'Timing cancelled.' : `Timing: ${err.message}`;
    } finally {
      $('decode-time').disabled = false;
    }
  }

  form.addEventListener('submit', (e) => e.preventDefault());
  form.addEventListener('change', (e) => {
    if (e.target.closest('[data-run-setting]')) configure();
    if (e.target.name === 'speed') writeStatus();
  });
  $('decode-step').addEventListener('click', () => step());
  $('decode-play').addEventListener('click', () => (state.playing ? pause() : play()));
  $('decode-reset').addEventListener('click', () => reset());
  $('decode-head').addEventListener('change', (e) => {
    state.head = Number(e.target.value);
    draw();
  });
  $('decode-time').addEventListener('click', () => time());
  const { H, Hkv, E, Ev } = TIMING_SHAPE;
  $('decode-timing-intro').textContent =
    `B = 1, H = ${H} query heads over Hkv = ${Hkv} key/value heads, E = ${E}, Ev = ${Ev}, at cache lengths n = ${TIMING_LENGTHS[0]} … ` +
    `${TIMING_LENGTHS.at(-1)}, in a Worker: (a) the cache, append one position and attend one query row; (b) scaledDotProductAttention ` +
    `with all n keys and values, copied in from JavaScript (the copy from the page's own arrays into that call's tensor is not counted, ` +
    `which favours it). Each point is the median time of repeated steps at that length.`;
  client.ready.then(() => configure(), (err) => showError(`The decoding worker did not start: ${err.message}`));
  syncButtons();

  return {
    get ready() {
      return state.ready;
    },
    get settings() {
      return state.settings;
    },
    get playing() {
      return state.playing;
    },
    get steps() {
      return state.steps;
    },
    get full() {
      return state.full;
    },
    get worst() {
      return state.worst;
    },
    get head() {
      return state.head;
    },
    get lastError() {
      return state.lastError;
    },
    get timing() {
      return state.timing ? { result: state.timing, summary: state.timingSummary, plotted: chart.plotted() } : null;
    },
  };
}
