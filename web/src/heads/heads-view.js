// Heads side by side: every head's weights for one batch element, or for every batch element on demand.
import { SEQUENTIAL, cssColor } from '../shared/colormap.js';
import { drawMatrix } from '../shared/heatmap.js';
import { formatNumber } from '../shared/shapes.js';

// One thumbnail per head (weights of batch element b), or on demand per head and batch element, all on
// one colour scale (0 … the largest weight shown) so heads compare by colour; each is a button that
// shows that (b, h) in the big view.
// Past this many thumbnails the grid shows the first batch elements only (B ≤ 64 and H ≤ 32 allow 2048).
export const MAX_THUMBS = 512;

export class HeadsView {
  // onPick({ b, h }); fetchEvery(count) → Promise<[{ b, thumbs }]> for batch elements 0 … count − 1.
  constructor({ card, grid, hint, every, legend, legendTicks }, onPick, fetchEvery) {
    Object.assign(this, { card, grid, hint, every, legend, legendTicks, onPick, fetchEvery });
    this.rows = null;
    this.version = null;
    this.everyVersion = null;
    every.addEventListener('change', () => this.refresh());
  }

  setData(view, dims, version) {
    Object.assign(this, { view, dims, version });
    this.card.hidden = view.thumbs.length === 0;
    if (this.card.hidden) return;
    const group = dims.H / dims.Hkv;
    this.hint.textContent =
      `Weights of every head ${this.every.checked ? 'and batch element' : `for b = ${view.b}`} (each thumbnail max-pooled to at most ` +
      `${this.every.checked ? 32 : 48}×${this.every.checked ? 32 : 48}), on one colour scale; click one to see it above. ` +
      (group > 1
        ? `GQA: Hkv = ${dims.Hkv} key/value head${dims.Hkv === 1 ? '' : 's'}, ${dims.Hkv === 1 ? 'shared by all' : 'each shared by'} ${group} query heads.`
        : `H = ${dims.H} head${dims.H === 1 ? '' : 's'}, each with its own K and V.`);
    this.refresh();
  }

  async refresh() {
    const { view, dims } = this;
    if (!view || this.card.hidden) return;
    if (!this.every.checked) {
      this.render([{ b: view.b, thumbs: view.thumbs }]);
      return;
    }
    if (this.everyVersion === this.version && this.rows) {
      this.render(this.rows);
      return;
    }
    const count = Math.max(1, Math.floor(MAX_THUMBS / dims.H));
    const version = this.version;
    try {
      const rows = await this.fetchEvery(count);
      if (version !== this.version || !this.every.checked) return;
      this.rows = rows;
      this.everyVersion = version;
      this.render(rows);
    } catch (err) {
      if (err.name !== 'CancelledError') this.hint.textContent = `The grid of every batch element failed: ${err.message}`;
    }
  }

  render(rows) {
    const { view, dims } = this;
    const group = dims.H / dims.Hkv;
    let hi = 0;
    for (const r of rows) for (const t of r.thumbs) for (let k = 0; k < t.data.length; k++) if (t.data[k] > hi) hi = t.data[k];
    const scale = hi || 1;
    this.grid.classList.toggle('every', rows.length > 1 || this.every.checked);
    this.grid.style.setProperty('--heads', String(dims.H));
    const children = [];
    for (const { b, thumbs } of rows) {
      if (this.every.checked) children.push(Object.assign(document.createElement('span'), { className: 'b-label', textContent: `b = ${b}` }));
      for (const { head, data, rows: tr, cols, hidden } of thumbs) {
        const selected = b === view.b && head === view.h;
        const button = document.createElement('button');
        button.type = 'button';
        button.className = 'head' + (selected ? ' selected' : '');
        button.dataset.b = String(b);
        button.dataset.h = String(head);
        button.setAttribute('aria-pressed', String(selected));
        const kv = Math.floor(head / group);
        button.setAttribute('aria-label', `batch element ${b}, head ${head}${group > 1 ? ` (key/value head ${kv})` : ''}: show its weights`);
        const canvas = document.createElement('canvas');
        canvas.width = cols;
        canvas.height = tr;
        drawMatrix(canvas.getContext('2d'), { x: 0, y: 0, w: cols, h: tr }, { data, stride: cols, window: { r0: 0, c0: 0, rows: tr, cols }, lo: 0, hi: scale, lut: SEQUENTIAL, hidden });
        const label = document.createElement('span');
        label.textContent = group > 1 ? `h ${head} · kv ${kv}` : `h ${head}`;
        button.append(canvas, label);
        button.addEventListener('click', () => this.onPick({ b, h: head }));
        children.push(button);
      }
    }
    const shown = rows.length;
    if (this.every.checked && shown < dims.B) {
      children.push(Object.assign(document.createElement('p'), { className: 'hint more', textContent: `The first ${shown} of B = ${dims.B} batch elements (at most ${MAX_THUMBS} thumbnails); the b field above shows any.` }));
    }
    this.grid.replaceChildren(...children);
    this.grid.dataset.scaleMax = String(hi);
    drawLegendBar(this.legend);
    this.legendTicks.replaceChildren(...['0', formatNumber(hi)].map((t) => Object.assign(document.createElement('span'), { textContent: t })));
  }
}

function drawLegendBar(canvas) {
  const ctx = canvas.getContext('2d');
  for (let x = 0; x < canvas.width; x++) {
    ctx.fillStyle = cssColor(SEQUENTIAL, Math.round((x / (canvas.width - 1)) * 255));
    ctx.fillRect(x, 0, 1, canvas.height);
  }
}
