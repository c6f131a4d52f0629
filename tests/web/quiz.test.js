// The lesson's quiz: (8, 128, 32) queries and keys with (8, 128, 64) values. Several questions, each answer
// taken from the shape trace, each known confusion answered with a hint.
import test from 'node:test';
import assert from 'node:assert/strict';
import { QUESTIONS, QUIZ, QuizScore, checkAnswer, checkQuizAnswer } from '../../web/src/lesson/quiz.js';
import { walkShapes } from '../../web/src/multihead/walk-shapes.js';

const byId = (id) => QUESTIONS.find((q) => q.id === id);

test("the lesson's question is the first, and its answer comes from the trace", () => {
  assert.deepEqual(QUIZ.query, [8, 128, 32]);
  assert.deepEqual(QUIZ.key, [8, 128, 32]);
  assert.deepEqual(QUIZ.value, [8, 128, 64]);
  assert.deepEqual(QUIZ.answer, [8, 128, 64]);
  assert.equal(QUESTIONS[0].id, 'output');
});

test('five questions: output, weights, Kᵀ, what changes with Ev, and the head split', () => {
  assert.deepEqual(QUESTIONS.map((q) => q.id), ['output', 'weights', 'kT', 'ev', 'heads']);
  assert.deepEqual(byId('weights').answer, [8, 128, 128]);
  assert.deepEqual(byId('kT').answer, [8, 32, 128]);
  assert.deepEqual(byId('ev').answer, [8, 128, 16]);
  // The head split's answer is the multi-head walk's own row for Q's heads: (B, H, L, E/H).
  assert.deepEqual(byId('heads').answer, [8, 4, 128, 8]);
  assert.deepEqual(walkShapes({ B: 8, L: 128, E: 32, H: 4 }).find((r) => r.id === 'heads').letters, ['B', 'H', 'L', 'E/H']);
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

test('the head split: the view before the transpose and heads with every feature get their own hints', () => {
  const q = byId('heads');
  assert.match(checkAnswer(q, '(8, 128, 4, 8)').message, /before the transpose/);
  assert.match(checkAnswer(q, '(8, 4, 128, 32)').message, /every head all 32 features/);
  assert.match(checkAnswer(q, '(8, 128, 32)').message, /Q before the split/);
  assert.equal(checkAnswer(q, '8 x 4 x 128 x 8').correct, true);
});

test('the score counts each question once, by its first answer, and a round ends when all are answered', () => {
  const score = new QuizScore(3);
  assert.match(score.text(), /none answered yet/);
  score.answer('a', false);
  score.answer('a', true); // a later try does not change the score
  score.answer('b', true);
  assert.equal(score.right, 1);
  assert.equal(score.answered, 2);
  assert.equal(score.complete, false);
  assert.equal(score.text(), 'Score: 1 of 2 right first time.');
  score.answer('c', true);
  assert.equal(score.complete, true);
  assert.equal(score.text(), 'Score: 2 of 3 right first time — all 3 questions answered.');
  score.reset();
  assert.equal(score.answered, 0);
});
