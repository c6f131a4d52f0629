// The shape table and the quiz. The table is rebuilt from traceShapes on every control change, before any
// computing, so it is live even while the worker is busy.
import { formatLetters, formatShape, parseShape } from '../shared/shapes.js';
import { QUESTIONS, QuizScore, checkAnswer } from './quiz.js';

function cell(tag, text, className) {
  const el = document.createElement(tag);
  el.textContent = text;
  if (className) el.className = className;
  return el;
}

export function renderTrace(tbody, rows) {
  tbody.replaceChildren(
    ...rows.map((row) => {
      const tr = document.createElement('tr');
      tr.dataset.tensor = row.name;
      if (row.step === 'GQA') tr.className = 'gqa';
      const th = cell('th', row.name);
      th.scope = 'row';
      tr.append(
        cell('td', row.step ? (row.step === 'GQA' ? 'GQA' : `${row.step}`) : 'input', 'step'),
        th,
        cell('td', row.expr, 'mono expr'),
        cell('td', row.shape ? formatShape(row.shape) : 'none', row.shape ? 'mono shape' : 'mono shape none'),
        cell('td', row.letters ? formatLetters(row.letters) : '', 'mono letters'),
        cell('td', row.note, 'note-col'),
      );
      return tr;
    }),
  );
}

// Shows a problem with the controls in place of the table, so an impossible setting reads as a message.
export function renderTraceProblems(tbody, problems) {
  const tr = document.createElement('tr');
  const td = cell('td', problems.join('. ') + '.', 'bad');
  td.colSpan = 6;
  tr.append(td);
  tbody.replaceChildren(tr);
}

// The quiz: one question at a time, in order, "Next question" moving on (and round again after the last; the
// first answer of the next round starts a new score), with the score kept beside the counter.
export function setupQuiz({ form, counter, score: scoreBox, question, label, input, feedback, next }) {
  let k = 0;
  const score = new QuizScore(QUESTIONS.length);
  const writeScore = () => {
    scoreBox.textContent = score.text();
    scoreBox.dataset.right = String(score.right);
    scoreBox.dataset.answered = String(score.answered);
  };
  const show = () => {
    const q = QUESTIONS[k];
    form.dataset.question = q.id;
    counter.textContent = `Question ${k + 1} of ${QUESTIONS.length}`;
    question.innerHTML = q.prompt;
    label.textContent = q.label;
    input.value = '';
    input.removeAttribute('aria-invalid');
    feedback.textContent = '';
    feedback.className = 'feedback';
    writeScore();
  };
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const { correct, message } = checkAnswer(QUESTIONS[k], input.value);
    // Text that is not a shape is not an answer: it gets its hint and does not count. The first answer after
    // a complete round starts a new one (the finished round's score stays on screen until then).
    if (parseShape(input.value) !== null) {
      if (score.complete && k === 0) score.reset();
      score.answer(QUESTIONS[k].id, correct);
    }
    feedback.textContent = message;
    feedback.className = `feedback ${correct ? 'good' : 'bad'}`;
    input.setAttribute('aria-invalid', String(!correct));
    writeScore();
  });
  next.addEventListener('click', () => {
    k = (k + 1) % QUESTIONS.length;
    show();
    input.focus();
  });
  show();
}
