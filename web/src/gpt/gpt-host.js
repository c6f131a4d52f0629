// The "Build a GPT" Worker's protocol (PROTOCOL.md), apart from the Worker itself: createGptHost(post, load) gives
// a handler of requests that answers through post(message, transfer). gpt-worker.js wires it to the Worker's
// messages; the tests drive it in Node. GptHost holds the run and answers each request; the training loop
// (gpt-training.js), generation (gpt-generation.js) and import (gpt-import.js) are in files of their own.
import { GptRun, checkCorpus } from './gpt-run.js';
import { makeCorpus } from './corpus.js';
import { stageOf } from './course.js';
import { writeModel } from './checkpoint.js';
import { train } from './gpt-training.js';
import { generateText } from './gpt-generation.js';
import { importedRun } from './gpt-import.js';

// post(message, transfer?) sends a reply; load(threads) → Promise of the package (createXattn({ threads })).
// Returns handle(request) → a Promise that settles when the request has been answered (training: when it stops).
export function createGptHost(post, load) {
  const host = new GptHost(post, load);
  return (request) => host.handle(request);
}

// The requests that need a run, and their answers (init and dispose come first, in handle).
const ANSWERS = {
  start: (host) => train(host),
  resume: (host) => train(host),
  pause: (host) => host.pause(),
  setProbe: (host, request) => host.setProbe(request.text),
  generate: (host, request) => generateText(host, request),
  stopGenerate: (host) => host.stopGenerate(),
  export: (host) => host.exportModel(),
  import: (host, request) => host.importModel(request),
};

// The checks init makes before anything is touched; returns the number of steps to train.
function checkInit({ text, stage, seed, steps, evalEvery }) {
  if (typeof text !== 'string') throw new TypeError('init: text must be a string');
  const s = stageOf(stage);
  const want = steps === undefined ? s.training.maxIters : steps;
  if (!Number.isInteger(want) || want < 1) throw new RangeError(`init: steps must be an integer ≥ 1, got ${steps}`);
  if (!Number.isInteger(evalEvery) || evalEvery < 1) throw new RangeError(`init: evalEvery must be an integer ≥ 1, got ${evalEvery}`);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError(`init: seed must be an integer in [0, 4294967295], got ${seed}`);
  return want;
}

class GptHost {
  constructor(post, load) {
    this.post = post;
    this.load = load;
    this.xa = null; // the package, loaded for xaThreads threads
    this.xaThreads = undefined;
    this.run = null;
    this.runId = 0; // a new init or import replaces the run; loops of an older one stop
    this.steps = 0;
    this.evalEvery = 100;
    this.training = false; // the loop is running
    this.wantPause = false;
    this.trainedMs = 0; // training time of this run (evaluations, samples and pauses not counted)
    this.generation = null; // { stop: boolean, done: Promise } while a generation runs
    // An init (or import) in progress: requests that arrive meanwhile wait for it, so a page may send init and
    // then start (or setProbe, generate…) without waiting for ready.
    this.settling = Promise.resolve();
  }

  send(message, transfer) {
    this.post(message, transfer ?? []);
  }

  // Handles one request; errors become { type: 'error', message, request }.
  async handle(request) {
    const type = request?.type;
    try {
      if (type === 'init') {
        const previous = this.settling;
        this.settling = previous.catch(() => {}).then(() => this.init(request));
        return await this.settling;
      }
      await this.settling.catch(() => {});
      if (type === 'dispose') return this.dispose();
      if (!this.run) throw new Error(`${type}: send init first`);
      if (!Object.hasOwn(ANSWERS, type)) throw new Error(`unknown request ${JSON.stringify(type)}`);
      return await ANSWERS[type](this, request);
    } catch (err) {
      this.send({ type: 'error', message: err && err.message ? err.message : String(err), request: type });
      return undefined;
    }
  }

  describe() {
    return {
      stage: this.run.stage.id,
      config: { ...this.run.config, ...this.run.settings, steps: this.steps, evalEvery: this.evalEvery, threads: this.xa.threads },
    };
  }

  sendAttention() {
    const layers = this.run.probeAttention();
    this.send({ type: 'attention', step: this.run.step, probe: this.run.probe, layers }, layers.map((l) => l.weights.buffer));
  }

  // Ends the run in progress (its training loop and generation stop) and puts `next` (or none) in its place.
  replaceRun(next) {
    this.runId++;
    this.training = false;
    if (this.generation) this.generation.stop = true;
    this.run?.dispose();
    this.run = next;
    this.trainedMs = 0;
  }

  async ensurePackage(threads) {
    if (this.xa && threads === this.xaThreads) return;
    this.replaceRun(null);
    this.xa?.dispose();
    this.xa = null;
    this.xa = await this.load(threads);
    this.xaThreads = threads;
  }

  async init({ text, stage = 'gpt', seed = 1337, steps, evalEvery = 100, threads }) {
    const want = checkInit({ text, stage, seed, steps, evalEvery });
    // The text is checked before the package is touched: a refused init leaves the run as it was.
    const corpus = makeCorpus(text);
    checkCorpus(corpus, stageOf(stage).model.blockSize);
    await this.ensurePackage(threads);
    this.replaceRun(new GptRun(this.xa, corpus, { stage, seed }));
    this.steps = want;
    this.evalEvery = evalEvery;
    this.send({ type: 'ready', ...this.describe(), parameterCount: this.run.model.parameterCount, vocab: this.run.corpus.chars });
  }

  dispose() {
    this.replaceRun(null);
    this.xa?.dispose();
    this.xa = null;
  }

  pause() {
    if (this.training) this.wantPause = true;
    else this.send({ type: 'paused', step: this.run.step });
  }

  setProbe(text) {
    this.run.setProbe(text);
    this.sendAttention();
  }

  stopGenerate() {
    if (this.generation) this.generation.stop = true;
  }

  exportModel() {
    const { run } = this;
    const bytes = writeModel(run.model, { chars: run.corpus.chars, stage: run.stage.id, step: run.step }).buffer;
    this.send({ type: 'exported', bytes }, [bytes]);
  }

  importModel({ bytes }) {
    const { next, step } = importedRun(this.xa, this.run, bytes);
    this.replaceRun(next);
    this.send({ type: 'imported', ...this.describe(), step });
  }
}
