// The lesson's quiz: Q and K of shape (8, 128, 32), V of shape (8, 128, 64); what is the output's shape?
// The expected answer comes from the same shape trace the page shows, not from a hard-coded string.
import { formatShape, parseShape, sameShape, traceShapes } from './shapes.js';

export const QUIZ_DIMS = { B: 8, L: 128, S: 128, E: 32, Ev: 64 };

const trace = traceShapes(QUIZ_DIMS);
const shapeOf = (name) => trace.find((row) => row.name === name).shape;

export const QUIZ = {
  query: shapeOf('Q'),
  key: shapeOf('K'),
  value: shapeOf('V'),
  answer: shapeOf('output'),
};

// { correct, message } for what the person typed. Wrong answers that are a known confusion get a hint.
export function checkQuizAnswer(text) {
  const shape = parseShape(text);
  if (shape === null) {
    return { correct: false, message: 'Write the shape as a list of whole numbers, like (2, 3, 4).' };
  }
  const answer = formatShape(QUIZ.answer);
  if (sameShape(shape, QUIZ.answer)) {
    return {
      correct: true,
      message: `Correct: ${answer}. The weights are ${formatShape(shapeOf('weights'))}, and multiplying them by V ${formatShape(QUIZ.value)} keeps L = 128 rows and takes Ev = 64 columns from V.`,
    };
  }
  if (sameShape(shape, shapeOf('weights'))) {
    return { correct: false, message: `${formatShape(shape)} is the shape of the attention weights (B, L, S); the output multiplies them by V.` };
  }
  if (sameShape(shape, QUIZ.query)) {
    return { correct: false, message: `${formatShape(shape)} is Q's shape. The output's last dim comes from V (Ev), not from Q and K (E).` };
  }
  return { correct: false, message: `Not quite: ${formatShape(shape)}. Follow the four steps: Q Kᵀ gives (B, L, S), and (B, L, S) × (B, S, Ev) gives (B, L, Ev).` };
}
