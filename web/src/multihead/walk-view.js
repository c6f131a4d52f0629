// The multi-head walk on screen: its shape table (walkShapes, as the single-head trace is written) and, for
// one batch element b, a small map of every step: X; Q, K, V; Q cut into its heads; each head's weights and
// output; the heads side by side again; the output. The module's weights are drawn beside them, with the
// bands of in_proj_weight that make W_q, W_k and W_v named.
import { DIVERGING, SEQUENTIAL } from '../shared/colormap.js';
import { absMax, drawMatrix, fitCanvas } from '../shared/heatmap.js';
import { formatLetters, formatNumber, formatShape } from '../shared/shapes.js';
import { walkShapes } from './walk-shapes.js';

const HEAD_COLOURS = ['#3b4cca', '#e07a1f', '#2a9d8f', '#b5179e', '#6a4c93', '#c9a227', '#d1495b', '#2f7d32'];

function el(tag, className, text) {
  const e = document.createElement(tag);
  if (className) e.className = className;
  if (text !== undefined) e.textContent = text;
  return e;
}

export function renderWalkTrace(tbody, dims) {
  tbody.replaceChildren(
    ...walkShapes(dims).map((row) => {
      const tr = el('tr');
      tr.dataset.step = row.id;
      const th = el('th', '', row.name);
      th.scope = 'row';
      tr.append(el('td', 'step', row.step || 'input'), th, el('td', 'mono expr', row.expr), el('td', 'mono shape', formatShape(row.shape)), el('td', 'mono letters', formatLetters(row.letters)), el('td', 'note-col', row.note));
      return tr;
    }),
  );
}

// One matrix (rows, cols) in a small captioned figure. opts: { signed (a blue–red scale around 0, else dark 0 to
// yellow `hi`), hi, bands: [{ from, to, colour }] (column bands, for heads), rowBands (row bands: W_q, W_k, W_v) }.
function matrixFigure(title, sub, data, rows, cols, { signed = true, hi = 1, bands = null, rowBands = null } = {}) {
  const fig = el('figure', 'walk-map');
  const canvas = el('canvas');
  canvas.setAttribute('role', 'img');
  const a = absMax(data) || 1;
  canvas.style.aspectRatio = String(Math.min(3, Math.max(0.34, cols / rows)));
  fig.append(canvas, el('figcaption'));
  fig.lastChild.innerHTML = `<strong>${title}</strong> <span class="mono">${formatShape([rows, cols])}</span>${sub ? ` <span class="sub">${sub}</span>` : ''}`;
  canvas.setAttribute('aria-label', `${title}: ${rows} rows by ${cols} columns${signed ? `, values within ±${formatNumber(a)}` : ''}`);
  fig.draw = () => {
    const { w, h, dpr } = fitCanvas(canvas);
    const ctx = canvas.getContext('2d');
    drawMatrix(ctx, { x: 0, y: 0, w, h }, { data, stride: cols, window: { r0: 0, c0: 0, rows, cols }, lo: signed ? -a : 0, hi: signed ? a : hi, lut: signed ? DIVERGING : SEQUENTIAL });
    ctx.lineWidth = 2 * dpr;
    for (const band of bands ?? []) {
      ctx.strokeStyle = band.colour;
      ctx.strokeRect((band.from / cols) * w + dpr, dpr, ((band.to - band.from) / cols) * w - 2 * dpr, h - 2 * dpr);
    }
    for (const band of rowBands ?? []) {
      ctx.strokeStyle = band.colour;
      ctx.strokeRect(dpr, (band.from / rows) * h + dpr, w - 2 * dpr, ((band.to - band.from) / rows) * h - 2 * dpr);
    }
  };
  return fig;
}

// Matrix b of a (B, …, R, C) tensor's data, and matrix (b, h) of a (B, H, R, C) one.
const slice = (t, index, R, C) => t.data.subarray(index * R * C, (index + 1) * R * C);

export class WalkView {
  constructor({ maps, weightsBox, match }) {
    Object.assign(this, { maps, weightsBox, match });
    this.walk = null;
    new ResizeObserver(() => this.draw()).observe(maps);
  }

  setData(walk, b) {
    this.walk = walk;
    this.b = b;
    this.render();
  }

  render() {
    const { walk, b } = this;
    const { L, E, H } = walk.dims;
    const hd = E / H;
    const s = walk.steps;
    const heads = Array.from({ length: H }, (_, h) => ({ from: h * hd, to: (h + 1) * hd, colour: HEAD_COLOURS[h % HEAD_COLOURS.length] }));
    const where = `b = ${b}`;
    const groups = [];
    const group = (title, figures) => {
      const g = el('div', 'walk-group');
      g.append(el('h4', '', title), ...figures);
      groups.push(g);
    };
    group('1 · X, projected', [
      matrixFigure('X', where, slice(s.x, b, L, E), L, E),
      matrixFigure('Q = X W_qᵀ + b_q', where, slice(s.q, b, L, E), L, E, { bands: heads }),
      matrixFigure('K', where, slice(s.k, b, L, E), L, E, { bands: heads }),
      matrixFigure('V', where, slice(s.v, b, L, E), L, E, { bands: heads }),
    ]);
    group(`2 · Q split into H = ${H} heads of E/H = ${hd}`, Array.from({ length: H }, (_, h) => matrixFigure(`Q, head ${h}`, `(L, E/H)`, slice(s.heads, b * H + h, L, hd), L, hd, { bands: [{ from: 0, to: hd, colour: heads[h].colour }] })));
    // Every head's weights on one scale, 0 … the largest of them, so the heads compare by colour.
    const top = Math.max(...slice(s.weights, b, H * L, L)) || 1;
    group('3 · attention in each head', [
      ...Array.from({ length: H }, (_, h) => matrixFigure(`weights, head ${h}`, '(L, S)', slice(s.weights, b * H + h, L, L), L, L, { signed: false, hi: top })),
      ...Array.from({ length: H }, (_, h) => matrixFigure(`output, head ${h}`, '(L, E/H)', slice(s.headsOut, b * H + h, L, hd), L, hd, { bands: [{ from: 0, to: hd, colour: heads[h].colour }] })),
    ]);
    group('4 · concatenated, 5 · projected out', [
      matrixFigure('heads side by side', where, slice(s.concat, b, L, E), L, E, { bands: heads }),
      matrixFigure('output = concat W_oᵀ + b_o', where, slice(s.output, b, L, E), L, E),
    ]);
    this.maps.replaceChildren(...groups);
    this.maps.dataset.b = String(b);
    const p = walk.parameters;
    const wq = { from: 0, to: E, colour: '#3b4cca' };
    this.weightsBox.replaceChildren(
      matrixFigure('in_proj_weight', 'W_q, W_k, W_v stacked', p.in_proj_weight.data, 3 * E, E, { rowBands: [wq, { from: E, to: 2 * E, colour: '#e07a1f' }, { from: 2 * E, to: 3 * E, colour: '#2a9d8f' }] }),
      matrixFigure('out_proj.weight', 'W_o', p['out_proj.weight'].data, E, E),
    );
    const biases = [p.in_proj_bias, p['out_proj.bias']].every((t) => t.data.every((v) => v === 0));
    this.weightsBox.append(el('p', 'hint', `The module's parameters as it reports them (parameters()): PyTorch's initialisation, in_proj_weight Xavier-uniform and out_proj.weight U(±1/√E)${biases ? ', in_proj_bias and out_proj.bias 0 (training would move them)' : ''}.`));
    this.match.textContent =
      `The last step is the module's own forward: max |Δ| ${formatNumber(walk.diff.output)} from its output and ${formatNumber(walk.diff.weights)} from its per-head weights ` +
      `(the steps run in float64 outside the module, so they differ in float32's last digits at most).`;
    this.match.dataset.output = String(walk.diff.output);
    this.match.dataset.weights = String(walk.diff.weights);
    this.draw();
  }

  draw() {
    for (const fig of [...this.maps.querySelectorAll('figure'), ...this.weightsBox.querySelectorAll('figure')]) fig.draw?.();
  }
}
