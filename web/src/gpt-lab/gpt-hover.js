// Which earlier characters a generated character attended to (pure). A 'token' reply gives, per layer, the
// weights (heads·t) of the query that produced the character at `index` of the text (prompt and generated
// characters, from 0) over the t characters before it: positions index − t … index − 1, the model's context
// (t is smaller than index once the text outgrows the context).

// [{ layer, head, keys: [{ pos, char, weight }] }] for every layer and head, with the characters from `text`.
export function attendedChars(text, { index, attention }) {
  const out = [];
  for (const { layer, heads, weights } of attention) {
    const t = weights.length / heads;
    const first = index - t;
    for (let h = 0; h < heads; h++) {
      const keys = [];
      for (let j = 0; j < t; j++) keys.push({ pos: first + j, char: text[first + j] ?? '', weight: weights[h * t + j] });
      out.push({ layer, head: h, keys });
    }
  }
  return out;
}

// The heat of a key (0 … 1) for one layer and head: its weight over the row's largest, so the key the head
// looked at most is always at full colour, however the row spreads its weight. Map pos → heat.
export function heatOf(keys) {
  const max = keys.reduce((m, k) => Math.max(m, k.weight), 0);
  return new Map(keys.map((k) => [k.pos, max > 0 ? k.weight / max : 0]));
}

// The k keys with most weight, largest first.
export function topKeys(keys, k) {
  return [...keys].sort((a, b) => b.weight - a.weight || a.pos - b.pos).slice(0, k);
}
