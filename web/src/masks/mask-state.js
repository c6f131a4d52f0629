// What the learner asked of the masks, kept apart from the dims they are applied to. Typing a new S goes
// through intermediate values ("20" passes through "2"), and B, L, S change all the time: the learner's
// key-padding counts and drawn cells must survive that. So the intent is stored as typed or drawn, and the
// mask in use is derived for the current dims: only what no longer exists is left out, and it comes back
// with the dims.
import { defaultPadding } from './masks.js';

export class MaskState {
  constructor() {
    this.kept = []; // keys kept by batch element b, as the learner set them (may exceed the current S)
    this.cells = new Set(); // 'i,j' of cells hidden by hand, at any i, j ever drawn
  }

  // Keys kept by each of the first B batch elements, clipped to S. Elements never set start from the default
  // (S − 2b, at least 1), which follows S; a value the learner typed is theirs and is only clipped.
  padding(B, S) {
    const fallback = defaultPadding(B, S);
    return fallback.map((d, b) => (this.kept[b] === undefined ? d : Math.min(this.kept[b], S)));
  }

  setKept(b, value) {
    this.kept[b] = value;
  }

  // The drawn cells that exist in an (L, S) matrix, as the Uint8Array (L·S, 1 = hidden) the masks use, or
  // null when none of them does.
  custom(L, S) {
    let out = null;
    for (const key of this.cells) {
      const [i, j] = key.split(',').map(Number);
      if (i < L && j < S) {
        out ??= new Uint8Array(L * S);
        out[i * S + j] = 1;
      }
    }
    return out;
  }

  isHidden(i, j) {
    return this.cells.has(`${i},${j}`);
  }

  paint(cells, hide) {
    for (const [i, j] of cells) {
      if (hide) this.cells.add(`${i},${j}`);
      else this.cells.delete(`${i},${j}`);
    }
  }

  // Cells that count in an (L, S) matrix (the note and the Clear button speak of these).
  countIn(L, S) {
    let n = 0;
    for (const key of this.cells) {
      const [i, j] = key.split(',').map(Number);
      if (i < L && j < S) n++;
    }
    return n;
  }

  clearCells() {
    this.cells.clear();
  }

  clear() {
    this.kept = [];
    this.cells.clear();
  }

  // A copy, for going back to the last finished result after a cancel.
  snapshot() {
    const copy = new MaskState();
    copy.kept = this.kept.slice();
    copy.cells = new Set(this.cells);
    return copy;
  }
}
