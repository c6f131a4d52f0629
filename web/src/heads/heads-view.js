// Heads side by side: every head's weights for one batch element, or for every batch element on demand.
import { SEQUENTIAL } from '../shared/colormap.js';
import { drawColorBar, drawMatrix } from '../shared/heatmap.js';
import { formatNumber } from '../shared/shapes.js';

// One thumbnail per head (weights of batch element b), or on demand per head and batch element, all on
// one colour scale (0 … the largest weight shown) so heads compare by colour; each is a button that
// shows that (b, h) in the big view.
// Past this many thumbnails the grid shows the first batch elements only (B ≤ 64 and H ≤ 32 allow 2048).
export const MAX_THUMBS = 512;

export class HeadsView {
  // elements: { card, grid, hint, every, legend, legendTicks, headsOn (the button that turns heads on), toolbar };
  // onPick({ b, h }); fetchEvery(count) → Promise<[{ b, thumbs }]> for batch elements 0 … count − 1;
  // onHeadsOn(): the learner asked for heads from this card.
  constructor({ card, grid, hint, every, legend, legendTicks, headsOn, toolbar }, onPick, fetchEvery, onHeadsOn) {
    Object.assign(this, { card, grid, hint, every, legend, legendTicks, headsOn, toolbar, onPick, fetchEvery });
    this.rows = null;
    this.version = null;
    this.everyVersion = null;
    every.addEventListener('change', () => this.refresh());
    headsOn.addEventListener('click', onHeadsOn);
  }

  // The card is always there: without heads it says how to get them, with a button that turns them on.
  setData(view, dims, version) {
    Object.assign(this, { view, dims, version });
    const off = view.thumbs.length === 0;
    this.headsOn.hidden = !off;
    this.toolbar.hidden = off;
    if (off) {
      this.grid.replaceChildren();
      this.hint.textContent =
        'The lesson\'s example has one head. Tick “heads” in the Tensors controls (or press the button) to give Q, K and V H heads: ' +
        'every head\'s weights then appear here side by side.';
      return;
    }
    this.refresh();
  }

  writeHint() {
    const { view, dims } = this;
    const group = dims.H / dims.Hkv;
    const every = this.every.checked;
    this.hint.textContent =
      `Weights of every head ${every ? 'and batch element' : `for b = ${view.b}`} (each thumbnail max-pooled to at most ` +
      `${every ? 32 : 48}×${every ? 32 : 48}), on one colour scale; click one to see it in the big map. ` +
      (group > 1
        ? `GQA: Hkv = ${dims.Hkv} key/value head${dims.Hkv === 1 ? '' : 's'}, ${dims.Hkv === 1 ? 'shared by all' : 'each shared by'} ${group} query heads.`
        : `H = ${dims.H} head${dims.H === 1 ? '' : 's'}, each with its own K and V.`);
  }

  async refresh() {
    const { view, dims } = this;
    if (!view || view.thumbs.length === 0) return;
    this.writeHint();
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
        // Compact where thumbnails are small (every batch element), so the label keeps to its one line.
        const compact = this.every.checked;
        label.textContent = group > 1 ? (compact ? `h${head}·kv${kv}` : `h ${head} · kv ${kv}`) : `h ${head}`;
        label.title = group > 1 ? `head ${head}, key/value head ${kv}` : `head ${head}`;
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
    drawColorBar(this.legend);
    this.legendTicks.replaceChildren(...['0', formatNumber(hi)].map((t) => Object.assign(document.createElement('span'), { textContent: t })));
  }
}

