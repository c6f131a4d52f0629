// The lesson's quiz: Q and K of shape (8, 128, 32), V of shape (8, 128, 64). Several questions drawn from the
// lesson's four steps: the output's shape (the lesson's own question), the weights' shape, Kᵀ's shape, what
// changes when Ev does, and the head split of multi-head attention. Every expected answer comes from the same
// shape traces the page shows (the lesson's and the multi-head walk's), never from a hard-coded string.
import { formatShape, parseShape, sameShape, traceShapes } from '../shared/shapes.js';
import { walkShape } from '../multihead/walk-shapes.js';

export const QUIZ_DIMS = { B: 8, L: 128, S: 128, E: 32, Ev: 64 };

const shapeIn = (dims, name) => traceShapes(dims).find((row) => row.name === name).shape;

export const QUIZ = {
  query: shapeIn(QUIZ_DIMS, 'Q'),
  key: shapeIn(QUIZ_DIMS, 'K'),
  value: shapeIn(QUIZ_DIMS, 'V'),
  answer: shapeIn(QUIZ_DIMS, 'output'),
};

const S = (shape) => `<span class="mono">${formatShape(shape)}</span>`;
const setting = `Q and K have shape ${S(QUIZ.query)} and V has shape ${S(QUIZ.value)}.`;
const EV_CHANGED = 16;
// Multi-head attention over the quiz's queries: E = 32 features split into H = 4 heads.
const HEADS = { B: QUIZ_DIMS.B, L: QUIZ_DIMS.L, E: QUIZ_DIMS.E, H: 4 };

// Each question: id, the prompt (HTML), what the answer field is labelled, the expected shape, and the wrong
// answers worth a specific hint (a known confusion), each with its message.
export const QUESTIONS = [
  {
    id: 'output',
    prompt: `${setting} What is the shape of the attention output?`,
    label: 'Output shape',
    answer: QUIZ.answer,
    explain: `The weights are ${formatShape(shapeIn(QUIZ_DIMS, 'weights'))}, and multiplying them by V ${formatShape(QUIZ.value)} keeps L = 128 rows and takes Ev = 64 columns from V.`,
    confusions: [
      [shapeIn(QUIZ_DIMS, 'weights'), 'is the shape of the attention weights (B, L, S); the output multiplies them by V.'],
      [QUIZ.query, "is Q's shape. The output's last dim comes from V (Ev), not from Q and K (E)."],
    ],
    fallback: 'Follow the four steps: Q Kᵀ gives (B, L, S), and (B, L, S) × (B, S, Ev) gives (B, L, Ev).',
  },
  {
    id: 'weights',
    prompt: `${setting} What is the shape of the attention weights, softmax(Q Kᵀ / √E)?`,
    label: 'Weights shape',
    answer: shapeIn(QUIZ_DIMS, 'weights'),
    explain: 'One weight per query i and key j, for each batch element: (B, L, S). E is summed away by Q Kᵀ, and the softmax keeps the shape.',
    confusions: [
      [QUIZ.answer, "is the output's shape; the weights come before V is used, so Ev plays no part."],
      [[QUIZ_DIMS.B, QUIZ_DIMS.L, QUIZ_DIMS.E], "is Q's shape. Q Kᵀ sums over E and leaves one score per (query, key) pair."],
    ],
    fallback: 'Q (B, L, E) times Kᵀ (B, E, S) gives (B, L, S); softmax and scaling keep that shape.',
  },
  {
    id: 'kT',
    prompt: `${setting} Step 1 multiplies Q by Kᵀ = K.transpose(-2, -1). What is the shape of Kᵀ?`,
    label: 'Kᵀ shape',
    answer: shapeIn(QUIZ_DIMS, 'Kᵀ'),
    explain: 'The transpose swaps the last two dims of K (B, S, E) and leaves the batch dim alone.',
    confusions: [
      [QUIZ.key, "is K's own shape; the transpose swaps its last two dims."],
      [[QUIZ_DIMS.E, QUIZ_DIMS.S, QUIZ_DIMS.B], 'reverses every dim. transpose(-2, -1) swaps only the last two; the batch dim stays first.'],
    ],
    fallback: 'K is (B, S, E); swapping its last two dims gives (B, E, S).',
  },
  {
    id: 'ev',
    prompt: `${setting} If V had Ev = ${EV_CHANGED} instead of 64 (shape ${S([QUIZ_DIMS.B, QUIZ_DIMS.S, EV_CHANGED])}), what would the output's shape be?`,
    label: 'Output shape',
    answer: shapeIn({ ...QUIZ_DIMS, Ev: EV_CHANGED }, 'output'),
    explain: `Only the output's last dim follows Ev. Q, K, the scores and the weights ${formatShape(shapeIn(QUIZ_DIMS, 'weights'))} do not involve V at all.`,
    confusions: [
      [QUIZ.answer, 'is the output with Ev = 64. The output takes its last dim from V, so it changes with Ev.'],
      [shapeIn(QUIZ_DIMS, 'weights'), 'is the shape of the weights, which Ev does not change; the output multiplies them by V.'],
    ],
    fallback: `(B, L, S) × (B, S, Ev) gives (B, L, Ev): with Ev = ${EV_CHANGED} only the last dim changes.`,
  },
  {
    id: 'heads',
    prompt:
      `Multi-head attention with embed dim E = ${HEADS.E} and H = ${HEADS.H} heads projects X ${S([HEADS.B, HEADS.L, HEADS.E])} to Q of the ` +
      `same shape, then splits Q into heads so that each head attends on its own. What is the shape of Q's heads?`,
    label: "Q's heads",
    answer: walkShape(HEADS, 'heads'),
    explain: `Each head gets E/H = ${HEADS.E / HEADS.H} of the ${HEADS.E} features, and the heads move next to the batch dim: (B, H, L, E/H), ${HEADS.B * HEADS.H} separate attentions.`,
    confusions: [
      [walkShape(HEADS, 'split'), "is the split before the transpose: the heads then move next to the batch dim, so that each head's (L, E/H) matrix attends on its own."],
      [[HEADS.B, HEADS.H, HEADS.L, HEADS.E], `gives every head all ${HEADS.E} features; the split cuts them into H groups of E/H.`],
      [QUIZ.query, "is Q before the split. The split adds the head dim H and divides E by it."],
    ],
    fallback: `Q (B, L, E) is viewed as (B, L, H, E/H), then transposed to put H next to B.`,
  },
];

// { correct, message } for what the person typed in answer to `question`.
export function checkAnswer(question, text) {
  const shape = parseShape(text);
  if (shape === null) {
    return { correct: false, message: 'Write the shape as a list of whole numbers, like (2, 3, 4).' };
  }
  if (sameShape(shape, question.answer)) {
    return { correct: true, message: `Correct: ${formatShape(question.answer)}. ${question.explain}` };
  }
  const known = question.confusions.find(([s]) => sameShape(shape, s));
  if (known) return { correct: false, message: `${formatShape(shape)} ${known[1]}` };
  return { correct: false, message: `Not quite: ${formatShape(shape)}. ${question.fallback}` };
}

// The lesson's own question, kept under its old name for callers that ask only that one.
export function checkQuizAnswer(text) {
  return checkAnswer(QUESTIONS[0], text);
}

// The quiz's score: each question counts once, by its first answer; later tries still get their hint but do
// not change the score. Once every question has its first answer the round is complete; the page starts a
// new one when the learner answers the first question again.
export class QuizScore {
  constructor(total) {
    this.total = total;
    this.first = new Map(); // question id → whether its first answer was right
  }

  answer(id, correct) {
    if (!this.first.has(id)) this.first.set(id, correct);
  }

  get answered() {
    return this.first.size;
  }

  get right() {
    return [...this.first.values()].filter(Boolean).length;
  }

  get complete() {
    return this.answered === this.total;
  }

  text() {
    if (this.answered === 0) return `Score: none answered yet (each question counts by its first answer).`;
    return `Score: ${this.right} of ${this.answered} right first time` + (this.complete ? ` — all ${this.total} questions answered.` : '.');
  }

  reset() {
    this.first.clear();
  }
}
