// One layer of the GPT chapter's model against PyTorch's on the same CPU and threads: the package's
// TransformerEncoderLayer (d_model 128, 4 heads, feed-forward 512, exact GELU, pre-norm, batch first, causal) on a
// (12, 64, 128) batch, its forward alone and a forward that keeps its activations followed by the backward (as the
// GPT trains), beside torch.nn.TransformerEncoderLayer's forward and forward + backward (bench/gpt/layer_torch.py,
// python3-torch on OpenBLAS) and the wasm SIMD peak timed in this process. Rounds alternate between the two sides.
//
//     node --experimental-wasm-relaxed-simd bench/gpt/layer-bench.mjs --threads 2
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createXattn } from 'xattn';
import { median } from '../js/timing.mjs';
import { simdPeakGflops } from '../js/wasm-probes.mjs';

const { values: args } = parseArgs({ options: { threads: { type: 'string', default: '2' }, rounds: { type: 'string', default: '3' } } });
const threads = Number(args.threads);
const B = 12, T = 64, C = 128;
const xa = await createXattn({ threads });
const layer = xa.createTransformerEncoderLayer({ dModel: C, nhead: 4, dimFeedforward: 4 * C, dropout: 0, activation: 'gelu', batchFirst: true, normFirst: true });
const wave = (f) => Float32Array.from({ length: B * T * C }, (_, i) => f(i * 0.37));
const src = { data: wave(Math.sin), shape: [B, T, C] };                                       // (B, T, C)
const gradOutput = { data: wave(Math.cos), shape: [B, T, C] };                                // (B, T, C)
const options = { isCausal: true };

function medianMs(fn, calls = 20, rounds = 5) {
  fn();
  const times = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = performance.now();
    for (let i = 0; i < calls; i++) fn();
    times.push((performance.now() - t0) / calls);
  }
  return median(times);
}
const forward = () => layer.forward(src, options);
const forwardBackward = () => {
  const { saved } = layer.forward(src, { ...options, saveForBackward: true });
  layer.backward(src, gradOutput, { ...options, saved });
};
const torchScript = fileURLToPath(new URL('layer_torch.py', import.meta.url));

const ours = { forward: [], forwardBackward: [] };
const theirs = { forward: [], forwardBackward: [] };
let torchVersion = '';
for (let round = 0; round < Number(args.rounds); round++) {
  ours.forward.push(medianMs(forward));
  ours.forwardBackward.push(medianMs(forwardBackward));
  const t = JSON.parse(execFileSync('/usr/bin/python3', [torchScript, '--threads', String(threads)], { encoding: 'utf8' }));
  theirs.forward.push(t.forwardMs);
  theirs.forwardBackward.push(t.forwardBackwardMs);
  torchVersion = t.torch;
}
// Products of one layer call: in-projection 3C², out-projection C², feed-forward 2·4C² per row, and the causal
// attention's Q·Kᵀ and P·V (about half of T per row) — twice each for the backward's gradients.
const rows = B * T;
const forwardFlops = 2 * rows * (12 * C * C + T * C);
const peak = await simdPeakGflops(threads);
console.log(`One TransformerEncoderLayer (${B}, ${T}, ${C}), 4 heads, feed-forward ${4 * C}, pre-norm GELU, causal; ${xa.threads} thread(s) (xattn ${xa.kernels}, PyTorch ${torchVersion} on OpenBLAS); medians of ${args.rounds} alternating rounds`);
console.log(`wasm SIMD peak on ${threads} thread(s), timed here: ${peak.toFixed(1)} GFLOP/s`);
for (const [what, flops] of [['forward', forwardFlops], ['forwardBackward', 3 * forwardFlops]]) {
  const a = median(ours[what]), b = median(theirs[what]);
  console.log(`${what === 'forward' ? 'forward          ' : 'forward+backward '} xattn ${a.toFixed(2)} ms (${(flops / a / 1e6).toFixed(1)} GFLOP/s, ${((flops / a / 1e6 / peak) * 100).toFixed(0)}% of the peak), PyTorch ${b.toFixed(2)} ms: xattn at ${(b / a).toFixed(2)}× PyTorch's speed`);
}
layer.dispose();
