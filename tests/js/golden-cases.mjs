// The PyTorch-made fixtures' format (tests/golden/make_golden.py) and their use through the JS API, with no
// Node import: the Node suites read the files (golden.mjs) and the Chromium suites fetch them
// (tests/package/browser-suites.js).
function parseValue(token) {
  if (token === 'inf') return Infinity;
  if (token === '-inf') return -Infinity;
  if (token === 'nan') return NaN;
  return Number(token);
}

// The cases of one fixture file's text (`file` names it in errors).
export function parseCases(text, file) {
  const cases = [];
  let current = null;
  for (const line of text.split('\n')) {
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
    if (name.startsWith('param:')) p[name.slice(6)] = Float32Array.from(t.values);  // PyTorch's names, as the package's
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

// The gradient fixtures' tolerance (SDPA and MultiheadAttention backward): |got - want| <= 2e-5 + 2e-4·|want|.
export const GRAD_TOLERANCE = { atol: 2e-5, rtol: 2e-4 };

export function gradMismatch(got, want) {
  if (JSON.stringify(got.shape) !== JSON.stringify(want.shape)) return `shape ${got.shape} != ${want.shape}`;
  return gradValuesMismatch(got.data, want);
}

// The same for a flat array, as parameters' gradients come: its length against the fixture's.
export function gradValuesMismatch(got, want) {
  if (got.length !== want.values.length) return `${got.length} values, want ${want.values.length}`;
  const { atol, rtol } = GRAD_TOLERANCE;
  let bad = 0;
  want.values.forEach((w, i) => { if (!(Math.abs(got[i] - w) <= atol + rtol * Math.abs(w))) bad++; });
  return bad ? `${bad} of ${want.values.length} differ` : '';
}

// scaledDotProductAttentionGrad's options for a tests/golden/sdpa_grad.txt case.
export function sdpaGradOptions(c) {
  const o = {};
  if (c.opts.is_causal === '1') {
    o.isCausal = true;
    o.causalAlignment = c.opts.causal_alignment === 'bottom_right' ? 'bottom-right' : 'top-left';
  }
  if (c.opts.scale !== undefined) o.scale = Number(c.opts.scale);
  if (c.opts.enable_gqa === '1') o.enableGqa = true;
  if (c.opts.dropout_p !== undefined) o.dropoutP = Number(c.opts.dropout_p);
  if (c.opts.seed !== undefined) o.seed = Number(c.opts.seed);
  if (c.tensors.attn_mask) o.attnMask = mask(c.tensors.attn_mask);
  return o;
}

// The rules of a tests/golden/make_golden_rules.py case (softcap, window, ALiBi, key lengths, where rows sit, the
// scores' stage) as the options every call takes, added to `o`. The alignment places the window and ALiBi, so it
// is given with or without is_causal.
export function withRules(c, o = {}) {
  if (c.opts.causal_alignment !== undefined) o.causalAlignment = c.opts.causal_alignment === 'bottom_right' ? 'bottom-right' : 'top-left';
  if (c.opts.softcap !== undefined) o.softcap = Number(c.opts.softcap);
  if (c.opts.window_left !== undefined || c.opts.window_right !== undefined) {
    o.window = { left: Number(c.opts.window_left ?? -1), right: Number(c.opts.window_right ?? -1) };
  }
  if (c.tensors.alibi_slopes) o.alibiSlopes = Float32Array.from(c.tensors.alibi_slopes.values);
  if (c.tensors.key_lengths) o.keyLengths = Int32Array.from(c.tensors.key_lengths.values);
  if (c.opts.return_scores !== undefined) o.returnScores = c.opts.return_scores;
  return o;
}
