// The decoding panel's weight matrix for one query head, drawn on a canvas as rows arrive: decoded rows in
// the weights' colour scale (0 … 1, fixed, so a colour never changes as later rows come), keys after the
// query left blank (they did not exist yet: nothing is masked), rows not decoded yet blank, the latest row
// outlined. Hover or the arrow keys read a cell into the readout.
import { SEQUENTIAL, cssColor, lutIndex } from '../shared/colormap.js';
import { drawColorBar, fitCanvas } from '../shared/heatmap.js';
import { formatNumber } from '../shared/shapes.js';
import { cellKind } from './decode-rows.js';

const GRID = '#dfe2ea';
const LABEL = '#5d6478';
const ACCENT = '#3b4cca';

export class TriangleView {
  constructor({ canvas, readout, legend }) {
    Object.assign(this, { canvas, readout });
    this.triangle = null;
    this.h = 0;
    this.cursor = null;
    drawColorBar(legend);
    canvas.addEventListener('mousemove', (e) => this.point(this.cellAt(e)));
    canvas.addEventListener('mouseleave', () => this.point(null));
    canvas.addEventListener('keydown', (e) => this.key(e));
    new ResizeObserver(() => this.draw()).observe(canvas);
  }

  // triangle: null while there is no sequence (refused settings): the canvas is cleared.
  setData(triangle, h) {
    this.triangle = triangle;
    this.h = triangle ? Math.min(h, triangle.H - 1) : 0;
    if (!triangle) {
      this.cursor = null;
      fitCanvas(this.canvas);
      this.canvas.getContext('2d').clearRect(0, 0, this.canvas.width, this.canvas.height);
      this.canvas.dataset.rows = '0';
      this.canvas.setAttribute('aria-label', 'No sequence to decode');
    }
    this.draw();
    this.writeReadout();
  }

  // The grid's place on the canvas, in CSS pixels: a margin for the key labels above and the query labels left.
  layout() {
    const rect = this.canvas.getBoundingClientRect();
    const T = this.triangle.T;
    const margin = 22;
    const cell = Math.max(1, (Math.min(rect.width, rect.height) - margin) / T);
    return { x: margin, y: margin, cell, T };
  }

  cellAt(event) {
    if (!this.triangle) return null;
    const rect = this.canvas.getBoundingClientRect();
    const { x, y, cell, T } = this.layout();
    const j = Math.floor((event.clientX - rect.left - x) / cell);
    const i = Math.floor((event.clientY - rect.top - y) / cell);
    return i >= 0 && j >= 0 && i < T && j < T ? { i, j } : null;
  }

  point(cell) {
    this.cursor = cell;
    this.draw();
    this.writeReadout();
  }

  key(e) {
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    const m = moves[e.key];
    if (!m || !this.triangle) return;
    e.preventDefault();
    const T = this.triangle.T;
    const c = this.cursor ?? { i: Math.max(0, this.triangle.rows - 1), j: 0 };
    this.point({ i: Math.min(T - 1, Math.max(0, c.i + m[0])), j: Math.min(T - 1, Math.max(0, c.j + m[1])) });
  }

  draw() {
    const tri = this.triangle;
    if (!tri) return;
    const { dpr } = fitCanvas(this.canvas);
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    const rect = this.canvas.getBoundingClientRect();
    ctx.clearRect(0, 0, rect.width, rect.height);
    const { x, y, cell, T } = this.layout();
    const h = this.h;
    for (let i = 0; i < T; i++) {
      for (let j = 0; j < T; j++) {
        if (cellKind(i, j, tri.rows) !== 'weight') continue;
        ctx.fillStyle = cssColor(SEQUENTIAL, lutIndex(tri.weights[(h * T + i) * T + j], 0, 1));
        ctx.fillRect(x + j * cell, y + i * cell, cell, cell);
      }
    }
    // Grid lines over every cell, so the blank ones read as places where nothing exists yet.
    ctx.strokeStyle = GRID;
    ctx.lineWidth = 1;
    ctx.beginPath();
    for (let k = 0; k <= T; k++) {
      ctx.moveTo(x + k * cell, y);
      ctx.lineTo(x + k * cell, y + T * cell);
      ctx.moveTo(x, y + k * cell);
      ctx.lineTo(x + T * cell, y + k * cell);
    }
    ctx.stroke();
    // Every index while they fit, else every fourth.
    ctx.fillStyle = LABEL;
    ctx.font = '10px ui-monospace, monospace';
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    const every = cell >= 14 ? 1 : cell >= 7 ? 2 : 4;
    for (let k = 0; k < T; k += every) {
      ctx.fillText(String(k), x + (k + 0.5) * cell, y / 2);
      ctx.fillText(String(k), x / 2, y + (k + 0.5) * cell);
    }
    if (tri.rows > 0) {
      const t = tri.rows - 1;
      ctx.strokeStyle = ACCENT;
      ctx.lineWidth = 2;
      ctx.strokeRect(x + 1, y + t * cell + 1, (t + 1) * cell - 2, cell - 2);
    }
    if (this.cursor) {
      ctx.strokeStyle = '#1b1e2b';
      ctx.lineWidth = 2;
      ctx.strokeRect(x + this.cursor.j * cell, y + this.cursor.i * cell, cell, cell);
    }
    this.canvas.dataset.rows = String(tri.rows);
    // Where the cells are, in CSS pixels, for the browser tests to read the drawing back.
    this.canvas.dataset.grid = JSON.stringify({ x, y, cell });
    this.canvas.setAttribute('aria-label', `Head ${h}'s weights: ${tri.rows} of ${T} query rows decoded, row t over keys 0 … t`);
  }

  writeReadout() {
    const tri = this.triangle;
    const c = this.cursor;
    if (!tri || !c) {
      this.readout.textContent = 'Point at a cell, or focus the map and use the arrow keys.';
      return;
    }
    const kind = cellKind(c.i, c.j, tri.rows);
    this.readout.textContent =
      kind === 'weight'
        ? `query ${c.i}, key ${c.j}: weight ${formatNumber(tri.weights[(this.h * tri.T + c.i) * tri.T + c.j])} (step ${c.i})`
        : kind === 'future-key'
          ? `query ${c.i}, key ${c.j}: key ${c.j} was not in the cache yet when query ${c.i} was decoded (step ${c.i}), so there is no weight: nothing is masked.`
          : `query ${c.i} is not decoded yet: step ${c.i} will append key ${c.i} and fill this row.`;
  }
}
