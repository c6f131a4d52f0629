// The step-time chart (uPlot, like the page's other charts): milliseconds per decoding step against the
// cache length n, for the KvCache (float32 and float16 storage) and for recomputing from a full copy.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatNumber } from '../shared/shapes.js';

const HEIGHT = 240;
export const SERIES = [
  { key: 'full', label: 'full copy each step', stroke: '#d1495b', dash: [6, 4] },
  { key: 'float32', label: 'KV cache, float32', stroke: '#3b4cca' },
  { key: 'float16', label: 'KV cache, float16', stroke: '#1f9e89' },
];

export class DecodeChart {
  constructor(box) {
    this.box = box;
    this.plot = null;
    new ResizeObserver(() => this.plot?.setSize({ width: this.width(), height: HEIGHT })).observe(box);
  }

  width() {
    return Math.max(220, Math.floor(this.box.clientWidth));
  }

  // timing: timeDecodeSteps's result.
  setData({ rows }) {
    const present = SERIES.filter((s) => rows.every((r) => (s.key === 'full' ? r.full : r.cache[s.key]) !== undefined));
    const data = [rows.map((r) => r.length), ...present.map((s) => rows.map((r) => (s.key === 'full' ? r.full : r.cache[s.key])))];
    this.plot?.destroy();
    const ms = (_u, v) => (v == null ? '–' : `${formatNumber(v)} ms`);
    this.plot = new uPlot(
      {
        title: 'time per decoding step',
        width: this.width(),
        height: HEIGHT,
        scales: { x: { time: false }, y: { range: (_u, _min, max) => [0, max * 1.08] } },
        axes: [
          { label: 'cache length n (positions attended over)', values: (_u, vals) => vals.map((v) => (v == null ? '' : String(v))) },
          { label: 'ms per step', size: 52, values: (_u, vals) => vals.map((v) => (v == null ? '' : formatNumber(v))) },
        ],
        series: [
          { label: 'n', value: (_u, v) => (v == null ? '–' : String(v)) },
          ...present.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, dash: s.dash, points: { show: true, size: 6, fill: s.stroke }, value: ms })),
        ],
        legend: { show: true, live: true },
      },
      data,
      this.box,
    );
    this.box.dataset.series = present.map((s) => s.key).join(' ');
  }

  // What the chart was given: the series' labels and [x, …y] as uPlot holds them, for the page's test hook.
  plotted() {
    if (!this.plot) return null;
    return { labels: this.plot.series.map((s) => s.label), data: this.plot.data.map((d) => [...d]) };
  }
}
