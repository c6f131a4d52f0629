// The training panel's two uPlot charts: loss (the training batch's and the held-out set's, on a log axis:
// it falls over orders of magnitude) and held-out accuracy (exact sequences and tokens, 0 … 100%).
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatNumber } from '../shared/shapes.js';

const TRAIN = '#3b4cca';
const HELD = '#d1495b';
const HEIGHT = 200;
const num = (_u, v) => (v == null ? '–' : formatNumber(v));
const pct = (_u, v) => (v == null ? '–' : `${(100 * v).toFixed(1)}%`);

export class TrainCharts {
  constructor(container) {
    this.container = container;
    this.boxes = ['loss', 'accuracy'].map((name) => {
      const box = document.createElement('figure');
      box.className = 'chart';
      box.dataset.chart = name;
      container.append(box);
      return box;
    });
    this.boxes[0].setAttribute('aria-label', 'Loss against training step: the training batch and the held-out sequences');
    this.boxes[1].setAttribute('aria-label', 'Held-out accuracy against training step: exact sequences and tokens');
    this.reset();
    new ResizeObserver(() => this.resize()).observe(container);
  }

  width() {
    return Math.max(220, Math.floor(this.boxes[0].clientWidth));
  }

  reset() {
    this.train = { steps: [], loss: [] };
    this.held = { steps: [], loss: [], token: [], sequence: [] };
    this.plots?.forEach((p) => p.destroy());
    const x = { label: 'step', value: (_u, v) => (v == null ? '–' : String(v)) };
    const axes = (yLabel, values) => [{ label: 'training step' }, { label: yLabel, size: 56, values }];
    this.plots = [
      new uPlot(
        {
          title: 'loss (cross-entropy, nats)',
          width: this.width(),
          height: HEIGHT,
          scales: { x: { time: false }, y: { distr: 3, log: 10 } },
          axes: axes('loss', (_u, vals) => vals.map((v) => (v == null ? '' : formatNumber(v)))),
          series: [x, { label: 'training batch', stroke: TRAIN, width: 1.5, value: num }, { label: 'held-out', stroke: HELD, width: 2, value: num, spanGaps: true }],
        },
        [[], [], []],
        this.boxes[0],
      ),
      new uPlot(
        {
          title: 'held-out accuracy',
          width: this.width(),
          height: HEIGHT,
          scales: { x: { time: false }, y: { range: [0, 1] } },
          axes: axes('accuracy', (_u, vals) => vals.map((v) => (v == null ? '' : `${Math.round(100 * v)}%`))),
          series: [
            x,
            { label: 'exact sequences', stroke: HELD, width: 2, value: pct },
            { label: 'tokens', stroke: TRAIN, width: 1.5, dash: [5, 4], value: pct },
          ],
        },
        [[], [], []],
        this.boxes[1],
      ),
    ];
  }

  // Appends a snapshot's new points and redraws.
  add(losses, evals) {
    for (const { step, loss } of losses) {
      this.train.steps.push(step);
      // A log axis cannot show 0 (a perfect batch in float64): the smallest positive float stands in.
      this.train.loss.push(Math.max(loss, 1e-12));
    }
    for (const e of evals) {
      this.held.steps.push(e.step);
      this.held.loss.push(Math.max(e.loss, 1e-12));
      this.held.token.push(e.token);
      this.held.sequence.push(e.sequence);
    }
    if (!losses.length && !evals.length) return;
    // The loss chart's x values are the union of both series' steps; the held-out loss sits on its steps.
    const steps = [...new Set([...this.held.steps, ...this.train.steps])].sort((a, b) => a - b);
    const trainAt = new Map(this.train.steps.map((s, k) => [s, this.train.loss[k]]));
    const heldAt = new Map(this.held.steps.map((s, k) => [s, this.held.loss[k]]));
    this.plots[0].setData([steps, steps.map((s) => trainAt.get(s) ?? null), steps.map((s) => heldAt.get(s) ?? null)]);
    this.plots[1].setData([this.held.steps, this.held.sequence, this.held.token]);
  }

  resize() {
    const w = this.width();
    for (const p of this.plots) p.setSize({ width: w, height: HEIGHT });
  }
}
