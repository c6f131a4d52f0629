// The probe line's attention in every layer and head, as the model learns: a grid of small heatmaps, one
// row of heads per layer, each (T, T) (query i down, key j across; above the diagonal is the future, which
// a causal model never sees, so it stays dark). One colour scale 0 … 1 for all. Pointing at a cell says
// which character looks at which, and how much.
import { SEQUENTIAL } from '../shared/colormap.js';
import { drawColorBar, drawMatrix, fitCanvas } from '../shared/heatmap.js';
import { showChar } from './gpt-fields.js';

export class AttentionGrid {
  constructor({ grid, legend, readout }) {
    Object.assign(this, { grid, readout });
    drawColorBar(legend);
    this.data = null;
    this.cells = [];
    this.shape = '';
    new ResizeObserver(() => this.draw()).observe(grid);
  }

  clear(message) {
    this.data = null;
    this.cells = [];
    this.shape = '';
    this.grid.replaceChildren(Object.assign(document.createElement('p'), { className: 'hint', textContent: message }));
  }

  // m: the Worker's 'attention' reply { step, probe, layers: [{ heads, T, weights (heads·T·T) }] }.
  setData(m) {
    const shape = m.layers.map((l) => `${l.heads}x${l.T}`).join();
    if (shape !== this.shape) this.build(m);
    this.data = m;
    this.draw();
  }

  build(m) {
    this.shape = m.layers.map((l) => `${l.heads}x${l.T}`).join();
    this.cells = [];
    const rows = m.layers.map((layer, l) => {
      const row = document.createElement('div');
      row.className = 'gpt-attn-row';
      row.style.setProperty('--heads', layer.heads);
      row.append(Object.assign(document.createElement('span'), { className: 'gpt-attn-layer', textContent: `layer ${l}` }));
      for (let h = 0; h < layer.heads; h++) {
        const fig = document.createElement('figure');
        fig.className = 'gpt-attn-head';
        const canvas = document.createElement('canvas');
        canvas.setAttribute('role', 'img');
        canvas.addEventListener('pointermove', (e) => this.point(e, l, h));
        canvas.addEventListener('pointerleave', () => (this.readout.textContent = ''));
        fig.append(canvas, Object.assign(document.createElement('figcaption'), { textContent: `head ${h}` }));
        row.append(fig);
        this.cells.push({ canvas, l, h });
      }
      return row;
    });
    this.grid.replaceChildren(...rows);
  }

  draw() {
    const m = this.data;
    if (!m) return;
    for (const { canvas, l, h } of this.cells) {
      const { T, weights } = m.layers[l];
      const { w, h: hh } = fitCanvas(canvas);
      const data = weights.subarray(h * T * T, (h + 1) * T * T);
      drawMatrix(canvas.getContext('2d'), { x: 0, y: 0, w, h: hh }, { data, stride: T, window: { r0: 0, c0: 0, rows: T, cols: T }, lo: 0, hi: 1, lut: SEQUENTIAL });
      canvas.setAttribute('aria-label', `layer ${l}, head ${h}: the probe line's weights at step ${m.step}, ${T} queries by ${T} keys`);
    }
  }

  // The cell under the pointer, in words.
  point(e, l, h) {
    const m = this.data;
    if (!m) return;
    const { T, weights } = m.layers[l];
    const r = e.currentTarget.getBoundingClientRect();
    const i = Math.min(T - 1, Math.max(0, Math.floor(((e.clientY - r.top) / r.height) * T)));
    const j = Math.min(T - 1, Math.max(0, Math.floor(((e.clientX - r.left) / r.width) * T)));
    const w = weights[(h * T + i) * T + j];
    const probe = m.probe ?? '';
    this.readout.textContent =
      j > i
        ? `Layer ${l}, head ${h}: ${showChar(probe[i])} (position ${i}) cannot see ${showChar(probe[j])} (position ${j}): it comes later.`
        : `Layer ${l}, head ${h}: ${showChar(probe[i])} (position ${i}) gives ${showChar(probe[j])} (position ${j}) a weight of ${w.toFixed(3)}.`;
  }
}
