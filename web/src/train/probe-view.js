// Every head's weights for the training panel's probe sequence, side by side on one colour scale (0 … 1,
// a weight's whole range), with the probe's letters on the axes, and the model's answer under them.
import { SEQUENTIAL } from '../shared/colormap.js';
import { drawColorBar, drawMatrix, fitCanvas } from '../shared/heatmap.js';
import { classLabel, tokenLetter } from './tasks.js';

export class ProbeView {
  constructor({ grid, answer, legend }) {
    Object.assign(this, { grid, answer });
    drawColorBar(legend);
    this.probe = null;
    this.figures = [];
    new ResizeObserver(() => this.draw()).observe(grid);
  }

  setData(probe, task, vocab) {
    if (this.figures.length !== probe.H || this.probe?.L !== probe.L) this.build(probe);
    this.probe = probe;
    this.task = task;
    this.vocab = vocab;
    this.draw();
    this.writeAnswer();
  }

  // One figure per head: a canvas framed by the keys' letters (top) and the queries' letters (left).
  build(probe) {
    const letters = (cls) => {
      const div = document.createElement('div');
      div.className = cls;
      div.setAttribute('aria-hidden', 'true');
      for (let i = 0; i < probe.L; i++) div.append(Object.assign(document.createElement('span'), { textContent: tokenLetter(probe.tokens[i]) }));
      return div;
    };
    this.figures = Array.from({ length: probe.H }, (_, h) => {
      const fig = document.createElement('figure');
      fig.className = 'probe-head';
      const canvas = document.createElement('canvas');
      canvas.setAttribute('role', 'img');
      const cap = document.createElement('figcaption');
      cap.textContent = `head ${h}`;
      const frame = document.createElement('div');
      frame.className = 'probe-frame';
      frame.append(Object.assign(document.createElement('span'), { className: 'corner', textContent: 'q\\k' }), letters('keys'), letters('queries'), canvas);
      fig.append(frame, cap);
      return { fig, canvas, cap };
    });
    this.grid.replaceChildren(...this.figures.map((f) => f.fig));
  }

  draw() {
    const p = this.probe;
    if (!p) return;
    const { L } = p;
    this.figures.forEach(({ canvas }, h) => {
      const { w, h: hh } = fitCanvas(canvas);
      const data = p.weights.subarray(h * L * L, (h + 1) * L * L);
      drawMatrix(canvas.getContext('2d'), { x: 0, y: 0, w, h: hh }, { data, stride: L, window: { r0: 0, c0: 0, rows: L, cols: L }, lo: 0, hi: 1, lut: SEQUENTIAL });
      canvas.setAttribute('aria-label', `head ${h}: the weights of the probe sequence, ${L} queries by ${L} keys`);
    });
  }

  // The probe, what the task wants, and what the model says, letter by letter (wrong letters marked).
  writeAnswer() {
    const p = this.probe;
    const label = (c) => classLabel(this.task, c, this.vocab);
    const cells = (arr, mark) =>
      [...arr].map((c, i) => `<span class="${mark && c !== p.targets[i] ? 'wrong' : ''}">${mark ? label(c) : tokenLetter(c)}</span>`).join('');
    const right = p.predicted.every((c, i) => c === p.targets[i]);
    this.answer.innerHTML =
      `<div><dt>input</dt><dd>${cells(p.tokens, false)}</dd></div>` +
      `<div><dt>target</dt><dd>${[...p.targets].map((c) => `<span>${label(c)}</span>`).join('')}</dd></div>` +
      `<div><dt>model</dt><dd>${cells(p.predicted, true)} <span class="verdict ${right ? 'good' : 'bad'}">${right ? '✓ right' : '✗ not yet'}</span></dd></div>`;
  }
}
