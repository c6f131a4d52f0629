// The "why scale by 1/√E" panel: three uPlot line charts over E = 4 … 1024 (log axis), each comparing
// the softmax of scaled scores (the package's default scale 1/√E) with unscaled ones (scale = 1).
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatNumber } from './shapes.js';

const CHARTS = [
  { key: 'maxWeight', title: 'largest weight per row', y: 'mean max weight', range: [0, 1] },
  { key: 'entropy', title: 'row entropy', y: 'nats', range: null },
  { key: 'gradNorm', title: 'softmax gradient ‖∂w/∂s‖', y: 'Frobenius norm', range: null },
];
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
    this.intro.textContent =
      `For each E, fresh Q (1, ${L}, E) and K (1, ${S}, E) are drawn with the page's seed and distribution (${gen.distribution}, scale ${gen.scale}); ` +
      `the package computes the weights with its default scale 1/√E and with scale = 1. Averages over the ${L} query rows.`;
    const xs = rows.map((r) => r.E);
    this.plots.forEach((p) => p.destroy());
    this.boxes.forEach((b) => b.replaceChildren());
    this.plots = CHARTS.map((c, k) => {
      const data = [xs, rows.map((r) => r.scaled[c.key]), rows.map((r) => r.unscaled[c.key])];
      const opts = {
        title: c.title,
        width: this.chartWidth(),
        height: 210,
        scales: { x: { time: false, distr: 3, log: 2 }, y: c.range ? { range: c.range } : { auto: true } },
        axes: [
          // Every other studied E, so the labels never collide on a narrow chart; every E has a point.
          { label: 'E (d_k)', space: 12, splits: () => xs.filter((_, k) => k % 2 === 0), values: (_u, vals) => vals.map((v) => (v == null ? '' : String(v))) },
          { label: c.y, size: 52, values: (_u, vals) => vals.map((v) => formatNumber(v)) },
        ],
        series: [
          { label: 'E', value: (_u, v) => (v == null ? '–' : String(v)) },
          { label: 'scaled 1/√E', stroke: SCALED, width: 2, points: { show: true, size: 6, fill: SCALED }, value: (_u, v) => (v == null ? '–' : formatNumber(v)) },
          { label: 'unscaled', stroke: UNSCALED, width: 2, dash: [6, 4], points: { show: true, size: 6, fill: UNSCALED }, value: (_u, v) => (v == null ? '–' : formatNumber(v)) },
        ],
        // One legend for all three charts sits above them (scaling-legend in index.html).
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
    this.summary.innerHTML =
      `Raw scores q·k spread out as E grows: standard deviation ${formatNumber(first.scoreStd)} at E = ${first.E}, ` +
      `${formatNumber(last.scoreStd)} at E = ${last.E} (√E grows ×${formatNumber(Math.sqrt(last.E / first.E))}). ` +
      `Unscaled, at E = ${last.E} the largest weight averages <strong>${formatNumber(last.unscaled.maxWeight)}</strong> ` +
      `and the softmax gradient is ${formatNumber(ratio(last.unscaled.gradNorm, first.unscaled.gradNorm))}× its value at E = ${first.E}: ` +
      `the softmax saturates and passes almost no gradient. Scaled by 1/√E the same rows keep a largest weight of ` +
      `<strong>${formatNumber(last.scaled.maxWeight)}</strong> and a gradient ${formatNumber(ratio(last.scaled.gradNorm, first.scaled.gradNorm))}× the E = ${first.E} value.`;
  }

  resize() {
    const w = this.chartWidth();
    for (const p of this.plots) p.setSize({ width: w, height: 210 });
  }
}
