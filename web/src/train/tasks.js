// The tasks the training panel offers: each maps an input sequence to a target sequence, and each is one
// a single attention layer can solve by looking at the right position, so the solution is visible in
// the weights. Every task names the key position(s) a query should attend to: the pattern to expect.
import { Prng } from '../shared/prng.js';

export const TASKS = {
  reverse: {
    label: 'reverse the sequence',
    explain: 'Output the input backwards: position i must read the token at position L − 1 − i.',
    pattern: 'an anti-diagonal: each query row puts its weight on the mirror key, from the top-right to the bottom-left.',
    classes: (vocab) => vocab,
    target: (x, i, L) => x[L - 1 - i],
    // One list of expected key positions per role a head can take.
    roles: (i, L) => [L - 1 - i],
    roleNames: ['mirror position L − 1 − i'],
  },
  shift: {
    label: 'copy with an offset of 3',
    explain: 'Output the input moved 3 places to the right, wrapping around: position i reads position i − 3 (mod L).',
    pattern: 'a diagonal moved 3 keys to the left, wrapping to the top-right corner for the first 3 queries.',
    classes: (vocab) => vocab,
    target: (x, i, L) => x[(i - 3 + L) % L],
    roles: (i, L) => [(i - 3 + L) % L],
    roleNames: ['position i − 3 (mod L)'],
  },
  pair: {
    label: 'first and previous token (2 heads)',
    explain:
      'Output two letters at each position: the first token of the sequence and the token before this one ' +
      '(wrapping, so position 0 reads the last). With H = 2 each head can take one of the two positions; ' +
      'a single head (try H = 1) must split its weight unevenly between them, so that the mix still tells which letter came from where.',
    pattern: 'one head puts its weight on key 0 (a vertical stripe), the other on key i − 1 (a diagonal under the main one).',
    // Classes are ordered pairs (first, previous): vocab² of them.
    classes: (vocab) => vocab * vocab,
    target: (x, i, L, vocab) => x[0] * vocab + x[(i - 1 + L) % L],
    roles: (i, L) => [0, (i - 1 + L) % L],
    roleNames: ['the first key (0)', 'the previous key i − 1'],
  },
};

export const TASK_NAMES = Object.keys(TASKS);

export function taskOf(name) {
  const task = TASKS[name];
  if (!task) throw new RangeError(`no task named '${name}' (${TASK_NAMES.join(', ')})`);
  return task;
}

// The targets (N·L) of the sequences in tokens (N·L).
export function targetsOf(name, tokens, { N, L, vocab }) {
  const task = taskOf(name);
  const out = new Int32Array(N * L);
  for (let n = 0; n < N; n++) {
    const x = tokens.subarray(n * L, (n + 1) * L);
    for (let i = 0; i < L; i++) out[n * L + i] = task.target(x, i, L, vocab);
  }
  return out;
}

// Letters for tokens (A, B, C, …), and for pair classes two letters.
export const tokenLetter = (t) => String.fromCharCode(65 + t);
export function classLabel(name, c, vocab) {
  return name === 'pair' ? tokenLetter(Math.floor(c / vocab)) + tokenLetter(c % vocab) : tokenLetter(c);
}

const keyOf = (tokens, n, L) => tokens.subarray(n * L, (n + 1) * L).join(',');

// Seeded sequences of uniformly drawn tokens. The held-out set is drawn from its own stream of the seed;
// training batches come from another and skip every held-out sequence, so accuracy on the held-out set
// is measured on sequences the model never trained on.
export class SequenceSource {
  constructor({ seed, L, vocab, heldOut = 256 }) {
    Object.assign(this, { L, vocab });
    const rng = new Prng(seed, 101);
    this.heldOut = new Int32Array(heldOut * L);
    for (let k = 0; k < this.heldOut.length; k++) this.heldOut[k] = Math.floor(rng.nextFloat() * vocab);
    this.heldOutKeys = new Set();
    for (let n = 0; n < heldOut; n++) this.heldOutKeys.add(keyOf(this.heldOut, n, L));
    this.rng = new Prng(seed, 102);
    this.skipped = 0; // training draws that were held-out sequences (and so drawn again)
  }

  batch(N) {
    const { L, vocab, rng } = this;
    const out = new Int32Array(N * L);
    for (let n = 0; n < N; n++) {
      do {
        for (let l = 0; l < L; l++) out[n * L + l] = Math.floor(rng.nextFloat() * vocab);
      } while (this.heldOutKeys.has(keyOf(out, n, L)) && ++this.skipped);
    }
    return out;
  }
}

// A fixed sequence whose weights the panel draws as training goes: the tokens 0, 1, 2, … (A, B, C, …),
// so every position holds a different letter when the vocabulary allows.
export function probeSequence(L, vocab) {
  return Int32Array.from({ length: L }, (_, i) => i % vocab);
}

// How well each role of a task shows in per-head weights (H, L, L) of one sequence: for each role, the
// head that puts the most weight on its expected keys, that mean weight, and in how many rows an
// expected key holds the row's largest weight (the pattern "dominates the row").
export function patternMatch(name, weights, { H, L }) {
  const task = taskOf(name);
  const roles = task.roleNames.length;
  const result = [];
  for (let r = 0; r < roles; r++) {
    let best = null;
    for (let h = 0; h < H; h++) {
      let mass = 0;
      let dominated = 0;
      for (let i = 0; i < L; i++) {
        const row = (h * L + i) * L;
        const j = task.roles(i, L)[r];
        mass += weights[row + j];
        let max = -Infinity;
        for (let k = 0; k < L; k++) if (k !== j) max = Math.max(max, weights[row + k]);
        if (weights[row + j] > max) dominated++;
      }
      const m = { role: task.roleNames[r], head: h, meanWeight: mass / L, rowsDominated: dominated };
      if (!best || m.meanWeight > best.meanWeight) best = m;
    }
    result.push(best);
  }
  return result;
}
