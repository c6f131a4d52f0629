// What sits beside the weights heatmap: the per-row strip (row sum, row entropy), the colour legend, the
// row summary and the cell readout. Pure drawing and text from a view slice; no interaction here.
import { SEQUENTIAL, cssColor } from '../shared/colormap.js';
import { NAN_RGB, fitCanvas } from '../shared/heatmap.js';
import { formatNumber } from '../shared/shapes.js';

const NAN_CSS = `rgb(${NAN_RGB.join(', ')})`;
const TEXT_ROW_PX = 15; // rows at least this tall (CSS px) get their row sum and entropy written out

export const fmt = (x, digits = 4) =>
  Number.isFinite(x) ? Number(x.toPrecision(digits)).toString() : x === Infinity ? '+∞' : x === -Infinity ? '−∞' : 'NaN';

// One band per row of the window: the row sum as a colour (green = 1, red = fully masked, 0) and the
// entropy as a bar against log S, the entropy of uniform attention; numbers too when rows are tall.
export function drawRowStrip(canvas, view, win) {
  const { w, h, dpr } = fitCanvas(canvas);
  const ctx = canvas.getContext('2d');
  ctx.clearRect(0, 0, w, h);
  const cellH = h / win.rows;
  const half = Math.floor(w / 2);
  const maxEntropy = Math.log(view.S) || 1;
  const showText = cellH >= TEXT_ROW_PX * dpr && half >= 44 * dpr;
  ctx.font = `${Math.round(11 * dpr)}px ui-monospace, SFMono-Regular, Menlo, monospace`;
  ctx.textBaseline = 'middle';
  for (let r = 0; r < win.rows; r++) {
    const i = win.r0 + r;
    const y = Math.floor(r * cellH);
    const hh = Math.max(1, Math.floor((r + 1) * cellH) - y);
    const gap = hh > 3 ? dpr : 0;
    const full = view.fullyMasked[i];
    const nan = Number.isNaN(view.rowSums[i]);
    ctx.fillStyle = nan ? NAN_CSS : full ? '#f6dede' : '#e9f3ec';
    ctx.fillRect(0, y, half - dpr, hh - gap);
    const frac = view.rowEntropy[i] / maxEntropy;
    ctx.fillStyle = '#eef0f4';
    ctx.fillRect(half + dpr, y, w - half - dpr, hh - gap);
    ctx.fillStyle = '#5b6fd6';
    ctx.fillRect(half + dpr, y, Math.max(0, (w - half - dpr) * frac), hh - gap);
    if (showText) {
      ctx.fillStyle = nan ? '#fff' : full ? '#9b2c2c' : '#1d5b32';
      ctx.fillText(view.rowSums[i].toFixed(3), 4 * dpr, y + hh / 2);
      ctx.fillStyle = frac > 0.55 ? '#fff' : '#1f2544';
      const e = view.rowEntropy[i];
      ctx.fillText(Number.isFinite(e) ? e.toFixed(2) : fmt(e), half + 5 * dpr, y + hh / 2);
    }
  }
}

// The colour key under the map: the scale it uses (the weights' sequential one, or the scores' diverging one)
// and three ticks, written with a typographic minus.
export function drawLegend(canvas, ticks, lo, hi, lut = SEQUENTIAL) {
  const ctx = canvas.getContext('2d');
  for (let x = 0; x < canvas.width; x++) {
    ctx.fillStyle = cssColor(lut, Math.round((x / (canvas.width - 1)) * 255));
    ctx.fillRect(x, 0, 1, canvas.height);
  }
  ticks.replaceChildren(
    ...[lo, (lo + hi) / 2, hi].map((v) => {
      const span = document.createElement('span');
      span.textContent = formatNumber(v).replace('-', '−');
      return span;
    }),
  );
}

// q·k for query i and key j of a view slice: one dot product of a row of its Q (L, E) and a row of its K
// (S, E), summed in float64 and rounded to float32 as the package's scores are.
export function rawScore(view, i, j) {
  const E = view.E;
  let dot = 0;
  for (let e = 0; e < E; e++) dot += view.query[i * E + e] * view.key[j * E + e];
  return Math.fround(dot);
}

const plural = (n, word, verb = null) => `${n} ${word}${n === 1 ? '' : 's'}${verb ? ` ${n === 1 ? verb[0] : verb[1]}` : ''}`;

// Row sums and entropy over the whole slice, as sentences. Rows holding NaN are counted apart: "sum to 1
// (largest error NaN)" would hide that the softmax broke down.
export function rowSummaryHtml(view) {
  let worst = 0;
  let masked = 0;
  let broken = 0;
  let eMin = Infinity;
  let eMax = -Infinity;
  let eSum = 0;
  for (let i = 0; i < view.L; i++) {
    if (view.fullyMasked[i]) {
      masked++;
      continue;
    }
    if (!Number.isFinite(view.rowSums[i])) {
      broken++;
      continue;
    }
    worst = Math.max(worst, Math.abs(view.rowSums[i] - 1));
    eMin = Math.min(eMin, view.rowEntropy[i]);
    eMax = Math.max(eMax, view.rowEntropy[i]);
    eSum += view.rowEntropy[i];
  }
  const live = view.L - masked - broken;
  const sums = live
    ? `${plural(live, 'row', ['sums', 'sum'])} to 1 (largest error ${worst.toExponential(1)})`
    : broken
      ? 'no row sums to a number'
      : 'no row has a visible key';
  const parts = [
    `<p><strong>Row sums</strong> (left strip): ${sums}` +
      `${broken ? `; <span class="nan-text">${plural(broken, 'row', ['holds', 'hold'])} NaN (not a number)</span>` : ''}` +
      `${masked ? `; <span class="bad">${plural(masked, 'fully masked row', ['sums', 'sum'])} to 0</span>` : ''}.</p>`,
  ];
  if (live) {
    parts.push(
      `<p><strong>Row entropy</strong> (right strip, nats): min ${fmt(eMin, 3)}, mean ${fmt(eSum / live, 3)}, max ${fmt(eMax, 3)}; ` +
        `uniform attention over S = ${view.S} keys would be log S = ${fmt(Math.log(view.S), 3)}.</p>`,
    );
  }
  return parts.join('');
}

// The readout for cell (i, j): query, key, raw score, scaled score, weight, and what a mask did to it.
export function readoutHtml(view, cursor, blocks) {
  if (!view || !cursor) return '<p class="muted">Point at a cell, or focus the map and use the arrow keys.</p>';
  const { i, j } = cursor;
  const k = i * view.S + j;
  const raw = rawScore(view, i, j);
  const rows = [
    ['query', `i = ${i}`],
    ['key', `j = ${j}`],
    ['raw score q·k', fmt(raw)],
    [view.defaultScale === false ? `scaled × ${fmt(view.scale)}` : `scaled × 1/√${view.E}`, view.allowed[k] ? fmt(raw * view.scale) : `${fmt(raw * view.scale)} → −∞ (masked)`],
    ['weight', fmt(view.weights[k], 5)],
  ];
  let note = '';
  if (view.fullyMasked[i]) note = '<p class="bad">Every key is hidden from this query: its weights are all 0 and its output row is 0, never NaN.</p>';
  else if (Number.isNaN(view.weights[k])) note = '<p class="nan-text">This weight is NaN, not a number: the note below the map says why.</p>';
  else if (!view.allowed[k]) note = '<p class="muted">This key is hidden from this query, so its weight is exactly 0.</p>';
  const blocky = blocks.blockR > 1 || blocks.blockC > 1;
  return (
    `<dl>${rows.map(([a, b]) => `<dt>${a}</dt><dd>${b}</dd>`).join('')}</dl>${note}` +
    (blocky ? `<p class="muted">Each pixel shows the largest weight of a ${blocks.blockR}×${blocks.blockC} block; zoom in to see single cells.</p>` : '')
  );
}
