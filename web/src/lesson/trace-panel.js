// "Shapes, step by step" for the lab's settings: the trace's rows, or the problems in its place.
import { traceShapes } from '../shared/shapes.js';
import { describeMask, maskShapeFor } from '../masks/masks.js';
import { renderTrace, renderTraceProblems } from './trace-view.js';

export function renderShapes(table, s) {
  const tbody = table.querySelector('tbody');
  if (s.problems.length) {
    renderTraceProblems(tbody, s.problems);
    return;
  }
  const maskShape = maskShapeFor(s.dims, s.mask);
  const causalOnly = s.mask.causal && !maskShape;
  renderTrace(
    tbody,
    traceShapes(s.dims, {
      scale: s.scale,
      maskShape,
      maskKinds: describeMask(s.mask),
      maskRow: causalOnly
        ? {
            expr: 'isCausal=True',
            note: `causal (${s.mask.alignment}) alone needs no mask tensor: the package hides ${s.mask.alignment === 'top-left' ? 'j > i' : 'j > i + S − L'} itself`,
          }
        : { expr: '—', note: 'no mask: every query sees every key (try causal, padding or drawn cells)' },
    }),
  );
}
