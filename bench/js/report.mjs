// The printed table and the JSON the web demo and the docs show (bench/results.json): { runs: [run, …] }, the
// latest run of each machine kind, the newest first. A run is one object of scalar metadata fields beside ONE
// array of per-shape records, which the demo flattens into columns (xattnSimd.gflops, …).
import { readFileSync, writeFileSync } from 'node:fs';

import { STREAMING_DIMS } from './streaming.mjs';

const gflops = (flops, ms) => flops / (ms * 1e6);
const round = (x, digits) => Number(x.toFixed(digits));

// One shape's record from its timings ({ key: { ms, cpuMs } }) and refusals ({ key: reason }). peaks: the mul + add
// and relaxed_madd peaks (GFLOP/s, or null) measured among the shape's samples.
export function shapeRecord(problem, impls, timings, refusals, { simdGflops = null, relaxedGflops = null } = {}) {
  const { BH, L, E } = problem.dims;
  const record = { shape: [BH, L, E], flops: problem.flops };
  for (const impl of impls) {
    const t = timings[impl.key];
    if (t) record[impl.key] = { ms: round(t.ms, 3), gflops: round(gflops(problem.flops, t.ms), 2) };
    else record[impl.key] = { error: impl.unavailable ?? refusals[impl.key] ?? 'not measured' };
  }
  // The speedup is over the fastest wasm/JS peer that passed the check; the native peer is reference only.
  const peers = impls.filter((i) => i.role === 'peer' && timings[i.key]);
  const best = peers.sort((a, b) => timings[a.key].ms - timings[b.key].ms)[0];
  const simd = timings.xattnSimd;
  record.bestPeer = best ? best.key : null;
  record.speedupOverBestPeer = best && simd ? round(timings[best.key].ms / simd.ms, 2) : null;
  record.scalarOverPlainJs = timings.xattnScalar && timings.plainJs ? round(timings.plainJs.ms / timings.xattnScalar.ms, 2) : null;
  record.simdOverNative = timings.ortNode && simd ? round(timings.ortNode.ms / simd.ms, 2) : null;
  record.simdPeakGflops = simdGflops ? round(simdGflops, 1) : null;
  record.simdPercentOfPeak = simdGflops && simd ? round((100 * gflops(problem.flops, simd.ms)) / simdGflops, 1) : null;
  // Relaxed against plain SIMD, both in this process, interleaved, by CPU-time medians (the machine is shared).
  const relaxed = timings.xattnRelaxed;
  if (relaxed && simd) {
    const relaxedCpuGflops = gflops(problem.flops, relaxed.cpuMs);
    record.relaxedVsSimd = {
      simdCpuGflops: round(gflops(problem.flops, simd.cpuMs), 2),
      relaxedCpuGflops: round(relaxedCpuGflops, 2),
      ratio: round(simd.cpuMs / relaxed.cpuMs, 3),
      percentOfRelaxedPeak: relaxedGflops ? round((100 * relaxedCpuGflops) / relaxedGflops, 1) : null,
    };
  }
  return record;
}

// One line per shape: relaxed SIMD against plain SIMD (CPU-time medians), and the relaxed build's share of the
// relaxed_madd peak.
export function formatRelaxed(records) {
  return records.filter((r) => r.relaxedVsSimd).map((r) => {
    const x = r.relaxedVsSimd;
    const share = x.percentOfRelaxedPeak == null ? '' : `, ${x.percentOfRelaxedPeak.toFixed(0)}% of the relaxed peak`;
    return `  ${r.shape.join('×')}: relaxed ${x.relaxedCpuGflops.toFixed(1)}, SIMD ${x.simdCpuGflops.toFixed(1)} GFLOP/s (CPU time): ${x.ratio.toFixed(2)}×${share}`;
  }).join('\n');
}

const pad = (s, n, left = false) => (left ? String(s).padEnd(n) : String(s).padStart(n));

function cell(entry) {
  if (!entry) return '—';
  if (entry.error) {
    if (entry.error.startsWith('failed to load')) return 'n/a';
    return entry.error.startsWith('wrong result') ? 'WRONG' : 'failed';
  }
  return `${entry.gflops.toFixed(1)} (${entry.ms < 10 ? entry.ms.toFixed(2) : entry.ms.toFixed(1)})`;
}

const ratio = (x) => (x == null ? '—' : `${x.toFixed(2)}×`);
const percent = (x) => (x ? `${Math.round(x)}%` : '—');

// A fixed-width table: GFLOP/s with the median ms per call in brackets, then the ratios the targets use,
// and xattn SIMD's share of the wasm SIMD peak measured beside it ('—' when not measured).
export function formatTable(records, impls) {
  const labels = Object.fromEntries(impls.map((i) => [i.key, i.label]));
  const wasmCols = impls.filter((i) => i.role !== 'native').map((i) => i.key);
  const nativeCols = impls.filter((i) => i.role === 'native').map((i) => i.key);
  const head = ['B·H×L×E', ...wasmCols.map((k) => labels[k]), 'best peer', 'SIMD÷best', 'peak', 'SIMD % peak', 'scalar÷JS', ...nativeCols.map((k) => labels[k]), 'SIMD÷native'];
  const rows = records.map((r) => [
    r.shape.join('×'),
    ...wasmCols.map((k) => cell(r[k])),
    r.bestPeer ? labels[r.bestPeer] : '—',
    ratio(r.speedupOverBestPeer),
    r.simdPeakGflops ? r.simdPeakGflops.toFixed(1) : '—',
    percent(r.simdPercentOfPeak),
    ratio(r.scalarOverPlainJs),
    ...nativeCols.map((k) => cell(r[k])),
    ratio(r.simdOverNative),
  ]);
  const widths = head.map((h, c) => Math.max(h.length, ...rows.map((row) => row[c].length)));
  const line = (cols) => cols.map((s, c) => pad(s, widths[c], c === 0)).join(' │ ');
  return [line(head), widths.map((w) => '─'.repeat(w)).join('─┼─'), ...rows.map(line)].join('\n');
}

export function formatRefusals(records, impls) {
  const lines = [];
  for (const r of records) {
    for (const i of impls) {
      const e = r[i.key]?.error;
      if (e && !e.startsWith('failed to load')) lines.push(`  ${r.shape.join('×')} ${i.label}: ${e}`);
    }
  }
  const unavailable = impls.filter((i) => i.unavailable).map((i) => `  ${i.label}: ${i.unavailable}`);
  return [...unavailable, ...lines].join('\n');
}

// The file's runs with this one first, in place of the previous run of its machine kind. The GPT benchmark's
// section (npm run bench:gpt, a bench of its own) stays with its machine kind's run.
export function mergeRun(previous, run) {
  const runs = Array.isArray(previous?.runs) ? previous.runs : [];
  const gpt = runs.find((r) => r.machineKind === run.machineKind)?.gpt;
  return { runs: [gpt && !run.gpt ? { ...run, gpt } : run, ...runs.filter((r) => r.machineKind !== run.machineKind)] };
}

export function writeResults(file, meta, records) {
  let previous = null;
  try {
    previous = JSON.parse(readFileSync(file, 'utf8'));
  } catch { /* no file yet, or not JSON: this run starts it */ }
  writeFileSync(file, `${JSON.stringify(mergeRun(previous, { ...meta, results: records }), null, 2)}\n`);
}

// The streaming measurement as flat metadata fields (the demo shows scalar fields as notes) and a line of text.
// Its GFLOP/s is set against xattn SIMD's at 1×2048×64 in the same run: the issue asks for no loss per FLOP.
export function streamingSummary(streaming, records) {
  const { L, E } = STREAMING_DIMS;
  const name = `1×${L}×${E} (S = L, Ev = E, needWeights false)`;
  const fields = { streamingShape: `B·H = 1, L = S = ${L}, E = Ev = ${E}, needWeights false` };
  if (streaming.memoryBytes) fields.streamingMemoryBytes = streaming.memoryBytes;
  if (streaming.error) {
    fields.streamingError = streaming.error;
    return { fields, line: `Streaming ${name}: ${streaming.error} (memoryBytes() ${streaming.memoryBytes})` };
  }
  fields.streamingMs = round(streaming.ms, 1);
  fields.streamingGflops = round(streaming.gflops, 2);
  const l2048 = records.find((r) => r.shape[0] === 1 && r.shape[1] === 2048 && r.shape[2] === E)?.xattnSimd;
  const perFlop = l2048?.gflops ? streaming.gflops / l2048.gflops : null;
  if (perFlop) fields.streamingVsL2048 = round(perFlop, 2);
  const mib = (streaming.memoryBytes / 2 ** 20).toFixed(1);
  const line = `Streaming ${name}: ${streaming.ms.toFixed(0)} ms, ${streaming.gflops.toFixed(1)} GFLOP/s` +
    (perFlop ? ` (${perFlop.toFixed(2)}× xattn SIMD's GFLOP/s at 1×2048×64 above)` : '') +
    `, memoryBytes() ${mib} MiB after the call (target < 64 MiB), max|Δ| ${streaming.maxAbs.toExponential(1)} on ${streaming.checked} rows vs float64`;
  return { fields, line };
}

// The threads section (threads.mjs): per shape, xattn and onnxruntime-web at each count (medians over the rounds),
// xattn's scaling from the first count to the last beside the peak loop's (what the host allowed), xattn's share
// of the peak loop run on as many threads, and xattn ÷ onnxruntime-web at the last count (the medians of each
// round's own ratio).
export function formatThreads({ counts, rows }) {
  const g = (x) => (x == null ? '—' : x.toFixed(1));
  const first = counts[0], last = counts[counts.length - 1];
  const head = ['B·H×L×E', ...counts.map((t) => `xattn t=${t}`), `t=${first}→${last}`, `peak t=${first}→${last}`,
    ...counts.map((t) => `% of peak t=${t}`), ...counts.map((t) => `ort-web t=${t}`), `xattn ÷ ort-web t=${last}`];
  const lines = rows.map((r) => [r.shape.join('×'), ...counts.map((t) => g(r.xattn[t])), ratio(r.scaling), ratio(r.peakScaling),
    ...counts.map((t) => percent(r.percentOfPeak?.[t])), ...counts.map((t) => g(r.ortWeb[t])), ratio(r.vsOrtWeb)]);
  const widths = head.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells) => `  ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join('  ')}`;
  const errors = rows.flatMap((r) => Object.entries(r.errors).map(([k, why]) => `  ${r.shape.join('×')} ${k}: ${why}`));
  return [fmt(head), ...lines.map(fmt), ...errors].join('\n');
}
