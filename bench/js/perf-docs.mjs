// The performance tables of README.md and docs/performance.md, rendered from bench/results.json between the
// markers <!-- perf:start --> and <!-- perf:end -->, so that no one edits a figure by hand. README.md gets the
// newest run; docs/performance.md every machine kind's latest run.
//
//   node bench/js/perf-docs.mjs           rewrite both files (npm run docs:perf, part of npm run docs)
//   node bench/js/perf-docs.mjs --check   exit 1 when a file's table is not what the results give
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ROOT = new URL('../../', import.meta.url);
export const RESULTS = new URL('bench/results.json', ROOT);
export const FILES = { readme: new URL('README.md', ROOT), performance: new URL('docs/performance.md', ROOT) };
const START = '<!-- perf:start -->';
const END = '<!-- perf:end -->';

// The peers xattn's one-thread speed is set against, in the file's keys; onnxruntime-node is native code,
// shown for reference.
const PEERS = [['ortWeb', 'onnxruntime-web'], ['tfjsWasm', 'tfjs-wasm'], ['plainJs', 'plain JS'], ['ortNode', 'onnxruntime-node (native)']];

const gflops = (x) => (typeof x === 'number' ? x.toFixed(1) : '—');
const times = (a, b) => (typeof a === 'number' && typeof b === 'number' && b > 0 ? `${(a / b).toFixed(2)}×` : '—');
const percent = (x) => (typeof x === 'number' ? `${Math.round(x)}%` : '—');

// One run's table: per shape, a row at one thread (xattn SIMD against every peer, in one process) and a row at
// each further thread count of the threads section (against onnxruntime-web at the same count).
export function renderRun(run) {
  const date = typeof run.date === 'string' ? run.date.slice(0, 10) : 'undated';
  const peak = typeof run.wasmSimdPeakGflops === 'number' ? ` (${run.wasmSimdPeakGflops.toFixed(1)} GFLOP/s at the run's start)` : '';
  const lines = [
    `\`${run.command ?? 'npm run bench'}\` on ${run.machineKind ?? run.machine ?? 'an unnamed machine'}, ${run.cpus} CPUs, ` +
      `Node ${run.node}, xattn ${run.xattnVersion}, ${date}. GFLOP/s end to end (Float32Array in, Float32Array out), ` +
      'FLOPs = 4·B·H·L·S·E with S = L and Ev = E; "% of peak": of the wasm SIMD peak timed in the same process' +
      `${peak}; "×": xattn's speed over the peer's at the same thread count.`,
    '',
    `| B·H × L × E | threads | xattn SIMD | % of peak | ${PEERS.map(([, name]) => `× ${name}`).join(' | ')} |`,
    `| --- | ---: | ---: | ---: | ${PEERS.map(() => '---:').join(' | ')} |`,
  ];
  const threadRows = run.threadScaling?.rows ?? [];
  const counts = (run.threadScaling?.counts ?? []).filter((t) => t > 1);
  for (const r of run.results) {
    const shape = r.shape.join('×');
    const xattn = r.xattnSimd?.gflops;
    const share = r.simdPercentOfPeak ?? (typeof xattn === 'number' && run.wasmSimdPeakGflops ? (100 * xattn) / run.wasmSimdPeakGflops : null);
    lines.push(`| ${shape} | 1 | ${gflops(xattn)} | ${percent(share)} | ${PEERS.map(([key]) => times(xattn, r[key]?.gflops)).join(' | ')} |`);
    const t = threadRows.find((row) => row.shape.join('×') === shape);
    for (const n of counts) {
      const mine = t?.xattn?.[n];
      const vsOrtWeb = typeof t?.vsOrtWeb === 'number' ? `${t.vsOrtWeb.toFixed(2)}×` : times(mine, t?.ortWeb?.[n]);
      lines.push(`| ${shape} | ${n} | ${gflops(mine)} | ${percent(t?.percentOfPeak?.[n])} | ${vsOrtWeb} | ${PEERS.slice(1).map(() => '—').join(' | ')} |`);
    }
  }
  return lines.join('\n');
}

const runsOf = (json) => (Array.isArray(json?.runs) ? json.runs : [json]);

// The sliding-window section's line (bench/js/window.mjs), for the performance page.
export function renderWindow(run) {
  const w = run.slidingWindow;
  if (typeof w?.ratio !== 'number') return null;
  return `Sliding window, ${run.machineKind ?? run.machine ?? 'an unnamed machine'}: one head of L = S = 8192, E = 64, causal ` +
    `with a window of 512 keys a row, took ${w.windowedMs.toFixed(2)} ms against ${w.fullMs.toFixed(1)} ms over every cell ` +
    `(xattn SIMD, one thread): ${w.timeShare.toFixed(4)} of the time for ${w.cellShare.toFixed(4)} of the cells, ` +
    `${w.ratio.toFixed(2)}× the cells' share (${w.kernelRatio.toFixed(2)}× less the copies a one-key window takes too).`;
}

// The "Build a GPT" benchmark's paragraph (npm run bench:gpt, bench/gpt/gpt-results.mjs), for the performance page.
export function renderGpt(run) {
  const g = run.gpt;
  if (!g?.xattn) return null;
  const where = run.machineKind ?? run.machine ?? 'an unnamed machine';
  const losses = (side) => Object.entries(side.validationLoss ?? {}).map(([step, loss]) => `${Number(loss).toFixed(3)} at ${step}`).join(', ');
  const lines = [
    `Training nanoGPT's character model of Tiny Shakespeare (\`npm run bench:gpt\`, ${g.steps} steps, ${g.threads} threads), ${where}, ` +
      `${typeof g.date === 'string' ? g.date.slice(0, 10) : 'undated'}: ${(g.flopsPerStep / 1e9).toFixed(2)} GFLOP of products a step. ` +
      `The lab's Worker in headless Chromium: ${g.xattn.seconds.toFixed(1)} s (${g.xattn.msPerStep.toFixed(1)} ms a step, ` +
      `${g.xattn.gflops.toFixed(1)} GFLOP/s${typeof g.xattnPercentOfPeak === 'number' ? `, ${g.xattnPercentOfPeak}% of the ${g.peakGflops.toFixed(1)} GFLOP/s wasm SIMD peak on ${g.threads} threads` : ''}); ` +
      `validation loss ${losses(g.xattn)}.`,
  ];
  if (g.pytorch) {
    lines.push(
      `PyTorch on the CPU, same threads: ${g.pytorch.seconds.toFixed(1)} s (${g.pytorch.msPerStep.toFixed(1)} ms a step, ` +
        `${g.pytorch.gflops.toFixed(1)} GFLOP/s); validation loss ${losses(g.pytorch)}. xattn trains at ${g.speedVsPytorch.toFixed(2)}× PyTorch's speed` +
        (typeof g.twiceTorchPercentOfPeak === 'number'
          ? `; twice PyTorch's speed would take ${g.twiceTorchPercentOfPeak}% of the wasm SIMD peak in products alone.`
          : '.'),
    );
  }
  return lines.join(' ');
}

export function renderTables(json) {
  const runs = runsOf(json);
  const attention = runs.filter((r) => Array.isArray(r.results) && r.results.length > 0);
  const notes = [...runs.map(renderWindow), ...runs.map(renderGpt)].filter(Boolean);
  return { readme: renderRun(attention[0]), performance: [...attention.map(renderRun), ...notes].join('\n\n') };
}

// The text between the markers, as a file carries it (null when the file has no markers).
export function between(text) {
  const start = text.indexOf(START);
  const end = text.indexOf(END, start);
  if (start < 0 || end < 0) return null;
  return text.slice(start + START.length, end).trim();
}

export function replaceBetween(text, table, name) {
  const start = text.indexOf(START);
  const end = text.indexOf(END, start);
  if (start < 0 || end < 0) throw new Error(`${name}: no ${START} … ${END} markers`);
  const note = '<!-- Generated from bench/results.json by `npm run docs:perf`: do not edit by hand. -->';
  return `${text.slice(0, start + START.length)}\n${note}\n${table}\n${text.slice(end)}`;
}

// The generated part without its note, for comparison.
export const tableIn = (text) => between(text)?.split('\n').filter((l) => !l.startsWith('<!-- Generated')).join('\n').trim() ?? null;

function main() {
  const check = process.argv.includes('--check');
  const tables = renderTables(JSON.parse(readFileSync(RESULTS, 'utf8')));
  let stale = 0;
  for (const [key, url] of Object.entries(FILES)) {
    const name = fileURLToPath(url);
    const text = readFileSync(url, 'utf8');
    const next = replaceBetween(text, tables[key], name);
    if (next === text) continue;
    if (check) {
      console.error(`${name}: the performance table is not what bench/results.json gives (npm run docs:perf rewrites it)`);
      stale += 1;
    } else {
      writeFileSync(url, next);
      console.log(`wrote the performance table of ${name}`);
    }
  }
  process.exitCode = stale ? 1 : 0;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
