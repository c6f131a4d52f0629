// The chapter's loss chart (uPlot): the training batch's loss at every reported step and the validation
// loss at each evaluation, for the stage training now. Cross-entropy in nats on a linear axis: from ln 65 ≈
// 4.2 at the start to under 2, a range a linear axis shows well.
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { formatLoss } from './gpt-format.js';

const TRAIN = '#3b4cca';
const VAL = '#d1495b';
const HEIGHT = 220;
const loss = (_u, v) => (v == null ? '–' : formatLoss(v));

export class GptCharts {
  constructor(box) {
    this.box = box;
    this.reset();
    new ResizeObserver(() => this.plot.setSize({ width: this.width(), height: HEIGHT })).observe(box);
  }

  width() {
    return Math.max(220, Math.floor(this.box.clientWidth));
  }

  reset() {
    this.train = new Map(); // step → training loss
    this.val = new Map(); // step → validation loss
    this.plot?.destroy();
    this.plot = new uPlot(
      {
        title: 'loss (cross-entropy, nats)',
        width: this.width(),
        height: HEIGHT,
        scales: { x: { time: false } },
        axes: [{ label: 'training step' }, { label: 'loss', size: 50 }],
        series: [
          { label: 'step', value: (_u, v) => (v == null ? '–' : String(v)) },
          { label: 'training batch', stroke: TRAIN, width: 1.5, value: loss, spanGaps: true },
          { label: 'validation', stroke: VAL, width: 2, value: loss, spanGaps: true, points: { show: true, size: 5 } },
        ],
      },
      [[], [], []],
      this.box,
    );
  }

  addTrain(step, value) {
    this.train.set(step, value);
    this.redraw();
  }

  addVal(step, value) {
    this.val.set(step, value);
    this.redraw();
  }

  // At most one redraw a frame, however fast the Worker reports. The x values are the union of both series'
  // steps; each series sits on its own.
  redraw() {
    this.pending ||= requestAnimationFrame(() => {
      this.pending = 0;
      this.draw();
    });
  }

  draw() {
    const steps = [...new Set([...this.train.keys(), ...this.val.keys()])].sort((a, b) => a - b);
    this.plot.setData([steps, steps.map((s) => this.train.get(s) ?? null), steps.map((s) => this.val.get(s) ?? null)]);
  }

  // What the chart was given, for the page's test hook.
  get points() {
    return { train: this.train.size, val: this.val.size };
  }
}
