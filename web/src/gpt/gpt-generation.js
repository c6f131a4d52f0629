// The "Build a GPT" host's generation (PROTOCOL.md's generate / stopGenerate): samples characters after a prompt
// with the KV cache, one `token` message each (with the attention that predicted it), then `generated`. While it
// runs, host.generation is { stop, done }: stopGenerate sets stop, and training waits for done.
import { Sampler, makeDecoder } from './generate.js';
import { yieldToEvents } from './yield-to-events.js';

const now = () => performance.now();

function checkRequest({ prompt, maxNew }) {
  if (!Number.isInteger(maxNew) || maxNew < 1) throw new RangeError(`maxNew must be an integer ≥ 1, got ${maxNew}`);
  if (typeof prompt !== 'string') throw new TypeError('prompt must be a string');
}

// host: the GptHost (its run, send and generation); resolves when the text is generated or stopped.
export async function generateText(host, { prompt = '', maxNew = 200, temperature = 1, topK = 0, seed = 0 }) {
  if (host.generation) throw new Error('a generation is already running (send stopGenerate first)');
  checkRequest({ prompt, maxNew });
  const { run } = host;
  const sampler = new Sampler({ temperature, topK, seed });
  const ids = run.promptIds(prompt);
  let release;
  const generation = { stop: false, done: new Promise((resolve) => { release = resolve; }) };
  host.generation = generation;
  const decoder = makeDecoder(run.model);
  try {
    const t0 = now();
    const text = await sampleTokens(host, { decoder, sampler, ids, maxNew, generation });
    const seconds = (now() - t0) / 1000;
    host.send({ type: 'generated', text, charsPerSecond: seconds > 0 ? text.length / seconds : 0 });
  } finally {
    decoder.dispose();
    host.generation = null;
    release();
  }
}

// Up to maxNew characters, each sent as it is picked; returns them as one string.
async function sampleTokens(host, { decoder, sampler, ids, maxNew, generation }) {
  const chars = host.run.corpus.chars;
  let text = '';
  let r = decoder.prompt(ids, { attention: true });
  for (let i = 0; i < maxNew && !generation.stop; i++) {
    const id = sampler.pick(r.logits);
    text += chars[id];
    host.send({ type: 'token', index: i, char: chars[id], attention: r.attention }, r.attention.map((a) => a.weights.buffer));
    if (i + 1 < maxNew) r = decoder.next(id, { attention: true });
    await yieldToEvents();
  }
  return text;
}
