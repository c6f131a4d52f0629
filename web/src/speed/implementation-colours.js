// One colour per implementation, for the live comparison and the benchmark's chart alike: the same
// implementation has the same colour in both, and no colour stands for two. The live comparison's kinds
// ('simd', 'threads', 'scalar', 'js') and the benchmark's keys (xattnSimd, …) name the same builds.
const COLOURS = {
  xattnSimd: '#3b4cca',
  xattnRelaxed: '#8e9be8',
  xattnThreads: '#c9a227',
  xattnScalar: '#e07a1f',
  ortWeb: '#2a9d8f',
  tfjsWasm: '#8d99ae',
  plainJs: '#b5179e',
  ortNode: '#6a4c93',
};
const KIND = { simd: 'xattnSimd', threads: 'xattnThreads', scalar: 'xattnScalar', js: 'plainJs' };
// For a key neither chart knows yet: greys that are not any implementation's.
const SPARE = ['#4d5566', '#a3a9b8', '#2e3440'];

// The colour of a benchmark key or a live comparison kind; `k` picks a spare one for an unknown key.
export function implementationColour(key, k = 0) {
  return COLOURS[KIND[key] ?? key] ?? SPARE[k % SPARE.length];
}
