// Float16Array tensors, where the runtime has the class (Chromium; not Node 20): every float16 call takes them
// as it takes a Uint16Array of the same bits and returns Float16Arrays of the same bits; a Uint16Array beside
// them is refused. Run by tests/js/float16-io.test.mjs and, in Chromium, by tests/package/browser-suites.js: no
// Node import. Returns the problems found ([] when none), each named.
import { halfBits, randomHalves, roundingMismatch, widened } from './halves.mjs';
import { sameBits } from './test-data.mjs';

export function float16ArrayProblems(xa) {
  const problems = [];
  const count = (shape) => shape.reduce((a, b) => a * b, 1);
  const halves = (shape, seed) => ({ data: randomHalves(count(shape), seed, { subnormalEvery: 6 }), shape });
  const as16 = (t) => ({ data: new Float16Array(t.data.buffer.slice(0)), shape: t.shape });
  // `got` (Float16Array fields) against `want` (the Uint16Array call's).
  const same = (label, got, want, fields) => {
    for (const field of fields) {
      const g = got[field]?.data;
      if (!(g instanceof Float16Array)) problems.push(`${label} ${field}: a ${g?.constructor?.name}, not a Float16Array`);
      else if (!sameBits(g, want[field].data)) problems.push(`${label} ${field}: not the Uint16Array call's bits`);
    }
  };

  const q = halves([2, 2, 3, 8], 21), k = halves([2, 2, 5, 8], 22), v = halves([2, 2, 5, 4], 23), dO = halves([2, 2, 3, 4], 24);
  const o = {
    isCausal: true, causalAlignment: 'bottom-right', window: { left: 2 }, keyLengths: [5, 3], softcap: 3,
    alibiSlopes: [0.5, 0.25], needWeights: true,
  };
  const forward = xa.scaledDotProductAttention(as16(q), as16(k), as16(v), { ...o, returnScores: 'biased' });
  same('scaledDotProductAttention', forward, xa.scaledDotProductAttention(q, k, v, { ...o, returnScores: 'biased' }),
    ['output', 'weights', 'scores']);
  // And what both are: the float32 call's results, rounded once.
  const float32 = xa.scaledDotProductAttention(widened(q), widened(k), widened(v), { ...o, returnScores: 'biased' });
  for (const field of ['output', 'weights', 'scores']) {
    const bad = roundingMismatch(forward[field].data, float32[field].data, `scaledDotProductAttention ${field}`);
    if (bad) problems.push(bad);
  }
  same('scaledDotProductAttentionGrad', xa.scaledDotProductAttentionGrad(as16(q), as16(k), as16(v), as16(dO), o),
    xa.scaledDotProductAttentionGrad(q, k, v, dO, o), ['output', 'gradQuery', 'gradKey', 'gradValue', 'weights']);
  for (const fn of ['applyRotaryEmbedding', 'applyRotaryEmbeddingGrad']) {
    const r = { positions: [4, 1, 7], rotaryDim: 6, interleaved: true };
    same(fn, { x: xa[fn](as16(q), r) }, { x: xa[fn](q, r) }, ['x']);
  }

  const config = { batch: 2, kvHeads: 2, headDim: 8, valueDim: 4, capacity: 4, rolling: true, rotary: { base: 50 } };
  for (const dtype of ['float32', 'float16']) {
    const a = xa.createKvCache({ ...config, dtype }), b = xa.createKvCache({ ...config, dtype });
    try {
      for (const counts of [[3, 2], [2, 0]]) {  // element 0 rolls
        a.append(as16(k), as16(v), { counts });
        b.append(k, v, { counts });
      }
      if (!sameBits(a.keys().data, b.keys().data) || !sameBits(a.values().data, b.values().data)) {
        problems.push(`KvCache (${dtype}) append: Float16Array and Uint16Array appends hold different values`);
      }
      const attend = { isCausal: true, window: { left: 2 }, alibiSlopes: [0.1, 0.2], needWeights: true };
      same(`KvCache (${dtype}) attend`, a.attend(as16(q), attend), b.attend(q, attend), ['output', 'weights']);
    } finally {
      a.dispose();
      b.dispose();
    }
  }

  try {
    xa.scaledDotProductAttention(as16(q), k, v);
    problems.push('a Uint16Array key beside a Float16Array query was taken');
  } catch (e) {
    const want = "scaledDotProductAttention: key.data must be a Float16Array like query's (float16 calls take every tensor as halves), got Uint16Array";
    if (!(e instanceof TypeError) || e.message !== want) problems.push(`mixed halves: ${e?.constructor?.name}: ${e?.message}`);
  }
  // Bits, not values, cross: what rotary passes through (the features past rotaryDim) is its input's bits.
  const special = { data: new Float16Array([1, 2, 3, 4, NaN, 2 ** -24, -0, -Infinity]), shape: [1, 8] };
  const passed = halfBits(xa.applyRotaryEmbedding(special, { rotaryDim: 4 }).data).subarray(4);
  if (!sameBits(passed, halfBits(special.data).subarray(4))) problems.push(`rotary passed ${[...passed]} through, not its input's bits`);
  return problems;
}
