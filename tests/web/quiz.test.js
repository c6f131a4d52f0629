// The lesson's quiz: (8, 128, 32) queries and keys with (8, 128, 64) values give an (8, 128, 64) output.
import test from 'node:test';
import assert from 'node:assert/strict';
import { QUIZ, checkQuizAnswer } from '../../web/src/quiz.js';

test('the question is the lesson\'s and its answer comes from the trace', () => {
  assert.deepEqual(QUIZ.query, [8, 128, 32]);
  assert.deepEqual(QUIZ.key, [8, 128, 32]);
  assert.deepEqual(QUIZ.value, [8, 128, 64]);
  assert.deepEqual(QUIZ.answer, [8, 128, 64]);
});

test('(8, 128, 64) is accepted however it is written', () => {
  for (const text of ['(8, 128, 64)', '8,128,64', '[8, 128, 64]', 'torch.Size([8, 128, 64])']) {
    assert.equal(checkQuizAnswer(text).correct, true, text);
  }
});

test('wrong answers are rejected, the usual confusions with a hint', () => {
  const weights = checkQuizAnswer('(8, 128, 128)');
  assert.equal(weights.correct, false);
  assert.match(weights.message, /attention weights/);
  const query = checkQuizAnswer('(8, 128, 32)');
  assert.equal(query.correct, false);
  assert.match(query.message, /comes from V/);
  assert.equal(checkQuizAnswer('(128, 64)').correct, false);
  const junk = checkQuizAnswer('no idea');
  assert.equal(junk.correct, false);
  assert.match(junk.message, /whole numbers/);
});
