// The views of one (b, h) slice of the lab's result, and what drives them: the heatmap (weights or scores), Q, K, V
// and the output, the heads grid, the averaging card, the b and h fields and the zoom buttons. show() hands each
// new slice to all of them.
import { WeightsView } from './weights-view.js';
import { TensorViews } from './tensor-views.js';
import { HeadsView } from '../heads/heads-view.js';
import { AveragingView } from '../averaging/averaging-view.js';

function bringOnScreen(element) {
  const r = element.getBoundingClientRect();
  if (r.bottom < 0 || r.top > window.innerHeight) element.scrollIntoView({ block: 'center' });
}

// The b and h fields clamp what is typed to the slices that exist (they pick, they do not refuse).
function clampInt(text, lo, hi) {
  const v = Math.round(Number(text));
  return Number.isFinite(v) ? Math.min(hi, Math.max(lo, v)) : lo;
}

// pool: the compute workers (the heads grid asks them for every batch element's thumbnails); lab() → the lab
// (lab.js: its pick, its masks, painting), which is made after the views it shows on.
export function setupSliceViews({ pool, lab }) {
  const $ = (id) => document.getElementById(id);
  const weightsView = new WeightsView(
    {
      canvas: $('weights-canvas'),
      strip: $('rows-canvas'),
      axisTop: $('axis-top'),
      axisLeft: $('axis-left'),
      readout: $('readout'),
      legendCanvas: $('legend-canvas'),
      legendTicks: $('legend-ticks'),
      rowSummary: $('row-summary'),
      colourRange: $('colour-range'),
      show: $('show-matrix'),
      title: $('weights-title'),
      nanSwatch: $('nan-swatch'),
      overflow: $('overflow-note'),
    },
    { onPaint: (cells, hide) => lab().paint(cells, hide), isHiddenByHand: (i, j) => lab().lab.masks.isHidden(i, j) },
  );
  const tensorViews = new TensorViews($('tensor-grid'));
  // A thumbnail opens its (b, h) in the big map, which is brought on screen (it can be far above the grid).
  const headsView = new HeadsView(
    {
      card: $('heads-card'),
      grid: $('heads-grid'),
      hint: $('heads-hint'),
      every: $('heads-every-b'),
      legend: $('heads-legend'),
      legendTicks: $('heads-legend-ticks'),
      headsOn: $('heads-on'),
      toolbar: $('heads-toolbar'),
    },
    (pick) => lab().pick(pick).then(() => bringOnScreen($('weights-canvas'))),
    (count) => pool.everyBatchThumbs(count),
    () => {
      const box = $('controls').elements.useHeads;
      box.checked = true;
      box.dispatchEvent(new Event('change', { bubbles: true }));
    },
  );
  const averagingView = new AveragingView({ steps: $('averaging-steps'), analogy: $('averaging-analogy'), intro: $('averaging-intro') });

  function showSlice(view, dims, computes) {
    const H = dims.useHeads ? dims.H : 1;
    $('pick-b').max = String(dims.B - 1);
    $('pick-b').value = String(view.b);
    $('pick-h').max = String(H - 1);
    $('pick-h').value = String(view.h);
    $('pick-h-label').hidden = !dims.useHeads;
    weightsView.setData(view);
    tensorViews.setData(view);
    headsView.setData(view, dims, computes);
    const n = view.averaging.n;
    averagingView.setData(
      view.averaging,
      `From the live example: b = ${view.b}${dims.useHeads ? `, h = ${view.h}` : ''}, ${n === view.L && n === view.S ? `all ${n} positions` : `its first n = ${n} positions`}, E = ${view.E}, Ev = ${view.Ev}`,
    );
  }

  $('pick-b').addEventListener('change', (e) => lab().pick({ b: clampInt(e.target.value, 0, lab().lab.dims.B - 1) }));
  $('pick-h').addEventListener('change', (e) => lab().pick({ h: clampInt(e.target.value, 0, (lab().lab.dims.useHeads ? lab().lab.dims.H : 1) - 1) }));
  $('zoom-in').addEventListener('click', () => weightsView.zoom(0.5, weightsView.cursor ?? weightsView.centre()));
  $('zoom-out').addEventListener('click', () => weightsView.zoom(2, weightsView.cursor ?? weightsView.centre()));
  $('zoom-reset').addEventListener('click', () => weightsView.fit());

  return {
    weightsView,
    averagingView,
    show: showSlice,
    setEditing: (on) => weightsView.setEditing(on),
  };
}
