// "Multi-head attention, step by step": wires the walk's form, its computation on the package's
// createXattnWorker (the walk needs nothing but the package's calls, so it uses the package's own worker
// entry) and its views. The first example is the one checked against torch.nn.MultiheadAttention.
import { createXattnWorker } from 'xattn/worker';
import { WALK_CHOICES, WALK_DEFAULTS, readWalkSettings } from './walk-settings.js';
import { computeWalk } from './walk.js';
import { WalkView, renderWalkTrace } from './walk-view.js';

// 1 thread: the walk's calls are a few hundred multiplications; a threaded instance would only start Workers.
const WALK_THREADS = 1;

export function setupWalkPanel(root) {
  const $ = (id) => root.querySelector(`#${id}`);
  const form = $('walk-controls');
  const state = { ready: false, walk: null, b: 0, lastError: null, runs: 0 };
  const view = new WalkView({ maps: $('walk-maps'), weightsBox: $('walk-weights'), match: $('walk-match') });
  const xa = createXattnWorker({ threads: WALK_THREADS });

  for (const [name, values] of Object.entries(WALK_CHOICES)) {
    for (const v of values) form.elements[name].append(new Option(String(v), String(v), false, v === WALK_DEFAULTS[name]));
  }
  form.elements.seed.value = String(WALK_DEFAULTS.seed);

  function showError(message) {
    state.lastError = message;
    $('walk-error').hidden = !message;
    $('walk-error').textContent = message ?? '';
    root.toggleAttribute('data-stale', Boolean(message) && state.walk !== null);
  }

  function writeBatchMenu(B) {
    const select = $('walk-b');
    select.replaceChildren(...Array.from({ length: B }, (_, b) => new Option(`b = ${b}`, String(b))));
    state.b = Math.min(state.b, B - 1);
    select.value = String(state.b);
  }

  async function run() {
    const raw = Object.fromEntries(['B', 'L', 'E', 'H', 'seed'].map((k) => [k, form.elements[k].value]));
    const { settings, problems } = readWalkSettings(raw);
    const mine = ++state.runs;
    if (problems.length) {
      showError(problems.join('; '));
      return;
    }
    renderWalkTrace($('walk-trace').querySelector('tbody'), settings);
    try {
      const walk = await computeWalk(await xa, settings);
      if (mine !== state.runs) return;
      showError(null);
      state.walk = walk;
      state.ready = true;
      writeBatchMenu(settings.B);
      view.setData(walk, state.b);
    } catch (err) {
      if (mine === state.runs) showError(`Multi-head walk: ${err.message}`);
    }
  }

  form.addEventListener('submit', (e) => e.preventDefault());
  form.addEventListener('change', (e) => {
    if (e.target.id === 'walk-b') {
      state.b = Number(e.target.value);
      if (state.walk) view.setData(state.walk, state.b);
    } else run();
  });
  xa.then(run, (err) => showError(`The multi-head walk's worker did not start: ${err.message}`));

  // The page's test hook: the walk on screen (its settings, every step, the module's results and the gap).
  return state;
}
