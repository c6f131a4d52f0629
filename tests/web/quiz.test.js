// The lesson's quiz: (8, 128, 32) queries and keys with (8, 128, 64) values. Several questions, each answer
// taken from the shape trace, each known confusion answered with a hint.
import test from 'node:test';
import assert from 'node:assert/strict';
import { QUESTIONS, QUIZ, checkAnswer, checkQuizAnswer } from '../../web/src/lesson/quiz.js';

const byId = (id) => QUESTIONS.find((q) => q.id === id);

test("the lesson's question is the first, and its answer comes from the trace", () => {
  assert.deepEqual(QUIZ.query, [8, 128, 32]);
  assert.deepEqual(QUIZ.key, [8, 128, 32]);
  assert.deepEqual(QUIZ.value, [8, 128, 64]);
  assert.deepEqual(QUIZ.answer, [8, 128, 64]);
  assert.equal(QUESTIONS[0].id, 'output');
});

test('four questions from the lesson: output, weights, Kᵀ, and what changes with Ev', () => {
  assert.deepEqual(QUESTIONS.map((q) => q.id), ['output', 'weights', 'kT', 'ev']);
  assert.deepEqual(byId('weights').answer, [8, 128, 128]);
  assert.deepEqual(byId('kT').answer, [8, 32, 128]);
  assert.deepEqual(byId('ev').answer, [8, 128, 16]);
  // No prompt gives the answer's form away.
  for (const q of QUESTIONS) assert.doesNotMatch(q.prompt, /\(B, L, Ev\)|\(B, L, S\)|\(B, E, S\)/, q.id);
});

test('(8, 128, 64) is accepted however it is written', () => {
  for (const text of ['(8, 128, 64)', '8,128,64', '[8, 128, 64]', 'torch.Size([8, 128, 64])']) {
    assert.equal(checkQuizAnswer(text).correct, true, text);
  }
});

test('each question accepts its own answer and no other question\'s', () => {
  for (const q of QUESTIONS) {
    assert.equal(checkAnswer(q, `(${q.answer.join(', ')})`).correct, true, q.id);
    for (const other of QUESTIONS) {
      if (other.answer.join() !== q.answer.join()) assert.equal(checkAnswer(q, other.answer.join(',')).correct, false, `${q.id} ← ${other.id}`);
    }
  }
});

test('wrong answers are rejected, the usual confusions with a hint', () => {
  const weights = checkQuizAnswer('(8, 128, 128)');
  assert.equal(weights.correct, false);
  assert.match(weights.message, /attention weights/);
  const query = checkQuizAnswer('(8, 128, 32)');
  assert.equal(query.correct, false);
  assert.match(query.message, /comes from V/);
  assert.match(checkAnswer(byId('kT'), '(8, 128, 32)').message, /K's own shape/);
  assert.match(checkAnswer(byId('ev'), '(8, 128, 64)').message, /with Ev = 64/);
  assert.equal(checkQuizAnswer('(128, 64)').correct, false);
  const junk = checkQuizAnswer('no idea');
  assert.equal(junk.correct, false);
  assert.match(junk.message, /whole numbers/);
});
