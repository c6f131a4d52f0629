// The speed panel: the live comparison (the package's SIMD build on 1 thread and on all, its scalar build and
// plain JS on the page's settings) and the repository's benchmark results, both as grouped bar charts of
// GFLOP/s against the measured peak; the numbers behind each chart stay available as a table, and a sentence
// compares 1 thread with all.
import { humanise, parseBench } from './bench-results.js';
import { drawBarChart } from './bar-chart.js';
import { implementationColour } from './implementation-colours.js';
import { speedStory } from './speed-story.js';
import { formatMs as fmtMs } from '../shared/timing.js';
import { threadsSummary } from './speed-threads.js';
const fmtG = (g) => (g >= 10 ? g.toFixed(1) : g.toFixed(2));
const escape = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);

export function describeProblem(dims) {
  const h = dims.useHeads ? `, H = ${dims.H}` : '';
  return `B = ${dims.B}${h}, L = ${dims.L}, S = ${dims.S}, E = ${dims.E}, Ev = ${dims.Ev}`;
}

// The problem as a bar group label, in the benchmark's own form: B·H × L × E (and S, Ev when they differ).
export function problemLabel(dims) {
  const BH = dims.B * (dims.useHeads ? dims.H : 1);
  const tail = dims.S === dims.L && dims.Ev === dims.E ? '' : ` (S ${dims.S}, Ev ${dims.Ev})`;
  return `${BH}×${dims.L}×${dims.E}${tail}`;
}

const PEAK_LABEL = 'wasm SIMD peak of 1 thread, measured now';

// 1 thread against all: the sentence, with its figures on the element for tests and the curious.
function renderThreads(element, summary) {
  element.hidden = !summary;
  element.textContent = summary?.text ?? '';
  element.dataset.threads = summary ? String(summary.threads) : '';
  element.dataset.ratio = summary?.ratio ? String(summary.ratio) : '';
}

// elements: { table, intro, chart, threads, story }. result: the worker's speed answer.
export function renderSpeed({ table, intro, chart, threads, story }, result) {
  const { flops, dims, results, peak } = result;
  const summary = threadsSummary({ flops, results });
  renderThreads(threads, summary);
  const told = speedStory(result, summary);
  story.innerHTML = told.html;
  story.dataset.notes = told.notes.join(' '); // the cases it explains, for tests and the curious
  story.hidden = false;
  intro.textContent =
    `${describeProblem(dims)} with the current mask: 2·B·H·L·S·(E + Ev) = ${flops.toExponential(3)} flops per call ` +
    `(4·B·H·L·S·E when Ev = E; the softmax is not counted). Median time per call after a warm-up call. ` +
    (peak ? `The dashed line is this browser's wasm SIMD mul+add peak on one thread, measured just before (threads together can pass it).` : '');
  const timed = results.filter((r) => !r.unavailable);
  drawBarChart(
    chart,
    {
      groups: [problemLabel(dims)],
      series: timed.map((r) => ({ key: r.kind, label: r.name, values: [r.gflops], colour: implementationColour(r.kind) })),
      peak: peak ? { value: peak, label: PEAK_LABEL } : null,
    },
    { title: `GFLOP/s of each implementation on ${describeProblem(dims)}`, groupTitle: 'B·H × L × E' },
  );
  const fastest = Math.min(...timed.map((r) => r.ms));
  const head = '<thead><tr><th scope="col">implementation</th><th scope="col">time per call (ms)</th><th scope="col" class="calls">calls</th><th scope="col">GFLOP/s</th><th scope="col">vs fastest</th><th scope="col">max |Δ| vs the first</th></tr></thead>';
  const body = results
    .map((r) =>
      r.unavailable
        ? `<tr data-kind="${r.kind}"><th scope="row">${escape(r.name)}</th><td colspan="5" class="muted">not available here: ${escape(r.unavailable)}</td></tr>`
        : `<tr data-kind="${r.kind}" data-threads="${r.threads}" data-gflops="${r.gflops}"><th scope="row">${escape(r.name)}</th><td class="num">${fmtMs(r.ms)}</td><td class="num calls">${r.calls}</td>` +
          `<td class="num">${fmtG(r.gflops)}</td><td class="num">${(r.ms / fastest).toFixed(1)}×</td>` +
          `<td class="num">${r.maxDiff === null ? 'reference' : r.maxDiff.toExponential(1)}</td></tr>`,
    )
    .join('');
  table.innerHTML = `<caption class="visually-hidden">Attention speed by implementation</caption>${head}<tbody>${body}</tbody>`;
  table.hidden = false;
}

// Two header rows: each implementation's name once, over its own columns (ms, GFLOP/s); other columns span both.
function benchHead(cols) {
  const top = [];
  for (const c of cols) {
    const last = top[top.length - 1];
    if (c.group && last?.group === c.group) last.span++;
    else top.push({ group: c.group, name: c.name, span: 1 });
  }
  const first = top
    .map((t) => (t.group ? `<th scope="colgroup" colspan="${t.span}" class="group">${escape(t.group)}</th>` : `<th scope="col" rowspan="2">${escape(t.name)}</th>`))
    .join('');
  const second = cols.filter((c) => c.group).map((c) => `<th scope="col">${escape(c.name)}</th>`).join('');
  return `<thead><tr>${first}</tr><tr>${second}</tr></thead>`;
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
  const bench = json && parseBench(json);
  if (!bench) {
    container.innerHTML = '<p class="hint">No benchmark results yet: <code>bench/results.json</code> appears here once the repository\'s benchmark has been run.</p>';
    return false;
  }
  const { cols, rows } = bench.table;
  const notes = Object.entries(bench.meta)
    .filter(([k]) => !['machine', 'cpus', 'threads', 'date', 'node', 'xattnVersion'].includes(k))
    .map(([k, v]) => `<li><span class="muted">${escape(humanise(k))}</span> ${escape(String(v))}</li>`)
    .join('');
  container.innerHTML =
    `<h3>Benchmark results <span class="sub">(bench/results.json)</span></h3>` +
    `<p class="hint bench-meta">${escape(bench.metaLine)}</p>` +
    `<div class="bench-chart"></div>` +
    (bench.chart && !bench.chart.peak ? '<p class="hint">The file records no arithmetic peak; the live comparison above measures this browser\'s.</p>' : '') +
    `<details class="bench-details"><summary>All figures (${rows.length} shapes × ${cols.length} columns) and the run's notes</summary>` +
    `<div class="table-wrap"><table class="results bench-table">${benchHead(cols)}<tbody>` +
    rows.map((r) => `<tr>${cols.map((c) => `<td class="${/^[\d,.−-]+$/.test(r[c.id] ?? '') ? 'num' : ''}">${escape(r[c.id] ?? '')}</td>`).join('')}</tr>`).join('') +
    `</tbody></table></div>${notes ? `<ul class="bench-notes">${notes}</ul>` : ''}</details>`;
  if (bench.chart) {
    const chart = { ...bench.chart, series: bench.chart.series.map((s, k) => ({ ...s, colour: implementationColour(s.key, k) })) };
    drawBarChart(container.querySelector('.bench-chart'), chart, {
      title: `Benchmark GFLOP/s by shape and implementation (${bench.metaLine})`,
      groupTitle: 'B·H × L × E',
    });
  }
  return true;
}
