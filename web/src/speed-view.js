// The speed panel: one row per implementation (the package's SIMD build, its scalar build, plain JS) on
// the page's current tensors and mask, and the repository's benchmark results when bench/results.json exists.
import { benchTable } from './bench-results.js';

const fmtMs = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 1 ? ms.toFixed(2) : String(Number(ms.toPrecision(3))));
const fmtG = (g) => (g >= 10 ? g.toFixed(1) : g.toFixed(2));
const escape = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

export function describeProblem(dims) {
  const h = dims.useHeads ? `, H = ${dims.H}` : '';
  return `B = ${dims.B}${h}, L = ${dims.L}, S = ${dims.S}, E = ${dims.E}, Ev = ${dims.Ev}`;
}

export function renderSpeed(table, intro, { flops, dims, results }) {
  intro.textContent =
    `${describeProblem(dims)} with the current mask: 2·B·H·L·S·(E + Ev) = ${flops.toExponential(3)} flops per call ` +
    `(4·B·H·L·S·E when Ev = E; the softmax is not counted). Median time per call after a warm-up call. ` +
    (flops < 1e8 ? 'At this size the fixed cost of each call (copying Q, K, V into wasm memory and results out) dominates; try L = S = 1024.' : '');
  const timed = results.filter((r) => !r.unavailable);
  const fastest = Math.min(...timed.map((r) => r.ms));
  const head = '<thead><tr><th scope="col">implementation</th><th scope="col">time per call (ms)</th><th scope="col">calls</th><th scope="col">GFLOP/s</th><th scope="col">vs fastest</th><th scope="col">max |Δ| vs the first</th></tr></thead>';
  const body = results
    .map((r) =>
      r.unavailable
        ? `<tr data-kind="${r.kind}"><th scope="row">${r.name}</th><td colspan="5" class="muted">not available here: ${escape(r.unavailable)}</td></tr>`
        : `<tr data-kind="${r.kind}"><th scope="row">${r.name}</th><td class="num">${fmtMs(r.ms)}</td><td class="num">${r.calls}</td>` +
          `<td class="num">${fmtG(r.gflops)}</td><td class="num">${(r.ms / fastest).toFixed(1)}×</td>` +
          `<td class="num">${r.maxDiff === null ? 'reference' : r.maxDiff.toExponential(1)}</td></tr>`,
    )
    .join('');
  table.innerHTML = `<caption class="visually-hidden">Attention speed by implementation</caption>${head}<tbody>${body}</tbody>`;
  table.hidden = false;
}

// Fetches the benchmark results the dev server exposes; says so plainly when there are none yet.
export async function renderBench(container) {
  let json = null;
  try {
    const res = await fetch('/bench/results.json', { cache: 'no-store' });
    if (res.status === 200) json = await res.json();
  } catch {
    json = null;
  }
  const table = json && benchTable(json);
  if (!table) {
    container.innerHTML = '<p class="hint">No benchmark results yet: <code>bench/results.json</code> appears here once the repository\'s benchmark has been run.</p>';
    return false;
  }
  const { rows, cols } = table;
  const meta = Object.entries(table.meta).map(([k, v]) => `${escape(k)}: ${escape(v)}`).join(' · ');
  container.innerHTML =
    `<h3>Benchmark results <span class="sub">(bench/results.json)</span></h3>` +
    (meta ? `<p class="hint">${meta}</p>` : '') +
    `<div class="table-wrap"><table class="results"><thead><tr>${cols.map((c) => `<th scope="col">${escape(c)}</th>`).join('')}</tr></thead><tbody>` +
    rows.map((r) => `<tr>${cols.map((c) => `<td>${escape(r[c] ?? '')}</td>`).join('')}</tr>`).join('') +
    '</tbody></table></div>';
  return true;
}
