// Small heatmaps of the (b, h) slice of Q, K, V and the output.
import { DIVERGING } from '../shared/colormap.js';
import { absMax, drawMatrix, fitCanvas } from '../shared/heatmap.js';
import { formatNumber, formatShape } from '../shared/shapes.js';
import { countNonFinite, describeNonFinite } from '../shared/finite.js';

const PANELS = [
  { key: 'query', title: 'Q', rows: 'L', cols: 'E' },
  { key: 'key', title: 'K', rows: 'S', cols: 'E' },
  { key: 'value', title: 'V', rows: 'S', cols: 'Ev' },
  { key: 'output', title: 'output', rows: 'L', cols: 'Ev' },
];

function figure(title) {
  const fig = document.createElement('figure');
  fig.className = 'mini';
  const canvas = document.createElement('canvas');
  canvas.setAttribute('role', 'img');
  const cap = document.createElement('figcaption');
  fig.append(canvas, cap);
  cap.textContent = title;
  return { fig, canvas, cap };
}

export class TensorViews {
  constructor(container) {
    this.panels = PANELS.map((p) => {
      const f = figure(p.title);
      container.append(f.fig);
      return { ...p, ...f };
    });
    this.view = null;
    new ResizeObserver(() => this.draw()).observe(container);
  }

  setData(view) {
    this.view = view;
    this.draw();
  }

  draw() {
    const v = this.view;
    if (!v) return;
    const dims = { L: v.L, S: v.S, E: v.E, Ev: v.Ev };
    const where = v.thumbs.length ? `b = ${v.b}, h = ${v.h}` : `b = ${v.b}`;
    for (const p of this.panels) {
      const rows = dims[p.rows];
      const cols = dims[p.cols];
      const data = v[p.key];
      const a = absMax(data);
      // NaN and ±∞ are said, not hidden: an overflowed output is not "all 0".
      const bad = describeNonFinite(countNonFinite(data));
      const range = bad ? `${bad}${a ? `, the rest within ±${formatNumber(a)}` : ''}` : a ? `±${formatNumber(a)}` : 'all 0';
      p.fig.classList.toggle('has-nan', bad !== '');
      // Tall, thin matrices (L = 1024, E = 64) would be a sliver: cap the aspect ratio, cells go rectangular.
      p.canvas.style.aspectRatio = String(Math.min(2, Math.max(0.25, cols / rows)));
      const { w, h } = fitCanvas(p.canvas);
      const ctx = p.canvas.getContext('2d');
      drawMatrix(ctx, { x: 0, y: 0, w, h }, { data, stride: cols, window: { r0: 0, c0: 0, rows, cols }, lo: -(a || 1), hi: a || 1, lut: DIVERGING });
      p.cap.innerHTML = `<strong>${p.title}</strong> <span class="mono">${formatShape([rows, cols])}</span> <span class="sub">(${p.rows}, ${p.cols}) · ${where} · ${range}</span>`;
      p.canvas.setAttribute('aria-label', `${p.title} of ${where}: ${rows} rows by ${cols} columns, values ${bad ? range : a ? `within ${range}` : 'all 0'}`);
      p.fig.dataset.range = range;
    }
  }
}
