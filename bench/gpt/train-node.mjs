// The chapter's training step in Node: nanoGPT's cheap configuration (the course's 'gpt' stage, web/src/gpt) on
// the package, a few steps on Tiny Shakespeare, and the time per step by the wall clock and by this process's CPU
// time, with the time of one evaluation (model.py's estimate over both splits).
//
//     node --experimental-wasm-relaxed-simd bench/gpt/train-node.mjs            # 20 steps, 1 thread
//     node bench/gpt/train-node.mjs --steps 50 --threads 2 --stage blocks
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { createXattn } from 'xattn';
import { GptRun } from '../../web/src/gpt/gpt-run.js';

const { values: args } = parseArgs({
  options: { steps: { type: 'string', default: '20' }, threads: { type: 'string', default: '1' }, stage: { type: 'string', default: 'gpt' } },
});
const steps = Number(args.steps);
const xa = await createXattn({ threads: Number(args.threads) });
const text = readFileSync(new URL('../../web/public/data/tinyshakespeare.txt', import.meta.url), 'utf8');
const run = new GptRun(xa, text, { stage: args.stage, seed: 1337 });
console.log(`xattn ${xa.version} (${xa.kernels}), ${xa.threads} thread(s); stage '${args.stage}', ${run.model.parameterCount} parameters, batch ${run.settings.batchSize} × ${run.config.blockSize}`);
run.trainStep(); // warm-up
const t0 = performance.now();
const cpu0 = process.cpuUsage();
let loss = 0;
for (let i = 0; i < steps; i++) loss = run.trainStep().loss;
const ms = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
console.log(`${steps} steps: ${(ms / steps).toFixed(1)} ms/step by the wall clock, ${((cpu.user + cpu.system) / 1000 / steps).toFixed(1)} ms/step of CPU time (all threads); last batch loss ${loss.toFixed(4)}`);
const t1 = performance.now();
const { trainLoss, valLoss } = run.evaluate();
console.log(`one evaluation (${run.settings.evalBatches} batches on each split): ${(performance.now() - t1).toFixed(0)} ms; train ${trainLoss.toFixed(4)}, validation ${valLoss.toFixed(4)}`);
run.dispose();
