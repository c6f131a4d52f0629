// The "why scale by 1/√E" panel: five uPlot line charts over E = 4 … 1024 (log axis), each comparing
// scaled attention (the package's default scale 1/√E) with unscaled (scale = 1). Three describe the
// softmax (largest weight, entropy, Jacobian norm); two show the gradient that the package's backward pass
// sends to Q and to K, on a log axis because unscaled it spans many orders of magnitude.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatNumber } from '../shared/shapes.js';
import { GRAD_OUTPUT, STUDY_EV, STUDY_TRIALS } from './scaling-study.js';
import { scalingSummary } from './scaling-summary.js';
import { ticksBetween } from '../shared/ticks.js';

const CHARTS = [
  { key: 'maxWeight', title: 'largest weight per row', y: 'mean max weight', range: [0, 1] },
  { key: 'entropy', title: 'row entropy', y: 'nats', range: null },
  { key: 'gradNorm', title: 'softmax gradient ‖∂w/∂s‖', y: 'Frobenius norm', range: null },
  // ‖dQᵢ‖: the L2 norm of query row i of dQ; the median over the study's query rows (key rows for dK).
  { key: 'gradQueryMedian', title: 'gradient reaching Q: median ‖dQᵢ‖', y: 'median row norm', log: true },
  { key: 'gradKeyMedian', title: 'gradient reaching K: median ‖dKⱼ‖', y: 'median row norm', log: true },
];
// Grid lines of a log axis at the powers of ten, with 2× and 5× added when the data spans less than two
// decades (uPlot's default draws every 1…9 × 10ᵏ, a grey blur on a short chart).
function logSplits(_u, _axis, min, max) {
  const decades = [];
  for (let k = Math.floor(Math.log10(min)); k <= Math.ceil(Math.log10(max)); k++) decades.push(10 ** k);
  const within = (v) => v >= min * (1 - 1e-9) && v <= max * (1 + 1e-9);
  const powers = decades.filter(within);
  return powers.length >= 3 ? powers : decades.flatMap((d) => [d, 2 * d, 5 * d]).filter(within);
}

const SCALED = '#3b4cca';
const UNSCALED = '#d1495b';

export class ScalingView {
  constructor({ charts, intro, summary }) {
    Object.assign(this, { container: charts, intro, summary });
    this.plots = [];
    this.ticks = {}; // chart key → the value-axis ticks last drawn
    this.note = Object.assign(document.createElement('p'), { className: 'chart-note', hidden: true });
    charts.append(this.note);
    this.boxes = CHARTS.map((c) => {
      const box = document.createElement('figure');
      box.className = 'chart';
      box.setAttribute('aria-label', `${c.title} against E, scaled and unscaled`);
      charts.append(box);
      return box;
    });
    new ResizeObserver(() => this.resize()).observe(charts);
  }

  chartWidth() {
    const w = this.boxes[0].clientWidth;
    return Math.max(220, Math.floor(w));
  }

  setData(rows, { L, S, gen, draw = 0 }) {
    const B = STUDY_TRIALS;
    this.intro.textContent =
      `Draw ${draw + 1}. For each E, ${B} independent Q (${B}, ${L}, E) and K (${B}, ${S}, E) are drawn with the page's seed and distribution ` +
      `(${gen.distribution}, data spread ${formatNumber(gen.spread)}), with V (${B}, ${S}, ${STUDY_EV}) likewise; the package's backward pass ` +
      `(scaledDotProductAttentionGrad) computes the weights and the gradients with its default scale 1/√E and with scale = 1, ` +
      `for a fixed upstream gradient dO (${B}, ${L}, ${STUDY_EV}) of standard normals (seed ${GRAD_OUTPUT.seed}). ` +
      `Weight statistics are means over the ${B * L} query rows; the gradient charts show the median over rows of each ` +
      `row's L2 norm: ${B * L} rows of dQ (${B}, ${L}, E), ${B * S} rows of dK (${B}, ${S}, E). ` +
      `"New draw" draws fresh Q, K and V from the same seed (other streams of it): the figures move a little, the conclusion does not.`;
    this.intro.dataset.draw = String(draw);
    const xs = rows.map((r) => r.E);
    this.plots.forEach((p) => p.destroy());
    this.boxes.forEach((b) => b.replaceChildren());
    // A log axis cannot place 0: a norm that is exactly 0 (every weight but one underflowed) leaves a gap. NaN
    // (overflowed scores) is a gap on every chart, and the charts say why.
    const point = (c, v) => (!Number.isFinite(v) || (c.log && !(v > 0)) ? null : v);
    this.plots = CHARTS.map((c, k) => {
      const data = [xs, rows.map((r) => point(c, r.scaled[c.key])), rows.map((r) => point(c, r.unscaled[c.key]))];
      const y = c.log ? { distr: 3, log: 10 } : c.range ? { range: c.range } : { auto: true };
      const opts = {
        title: c.title,
        width: this.chartWidth(),
        height: 210,
        scales: { x: { time: false, distr: 3, log: 2 }, y },
        axes: [
          // Every other studied E, so the labels never collide on a narrow chart; every E has a point.
          { label: 'E (d_k)', space: 12, splits: () => xs.filter((_, k) => k % 2 === 0), values: (_u, vals) => vals.map((v) => (v == null ? '' : String(v))) },
          {
            label: c.y,
            size: c.log ? 62 : 52,
            // The ticks each axis was given are kept for the page's test hook.
            splits: (u, axis, min, max) => (this.ticks[c.key] = c.log ? logSplits(u, axis, min, max) : ticksBetween(min, max)),
            values: (_u, vals) => vals.map((v) => (v == null ? '' : formatNumber(v))),
          },
        ],
        series: [
          { label: 'E', value: (_u, v) => (v == null ? '–' : String(v)) },
          { label: 'scaled 1/√E', stroke: SCALED, width: 2, points: { show: true, size: 6, fill: SCALED }, value: (_u, v) => (v == null ? '–' : formatNumber(v)) },
          { label: 'unscaled', stroke: UNSCALED, width: 2, dash: [6, 4], points: { show: true, size: 6, fill: UNSCALED }, value: (_u, v) => (v == null ? '–' : formatNumber(v)) },
        ],
        // The key sits above the charts (chart-legend in index.html); each chart's own legend shows the values
        // under the cursor, so the crosshair reads as numbers.
        legend: { show: true, live: true },
      };
      return new uPlot(opts, data, this.boxes[k]);
    });
    const overflow = this.writeSummary(rows, gen.spread);
    this.note.hidden = overflow === 'none';
    this.note.textContent =
      overflow === 'all'
        ? 'Nothing to plot: at this data spread the scores overflow float32 at every E, and every figure is NaN (the text below says why).'
        : overflow === 'some'
          ? 'The lines stop where the scores overflow float32 (NaN figures are not plotted; the text below says where).'
          : '';
    this.rows = rows;
  }

  writeSummary(rows, spread) {
    const { html, saturated, vanished, overflow } = scalingSummary(rows, { spread });
    this.summary.innerHTML = html;
    this.summary.dataset.saturated = String(saturated);
    this.summary.dataset.vanished = String(vanished);
    this.summary.dataset.overflow = overflow;
    return overflow;
  }

  // What the charts were given, by chart key: [E values, scaled, unscaled] as uPlot holds them (null = no
  // point), for the page's test hook.
  plotted() {
    return Object.fromEntries(CHARTS.map((c, k) => [c.key, this.plots[k].data.map((series) => [...series])]));
  }

  resize() {
    const w = this.chartWidth();
    for (const p of this.plots) p.setSize({ width: w, height: 210 });
  }
}
