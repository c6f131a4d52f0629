// The "from averaging to attention" card: three weight maps over the same V (uniform causal average, the
// same as softmax of 0 with −∞ above the diagonal, then softmax of Q Kᵀ/√E under that mask), each with
// the output rows it gives, and the lesson's analogy written with the numbers of one chosen cell.
// Clicking (or arrow keys on) a weight map chooses the cell; Q, K and V are drawn with its rows marked.
import { DIVERGING, SEQUENTIAL } from '../shared/colormap.js';
import { absMax, drawMatrix, fitCanvas } from '../shared/heatmap.js';
import { maxAbsDifference } from './averaging.js';
import { fmt } from '../lesson/weights-side.js';

const STEPS = [
  { title: '1 · average the past', formula: 'w<sub>ij</sub> = 1/(i+1) for j ≤ i: ones below the diagonal, each row divided by its count' },
  { title: '2 · the same, as a softmax', formula: 'softmax of a zero matrix with −∞ above the diagonal' },
  { title: '3 · let the data choose', formula: 'softmax(Q Kᵀ/√E) under the same mask' },
];

function el(tag, cls, html) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (html !== undefined) e.innerHTML = html;
  return e;
}

export class AveragingView {
  constructor({ steps, analogy, intro }) {
    Object.assign(this, { stepsBox: steps, analogyBox: analogy, intro });
    this.data = null;
    this.cell = null;
    this.columns = STEPS.map((s, k) => {
      const col = el('figure', 'avg-step');
      const weights = el('canvas', 'avg-weights');
      weights.tabIndex = 0;
      weights.setAttribute('role', 'img');
      weights.dataset.step = String(k);
      const output = el('canvas', 'avg-output');
      output.setAttribute('role', 'img');
      const note = el('p', 'avg-note');
      col.append(el('h3', '', s.title), el('p', 'hint', s.formula), weights, el('p', 'avg-label', 'output rows (n, Ev)'), output, note);
      weights.addEventListener('click', (e) => this.pick(this.cellAt(weights, e)));
      weights.addEventListener('keydown', (e) => this.key(e));
      steps.append(col);
      return { col, weights, output, note };
    });
    this.qkv = ['query', 'key', 'value'].map((name) => {
      const c = el('canvas', 'avg-qkv');
      c.setAttribute('role', 'img');
      return { name, canvas: c };
    });
    new ResizeObserver(() => this.draw()).observe(steps);
  }

  setData(averaging, where) {
    const { n } = averaging;
    this.data = averaging;
    this.where = where;
    // The default cell: the last row's largest data-dependent weight, where the data chose most clearly.
    if (!this.cell || this.cell.i >= n) {
      const i = n - 1;
      let j = 0;
      const w = averaging.steps[2].weights;
      for (let k = 1; k < n; k++) if (w[i * n + k] > w[i * n + j]) j = k;
      this.cell = { i, j };
    }
    this.draw();
  }

  cellAt(canvas, event) {
    const r = canvas.getBoundingClientRect();
    const n = this.data.n;
    const i = Math.min(n - 1, Math.floor(((event.clientY - r.top) / r.height) * n));
    const j = Math.min(n - 1, Math.floor(((event.clientX - r.left) / r.width) * n));
    return { i, j };
  }

  key(e) {
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    const m = moves[e.key];
    if (!m || !this.cell) return;
    e.preventDefault();
    const n = this.data.n;
    this.pick({ i: Math.max(0, Math.min(n - 1, this.cell.i + m[0])), j: Math.max(0, Math.min(n - 1, this.cell.j + m[1])) });
  }

  pick(cell) {
    this.cell = cell;
    this.draw();
  }

  draw() {
    const d = this.data;
    if (!d) return;
    const { n, Ev } = d;
    const { i, j } = this.cell;
    // One colour scale for the three outputs, so a learner compares them by colour.
    const outMax = Math.max(...d.steps.map((s) => absMax(s.output))) || 1;
    const hidden = new Uint8Array(n * n).map((_, k) => (k % n > Math.floor(k / n) ? 1 : 0));
    this.columns.forEach((c, k) => {
      const s = d.steps[k];
      const w = fitCanvas(c.weights);
      const ctx = c.weights.getContext('2d');
      drawMatrix(ctx, { x: 0, y: 0, w: w.w, h: w.h }, { data: s.weights, stride: n, window: { r0: 0, c0: 0, rows: n, cols: n }, lo: 0, hi: 1, lut: SEQUENTIAL, hidden });
      outline(ctx, w, n, n, i, j, w.dpr);
      c.weights.setAttribute('aria-label', `${STEPS[k].title}: weights of ${n} queries by ${n} keys; query ${i}, key ${j} is ${fmt(s.weights[i * n + j], 3)}`);
      c.output.style.aspectRatio = String(Math.min(4, Math.max(0.5, Ev / n)));
      const o = fitCanvas(c.output);
      const octx = c.output.getContext('2d');
      drawMatrix(octx, { x: 0, y: 0, w: o.w, h: o.h }, { data: s.output, stride: Ev, window: { r0: 0, c0: 0, rows: n, cols: Ev }, lo: -outMax, hi: outMax, lut: DIVERGING });
      outline(octx, o, n, Ev, i, null, o.dpr);
      c.col.dataset.weight = String(s.weights[i * n + j]);
    });
    const same = maxAbsDifference(d.steps[0].weights, d.steps[1].weights);
    const sameOut = maxAbsDifference(d.steps[0].output, d.steps[1].output);
    this.columns[0].note.innerHTML = `Row ${i}: ${i + 1} visible keys, each weight 1/${i + 1} = ${fmt(1 / (i + 1), 3)}. Every output row is a plain mean of the V rows before it.`;
    this.columns[1].note.innerHTML = `e<sup>0</sup> = 1 for each visible key, e<sup>−∞</sup> = 0 above: the softmax divides ones by their count. Largest difference from step 1: <span class="mono">${same === 0 ? '0, identical' : same.toExponential(1)}</span> (weights), <span class="mono">${sameOut === 0 ? '0' : sameOut.toExponential(1)}</span> (outputs, float32 rounding).`;
    this.columns[2].note.innerHTML = `Same mask, same V; only the weights changed, and each row still sums to 1. Row ${i} now gives key ${j} ${fmt(d.steps[2].weights[i * n + j], 3)} instead of ${fmt(1 / (i + 1), 3)}.`;
    this.columns[1].col.dataset.maxDifference = String(same);
    this.writeAnalogy();
  }

  writeAnalogy() {
    const d = this.data;
    const { n, E, Ev } = d;
    const { i, j } = this.cell;
    const masked = j > i;
    const w = d.steps[2].weights[i * n + j];
    const box = this.analogyBox;
    box.replaceChildren();
    const maps = el('div', 'avg-qkv-row');
    const sizes = { query: E, key: E, value: Ev };
    const rowOf = { query: i, key: j, value: j };
    const labels = { query: `Q, row ${i}`, key: `K, row ${j}`, value: `V, row ${j}` };
    for (const { name, canvas } of this.qkv) {
      const fig = el('figure', 'avg-qkv-fig');
      fig.append(canvas, el('figcaption', '', labels[name]));
      maps.append(fig);
    }
    const score = d.scores[i * n + j];
    const text = el(
      'div',
      'analogy-text',
      `<p><strong>Q — what am I looking for.</strong> Row ${i} of Q is what position ${i} is looking for.</p>` +
        `<p><strong>K — what do I contain.</strong> Row ${j} of K is what position ${j} offers to be found by. ` +
        (masked
          ? `Key ${j} comes after query ${i}: the mask hides it (−∞), so its weight is 0.</p>`
          : `Their match is q<sub>${i}</sub>·k<sub>${j}</sub>${d.defaultScale === false ? ` × ${fmt(d.scale, 3)}` : `/√${E}`} = <span class="mono">${fmt(score, 3)}</span>; the softmax over keys 0 … ${i} turns it into the weight <span class="mono">${fmt(w, 3)}</span>.</p>`) +
        `<p><strong>V — what I will communicate.</strong> Row ${j} of V is what position ${j} passes on: ` +
        (masked ? 'none of it reaches output row ' + i + '.' : `${fmt(w, 3)} of it goes into output row ${i}, against ${fmt(1 / (i + 1), 3)} in the plain average.`) +
        `</p><p class="hint">Click a cell of any weight map (or focus one and use the arrow keys) to choose another pair. ${this.where}.</p>`,
    );
    box.append(maps, text);
    box.dataset.cell = `${i},${j}`;
    for (const { name, canvas } of this.qkv) {
      const cols = sizes[name];
      const data = d[name];
      canvas.style.aspectRatio = String(Math.min(4, Math.max(0.5, cols / n)));
      const a = absMax(data) || 1;
      const f = fitCanvas(canvas);
      const ctx = canvas.getContext('2d');
      drawMatrix(ctx, { x: 0, y: 0, w: f.w, h: f.h }, { data, stride: cols, window: { r0: 0, c0: 0, rows: n, cols }, lo: -a, hi: a, lut: DIVERGING });
      outline(ctx, f, n, cols, rowOf[name], null, f.dpr);
      canvas.setAttribute('aria-label', `${labels[name]} marked, of ${n} rows by ${cols} columns`);
    }
  }
}

// A frame around cell (i, j) of an n × m map, or around row i when j is null.
function outline(ctx, size, rows, cols, i, j, dpr) {
  const ch = size.h / rows;
  const cw = size.w / cols;
  const x = j === null ? dpr : j * cw + dpr;
  const w = j === null ? size.w - 2 * dpr : cw - 2 * dpr;
  // White under dark ink: visible on viridis' dark purples and bright yellows, and on both ends of blue-red.
  ctx.save();
  ctx.lineWidth = 3.5 * dpr;
  ctx.strokeStyle = '#fff';
  ctx.strokeRect(x, i * ch + dpr, w, ch - 2 * dpr);
  ctx.lineWidth = 1.5 * dpr;
  ctx.strokeStyle = '#1b1e2b';
  ctx.strokeRect(x, i * ch + dpr, w, ch - 2 * dpr);
  ctx.restore();
}
