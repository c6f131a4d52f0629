// The "Build a GPT" chapter: wires the corpus, the course's stages (course-view.js), the model's Worker
// (gpt-client.js) and the views of what it sends (loss curves, every layer and head's attention on the
// probe line, the generated text and what each character attended to). All training and sampling runs in
// the Worker; the page's thread reads controls and draws.
import { download } from '../shared/download.js';
import { AttentionGrid } from './attention-grid.js';
import { CourseView } from './course-view.js';
import { fetchDefaultCorpus, readCorpusFile } from './corpus-source.js';
import { GenerateView } from './generate-view.js';
import { GptCharts } from './gpt-charts.js';
import { GptClient } from './gpt-client.js';
import { readGenerate, readProbe, readSeed, readSteps } from './gpt-fields.js';
import { formatCount, gptStatus, plainMessage } from './gpt-format.js';

const PROBE_REFRESH_MS = 1000;

// stages: the course's, in order: [{ id, title, idea, reference }].
export function setupGptPanel(root, stages) {
  const panel = new GptPanel(root, stages);
  panel.listen();
  // The text (about 1 MB) is fetched when the chapter comes near the screen, not with the page: the lesson
  // above it needs none of it.
  const near = new IntersectionObserver(
    (entries) => {
      if (!entries.some((e) => e.isIntersecting)) return;
      near.disconnect();
      if (panel.state.corpus === null) panel.loadDefaultCorpus();
    },
    { rootMargin: '600px 0px' },
  );
  near.observe(root);
  // What the curves were given, beside the rest of the state, for the page's test hook.
  Object.defineProperty(panel.state, 'chartPoints', { get: () => panel.charts.points, enumerable: true });
  return panel.state;
}

// What the Worker last said and the chapter's own state: the page's test hook reads it.
function newGptState() {
  return {
    phase: 'loading', // loading, idle, starting, training, paused, done
    corpus: null, // { name, source, chars }
    stage: null, // the stage the Worker holds
    config: null,
    parameterCount: null,
    vocab: null,
    step: 0,
    steps: 0,
    trainLoss: null,
    valLoss: null,
    stepsPerSecond: null,
    elapsedMs: null,
    results: {}, // stage id → { valLoss, step, done, running, sample }
    progressReports: 0,
    evals: [],
    attention: null,
    attentionReports: 0,
    attentionSteps: [], // the step of each attention map received
    generating: false,
    generated: null, // { text, charsPerSecond } of the last finished generation
    tokens: 0,
    exported: null, // { filename, bytes }
    imported: null, // { stage, config, step }
    lastError: null,
  };
}

class GptPanel {
  constructor(root, stages) {
    this.root = root;
    this.stages = stages;
    this.titles = new Map(stages.map((s) => [s.id, s.title]));
    this.state = newGptState();
    this.text = null;
    this.probeAt = -Infinity; // when the probe's attention was last asked for
    this.runText = null; // the text the Worker's run was built on (an import is read against its vocabulary)
    this.course = new CourseView({ list: this.$('gpt-stages'), table: this.$('gpt-losses') }, stages, (id) => this.train(id));
    this.charts = new GptCharts(this.$('gpt-chart'));
    this.grid = new AttentionGrid({ grid: this.$('gpt-attention'), legend: this.$('gpt-legend'), readout: this.$('gpt-attention-readout') });
    this.grid.clear('Train a stage with attention to see its weights form here.');
    this.gen = new GenerateView({ output: this.$('gpt-output'), strips: this.$('gpt-strips'), readout: this.$('gpt-hover') });
    this.client = new GptClient({
      ready: (m) => this.onReady(m),
      progress: (m) => this.onProgress(m),
      eval: (m) => this.onEval(m),
      attention: (m) => this.onAttention(m),
      sample: (m) => this.onSample(m),
      paused: (m) => this.onPaused(m),
      done: (m) => this.onDone(m),
      token: (m) => this.onToken(m),
      generated: (m) => this.onGenerated(m),
      exported: (m) => this.onExported(m),
      imported: (m) => this.onImported(m),
      error: (m) => this.onError(m),
    });
    this.draw();
  }

  $(id) {
    return this.root.querySelector(`#${id}`);
  }

  listen() {
    const $ = (id) => this.$(id);
    for (const form of [$('gpt-controls'), $('gpt-generate')]) form.addEventListener('submit', (e) => e.preventDefault());
    $('gpt-pause').addEventListener('click', () => this.client.pause());
    $('gpt-resume').addEventListener('click', () => this.resume());
    $('gpt-probe').addEventListener('change', () => this.sendProbe());
    $('gpt-generate-button').addEventListener('click', () => this.generate());
    $('gpt-stop').addEventListener('click', () => this.client.stopGenerate());
    $('gpt-export').addEventListener('click', () => this.client.exportModel());
    $('gpt-import').addEventListener('change', (e) => this.importFile(e));
    $('gpt-corpus-file').addEventListener('change', (e) => {
      const file = e.target.files[0];
      e.target.value = '';
      if (file) this.useFile(file);
    });
    const zone = $('gpt-corpus');
    zone.addEventListener('dragover', (e) => {
      if (![...e.dataTransfer.types].includes('Files')) return;
      e.preventDefault();
      zone.classList.add('dropping');
    });
    zone.addEventListener('dragleave', () => zone.classList.remove('dropping'));
    zone.addEventListener('drop', (e) => {
      e.preventDefault();
      zone.classList.remove('dropping');
      const file = e.dataTransfer.files[0];
      if (file) this.useFile(file);
    });
  }

  // An error beside the chapter's controls, in words, until the learner's next action.
  showError(message) {
    this.state.lastError = message;
    this.$('gpt-error').hidden = !message;
    this.$('gpt-error').textContent = message ?? '';
  }

  get running() {
    return this.state.phase === 'starting' || this.state.phase === 'training';
  }

  get hasModel() {
    return this.state.stage !== null && this.state.phase !== 'starting';
  }

  draw() {
    const s = this.state;
    this.root.dataset.gpt = s.phase;
    const $ = (id) => this.$(id);
    $('gpt-status').textContent = gptStatus({ ...s, stageTitle: this.titles.get(s.stage) ?? s.stage });
    const bar = $('gpt-progress');
    bar.max = Math.max(1, s.steps);
    bar.value = s.step;
    const busy = this.running || s.generating || !this.text;
    this.course.update(s.results, s.stage, { busy });
    $('gpt-pause').disabled = s.phase !== 'training';
    $('gpt-resume').disabled = s.phase !== 'paused' || s.generating;
    $('gpt-generate-button').disabled = !this.hasModel || this.running || s.generating;
    $('gpt-stop').disabled = !s.generating;
    $('gpt-export').disabled = !this.hasModel || this.running || s.generating;
    $('gpt-import').disabled = this.running || s.generating;
    $('gpt-corpus-file').disabled = this.running || s.generating;
  }

  async loadDefaultCorpus() {
    try {
      this.setCorpus(await fetchDefaultCorpus());
    } catch (e) {
      this.state.phase = 'idle';
      this.showError(`${e.message}. Drop a .txt file on the corpus line to train on it instead.`);
      this.draw();
    }
  }

  async useFile(file) {
    this.showError(null);
    try {
      this.setCorpus(await readCorpusFile(file));
    } catch (e) {
      this.showError(`Corpus: ${e.message}. The text before it is still in use.`);
    }
  }

  setCorpus({ text, name, source }) {
    this.text = text;
    const first = this.state.corpus === null;
    this.state.corpus = { name, source, chars: text.length };
    // Losses on another text say nothing about this one: the table starts again.
    if (!first) this.state.results = {};
    this.$('gpt-corpus-name').textContent = `${name} (${source}), ${formatCount(text.length)} characters, ${formatCount(new Set(text).size)} distinct`;
    if (this.state.phase === 'loading') this.state.phase = 'idle';
    if (!first && this.state.stage !== null) {
      this.$('gpt-io-note').textContent = 'The model on screen learned from the text before: it still writes, and the next Train starts on this one.';
    }
    this.draw();
  }

  // Train button of a stage: a new model of that stage on the corpus, trained from step 0.
  train(stage) {
    const seed = readSeed(this.$('gpt-controls').elements.seed.value);
    const steps = readSteps(this.$('gpt-controls').elements.steps.value);
    const problem = seed.problem ?? steps.problem;
    if (problem) {
      this.showError(problem);
      return;
    }
    this.showError(null);
    const s = this.state;
    Object.assign(s, { phase: 'starting', stage, step: 0, steps: 0, trainLoss: null, valLoss: null, stepsPerSecond: null, elapsedMs: null, evals: [], imported: null });
    s.results[stage] = { valLoss: null, step: 0, done: false, running: true, sample: null };
    this.pendingStart = true;
    this.charts.reset();
    this.grid.clear('Building the model…');
    this.runText = this.text;
    this.client.init({ text: this.text, stage, seed: seed.value, steps: steps.value });
    this.draw();
  }

  resume() {
    this.showError(null);
    this.state.phase = 'training';
    if (this.state.results[this.state.stage]) this.state.results[this.state.stage].running = true;
    this.client.resume();
    this.draw();
  }

  // The probe field, checked against the model's vocabulary and context before it is sent.
  sendProbe() {
    const s = this.state;
    if (!s.vocab) return;
    const probe = readProbe(this.$('gpt-probe').value, s.vocab, s.config?.blockSize ?? Infinity);
    this.$('gpt-probe-error').hidden = !probe.problem;
    this.$('gpt-probe-error').textContent = probe.problem ?? '';
    this.$('gpt-probe-note').textContent = probe.note ?? '';
    if (!probe.problem) {
      this.probeAt = performance.now();
      this.client.setProbe(probe.value);
    }
  }

  generate() {
    const s = this.state;
    const el = this.$('gpt-generate').elements;
    const read = readGenerate({ prompt: el.prompt.value, maxNew: el.maxNew.value, temperature: el.temperature.value, topK: el.topK.value }, s.vocab);
    const seed = readSeed(this.$('gpt-controls').elements.seed.value);
    const problem = read.problem ?? seed.problem;
    if (problem) {
      this.showError(`Generate: ${problem}.`);
      return;
    }
    this.showError(null);
    s.generating = true;
    s.tokens = 0;
    this.gen.reset(read.settings.prompt);
    this.client.generate({ ...read.settings, seed: seed.value });
    this.draw();
  }

  // The Worker reads a model against the text's vocabulary, so with no run yet it first builds one (the last
  // stage of the course, on the corpus) and imports once that is ready.
  async importFile(e) {
    const file = e.target.files[0];
    e.target.value = '';
    if (!file) return;
    this.showError(null);
    const bytes = await file.arrayBuffer();
    if (this.state.stage !== null && this.runText === this.text) {
      this.client.importModel(bytes);
      return;
    }
    const seed = readSeed(this.$('gpt-controls').elements.seed.value);
    this.pendingImport = bytes;
    this.state.phase = 'starting';
    this.state.stage = this.stages.at(-1).id;
    this.runText = this.text;
    this.client.init({ text: this.text, stage: this.state.stage, seed: seed.value ?? 0 });
    this.draw();
  }

  onReady(m) {
    const s = this.state;
    Object.assign(s, { stage: m.stage, config: m.config, parameterCount: m.parameterCount, vocab: m.vocab, steps: m.config.steps });
    this.$('gpt-model').textContent = `${this.titles.get(m.stage) ?? m.stage}: ${formatCount(m.parameterCount)} parameters, a vocabulary of ${m.vocab.length} characters.`;
    this.sendProbe();
    if (this.pendingImport) {
      s.phase = 'idle';
      this.client.importModel(this.pendingImport);
      this.pendingImport = null;
    } else if (this.pendingStart) {
      this.pendingStart = false;
      s.phase = 'training';
      this.client.start();
    }
    this.draw();
  }

  onProgress(m) {
    const s = this.state;
    Object.assign(s, { step: m.step, steps: m.steps, trainLoss: m.trainLoss, stepsPerSecond: m.stepsPerSecond, elapsedMs: m.elapsedMs });
    s.progressReports++;
    if (s.results[s.stage]) s.results[s.stage].step = m.step;
    this.charts.addTrain(m.step, m.trainLoss);
    // The maps as they form: between evaluations (every 100 steps) the probe is asked again now and then, one
    // short forward in the Worker between two steps.
    if (s.phase === 'training' && performance.now() - this.probeAt > PROBE_REFRESH_MS) this.sendProbe();
    this.draw();
  }

  onEval(m) {
    const s = this.state;
    s.valLoss = m.valLoss;
    s.evals.push({ step: m.step, trainLoss: m.trainLoss, valLoss: m.valLoss });
    const r = (s.results[s.stage] ??= { valLoss: null, step: 0, done: false, running: false, sample: null });
    Object.assign(r, { valLoss: m.valLoss, step: m.step });
    this.charts.addVal(m.step, m.valLoss);
    this.draw();
  }

  onAttention(m) {
    this.state.attention = m;
    this.state.attentionReports++;
    this.state.attentionSteps.push(m.step);
    if (m.layers.length) this.grid.setData(m);
    else this.grid.clear('This stage has no attention: each character is predicted from the one before it alone.');
  }

  onSample(m) {
    const r = this.state.results[this.state.stage];
    if (r) r.sample = m.text;
    this.draw();
  }

  onPaused(m) {
    this.state.phase = 'paused';
    this.state.step = m.step;
    const r = this.state.results[this.state.stage];
    if (r) r.running = false;
    this.draw();
  }

  onDone(m) {
    const s = this.state;
    Object.assign(s, { phase: 'done', step: m.step, valLoss: m.valLoss, elapsedMs: m.elapsedMs });
    const r = (s.results[s.stage] ??= { sample: null });
    Object.assign(r, { valLoss: m.valLoss, step: m.step, done: true, running: false });
    this.draw();
  }

  onToken(m) {
    this.state.tokens++;
    this.gen.addToken(m);
  }

  onGenerated(m) {
    this.state.generating = false;
    this.state.generated = { text: m.text, charsPerSecond: m.charsPerSecond };
    // The GPT writes through a KV cache per layer; the early stages run their whole window for each character.
    const how = this.state.stage === 'gpt' ? 'each one a single position through the KV cache of the ones before it' : 'each one from a pass over the window before it';
    this.$('gpt-gen-status').textContent =
      `${formatCount(this.state.tokens)} characters at ${Math.round(m.charsPerSecond)} per second (${how}). ` +
      'Point at a written character (or focus the text and use ← →) to see what it attended to.';
    this.draw();
  }

  onExported(m) {
    const s = this.state;
    const filename = `xattn-gpt-${s.stage}-step${s.step}.safetensors`;
    s.exported = { filename, bytes: m.bytes.byteLength };
    download(m.bytes, filename);
    this.$('gpt-io-note').textContent = `Saved ${filename} (${formatCount(m.bytes.byteLength)} bytes): its tensors carry PyTorch's names; Import loads it back to train on or to write with.`;
    this.draw();
  }

  onImported(m) {
    const s = this.state;
    Object.assign(s, { phase: 'paused', stage: m.stage, config: m.config, step: m.step, imported: { stage: m.stage, config: m.config, step: m.step } });
    s.steps = m.config.steps;
    // The imported model's loss is not known until it trains on: its row starts empty.
    s.results[m.stage] = { valLoss: null, sample: null, step: m.step, done: false, running: false };
    // A new run: its curves start empty, and its attention is drawn on the probe line at once.
    this.charts.reset();
    this.sendProbe();
    this.$('gpt-io-note').textContent = `Imported the model of “${this.titles.get(m.stage) ?? m.stage}”, trained ${m.step} steps: Resume trains it on, Generate writes with it.`;
    this.draw();
  }

  onError({ message, request }) {
    const s = this.state;
    const what = { init: 'Building the model', start: 'Training', resume: 'Training', generate: 'Generate', export: 'Export', import: 'Import', setProbe: 'Probe line' }[request] ?? 'The model';
    this.showError(`${what}: ${plainMessage(message)}`);
    if (request === 'generate' || request === 'stopGenerate') s.generating = false;
    if (request === 'init') {
      this.pendingStart = false;
      this.pendingImport = null;
      if (s.results[s.stage]?.step === 0) delete s.results[s.stage];
      s.stage = null;
      s.phase = 'idle';
    }
    if ((request === 'start' || request === 'resume') && this.running) s.phase = 'paused';
    this.draw();
  }
}

