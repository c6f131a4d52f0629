// The "Build a GPT" chapter's pure parts: its fields refuse what the model cannot take, its course table
// puts this run beside the course's losses, and a hovered character maps onto the characters before it.
import test from 'node:test';
import assert from 'node:assert/strict';
import { readGenerate, readProbe, readSeed, readSteps, showChar, unknownChars } from '../../web/src/gpt-lab/gpt-fields.js';
import { courseRows, formatDuration, formatGain, formatLoss, formatReference, gptStatus, plainMessage } from '../../web/src/gpt-lab/gpt-format.js';
import { attendedChars, heatOf, topKeys } from '../../web/src/gpt-lab/gpt-hover.js';

const VOCAB = ['\n', ' ', '!', 'A', 'B', 'a', 'b', 'c'];
const form = (over) => ({ prompt: 'Ab', maxNew: '100', temperature: '0.8', topK: '5', ...over });

test('a good generation form is read into numbers; an empty top-k keeps the whole vocabulary', () => {
  assert.deepEqual(readGenerate(form(), VOCAB), { settings: { prompt: 'Ab', maxNew: 100, temperature: 0.8, topK: 5 } });
  assert.equal(readGenerate(form({ topK: ' ' }), VOCAB).settings.topK, VOCAB.length);
  assert.equal(readGenerate(form({ prompt: '\n' }), VOCAB).settings.prompt, '\n');
});

test('an empty prompt and a prompt with characters outside the vocabulary are refused, naming the characters', () => {
  assert.match(readGenerate(form({ prompt: '' }), VOCAB).problem, /^The prompt is empty/);
  const { problem } = readGenerate(form({ prompt: 'Abé\tzé' }), VOCAB);
  assert.equal(problem, 'The prompt has characters the training text never uses (“é”, a tab, “z”): the model has no token for them');
  assert.match(readGenerate(form({ prompt: 'a€' }), VOCAB).problem, /a character .*\(“€”\): the model has no token for it$/);
});

test('temperature 0, below 0, above 10 or not a number is refused, quoting what was typed', () => {
  for (const [typed, shown] of [['0', '0'], ['-1', '−1'], ['10.5', '10.5'], ['abc', 'abc'], ['', 'an empty field'], ['1e1', '1e1']]) {
    const { problem } = readGenerate(form({ temperature: typed }), VOCAB);
    assert.match(problem, /^temperature must be a number above 0 and at most 10 /, typed);
    assert.ok(problem.endsWith(`got ${shown}`), problem);
  }
  assert.equal(readGenerate(form({ temperature: '10' }), VOCAB).settings.temperature, 10);
  assert.equal(readGenerate(form({ temperature: '.05' }), VOCAB).settings.temperature, 0.05);
});

test('top-k must be a whole number from 1 to the vocabulary size', () => {
  for (const typed of ['2.5', '0', '9', '-1', 'x', '1e1']) {
    assert.match(readGenerate(form({ topK: typed }), VOCAB).problem, /^top-k must be a whole number from 1 to 8; got .* \(empty keeps every character\)$/, typed);
  }
  assert.equal(readGenerate(form({ topK: '8' }), VOCAB).settings.topK, 8);
});

test('the length to generate is bounded', () => {
  assert.match(readGenerate(form({ maxNew: '0' }), VOCAB).problem, /^length must be a whole number from 1 to 2000; got 0$/);
  assert.match(readGenerate(form({ maxNew: '2001' }), VOCAB).problem, /got 2001$/);
});

test('steps: empty is the course’s; seed and probe are checked, a probe past the context cut to it', () => {
  assert.deepEqual(readSteps(''), { value: null });
  assert.deepEqual(readSteps(' 40 '), { value: 40 });
  assert.match(readSteps('0').problem, /^steps must be a whole number from 1 to 100000; got 0$/);
  assert.deepEqual(readSeed('7'), { value: 7 });
  assert.match(readSeed('-1').problem, /seed must be .*; got −1/);
  assert.deepEqual(readProbe('Ab ba!', VOCAB, 8), { value: 'Ab ba!', note: null });
  assert.match(readProbe('', VOCAB, 8).problem, /^The probe line is empty/);
  assert.deepEqual(readProbe('abcabcabc', VOCAB, 8), { value: 'abcabcab', note: 'This model sees 8 characters at once: the maps show the line’s first 8, “abcabcab”.' });
  assert.match(readProbe('aXb', VOCAB, 8).problem, /^The probe line has a character .*\(“X”\)/);
  assert.match(readProbe('abcabcabcX', VOCAB, 8).problem, /\(“X”\)/);
  assert.deepEqual(unknownChars('xyx', VOCAB), ['x', 'y']);
  assert.equal(showChar('\n'), 'a line break');
});

const STAGES = [
  { id: 'bigram', title: 'Bigram', reference: 2.5 },
  { id: 'averaging', title: 'Averaging', reference: null },
  { id: 'one-head', title: 'One head', reference: 2.4 },
  { id: 'gpt', title: 'GPT', reference: 1.88 },
];

test('the course table: this run’s loss beside the reference, and what each stage took off the last trained one', () => {
  const rows = courseRows(STAGES, { bigram: { valLoss: 2.5, done: true }, 'one-head': { valLoss: 2.38, done: false, running: true, step: 40 } }, 'one-head');
  assert.deepEqual(rows.map((r) => r.state), ['done', 'not trained', 'training', 'not trained']);
  assert.equal(rows[0].gain, null);
  assert.ok(Math.abs(rows[2].gain - -0.12) < 1e-12);
  assert.equal(rows[2].step, 40);
  assert.equal(formatGain(rows[2].gain), '−0.12');
  assert.equal(formatGain(0.05), '+0.05');
  assert.equal(formatGain(null), '');
  // A stage interrupted by another one is 'stopped', not 'training'.
  assert.equal(courseRows(STAGES, { 'one-head': { valLoss: 2.4, running: true } }, 'gpt')[2].state, 'stopped');
  assert.equal(formatLoss(2.456), '2.46');
  assert.equal(formatLoss(null), '—');
  assert.equal(formatReference(null), '—');
  assert.equal(formatReference(1.88), '1.88');
  assert.equal(formatReference({ value: 2.5, approx: true }), '≈ 2.50');
});

test('the status line says the stage, step, losses and pace', () => {
  const s = { phase: 'training', stageTitle: 'GPT', step: 20, steps: 2000, trainLoss: 3.1234, valLoss: null, stepsPerSecond: 12.34, elapsedMs: 1500 };
  assert.equal(gptStatus(s), 'Training · GPT: step 20 of 2000 · training loss 3.12 · 12.3 steps/s · 1.5 s of training · about 2 min 40 s to go.');
  assert.equal(gptStatus({ ...s, phase: 'paused', valLoss: 2.9 }), 'Paused · GPT: step 20 of 2000 · training loss 3.12 · validation loss 2.90 · 12.3 steps/s · 1.5 s of training.');
  assert.equal(gptStatus({ ...s, step: 2000 }), 'Training · GPT: step 2000 of 2000 · training loss 3.12 · 12.3 steps/s · 1.5 s of training.');
  assert.equal(formatDuration(125_000), '2 min 05 s');
});

test('a hovered character maps each head’s weights onto the characters before it, cropped to the context', () => {
  const text = 'hello';
  // The character at index 4 ('o'), produced from a context of the 3 characters before it ('ell').
  const token = { index: 4, attention: [{ layer: 0, heads: 2, weights: Float32Array.from([0.2, 0.3, 0.5, 1, 0, 0]) }, { layer: 1, heads: 1, weights: Float32Array.from([0, 0.25, 0.75]) }] };
  const got = attendedChars(text, token);
  assert.deepEqual(got.map((g) => [g.layer, g.head]), [[0, 0], [0, 1], [1, 0]]);
  assert.deepEqual(got[0].keys.map((k) => [k.pos, k.char]), [[1, 'e'], [2, 'l'], [3, 'l']]);
  assert.deepEqual(got[1].keys.map((k) => k.weight), [1, 0, 0]);
  assert.equal(got[2].keys[2].weight, 0.75);
  const heat = heatOf(got[0].keys);
  assert.equal(heat.get(3), 1);
  assert.ok(Math.abs(heat.get(1) - 0.4) < 1e-6);
  assert.deepEqual(topKeys(got[0].keys, 2).map((k) => k.pos), [3, 2]);
  assert.deepEqual([...heatOf([{ pos: 0, weight: 0 }]).values()], [0]);
});

test('a Worker’s error is said without the code names it starts with', () => {
  assert.equal(plainMessage('readSafetensors: the source is not a valid safetensors file: too short'), 'The source is not a valid safetensors file: too short');
  assert.equal(plainMessage('import: the file’s vocabulary (5 characters) is not this text’s (65 characters)'), 'The file’s vocabulary (5 characters) is not this text’s (65 characters)');
  assert.equal(plainMessage('Stack.forward: T 9 is past the block size 8'), 'T 9 is past the block size 8');
  assert.equal(plainMessage('a generation is already running (send stopGenerate first)'), 'A generation is already running (send stopGenerate first)');
  assert.equal(plainMessage(''), 'something went wrong');
});
