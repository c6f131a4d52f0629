// Generation with the KV cache (web/src/gpt/generate.js) against the full forward of web/src/gpt/model.js (itself
// checked against PyTorch in gpt-model.test.js): the logits and the attention weights position by position, the
// refill at the block size, the exact GELU, and the sampler.
import test from 'node:test';
import assert from 'node:assert/strict';
import { createXattn } from 'xattn';
import { GPT, initParameters } from '../../web/src/gpt/model.js';
import { Decoder, Sampler, generate } from '../../web/src/gpt/generate.js';
import { erf, erfSeries } from '../../web/src/gpt/gelu.js';
import { Prng } from '../../web/src/shared/prng.js';

const xa = await createXattn({ threads: 1 });
const config = { vocab: 13, nLayer: 2, nHead: 4, nEmbd: 32, blockSize: 10 };

// nanoGPT's initialisation is too small to make attention anything but uniform: weights of std 0.3 and nonzero
// biases and norms give every head a sharp, position-dependent pattern to check.
function sharpModel() {
  const params = initParameters(config, 4);
  const rng = new Prng(8, 0);
  for (const [name, p] of Object.entries(params)) {
    const centre = name.includes('norm') && name.endsWith('weight') ? 1 : 0;
    for (let k = 0; k < p.length; k++) p[k] = centre + 0.3 * rng.nextNormal();
  }
  return new GPT(xa, config, { params });
}

const ids = (n, seed) => {
  const rng = new Prng(seed, 1);
  return Array.from({ length: n }, () => Math.floor(rng.nextFloat() * config.vocab));
};

function assertNear(got, want, what, atol = 2e-5) {
  assert.equal(got.length, want.length, what);
  for (let k = 0; k < want.length; k++) {
    assert.ok(Math.abs(got[k] - want[k]) <= atol + 1e-5 * Math.abs(want[k]), `${what}[${k}]: ${got[k]} vs ${want[k]}`);
  }
}

test('erf: the series within 1e-12 of the tables, the tabulated erf within 1e-10 of the series, ±1 past 4', () => {
  // erf's values from the tables (Abramowitz & Stegun 7.1; erf(1), erf(2) to 16 digits).
  for (const [z, want] of [[1, 0.8427007929497149], [-2, -0.9953222650189527], [0.5, 0.5204998778130465], [3.5, 0.9999992569016276]]) {
    assert.ok(Math.abs(erfSeries(z) - want) < 1e-12, `erfSeries(${z}) = ${erfSeries(z)}`);
    assert.ok(Math.abs(erf(z) - want) < 1e-10, `erf(${z}) = ${erf(z)}`);
  }
  let worst = 0;
  for (let z = -4.1; z <= 4.1; z += 0.000731) worst = Math.max(worst, Math.abs(erf(z) - erfSeries(z)));
  assert.ok(worst < 1e-10, `erf within ${worst} of the series`);
  assert.equal(erf(5), 1);
  assert.equal(erf(-7), -1);
  assert.equal(erf(0), 0);
});

test('cached decoding gives the full forward’s logits and attention at every position', () => {
  const model = sharpModel();
  const seq = ids(config.blockSize, 3);
  const full = model.forward(Int32Array.from(seq), 1, seq.length).logits.data;                 // (1, T, V)
  const attention = model.attention(Int32Array.from(seq));
  const dec = new Decoder(model);
  let r = dec.prompt(seq.slice(0, 3), { attention: true });
  for (let t = 2; t < seq.length; t++) {
    if (t > 2) r = dec.next(seq[t], { attention: true });
    assertNear(r.logits, full.subarray(t * config.vocab, (t + 1) * config.vocab), `logits at ${t}`);
    r.attention.forEach((a, l) => {
      const T = seq.length;
      const want = new Float32Array(config.nHead * (t + 1));
      for (let h = 0; h < config.nHead; h++) want.set(attention[l].weights.subarray((h * T + t) * T, (h * T + t) * T + t + 1), h * (t + 1));
      assertNear(a.weights, want, `layer ${l} attention at ${t}`, 1e-6);
    });
  }
  // The logits differ across positions: the check above compares something that moves.
  assert.ok(Math.abs(full[0] - full[config.vocab * 5]) > 1e-2);
  model.dispose();
  dec.dispose();
});

test('at the block size the context restarts from its last half: the full forward of that window', () => {
  const model = sharpModel();
  const seq = ids(config.blockSize + 3, 5);
  const dec = new Decoder(model);
  let r = dec.prompt(seq.slice(0, 1));
  for (let t = 1; t < seq.length; t++) r = dec.next(seq[t]);
  // blockSize ids filled it; the 11th kept the last 5 and added itself (6), then 2 more: 8 held.
  const held = seq.slice(config.blockSize - 5);
  assert.deepEqual(dec.context, held);
  const want = model.forward(Int32Array.from(held), 1, held.length).logits.data;
  assertNear(r.logits, want.subarray((held.length - 1) * config.vocab), 'logits after the refill');
  model.dispose();
  dec.dispose();
});

test('the sampler: seeded, greedy at temperature 0, top-k keeps the k most likely', () => {
  const logits = Float32Array.from([0.1, 2, -1, 1.5, 0.3]);
  assert.equal(new Sampler({ temperature: 0 }).pick(logits), 1);
  const draws = (s) => Array.from({ length: 200 }, () => s.pick(logits));
  assert.deepEqual(draws(new Sampler({ seed: 3 })), draws(new Sampler({ seed: 3 })));
  const top2 = new Set(draws(new Sampler({ topK: 2, seed: 1 })));
  assert.deepEqual([...top2].sort(), [1, 3]);
  assert.equal(new Set(draws(new Sampler({ seed: 1, temperature: 5 }))).size, 5);
  assert.throws(() => new Sampler({ temperature: -1 }), /temperature/);
  assert.throws(() => new Sampler({ seed: 1.5 }), /seed must be an integer/);
  assert.throws(() => new Sampler({ topK: '3' }), /topK must be an integer/);
});

test('generate: the same seed gives the same text, tokens are reported in order', () => {
  const model = sharpModel();
  const dec = new Decoder(model);
  const seen = [];
  const a = generate(dec, [1, 2], { maxNew: 25, sampler: new Sampler({ seed: 9, topK: 5 }), attention: true, onToken: (i, id, att) => seen.push([i, id, att.length]) });
  const b = generate(dec, [1, 2], { maxNew: 25, sampler: new Sampler({ seed: 9, topK: 5 }) });
  assert.deepEqual(a, b);
  assert.equal(a.length, 25);
  assert.deepEqual(seen.map((s) => s[0]), [...Array(25).keys()]);
  assert.ok(seen.every((s) => s[2] === config.nLayer));
  model.dispose();
  dec.dispose();
});
