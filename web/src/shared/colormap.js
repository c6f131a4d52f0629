// Colour scales for the heatmaps, as lookup tables of 256 RGB triples (a Uint8Array of 768), so drawing a
// million cells is one table read each. Weights use a sequential scale (dark = 0, bright = large);
// Q, K, V and the output hold signed values and use a diverging one (blue < 0 < red, white at 0).

// Viridis sampled at ten evenly spaced points: perceptually even, and still ordered in grey print.
const SEQUENTIAL_STOPS = [
  '#440154', '#482878', '#3e4989', '#31688e', '#26828e', '#1f9e89', '#35b779', '#6ece58', '#b5de2b', '#fde725',
];
const DIVERGING_STOPS = ['#2c5f9e', '#6f9bcf', '#c3d6ec', '#f7f7f7', '#f1c4ae', '#d6775a', '#a3282b'];

function hexToRgb(hex) {
  const n = parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

// Linear interpolation between evenly spaced stops.
export function buildLut(stops) {
  const rgb = stops.map(hexToRgb);
  const lut = new Uint8Array(256 * 3);
  for (let k = 0; k < 256; k++) {
    const t = (k / 255) * (rgb.length - 1);
    const i = Math.min(rgb.length - 2, Math.floor(t));
    const f = t - i;
    for (let c = 0; c < 3; c++) lut[3 * k + c] = Math.round(rgb[i][c] * (1 - f) + rgb[i + 1][c] * f);
  }
  return lut;
}

export const SEQUENTIAL = buildLut(SEQUENTIAL_STOPS);
export const DIVERGING = buildLut(DIVERGING_STOPS);

// Table index for value v on the range [lo, hi], clamped; NaN maps to the middle so it is never out of range.
export function lutIndex(v, lo, hi) {
  if (!(hi > lo)) return 0;
  const t = (v - lo) / (hi - lo);
  if (Number.isNaN(t)) return 128;
  return t <= 0 ? 0 : t >= 1 ? 255 : Math.round(t * 255);
}

export function cssColor(lut, k) {
  return `rgb(${lut[3 * k]}, ${lut[3 * k + 1]}, ${lut[3 * k + 2]})`;
}
