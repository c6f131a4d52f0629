// Generation speed of the "Build a GPT" chapter's model in Node: nanoGPT's cheap configuration (bench/gpt/model.py's
// CONFIG) on the package, sampling characters one at a time through the KV cache (web/src/gpt/generate.js).
//
//     node bench/gpt/generate.mjs              # 2000 characters, 1 thread, seeded initial weights
//     node bench/gpt/generate.mjs --chars 500 --threads 2 --weights model.safetensors
//
// Speed does not depend on what the weights learned (every character costs the same work), so untrained weights
// measure it as well as trained ones; --weights takes a file the chapter exported. Prints characters per second,
// with and without the attention weights the chapter draws, by the wall clock and by this process's CPU time (on one
// thread, the second is what a busy shared machine does not take away).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createXattn } from 'xattn';
import { makeCorpus } from '../../web/src/gpt/corpus.js';
import { GPT } from '../../web/src/gpt/model.js';
import { GPT_CONFIG } from '../../web/src/gpt/schedule.js';
import { Decoder, Sampler, generate } from '../../web/src/gpt/generate.js';
import { readModel } from '../../web/src/gpt/checkpoint.js';

const { values: args } = parseArgs({
  options: { chars: { type: 'string', default: '2000' }, threads: { type: 'string', default: '1' }, weights: { type: 'string' } },
});
const xa = await createXattn({ threads: Number(args.threads) });
const corpus = makeCorpus(readFileSync(new URL('../../web/public/data/tinyshakespeare.txt', import.meta.url), 'utf8'));
const c = GPT_CONFIG;
const model = args.weights
  ? readModel(xa, new Uint8Array(readFileSync(args.weights))).model
  : new GPT(xa, { vocab: corpus.chars.length, nLayer: c.nLayer, nHead: c.nHead, nEmbd: c.nEmbd, blockSize: c.blockSize }, { seed: 1 });
const decoder = new Decoder(model);
const n = Number(args.chars);
console.log(`xattn ${xa.version} (${xa.kernels}), ${xa.threads} thread(s); model ${model.config.nLayer} layers, ${model.config.nHead} heads, ${model.config.nEmbd} channels, context ${model.config.blockSize}, ${model.parameterCount} parameters`);
for (const attention of [false, true]) {
  generate(decoder, corpus.encode('\n'), { maxNew: 100, sampler: new Sampler({ seed: 1 }), attention }); // warm-up
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const out = generate(decoder, corpus.encode('\n'), { maxNew: n, sampler: new Sampler({ seed: 2, topK: 10 }), attention });
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  console.log(`${n} characters in ${s.toFixed(2)} s: ${(n / s).toFixed(0)} characters/s${attention ? ' with the attention weights' : ''} `
    + `(${(n / cpuSeconds).toFixed(0)} per second of this process's CPU time)`);
  if (!attention) console.log(`sample: ${JSON.stringify(corpus.decode(out.slice(0, 80)))}`);
}
decoder.dispose();
model.dispose();
