// NaN and ±∞ in results, counted and explained. With a large data spread the scores q·k exceed float32's
// range: they become ±∞, the softmax subtracts the row's maximum (∞ − ∞ = NaN) and every weight of the row
// is NaN, and so is the output. A max or a sum that skips NaN would draw that as zeros; the page says it.

export const FLOAT32_MAX = 3.4028234663852886e38;

// { nan, posInf, negInf, bad } over a typed array; bad = nan + posInf + negInf.
export function countNonFinite(data) {
  let nan = 0;
  let posInf = 0;
  let negInf = 0;
  for (let k = 0; k < data.length; k++) {
    const v = data[k];
    if (v !== v) nan++;
    else if (v === Infinity) posInf++;
    else if (v === -Infinity) negInf++;
  }
  return { nan, posInf, negInf, bad: nan + posInf + negInf };
}

// Rows of an (L, S) matrix holding at least one NaN or ±∞.
export function badRows(data, L, S) {
  let n = 0;
  for (let i = 0; i < L; i++) {
    for (let j = 0; j < S; j++) {
      if (!Number.isFinite(data[i * S + j])) {
        n++;
        break;
      }
    }
  }
  return n;
}

// Largest |x| over the finite values (0 when there are none).
export function finiteAbsMax(data) {
  let m = 0;
  for (let k = 0; k < data.length; k++) {
    const a = Math.abs(data[k]);
    if (a > m && a !== Infinity) m = a;
  }
  return m;
}

// "3 NaN, 1 +∞": what a caption says about non-finite values; '' when there are none.
export function describeNonFinite({ nan, posInf, negInf }) {
  const parts = [];
  if (nan) parts.push(`${nan} NaN`);
  if (posInf) parts.push(`${posInf} +∞`);
  if (negInf) parts.push(`${negInf} −∞`);
  return parts.join(', ');
}

// Why the weights of a slice are not numbers, from what the page has: the slice's Q, K and V, its E, and which
// of them came from files (view.sources: query → 'q.npy'). Inputs that hold NaN or ±∞ themselves are named
// first (an imported file); otherwise a score q·k sums E products q_e·k_e, and if the largest |q| times the
// largest |k|, times E, passes float32's largest value, the scores can overflow. Returns a sentence, or null
// when the weights are all finite.
export function overflowExplanation(view) {
  const w = countNonFinite(view.weights);
  if (w.bad === 0) return null;
  const rows = badRows(view.weights, view.L, view.S);
  const head = `${rows} of ${view.L} rows ${rows === 1 ? 'holds' : 'hold'} weights that are not numbers (${describeNonFinite(w)}).`;
  const inputs = [
    ['Q', 'query'],
    ['K', 'key'],
    ['V', 'value'],
  ]
    .filter(([, name]) => view[name])
    .map(([letter, name]) => ({ letter, name, bad: countNonFinite(view[name]) }))
    .filter((t) => t.bad.bad > 0);
  if (inputs.length) {
    const from = (name) => (view.sources?.[name] ? ` (imported from ${view.sources[name]})` : '');
    const which = inputs.map((t) => `${t.letter}${from(t.name)} ${t.bad.bad === 1 ? 'holds' : 'hold'} ${describeNonFinite(t.bad)}`).join('; ');
    return (
      `${head} The inputs are not all numbers: ${which}. A NaN in row i of Q makes row i of the weights NaN; in row j of K, ` +
      `every row that sees key j; in V, only the output. Import a file without them, or go back to generated data.`
    );
  }
  const qMax = finiteAbsMax(view.query);
  const kMax = finiteAbsMax(view.key);
  const bound = qMax * kMax * view.E;
  const fmt = (x) => x.toExponential(1).replace('e+', 'e');
  if (bound <= FLOAT32_MAX) {
    return `${head} Q and K are not that large (up to ${fmt(qMax)} and ${fmt(kMax)}), so the scores cannot overflow; the NaN came from elsewhere.`;
  }
  return (
    `${head} Q and K hold values up to ${fmt(qMax)} and ${fmt(kMax)}, so a score q·k (a sum of E = ${view.E} products) can reach about ` +
    `${fmt(bound)}, beyond float32's largest number, ${fmt(FLOAT32_MAX)}: the scores overflow to ±∞, the softmax computes ∞ − ∞ = NaN, ` +
    `and NaN spreads to the whole row and to the output. Make the data spread smaller to get numbers back.`
  );
}
