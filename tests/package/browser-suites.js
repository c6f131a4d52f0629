// The JS suites' checks, run in a browser page on one instance (the package test serves this file beside the
// fixtures, golden-cases.mjs, test-data.mjs and the float64 reference attention-reference.js): every sdpa,
// MultiheadAttention and SDPA gradient fixture against PyTorch, the kernels against the float64 reference around vector widths and key tiles with
// masks and the NaN rules, KV cache decoding against SDPA, and float16 I/O with Float16Array tensors (a class
// Chromium has and Node 20 lacks: tests/js/float16-arrays.mjs). Resolves to { build, counts, failures }; the
// tolerances are the Node suites' own.
import { attentionReference as reference } from './attention-reference.js';
import { float16ArrayProblems } from './float16-arrays.mjs';
import { randomTensor, farFrom, uniform } from './test-data.mjs';
import {
  gradMismatch, mhaConfig, mhaOptions, mhaParameters, mismatch, parseCases, sdpaGradOptions, sdpaOptions, tensor,
} from './golden-cases.mjs';

export async function runSuites(xa, fetchText) {
  const failures = [];
  const counts = {};
  const check = (suite, problem) => {
    counts[suite] = (counts[suite] ?? 0) + 1;
    if (problem) failures.push(`${suite}: ${problem}`);
  };
  const cases = async (file) => parseCases(await fetchText(file), file);

  for (const c of await cases('sdpa.txt')) {
    const t = c.tensors;
    const r = xa.scaledDotProductAttention(tensor(t.query), tensor(t.key), tensor(t.value), sdpaOptions(c));
    const bad = mismatch(r.output, t.output) || (t.weights ? mismatch(r.weights, t.weights) : '');
    check('sdpa fixtures', bad && `${c.name}: ${bad}`);
  }
  for (const c of await cases('mha.txt')) {
    const t = c.tensors;
    const mha = xa.createMultiheadAttention(mhaConfig(c));
    try {
      mha.setParameters(mhaParameters(c));
      const r = mha.forward(tensor(t.query), tensor(t.key), tensor(t.value), mhaOptions(c));
      const bad = mismatch(r.output, t.output) || (t.weights ? mismatch(r.weights, t.weights) : '');
      check('mha fixtures', bad && `${c.name}: ${bad}`);
    } finally {
      mha.dispose();
    }
  }
  for (const c of await cases('sdpa_grad.txt')) {
    const t = c.tensors;
    const r = xa.scaledDotProductAttentionGrad(tensor(t.query), tensor(t.key), tensor(t.value), tensor(t.grad_output), sdpaGradOptions(c));
    const bad = [[r.output, t.output], [r.gradQuery, t.grad_query], [r.gradKey, t.grad_key], [r.gradValue, t.grad_value]]
      .map(([got, want]) => gradMismatch(got, want)).find(Boolean);
    check('gradient fixtures', bad && `${c.name}: ${bad}`);
  }

  // Kernels against float64: sizes around the 4-lane vectors, 16-query groups and 96-key tiles; a boolean mask
  // with fully masked rows; causal bottom-right; NaN keys and inf / NaN values behind a mask.
  for (const [L, S, E, Ev] of [[1, 1, 1, 1], [3, 5, 7, 2], [17, 97, 3, 5], [33, 193, 65, 67], [65, 290, 64, 64]]) {
    const q = randomTensor([2, L, E], L), k = randomTensor([2, S, E], S), v = randomTensor([2, S, Ev], Ev);
    const want = reference(q, k, v, { scale: 1 / Math.sqrt(E) });
    const r = xa.scaledDotProductAttention(q, k, v, { needWeights: true });
    check('kernels', farFrom(r.output.data, want.output.data, `${L}x${S}x${E}x${Ev} output`) ||
      farFrom(r.weights.data, want.weights.data, `${L}x${S}x${E}x${Ev} weights`));
  }
  {
    const [L, S, E, Ev] = [37, 150, 24, 20];
    const q = randomTensor([1, L, E], 1), k = randomTensor([1, S, E], 2), v = randomTensor([1, S, Ev], 3);
    const next = uniform(4);
    const bools = Uint8Array.from({ length: L * S }, (_, x) => (Math.floor(x / S) % 7 === 3 ? 0 : next() < 0.6 ? 1 : 0));
    const hidden = new Set([5, 64, 97, 129]);
    for (const j of hidden) {
      k.data.fill(NaN, j * E, (j + 1) * E);
      v.data.fill(j % 2 ? Infinity : NaN, j * Ev, (j + 1) * Ev);
      for (let i = 0; i < L; i++) bools[i * S + j] = 0;
    }
    const scale = 1 / Math.sqrt(E);
    const masked = reference(q, k, v, { maskValue: (b, i, j) => (bools[i * S + j] === 1 ? 0 : -Infinity), scale });
    const r = xa.scaledDotProductAttention(q, k, v, { attnMask: { data: bools, shape: [L, S] }, needWeights: true });
    check('kernels', farFrom(r.output.data, masked.output.data, 'masked output') || farFrom(r.weights.data, masked.weights.data, 'masked weights'));
    const finite = (t) => ({ ...t, data: t.data.map((x) => (Number.isFinite(x) ? x : 0)) });
    const causal = reference(q, finite(k), finite(v), { maskValue: (b, i, j) => (j <= i + S - L ? 0 : -Infinity), scale });
    const c = xa.scaledDotProductAttention(q, finite(k), finite(v), { isCausal: true, causalAlignment: 'bottom-right' });
    check('kernels', farFrom(c.output.data, causal.output.data, 'causal bottom-right'));
  }

  // KV cache: a token at a time, GQA 8 query heads over 2, equals SDPA over the whole K and V at each step.
  {
    const B = 2, Hq = 8, Hkv = 2, E = 16, Ev = 12, steps = 24;
    const K = randomTensor([B, Hkv, steps, E], 5), V = randomTensor([B, Hkv, steps, Ev], 6);
    const slice = (t, from, to) => {
      const [b, h, T, D] = t.shape;
      const data = new Float32Array(b * h * (to - from) * D);
      for (let p = 0; p < b * h; p++) data.set(t.data.subarray((p * T + from) * D, (p * T + to) * D), p * (to - from) * D);
      return { data, shape: [b, h, to - from, D] };
    };
    const cache = xa.createKvCache({ batch: B, kvHeads: Hkv, headDim: E, valueDim: Ev, capacity: 32 });
    try {
      for (let s = 0; s < steps; s++) {
        cache.append(slice(K, s, s + 1), slice(V, s, s + 1));
        const q = randomTensor([B, Hq, 1, E], 100 + s);
        const got = cache.attend(q, { isCausal: true }).output.data;
        const want = xa.scaledDotProductAttention(q, slice(K, 0, s + 1), slice(V, 0, s + 1), { enableGqa: true }).output.data;
        check('kv cache steps', farFrom(got, want, `step ${s}`));
      }
    } finally {
      cache.dispose();
    }
  }
  // Float16Array tensors: the same bits as the Uint16Array calls, the float32 call's results rounded once.
  if (typeof Float16Array === 'function') check('float16 arrays', float16ArrayProblems(xa).join('; '));
  return { build: { simd: xa.simd, relaxedSimd: xa.relaxedSimd, threads: xa.threads }, counts, failures };
}
