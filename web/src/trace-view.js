// The shape table and the quiz. The table is rebuilt from traceShapes on every control change, before any
// computing, so it is live even while the worker is busy.
import { formatLetters, formatShape } from './shapes.js';
import { QUIZ, checkQuizAnswer } from './quiz.js';

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
        cell('td', formatShape(row.shape), 'mono shape'),
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

export function setupQuiz({ form, question, input, feedback }) {
  question.innerHTML =
    `<strong>Quiz.</strong> Q and K have shape <span class="mono">${formatShape(QUIZ.query)}</span> and V has shape ` +
    `<span class="mono">${formatShape(QUIZ.value)}</span>. What is the shape of the attention output?`;
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const { correct, message } = checkQuizAnswer(input.value);
    feedback.textContent = message;
    feedback.className = `feedback ${correct ? 'good' : 'bad'}`;
    input.setAttribute('aria-invalid', String(!correct));
  });
}
