// The attention heatmap of one (b, h) slice, (L, S): the weights, or the scores before the softmax (raw q·k, or
// scaled), as the "show" menu says; zoom and pan over a window of cells, a readout of query i, key j, raw score,
// scaled score and weight for the cell under the pointer or the keyboard cursor, row sums and row entropy beside
// each row, and the drawing of a custom mask by clicking.
import { DIVERGING, SEQUENTIAL } from '../shared/colormap.js';
import { drawMatrix, fitCanvas, hatchRows } from '../shared/heatmap.js';
import { attentionGeometry, scoreMatrix } from '../shared/attention-reference.js';
import { drawLegend, drawRowStrip, readoutHtml, rowSummaryHtml } from './weights-side.js';
import { colourRange, scoreRange, wheelAction, zoomWindow } from './zoom.js';
import { countNonFinite, overflowExplanation } from '../shared/finite.js';

// What the map can show: the lesson's step 3 (weights), step 2 before the mask (scaled scores), step 1 (raw).
const SHOWN = {
  weights: { name: 'Attention weights', title: 'Attention weights', lut: SEQUENTIAL },
  scaled: { name: 'Scaled scores', title: 'Scaled scores, before the softmax', lut: DIVERGING },
  raw: { name: 'Raw scores q·k', title: 'Raw scores q·k, before the scale', lut: DIVERGING },
};

// The hover cursor is drawn at least this big (CSS px) around its cell, with guides along its row and column:
// on a 1024×1024 map a cell is a fraction of a pixel, and a cell-sized box would be invisible.
const CURSOR_MIN_PX = 12;

export class WeightsView {
  // elements: { canvas, strip, axisTop, axisLeft, readout, legendCanvas, legendTicks, rowSummary, colourRange,
  // show (the menu: weights, scaled or raw scores), title (the card's, which says what is shown), nanSwatch,
  // overflow }
  // onPaint(cells, hide): cells drawn in mask mode, [[i, j], …], and whether they are to be hidden.
  // isHiddenByHand(i, j): whether the custom mask already hides a cell (decides what a stroke paints).
  constructor(elements, { onPaint, isHiddenByHand }) {
    Object.assign(this, elements);
    this.onPaint = onPaint;
    this.isHiddenByHand = isHiddenByHand;
    this.view = null;
    this.window = null;
    this.cursor = null; // { i, j } the cell shown in the readout
    this.editing = false;
    this.stroke = null; // cells painted in the current mask stroke
    this.drag = null;
    this.renderCount = 0;
    this.blocks = { blockR: 1, blockC: 1 };
    this.bindEvents();
    new ResizeObserver(() => this.draw()).observe(this.canvas);
    this.colourRange.addEventListener('change', () => this.draw());
    this.show.addEventListener('change', () => {
      this.labelColourRange();
      this.title.textContent = SHOWN[this.show.value].title;
      this.draw();
    });
  }

  // The colour menu's options in the terms of what is shown: weights run from 0, scores around 0 (for which
  // "0 … 1" means nothing, and is the whole slice's range like "max of the slice").
  labelColourRange() {
    const scores = this.show.value !== 'weights';
    const labels = scores
      ? { window: '± max |score| in view', slice: '± max |score| of the slice', one: '± max |score| of the slice' }
      : { window: '0 … max in view', slice: '0 … max of the slice', one: '0 … 1' };
    for (const option of this.colourRange.options) option.textContent = labels[option.value];
  }

  // The matrix the map shows, (L, S). The scores are computed here, once per slice and only when asked for:
  // step 1 of the float64 reference on the slice's Q (L, E) and K (S, E), then × the slice's scale.
  matrix() {
    const view = this.view;
    const mode = this.show.value;
    if (mode === 'weights') return view.weights;
    if (!view.rawScores) {
      const q = { data: view.query, shape: [view.L, view.E] };
      const k = { data: view.key, shape: [view.S, view.E] };
      const v = { data: view.value, shape: [view.S, view.Ev] };
      view.rawScores = scoreMatrix(q, k, attentionGeometry(q, k, v), 0);
    }
    if (mode === 'raw') return view.rawScores;
    view.scaledScores ??= view.rawScores.map((x) => x * view.scale);
    return view.scaledScores;
  }

  setData(view) {
    const resized = !this.view || this.view.L !== view.L || this.view.S !== view.S;
    this.view = view;
    if (resized) {
      this.window = { r0: 0, c0: 0, rows: view.L, cols: view.S };
      this.cursor = null;
      // Cells look square when L and S are alike; very unequal L and S get a clamped aspect ratio.
      const ratio = Math.min(2, Math.max(0.5, view.S / view.L));
      this.canvas.style.aspectRatio = `${ratio}`;
    }
    // NaN gets its own colour on the map, a swatch in the key, and a sentence on why (overflow of the scores).
    view.nonFinite ??= countNonFinite(view.weights);
    this.nanSwatch.hidden = view.nonFinite.bad === 0;
    const why = overflowExplanation(view);
    this.overflow.hidden = why === null;
    this.overflow.textContent = why ?? '';
    this.draw();
    this.showReadout();
    this.rowSummary.innerHTML = rowSummaryHtml(view);
  }

  showReadout() {
    this.readout.innerHTML = readoutHtml(this.view, this.cursor, this.blocks);
  }

  setEditing(on) {
    this.editing = on;
    this.canvas.classList.toggle('editing', on);
  }

  // The colour range for the current window, matrix and mode (see zoom.js), computed once per window: 0 … max
  // for the weights, symmetric around 0 for the scores.
  range() {
    const { view, window: win } = this;
    const key = `${this.show.value} ${this.colourRange.value} ${win.r0},${win.c0},${win.rows},${win.cols}`;
    if (this.rangeCache?.view !== view || this.rangeCache.key !== key) {
      const whole = { r0: 0, c0: 0, rows: view.L, cols: view.S };
      const range =
        this.show.value === 'weights'
          ? colourRange(this.colourRange.value, view.weights, view.S, win, whole)
          : scoreRange(this.colourRange.value, this.matrix(), view.S, win, whole, view.hiddenCells ?? (view.hiddenCells = invert(view.allowed)));
      this.rangeCache = { view, key, range };
    }
    return this.rangeCache.range;
  }

  // Draws the map. The expensive part (max-pooling the window, hatching, grid, the strip and the axes) is
  // kept in an offscreen canvas and redone only when the data, window, size or colour range change, so
  // moving the pointer over a 1024×1024 map only re-blits it and draws the cursor.
  draw() {
    if (!this.view) return;
    const { view, window: win } = this;
    const { w, h, dpr } = fitCanvas(this.canvas);
    const { lo, hi } = this.range();
    const key = `${w}x${h} ${this.show.value} ${win.r0},${win.c0},${win.rows},${win.cols} ${lo}-${hi}`;
    if (!this.base || this.base.view !== view || this.base.key !== key) this.drawBase(view, key, w, h, dpr, lo, hi);
    const ctx = this.canvas.getContext('2d');
    ctx.clearRect(0, 0, w, h);
    ctx.drawImage(this.base.canvas, 0, 0);
    const cellW = w / win.cols;
    const cellH = h / win.rows;
    if (this.stroke) this.drawStroke(ctx, cellW, cellH);
    if (this.cursor && inWindow(this.cursor, win)) this.drawCursor(ctx, cellW, cellH, w, h, dpr);
    else delete this.canvas.dataset.cursorBox;
    this.renderCount++;
    this.canvas.dataset.renders = String(this.renderCount);
  }

  // The cell under the cursor, boxed white outside and black inside (visible on the darkest and brightest
  // colours alike), never smaller than CURSOR_MIN_PX, with faint guides along its row and column.
  drawCursor(ctx, cellW, cellH, w, h, dpr) {
    const win = this.window;
    const min = CURSOR_MIN_PX * dpr;
    const cx = (this.cursor.j - win.c0 + 0.5) * cellW;
    const cy = (this.cursor.i - win.r0 + 0.5) * cellH;
    // Whole device pixels, so the white and black frames are crisp and never blend into grey.
    const bw = Math.round(Math.max(min, cellW));
    const bh = Math.round(Math.max(min, cellH));
    const x = Math.round(cx - bw / 2);
    const y = Math.round(cy - bh / 2);
    ctx.save();
    if (cellW < min || cellH < min) {
      ctx.strokeStyle = 'rgba(255, 255, 255, 0.55)';
      ctx.lineWidth = dpr;
      ctx.beginPath();
      ctx.moveTo(0, cy);
      ctx.lineTo(x, cy);
      ctx.moveTo(x + bw, cy);
      ctx.lineTo(w, cy);
      ctx.moveTo(cx, 0);
      ctx.lineTo(cx, y);
      ctx.moveTo(cx, y + bh);
      ctx.lineTo(cx, h);
      ctx.stroke();
    }
    ctx.lineWidth = 3 * dpr;
    ctx.strokeStyle = '#fff';
    ctx.strokeRect(x + 1.5 * dpr, y + 1.5 * dpr, bw - 3 * dpr, bh - 3 * dpr);
    ctx.lineWidth = 1.5 * dpr;
    ctx.strokeStyle = '#111';
    ctx.strokeRect(x + 3.75 * dpr, y + 3.75 * dpr, Math.max(1, bw - 7.5 * dpr), Math.max(1, bh - 7.5 * dpr));
    ctx.restore();
    // Where the box is, in CSS px of the canvas, for the tests (which check that it is drawn and big enough).
    this.canvas.dataset.cursorBox = [x, y, bw, bh].map((v) => (v / dpr).toFixed(1)).join(',');
  }

  // Pointer moves arrive faster than frames: draw at most once per frame.
  requestDraw() {
    this.frame ??= requestAnimationFrame(() => {
      this.frame = null;
      this.draw();
    });
  }

  drawBase(view, key, w, h, dpr, lo, hi) {
    const win = this.window;
    const canvas = this.base?.canvas ?? document.createElement('canvas');
    canvas.width = w;
    canvas.height = h;
    const ctx = canvas.getContext('2d');
    const area = { x: 0, y: 0, w, h };
    const hidden = view.hiddenCells ?? (view.hiddenCells = invert(view.allowed));
    const shown = SHOWN[this.show.value];
    this.blocks = drawMatrix(ctx, area, { data: this.matrix(), stride: view.S, window: win, lo, hi, lut: shown.lut, hidden });
    hatchRows(ctx, area, win, view.fullyMasked, dpr);
    const cellW = w / win.cols;
    const cellH = h / win.rows;
    if (cellW >= 6 * dpr && cellH >= 6 * dpr) this.drawGrid(ctx, area, cellW, cellH, dpr);
    this.base = { view, key, canvas };
    drawRowStrip(this.strip, view, win);
    drawLegend(this.legendCanvas, this.legendTicks, lo, hi, shown.lut);
    this.canvas.dataset.colourHi = String(hi);
    this.canvas.dataset.showing = this.show.value;
    this.writeAxes();
    const blocky = this.blocks.blockR > 1 || this.blocks.blockC > 1;
    this.canvas.setAttribute(
      'aria-label',
      `${shown.name} of b = ${view.b}${view.thumbs.length ? `, h = ${view.h}` : ''}: ${view.L} queries by ${view.S} keys, ` +
        `showing rows ${win.r0} to ${win.r0 + win.rows - 1} and columns ${win.c0} to ${win.c0 + win.cols - 1}` +
        (blocky ? `, each pixel the largest${this.show.value === 'weights' ? '' : ' value'} of a ${this.blocks.blockR} by ${this.blocks.blockC} block` : '') +
        `. Use the arrow keys to read cells.`,
    );
    this.canvas.dataset.rows = String(view.L);
    this.canvas.dataset.cols = String(view.S);
  }

  drawGrid(ctx, area, cellW, cellH, dpr) {
    ctx.save();
    ctx.strokeStyle = 'rgba(255, 255, 255, 0.35)';
    ctx.lineWidth = Math.max(1, dpr * 0.75);
    ctx.beginPath();
    for (let c = 1; c < this.window.cols; c++) {
      const x = Math.round(area.x + c * cellW) + 0.5;
      ctx.moveTo(x, area.y);
      ctx.lineTo(x, area.y + area.h);
    }
    for (let r = 1; r < this.window.rows; r++) {
      const y = Math.round(area.y + r * cellH) + 0.5;
      ctx.moveTo(area.x, y);
      ctx.lineTo(area.x + area.w, y);
    }
    ctx.stroke();
    ctx.restore();
  }

  drawStroke(ctx, cellW, cellH) {
    ctx.save();
    ctx.fillStyle = this.stroke.hide ? 'rgba(20, 20, 30, 0.55)' : 'rgba(255, 255, 255, 0.6)';
    for (const key of this.stroke.cells) {
      const [i, j] = key.split(',').map(Number);
      if (inWindow({ i, j }, this.window)) ctx.fillRect((j - this.window.c0) * cellW, (i - this.window.r0) * cellH, cellW, cellH);
    }
    ctx.restore();
  }

  writeAxes() {
    const { view, window: win } = this;
    const zoomed = win.rows < view.L || win.cols < view.S;
    this.axisTop.textContent = `keys j → ${win.c0} … ${win.c0 + win.cols - 1}${zoomed ? ` of S = ${view.S}` : ` (S = ${view.S})`}`;
    this.axisLeft.textContent = `queries i ↓ ${win.r0} … ${win.r0 + win.rows - 1}${zoomed ? ` of L = ${view.L}` : ` (L = ${view.L})`}`;
  }

  cellAt(event) {
    const rect = this.canvas.getBoundingClientRect();
    const fx = (event.clientX - rect.left) / rect.width;
    const fy = (event.clientY - rect.top) / rect.height;
    if (fx < 0 || fx >= 1 || fy < 0 || fy >= 1) return null;
    return { i: this.window.r0 + Math.floor(fy * this.window.rows), j: this.window.c0 + Math.floor(fx * this.window.cols) };
  }

  // The cells a click covers: one cell, or the whole max-pooled block when zoomed out.
  blockCells({ i, j }) {
    const { blockR, blockC } = this.blocks;
    const i0 = this.window.r0 + Math.floor((i - this.window.r0) / blockR) * blockR;
    const j0 = this.window.c0 + Math.floor((j - this.window.c0) / blockC) * blockC;
    const cells = [];
    for (let a = i0; a < Math.min(this.view.L, i0 + blockR); a++) {
      for (let b = j0; b < Math.min(this.view.S, j0 + blockC); b++) cells.push(`${a},${b}`);
    }
    return cells;
  }

  paint(cell) {
    for (const key of this.blockCells(cell)) this.stroke.cells.add(key);
    this.requestDraw();
  }

  finishStroke() {
    if (!this.stroke) return;
    const { cells, hide } = this.stroke;
    this.stroke = null;
    this.onPaint([...cells].map((key) => key.split(',').map(Number)), hide);
  }

  bindEvents() {
    const c = this.canvas;
    c.addEventListener('pointerdown', (e) => {
      if (!this.view) return;
      const cell = this.cellAt(e);
      if (!cell) return;
      c.setPointerCapture(e.pointerId);
      if (this.editing) {
        this.stroke = { hide: !this.isHiddenByHand(cell.i, cell.j), cells: new Set() };
        this.paint(cell);
      } else {
        this.drag = { x: e.clientX, y: e.clientY, window: { ...this.window }, moved: false };
      }
    });
    c.addEventListener('pointermove', (e) => {
      if (!this.view) return;
      if (this.stroke) {
        const cell = this.cellAt(e);
        if (cell) this.paint(cell);
        return;
      }
      if (this.drag && e.buttons) {
        const rect = c.getBoundingClientRect();
        const di = Math.round(((e.clientY - this.drag.y) / rect.height) * this.drag.window.rows);
        const dj = Math.round(((e.clientX - this.drag.x) / rect.width) * this.drag.window.cols);
        if (di || dj) this.drag.moved = true;
        this.setWindow({ ...this.drag.window, r0: this.drag.window.r0 - di, c0: this.drag.window.c0 - dj });
        return;
      }
      const cell = this.cellAt(e);
      if (cell && (!this.cursor || cell.i !== this.cursor.i || cell.j !== this.cursor.j)) {
        this.cursor = cell;
        this.requestDraw();
        this.showReadout();
      }
    });
    // A press that ends where it began (a tap on a phone, a click) reads the cell it was on: a phone sends no
    // pointer move without a finger down, so hovering cannot do it there.
    const end = (e) => {
      if (e.type === 'pointerup' && this.drag && !this.drag.moved) {
        const cell = this.cellAt(e);
        if (cell) {
          this.cursor = cell;
          this.requestDraw();
          this.showReadout();
        }
      }
      this.finishStroke();
      this.drag = null;
    };
    c.addEventListener('pointerup', end);
    c.addEventListener('pointercancel', end);
    c.addEventListener(
      'wheel',
      (e) => {
        if (!this.view) return;
        const action = wheelAction({ deltaY: e.deltaY, focused: document.activeElement === c, win: this.window, dims: this.view });
        this.canvas.dataset.lastWheel = action;
        if (action === 'scroll') return; // the page scrolls as it would anywhere else
        e.preventDefault();
        if (action === 'zoom') this.zoom(e.deltaY < 0 ? 0.5 : 2, this.cellAt(e) ?? this.centre());
      },
      { passive: false },
    );
    c.addEventListener('focus', () => {
      if (this.view && !this.cursor) {
        this.cursor = { i: this.window.r0, j: this.window.c0 };
        this.draw();
        this.showReadout();
      }
    });
    c.addEventListener('keydown', (e) => this.onKey(e));
  }

  onKey(e) {
    if (!this.view) return;
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (moves[e.key]) {
      e.preventDefault();
      const step = e.shiftKey ? 10 : 1;
      const cur = this.cursor ?? { i: this.window.r0, j: this.window.c0 };
      this.cursor = {
        i: clamp(cur.i + moves[e.key][0] * step, 0, this.view.L - 1),
        j: clamp(cur.j + moves[e.key][1] * step, 0, this.view.S - 1),
      };
      this.follow(this.cursor);
      this.draw();
      this.showReadout();
    } else if (e.key === '+' || e.key === '=') {
      e.preventDefault();
      this.zoom(0.5, this.cursor ?? this.centre());
    } else if (e.key === '-' || e.key === '_') {
      e.preventDefault();
      this.zoom(2, this.cursor ?? this.centre());
    } else if (e.key === '0') {
      e.preventDefault();
      this.fit();
    } else if ((e.key === 'Enter' || e.key === ' ') && this.editing && this.cursor) {
      e.preventDefault();
      this.stroke = { hide: !this.isHiddenByHand(this.cursor.i, this.cursor.j), cells: new Set(this.blockCells(this.cursor)) };
      this.finishStroke();
    }
  }

  centre() {
    return { i: this.window.r0 + (this.window.rows >> 1), j: this.window.c0 + (this.window.cols >> 1) };
  }

  // Keeps the keyboard cursor inside the window by moving the window.
  follow({ i, j }) {
    const w = { ...this.window };
    if (i < w.r0) w.r0 = i;
    if (i >= w.r0 + w.rows) w.r0 = i - w.rows + 1;
    if (j < w.c0) w.c0 = j;
    if (j >= w.c0 + w.cols) w.c0 = j - w.cols + 1;
    this.setWindow(w, false);
  }

  // factor < 1 zooms in; the cell at `at` stays where it is on screen.
  zoom(factor, at) {
    if (!this.view) return;
    this.setWindow(zoomWindow(this.window, this.view, factor, at));
  }

  fit() {
    if (!this.view) return;
    this.setWindow({ r0: 0, c0: 0, rows: this.view.L, cols: this.view.S });
  }

  setWindow(w, redraw = true) {
    const { L, S } = this.view;
    w.r0 = clamp(w.r0, 0, L - w.rows);
    w.c0 = clamp(w.c0, 0, S - w.cols);
    this.window = w;
    if (redraw) {
      this.draw();
      this.showReadout();
    }
  }
}

function clamp(x, lo, hi) {
  return Math.min(hi, Math.max(lo, x));
}

function inWindow({ i, j }, w) {
  return i >= w.r0 && i < w.r0 + w.rows && j >= w.c0 && j < w.c0 + w.cols;
}

function invert(allowed) {
  const out = new Uint8Array(allowed.length);
  for (let k = 0; k < allowed.length; k++) out[k] = allowed[k] ? 0 : 1;
  return out;
}
