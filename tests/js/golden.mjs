// Reads the PyTorch-made fixtures in tests/golden/*.txt (format: tests/golden/make_golden.py)
// and turns them into calls of the JS API.
import { readFileSync } from 'node:fs';

import { relaxedSimdSupported } from '../../js/detect.js';

const GOLDEN = new URL('../golden/', import.meta.url);

function parseValue(token) {
  if (token === 'inf') return Infinity;
  if (token === '-inf') return -Infinity;
  if (token === 'nan') return NaN;
  return Number(token);
}

export function loadCases(file) {
  const cases = [];
  let current = null;
  for (const line of readFileSync(new URL(file, GOLDEN), 'utf8').split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const words = line.split(' ');
    const head = words[0];
    if (head === 'case') current = { name: words[1], op: '', opts: {}, tensors: {} };
    else if (head === 'op') current.op = words[1];
    else if (head === 'opt') current.opts[words[1]] = words[2];
    else if (head === 'tensor') {
      const [, name, dtype, rankText] = words;
      const rank = Number(rankText);
      const shape = words.slice(4, 4 + rank).map(Number);
      const values = words.slice(4 + rank).map(parseValue);
      const count = shape.reduce((n, d) => n * d, 1);
      if (values.length !== count) throw new Error(`${file}: ${current.name}.${name} has ${values.length} values, expected ${count}`);
      current.tensors[name] = { dtype, shape, values };
    } else if (head === 'end') cases.push(current);
    else throw new Error(`${file}: unexpected line starting with '${head}'`);
  }
  return cases;
}

export const flag = (c, key) => c.opts[key] === '1';

export function tensor(t) {
  return { data: Float32Array.from(t.values), shape: t.shape };
}

export function mask(t) {
  return t.dtype === 'bool'
    ? { data: Uint8Array.from(t.values), shape: t.shape }
    : { data: Float32Array.from(t.values), shape: t.shape };
}

export function sdpaOptions(c) {
  const o = { needWeights: flag(c, 'need_weights') };
  if (flag(c, 'is_causal')) {
    o.isCausal = true;
    o.causalAlignment = c.opts.causal_alignment === 'bottom_right' ? 'bottom-right' : 'top-left';
  }
  if (c.opts.scale !== undefined) o.scale = Number(c.opts.scale);
  if (flag(c, 'enable_gqa')) o.enableGqa = true;
  if (c.tensors.attn_mask) o.attnMask = mask(c.tensors.attn_mask);
  return o;
}

const CAMEL = {
  in_proj_weight: 'inProjWeight', in_proj_bias: 'inProjBias', q_proj_weight: 'qProjWeight',
  k_proj_weight: 'kProjWeight', v_proj_weight: 'vProjWeight', 'out_proj.weight': 'outProjWeight',
  'out_proj.bias': 'outProjBias', bias_k: 'biasK', bias_v: 'biasV',
};

export function mhaConfig(c) {
  return {
    embedDim: Number(c.opts.embed_dim), numHeads: Number(c.opts.num_heads), kdim: Number(c.opts.kdim),
    vdim: Number(c.opts.vdim), bias: flag(c, 'bias'), batchFirst: flag(c, 'batch_first'),
    addBiasKv: flag(c, 'add_bias_kv'), addZeroAttn: flag(c, 'add_zero_attn'),
  };
}

export function mhaParameters(c) {
  const p = {};
  for (const [name, t] of Object.entries(c.tensors)) {
    if (name.startsWith('param:')) p[CAMEL[name.slice(6)]] = Float32Array.from(t.values);
  }
  return p;
}

export function mhaOptions(c) {
  const o = {
    needWeights: flag(c, 'need_weights'), averageAttnWeights: flag(c, 'average_attn_weights'),
    isCausal: flag(c, 'is_causal'),
  };
  if (c.tensors.key_padding_mask) o.keyPaddingMask = mask(c.tensors.key_padding_mask);
  if (c.tensors.attn_mask) o.attnMask = mask(c.tensors.attn_mask);
  return o;
}

// |got - want| <= 1e-5 + 1e-4·|want|, NaN only where NaN. Returns '' or a description of the worst element.
export function mismatch(got, want) {
  if (JSON.stringify(got.shape) !== JSON.stringify(want.shape)) {
    return `shape ${JSON.stringify(got.shape)} != expected ${JSON.stringify(want.shape)}`;
  }
  if (!(got.data instanceof Float32Array)) return `data is a ${got.data?.constructor?.name}, not a Float32Array`;
  let bad = 0;
  let worst = '';
  let worstExcess = 0;
  want.values.forEach((w, i) => {
    const g = got.data[i];
    if (Number.isNaN(w) && Number.isNaN(g)) return;
    if (!Number.isFinite(w) && g === w) return;
    const err = Math.abs(g - w);
    const allowed = 1e-5 + 1e-4 * Math.abs(w);
    if (err <= allowed) return;
    bad++;
    const excess = Number.isNaN(err) ? Infinity : err / allowed;
    if (excess >= worstExcess) {
      worstExcess = excess;
      worst = `element ${i}: got ${g}, want ${w}`;
    }
  });
  return bad ? `${bad} of ${want.values.length} differ; worst ${worst}` : '';
}

// The builds every fixture suite runs on: SIMD on one thread, the threaded SIMD build on three (the tasks split
// over more threads than this machine may have cores), the relaxed-SIMD variants of both, and scalar. The
// relaxed ones need an engine with relaxed SIMD: npm test runs Node with --experimental-wasm-relaxed-simd
// (relaxed.test.mjs fails if that flag did not turn it on); a run without it leaves them out.
export const BUILDS = [
  { options: { simd: true, relaxedSimd: false, threads: 1 }, label: 'SIMD' },
  { options: { simd: true, relaxedSimd: false, threads: 3 }, label: 'threaded SIMD (3 threads)' },
  ...(relaxedSimdSupported() ? [
    { options: { simd: true, relaxedSimd: true, threads: 1 }, label: 'relaxed SIMD' },
    { options: { simd: true, relaxedSimd: true, threads: 3 }, label: 'threaded relaxed SIMD (3 threads)' },
  ] : []),
  { options: { simd: false }, label: 'scalar' },
];
