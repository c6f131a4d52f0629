// The "why scale by 1/√E" panel: five uPlot line charts over E = 4 … 1024 (log axis), each comparing
// scaled attention (the package's default scale 1/√E) with unscaled (scale = 1). Three describe the
// softmax (largest weight, entropy, Jacobian norm); two show the gradient that the package's backward pass
// sends to Q and to K, on a log axis because unscaled it spans many orders of magnitude.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatNumber } from './shapes.js';
import { GRAD_OUTPUT, STUDY_EV, STUDY_TRIALS } from './scaling-study.js';

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

  setData(rows, { L, S, gen }) {
    const B = STUDY_TRIALS;
    this.intro.textContent =
      `For each E, ${B} independent Q (${B}, ${L}, E) and K (${B}, ${S}, E) are drawn with the page's seed and distribution ` +
      `(${gen.distribution}, scale ${gen.scale}), with V (${B}, ${S}, ${STUDY_EV}) likewise; the package's backward pass ` +
      `(scaledDotProductAttentionGrad) computes the weights and the gradients with its default scale 1/√E and with scale = 1, ` +
      `for a fixed upstream gradient dO (${B}, ${L}, ${STUDY_EV}) of standard normals (seed ${GRAD_OUTPUT.seed}). ` +
      `Weight statistics are means over the ${B * L} query rows; the gradient charts show the median over rows of each ` +
      `row's L2 norm: ${B * L} rows of dQ (${B}, ${L}, E), ${B * S} rows of dK (${B}, ${S}, E).`;
    const xs = rows.map((r) => r.E);
    this.plots.forEach((p) => p.destroy());
    this.boxes.forEach((b) => b.replaceChildren());
    // A log axis cannot place 0: a norm that is exactly 0 (every weight but one underflowed) leaves a gap.
    const point = (c, v) => (c.log && !(v > 0) ? null : v);
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
            ...(c.log ? { splits: logSplits } : {}),
            values: (_u, vals) => vals.map((v) => (v == null ? '' : formatNumber(v))),
          },
        ],
        series: [
          { label: 'E', value: (_u, v) => (v == null ? '–' : String(v)) },
          { label: 'scaled 1/√E', stroke: SCALED, width: 2, points: { show: true, size: 6, fill: SCALED }, value: (_u, v) => (v == null ? '–' : formatNumber(v)) },
          { label: 'unscaled', stroke: UNSCALED, width: 2, dash: [6, 4], points: { show: true, size: 6, fill: UNSCALED }, value: (_u, v) => (v == null ? '–' : formatNumber(v)) },
        ],
        // One legend for all the charts sits above them (chart-legend in index.html).
        legend: { show: false },
      };
      return new uPlot(opts, data, this.boxes[k]);
    });
    this.writeSummary(rows);
    this.rows = rows;
  }

  writeSummary(rows) {
    const first = rows[0];
    const last = rows[rows.length - 1];
    const ratio = (a, b) => (b > 0 ? a / b : NaN);
    const f = formatNumber;
    const s0 = first.scaled;
    const s1 = last.scaled;
    const u0 = first.unscaled;
    const u1 = last.unscaled;
    const softmax =
      `Raw scores q·k spread out as E grows: standard deviation ${f(first.scoreStd)} at E = ${first.E}, ` +
      `${f(last.scoreStd)} at E = ${last.E} (√E grows ×${f(Math.sqrt(last.E / first.E))}). ` +
      `Unscaled, at E = ${last.E} the largest weight averages <strong>${f(u1.maxWeight)}</strong> ` +
      `and the softmax gradient is ${f(ratio(u1.gradNorm, u0.gradNorm))}× its value at E = ${first.E}: ` +
      `the softmax saturates and passes almost no gradient. Scaled by 1/√E the same rows keep a largest weight of ` +
      `<strong>${f(s1.maxWeight)}</strong> and a gradient ${f(ratio(s1.gradNorm, s0.gradNorm))}× the E = ${first.E} value.`;
    // Every figure below is measured by the package's backward pass. The interpretive sentences appear only
    // when the figures bear them out (with a small Q and K scale, nothing saturates and they would be false).
    const qRatio = ratio(u1.gradQueryMedian, s1.gradQueryMedian);
    const vanished = qRatio < 0.1;
    const spiky = vanished && u1.gradQueryMean > 10 * u1.gradQueryMedian;
    const gradients =
      `What reaches Q and K: scaled, the median query row gets ‖dQᵢ‖ = ${f(s0.gradQueryMedian)} at E = ${first.E} and ` +
      `${f(s1.gradQueryMedian)} at E = ${last.E} (keys: ‖dKⱼ‖ = ${f(s0.gradKeyMedian)} and ${f(s1.gradKeyMedian)}). ` +
      `Unscaled, the median query row gets ${f(u0.gradQueryMedian)} at E = ${first.E} and <strong>${f(u1.gradQueryMedian)}</strong> ` +
      `at E = ${last.E}, <strong>${f(qRatio)}×</strong> the scaled value${vanished ? ': for most rows the gradient vanishes' : ''}. ` +
      `The mean over query rows is ${f(u1.gradQueryMean)} (scaled ${f(s1.gradQueryMean)})` +
      (spiky
        ? `, pulled up by the few rows whose two largest scores nearly tie, which still get large gradients. ` +
          `So the learning signal is not merely smaller: most rows get almost none and a few get a lot. `
        : '. ') +
      `Keys gather gradient from every query row${spiky ? ', those few included' : ''}: their median is ${f(u1.gradKeyMedian)}, ` +
      `${f(ratio(u1.gradKeyMedian, s1.gradKeyMedian))}× the scaled value.`;
    this.summary.innerHTML = `<p>${softmax}</p><p>${gradients}</p>`;
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
