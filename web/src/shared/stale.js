// Result panels that no longer match the controls. While a field is invalid (or a compute failed) the
// heatmap and the Q, K, V panels still hold the last finished result; they say so, and are dimmed, instead
// of passing for the answer to the settings on screen.

// cards: elements holding a `.stale-note` paragraph. reason: a sentence, or null when the panels are current.
export function markStale(cards, reason) {
  for (const card of cards) {
    card.toggleAttribute('data-stale', reason !== null);
    const note = card.querySelector('.stale-note');
    note.hidden = reason === null;
    note.textContent = reason ?? '';
  }
}

// The sentences for a set of problems with the controls, naming what is still shown. Each problem is a
// sentence of its own: a message may start with a capital ("These shapes need …"), which "because" would not.
export function staleReason(problems, shownDims) {
  const why = problems.map((p) => `${p.charAt(0).toUpperCase()}${p.slice(1).replace(/\.$/, '')}.`).join(' ');
  if (!shownDims) return `Nothing computed. ${why}`;
  const { B, L, S, E, Ev } = shownDims;
  return `Not updated: still showing B = ${B}, L = ${L}, S = ${S}, E = ${E}, Ev = ${Ev}. ${why}`;
}
