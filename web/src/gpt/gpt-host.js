// The "Build a GPT" Worker's protocol (PROTOCOL.md), apart from the Worker itself: createGptHost(post, load) gives
// a handler of requests that answers through post(message, transfer). gpt-worker.js wires it to the Worker's
// messages; the tests drive it in Node. Training runs in an async loop that yields to the event loop after every
// step, so the requests that arrive meanwhile (pause, setProbe, generate, export, …) are handled between steps.
import { GptRun, checkCorpus } from './gpt-run.js';
import { makeCorpus } from './corpus.js';
import { stageOf } from './course.js';
import { Sampler, makeDecoder } from './generate.js';
import { readModel, writeModel } from './checkpoint.js';

const PROGRESS_MS = 100;        // progress at most ~10 times a second
const SAMPLE_CHARS = 120;       // the sample sent with each evaluation

// A macrotask without setTimeout's clamping (nested timeouts wait ≥ 4 ms in browsers): a message to ourselves.
function yieldToEvents() {
  if (typeof MessageChannel === 'undefined') return new Promise((resolve) => setTimeout(resolve, 0));
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}

const now = () => performance.now();

// post(message, transfer?) sends a reply; load(threads) → Promise of the package (createXattn({ threads })).
export function createGptHost(post, load) {
  let xa = null;
  let xaThreads;
  let run = null;
  let runId = 0;           // a new init or import replaces the run; loops of an older one stop
  let steps = 0;
  let evalEvery = 100;
  let training = false;    // the loop is running
  let wantPause = false;
  let trainedMs = 0;       // training time of this run (evaluations, samples and pauses not counted)
  let generation = null;   // { stop: boolean, done: Promise } while a generation runs

  function send(message, transfer) {
    post(message, transfer ?? []);
  }

  function describe() {
    return {
      stage: run.stage.id,
      config: { ...run.config, ...run.settings, steps, evalEvery, threads: xa.threads },
    };
  }

  function evaluate() {
    const { trainLoss, valLoss } = run.evaluate();
    send({ type: 'eval', step: run.step, trainLoss, valLoss });
    const layers = run.probeAttention();
    send({ type: 'attention', step: run.step, probe: run.probe, layers }, layers.map((l) => l.weights.buffer));
    send({ type: 'sample', step: run.step, text: run.sample(SAMPLE_CHARS) });
    return valLoss;
  }

  async function train() {
    if (training) {
      wantPause = false;  // a resume before the loop saw the pause: it goes on
      return;
    }
    if (run.step >= steps) {
      send({ type: 'done', step: run.step, valLoss: run.estimate(run.corpus.val), elapsedMs: trainedMs });
      return;
    }
    training = true;
    wantPause = false;
    const mine = runId;
    let lastProgress = -Infinity;
    let since = { step: run.step, ms: 0 };  // since the last progress: steps and their training time
    try {
      while (runId === mine && !wantPause && run.step < steps) {
        // A generation runs alone: training waits for it.
        if (generation) await generation.done;
        if (runId !== mine || wantPause) break;
        const t0 = now();
        const { loss, lr } = run.trainStep();
        const dt = now() - t0;
        trainedMs += dt;
        since.ms += dt;
        const last = run.step >= steps;
        if (now() - lastProgress >= PROGRESS_MS || last) {
          lastProgress = now();
          const taken = run.step - since.step;
          send({
            type: 'progress', step: run.step, steps, trainLoss: loss, lr,
            stepsPerSecond: since.ms > 0 ? (1000 * taken) / since.ms : 0, elapsedMs: trainedMs,
          });
          since = { step: run.step, ms: 0 };
        }
        let valLoss = null;
        if (run.step % evalEvery === 0 || last) valLoss = evaluate();
        if (last) send({ type: 'done', step: run.step, valLoss, elapsedMs: trainedMs });
        await yieldToEvents();
      }
    } finally {
      if (runId === mine) training = false;
    }
    if (runId === mine && wantPause && run.step < steps) send({ type: 'paused', step: run.step });
  }

  async function generateText({ prompt = '', maxNew = 200, temperature = 1, topK = 0, seed = 0 }) {
    if (generation) throw new Error('a generation is already running (send stopGenerate first)');
    if (!Number.isInteger(maxNew) || maxNew < 1) throw new RangeError(`maxNew must be an integer ≥ 1, got ${maxNew}`);
    if (typeof prompt !== 'string') throw new TypeError('prompt must be a string');
    const sampler = new Sampler({ temperature, topK, seed });
    const ids = run.promptIds(prompt);
    let release;
    generation = { stop: false, done: new Promise((resolve) => { release = resolve; }) };
    const decoder = makeDecoder(run.model);
    let text = '';
    const t0 = now();
    try {
      let r = decoder.prompt(ids, { attention: true });
      for (let i = 0; i < maxNew && !generation.stop; i++) {
        const id = sampler.pick(r.logits);
        const char = run.corpus.chars[id];
        text += char;
        send({ type: 'token', index: i, char, attention: r.attention }, r.attention.map((a) => a.weights.buffer));
        if (i + 1 < maxNew) r = decoder.next(id, { attention: true });
        await yieldToEvents();
      }
      const seconds = (now() - t0) / 1000;
      send({ type: 'generated', text, charsPerSecond: seconds > 0 ? text.length / seconds : 0 });
    } finally {
      decoder.dispose();
      generation = null;
      release();
    }
  }

  function replaceRun(next) {
    runId++;
    training = false;
    if (generation) generation.stop = true;
    run?.dispose();
    run = next;
    trainedMs = 0;
  }

  async function ensurePackage(threads) {
    if (xa && threads === xaThreads) return;
    replaceRun(null);
    xa?.dispose();
    xa = null;
    xa = await load(threads);
    xaThreads = threads;
  }

  async function init({ text, stage = 'gpt', seed = 1337, steps: n, evalEvery: every = 100, threads }) {
    if (typeof text !== 'string') throw new TypeError('init: text must be a string');
    const s = stageOf(stage);
    const want = n === undefined ? s.training.maxIters : n;
    if (!Number.isInteger(want) || want < 1) throw new RangeError(`init: steps must be an integer ≥ 1, got ${n}`);
    if (!Number.isInteger(every) || every < 1) throw new RangeError(`init: evalEvery must be an integer ≥ 1, got ${every}`);
    if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff) throw new RangeError(`init: seed must be an integer in [0, 4294967295], got ${seed}`);
    // The text is checked before the package is touched: a refused init leaves the run as it was.
    const corpus = makeCorpus(text);
    checkCorpus(corpus, s.model.blockSize);
    await ensurePackage(threads);
    replaceRun(new GptRun(xa, corpus, { stage, seed }));
    steps = want;
    evalEvery = every;
    send({ type: 'ready', ...describe(), parameterCount: run.model.parameterCount, vocab: run.corpus.chars });
  }

  function importModel({ bytes }) {
    const { model, metadata } = readModel(xa, new Uint8Array(bytes));
    let chars = null;
    try {
      chars = JSON.parse(metadata.vocab ?? 'null');
    } catch {
      chars = null;
    }
    const fits = Array.isArray(chars) && chars.length === run.corpus.chars.length && chars.every((c, i) => c === run.corpus.chars[i]);
    const stage = metadata.stage ?? 'gpt';
    if (!fits) {
      model.dispose();
      throw new RangeError(`import: the file's vocabulary (${Array.isArray(chars) ? `${chars.length} characters` : 'none'}) is not this text's (${run.corpus.chars.length} characters)`);
    }
    const step = Number.isSafeInteger(Number(metadata.step)) ? Number(metadata.step) : 0;
    let next;
    try {
      next = new GptRun(xa, run.corpus, { stage, seed: run.seed, model, step });
    } catch (err) {
      model.dispose();
      throw err;
    }
    replaceRun(next);
    send({ type: 'imported', ...describe(), step });
  }

  const needRun = (type) => {
    if (!run) throw new Error(`${type}: send init first`);
  };

  // An init (or import) in progress: requests that arrive meanwhile wait for it, so a page may send init and then
  // start (or setProbe, generate…) without waiting for ready.
  let settling = Promise.resolve();

  // Handles one request; errors become { type: 'error', message, request }.
  return async function handle(request) {
    const type = request?.type;
    try {
      if (type === 'init') {
        const previous = settling;
        settling = previous.catch(() => {}).then(() => init(request));
        return await settling;
      }
      await settling.catch(() => {});
      if (type === 'dispose') {
        replaceRun(null);
        xa?.dispose();
        xa = null;
        return undefined;
      }
      needRun(type);
      if (type === 'start' || type === 'resume') return await train();
      if (type === 'pause') {
        if (training) wantPause = true;
        else send({ type: 'paused', step: run.step });
        return undefined;
      }
      if (type === 'setProbe') {
        run.setProbe(request.text);
        const layers = run.probeAttention();
        send({ type: 'attention', step: run.step, probe: run.probe, layers }, layers.map((l) => l.weights.buffer));
        return undefined;
      }
      if (type === 'generate') return await generateText(request);
      if (type === 'stopGenerate') {
        if (generation) generation.stop = true;
        return undefined;
      }
      if (type === 'export') {
        const bytes = writeModel(run.model, { chars: run.corpus.chars, stage: run.stage.id, step: run.step }).buffer;
        send({ type: 'exported', bytes }, [bytes]);
        return undefined;
      }
      if (type === 'import') return importModel(request);
      throw new Error(`unknown request ${JSON.stringify(type)}`);
    } catch (err) {
      send({ type: 'error', message: err && err.message ? err.message : String(err), request: type });
      return undefined;
    }
  };
}

