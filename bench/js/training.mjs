// Training speed: the SDPA backward against the forward of the same shape, MultiheadAttention's forward and
// backward at E = 512, H = 8, L = S = 256, batch 8 beside PyTorch on one CPU thread (bench/torch_mha.py),
// and masked MultiheadAttention against unmasked. xattn SIMD build, one thread, interleaved medians.
//
// FLOPs: forward 4·B·H·L·S·E (two products), backward 12·B·H·L·S·E (three products of that size: the
// convention bench/README.md states; the fused kernel also recomputes the scores and the forward).
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { makeProblem, normals, shapeText } from './inputs.mjs';
import { loadXattn } from './peers.mjs';
import { warmUpAndInterleave } from './timing.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const MHA_DIMS = { E: 512, H: 8, L: 256, N: 8 };
const tensor = (shape, seed) => ({ data: normals(shape.reduce((n, d) => n * d, 1), seed), shape });

// Per shape: forward and backward GFLOP/s and their ratio.
async function backwardRows(xa, shapes, budgetMs, log) {
  const rows = [];
  for (const dims of shapes) {
    const p = makeProblem(dims, 11);
    const q = { data: p.query.data, shape: [dims.BH, dims.L, dims.E] };
    const k = { data: p.key.data, shape: [dims.BH, dims.S, dims.E] };
    const v = { data: p.value.data, shape: [dims.BH, dims.S, dims.Ev] };
    const dO = tensor([dims.BH, dims.L, dims.Ev], 12);
    const t = await warmUpAndInterleave([
      { key: 'forward', run: () => xa.scaledDotProductAttention(q, k, v) },
      { key: 'backward', run: () => xa.scaledDotProductAttentionGrad(q, k, v, dO) },
    ], { budgetMs });
    const flops = 4 * dims.BH * dims.L * dims.S * dims.E;
    const row = {
      shape: [dims.BH, dims.L, dims.E],
      forward: { ms: t.forward.ms, gflops: flops / (t.forward.ms * 1e6) },
      backward: { ms: t.backward.ms, gflops: (3 * flops) / (t.backward.ms * 1e6) },
    };
    row.ratio = row.backward.gflops / row.forward.gflops;
    log(`  ${shapeText(dims)}: forward ${row.forward.gflops.toFixed(1)}, backward ${row.backward.gflops.toFixed(1)} GFLOP/s (${row.ratio.toFixed(2)}×)`);
    rows.push(row);
  }
  return rows;
}

// PyTorch's figure, when Debian's python3-torch is there.
function torchFigure({ E, H, L, N }) {
  for (const python of ['/usr/bin/python3', 'python3']) {
    const r = spawnSync(python, [path.join(repo, 'bench', 'torch_mha.py'), String(E), String(H), String(L), String(N)],
      { encoding: 'utf8', timeout: 600000 });
    if (r.status === 0) return JSON.parse(r.stdout.trim().split('\n').pop());
  }
  return { unavailable: 'python3 with torch not found (Debian package python3-torch)' };
}

async function mhaFigures(xa, budgetMs, log) {
  const { E, H, L, N } = MHA_DIMS;
  const mha = xa.createMultiheadAttention({ embedDim: E, numHeads: H, initSeed: 1 });
  const x = tensor([L, N, E], 21);
  const dOut = tensor([L, N, E], 22);
  const padding = { data: new Uint8Array(N * L).map((_, i) => (i % L >= L - 32 ? 1 : 0)), shape: [N, L] };
  const t = await warmUpAndInterleave([
    { key: 'forward', run: () => mha.forward(x, x, x, { needWeights: false }) },
    { key: 'forwardBackward', run: () => mha.backward(x, x, x, dOut) },
    { key: 'keyPadding', run: () => mha.forward(x, x, x, { needWeights: false, keyPaddingMask: padding }) },
    { key: 'causal', run: () => mha.forward(x, x, x, { needWeights: false, isCausal: true }) },
  ], { budgetMs });
  mha.dispose();
  // 4 projections of N·L rows (2·E² each per row) and the attention (4·N·L·S·E over the heads).
  const flops = 4 * 2 * N * L * E * E + 4 * N * L * L * E;
  const torch = torchFigure(MHA_DIMS);
  const result = {
    dims: MHA_DIMS,
    forward: { ms: t.forward.ms, gflops: flops / (t.forward.ms * 1e6) },
    forwardBackward: { ms: t.forwardBackward.ms, gflops: (3 * flops) / (t.forwardBackward.ms * 1e6) },
    keyPaddingOverPlain: t.keyPadding.ms / t.forward.ms,
    causalOverPlain: t.causal.ms / t.forward.ms,
    torch,
  };
  log(`  MultiheadAttention E=${E} H=${H} L=S=${L} N=${N}: forward ${t.forward.ms.toFixed(1)} ms, forward + backward ${t.forwardBackward.ms.toFixed(1)} ms`);
  log(`    key padding ${result.keyPaddingOverPlain.toFixed(2)}× and causal ${result.causalOverPlain.toFixed(2)}× the unmasked forward's time (needWeights false)`);
  if (torch.unavailable) log(`    PyTorch: ${torch.unavailable}`);
  else log(`    PyTorch ${torch.torch} CPU, ${torch.threads} thread, BLAS ${torch.blas.join(', ') || 'none loaded'}: forward ${torch.forwardMs.toFixed(1)} ms, forward + backward ${torch.forwardBackwardMs.toFixed(1)} ms`);
  return result;
}

// Memory of masked MHA without weights does not grow with L·S: one head-wide call at L = S = 4096 in a
// fresh instance, where a per-head float mask alone would take N·H·L·S·4 = 256 MiB.
async function maskedMemory(log) {
  const xa = await loadXattn(true);
  const E = 64, H = 4, L = 4096;
  const mha = xa.createMultiheadAttention({ embedDim: E, numHeads: H });
  const x = tensor([L, 1, E], 31);
  const padding = { data: new Uint8Array(L).map((_, i) => (i >= L - 100 ? 1 : 0)), shape: [1, L] };
  mha.forward(x, x, x, { needWeights: false, keyPaddingMask: padding, isCausal: true });
  const bytes = xa.memoryBytes();
  mha.dispose();
  log(`  masked MultiheadAttention (key padding + causal, needWeights false) at L = S = ${L}, E = ${E}, H = ${H}: memory ${(bytes / 2 ** 20).toFixed(1)} MiB (a per-head (L, S) mask alone: ${(H * L * L * 4 / 2 ** 20).toFixed(0)} MiB)`);
  return { L, E, H, memoryBytes: bytes };
}

export async function measureTraining(shapes, { budgetMs = 6000, log = () => {} } = {}) {
  const xa = await loadXattn(true);
  log('training: xattn SIMD, one thread');
  const backward = await backwardRows(xa, shapes, budgetMs, log);
  const mha = await mhaFigures(xa, budgetMs, log);
  const memory = await maskedMemory(log);
  return { backward, mha, maskedMemory: memory };
}
