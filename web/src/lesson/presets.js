// Starting points for the controls. "lesson" is the lesson's example and the page's first load.
const base = { gen: { seed: 42, distribution: 'normal', spread: 1 }, causal: false, alignment: 'top-left', paddingOn: false };

export const PRESETS = {
  lesson: { ...base, dims: { B: 4, H: 4, Hkv: 4, useHeads: false, L: 10, S: 10, E: 64, Ev: 64 } },
  // Eight query heads over two key/value heads, causal: the shape of a modern decoder layer.
  gqa: { ...base, causal: true, dims: { B: 2, H: 8, Hkv: 2, useHeads: true, L: 32, S: 32, E: 32, Ev: 32 } },
  // One long sequence: a million weights in one matrix, drawn downsampled with zoom.
  long: { ...base, dims: { B: 1, H: 4, Hkv: 4, useHeads: false, L: 1024, S: 1024, E: 64, Ev: 64 } },
};
