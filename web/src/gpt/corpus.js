// The character corpus of the "Build a GPT" chapter, as bench/gpt/model.py's load_corpus reads it: the vocabulary
// is the text's distinct characters (Unicode code points, as Python's str holds them) sorted by code point, each
// character's id its index there, and the first 90% of the ids (int(0.9 · n)) train while the rest validate.

// text → { chars, train, val, encode, decode }; train and val are Int32Arrays of ids.
export function makeCorpus(text) {
  if (typeof text !== 'string' || text.length < 2) {
    throw new TypeError(`makeCorpus: text must be a string of at least 2 characters, got ${typeof text === 'string' ? `${text.length}` : typeof text}`);
  }
  const chars = [...new Set(text)].sort((a, b) => a.codePointAt(0) - b.codePointAt(0));
  const vocab = makeVocab(chars);
  const ids = vocab.encode(text);
  const n = Math.floor(0.9 * ids.length);
  return { ...vocab, train: ids.subarray(0, n), val: ids.subarray(n) };
}

// The encoder and decoder of a vocabulary (an array of characters, id = index).
export function makeVocab(chars) {
  const index = new Map(chars.map((c, i) => [c, i]));
  if (index.size !== chars.length) throw new RangeError('makeVocab: the vocabulary repeats a character');
  // Ids by code point for the Basic Multilingual Plane (−1: none), so a megabyte of text encodes in a few
  // milliseconds; characters past it go through the map.
  const bmp = new Int32Array(0x10000).fill(-1);
  chars.forEach((c, i) => {
    if (c.length === 1) bmp[c.charCodeAt(0)] = i;
  });
  return {
    chars,
    // A string → Int32Array of ids, one per character; a character outside the vocabulary is refused, naming it
    // and its place (counted in characters).
    encode(s) {
      const ids = new Int32Array(s.length);  // at least as many code units as characters
      let n = 0;
      for (let i = 0; i < s.length; n++) {
        const unit = s.charCodeAt(i);
        // A high surrogate and the low one after it are one character.
        const low = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
        const width = unit >= 0xd800 && unit <= 0xdbff && low >= 0xdc00 && low <= 0xdfff ? 2 : 1;
        const id = width === 1 ? bmp[unit] : (index.get(s.slice(i, i + 2)) ?? -1);
        if (id < 0) throw new RangeError(`encode: character ${JSON.stringify(s.slice(i, i + width))} at ${n} is not in the vocabulary`);
        ids[n] = id;
        i += width;
      }
      return ids.slice(0, n);
    },
    decode(ids) {
      let s = '';
      for (const id of ids) s += chars[id];
      return s;
    },
  };
}
