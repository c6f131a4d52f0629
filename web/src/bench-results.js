// bench/results.json for the speed panel: read into a chart (GFLOP/s per shape and implementation), one line
// of metadata, and a full table with readable column names and exact counts. The file holds { runs: [...] },
// the latest run of each machine kind, the newest first; the panel shows the newest. A run is an object with
// scalar fields (date, machine, …) beside an array of records, one per shape; each record holds one
// { ms, gflops } object per implementation. Any other array of records still becomes a table.
import { formatShape } from './shapes.js';

// Names of the benchmark's keys as a reader knows them; other keys are split at their capitals.
const NAMES = {
  xattnSimd: 'xattn SIMD',
  xattnRelaxed: 'xattn relaxed SIMD',
  xattnScalar: 'xattn scalar',
  ortWeb: 'onnxruntime-web',
  tfjsWasm: 'tfjs-wasm',
  plainJs: 'plain JS',
  ortNode: 'onnxruntime-node',
  gflops: 'GFLOP/s',
  ms: 'ms',
  flops: 'FLOPs',
  bestPeer: 'best peer',
  speedupOverBestPeer: 'SIMD ÷ best peer',
  scalarOverPlainJs: 'scalar ÷ plain JS',
  relaxedVsSimd: 'relaxed SIMD ÷ SIMD',
  simdCpuGflops: 'SIMD GFLOP/s (CPU time)',
  relaxedCpuGflops: 'relaxed GFLOP/s (CPU time)',
  ratio: 'ratio',
  percentOfRelaxedPeak: '% of the relaxed peak',
  simdOverNative: 'SIMD ÷ native',
  simdPercentOfPeak: 'SIMD % of peak',
  xattnVersion: 'xattn',
  wasmSimdPeakGflops: 'wasm SIMD peak of 1 thread in that run',
  wasmRelaxedSimdPeakGflops: 'relaxed SIMD peak of 1 thread in that run',
  cpus: 'CPUs',
};

export function humanise(key) {
  if (NAMES[key]) return NAMES[key];
  return key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
}

// A number for a table cell. Whole numbers are exact, with thousands separated (4194304 → "4,194,304"):
// rounding a count to four significant digits turned it into a different number. Fractions keep four.
export function formatCell(v) {
  if (typeof v === 'string') return NAMES[v] ?? v; // "ortWeb" as a value (the best peer) reads as its name too
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v)) return v.toLocaleString('en-US');
  return String(Number(v.toPrecision(4)));
}

// The newest run of a file of runs ({ runs: [newest, …] }); anything else as it is.
export function newestRun(json) {
  const runs = json && typeof json === 'object' && !Array.isArray(json) ? json.runs : undefined;
  return Array.isArray(runs) && runs.length && runs.every((r) => r && typeof r === 'object' && !Array.isArray(r)) ? runs[0] : json;
}

function recordsOf(json) {
  if (Array.isArray(json)) return { records: json, meta: {} };
  if (json && typeof json === 'object') {
    const key = Object.keys(json).find((k) => Array.isArray(json[k]) && json[k].length && json[k].every((r) => r && typeof r === 'object'));
    if (key) {
      const meta = Object.fromEntries(Object.entries(json).filter(([k, v]) => k !== key && (typeof v !== 'object' || v === null)));
      return { records: json[key], meta };
    }
  }
  return null;
}

// Implementations: keys whose value is an object with a numeric gflops, in the order of the first record.
function implementationsOf(records) {
  const keys = [];
  for (const r of records) {
    for (const [k, v] of Object.entries(r)) {
      if (v && typeof v === 'object' && typeof v.gflops === 'number' && !keys.includes(k)) keys.push(k);
    }
  }
  return keys;
}

// The shape a record was measured on, as a group label: [1, 128, 64] → "1×128×64".
function shapeLabel(record, index) {
  if (Array.isArray(record.shape)) return record.shape.join('×');
  return `#${index + 1}`;
}

// Groups the table leaves out so that it fits a desktop screen: the relaxed-SIMD build (its bars are in the chart,
// each carrying its exact figure) and its comparison with the plain build (CPU-time medians; the benchmark's
// printout gives both), and the peak measured beside each shape (its share is a column).
const LEFT_OUT = new Set(['xattnRelaxed', 'relaxedVsSimd', 'simdPeakGflops']);

// A record as table cells keyed by column id. Nested values become grouped columns ({ xattnSimd: { gflops } }
// → group "xattn SIMD", column "GFLOP/s"), so a header names each implementation once above its figures.
function flatten(record, cols, group = null, out = {}) {
  for (const [k, v] of Object.entries(record)) {
    const id = group ? `${group}.${k}` : k;
    if (LEFT_OUT.has(id)) continue;
    if (v && typeof v === 'object' && !Array.isArray(v)) {
      flatten(v, cols, k, out);
      continue;
    }
    if (!cols.has(id)) cols.set(id, { id, group: group && humanise(group), name: humanise(k) });
    out[id] = Array.isArray(v) && v.every((x) => typeof x === 'number') ? formatShape(v) : formatCell(v);
  }
  return out;
}

// "AMD EPYC · 2 CPUs · 29 Nov 2026 · Node v20.20.2 · xattn 0.1.0": what a reader needs to place the numbers.
export function metaLine(meta) {
  const parts = [];
  if (meta.machine) parts.push(String(meta.machine));
  if (typeof meta.cpus === 'number') parts.push(`${meta.cpus} CPU${meta.cpus === 1 ? '' : 's'}`);
  if (typeof meta.threads === 'number') parts.push(`${meta.threads} thread${meta.threads === 1 ? '' : 's'}`);
  if (meta.date) {
    const d = new Date(meta.date);
    parts.push(Number.isNaN(d.getTime()) ? String(meta.date) : d.toISOString().slice(0, 10));
  }
  if (meta.node) parts.push(`Node ${meta.node}`);
  if (meta.xattnVersion) parts.push(`xattn ${meta.xattnVersion}`);
  return parts.join(' · ');
}

// A measured peak the benchmark may record: the first numeric top-level field named like "…peak…" (GFLOP/s).
function peakOf(meta) {
  const key = Object.keys(meta).find((k) => /peak/i.test(k) && typeof meta[k] === 'number' && meta[k] > 0);
  return key ? { value: meta[key], label: humanise(key) } : null;
}

// { chart, meta, metaLine, table } or null when there is nothing to show. chart is null when the records
// carry no per-implementation GFLOP/s; otherwise { groups: shape labels, series: [{ key, label, values }],
// peak: { value, label } | null }. table: { cols: [{ id, group, name }], rows: [{ [id]: display string }] }.
export function parseBench(json) {
  const parsed = recordsOf(newestRun(json));
  if (!parsed || parsed.records.length === 0) return null;
  const { records, meta } = parsed;
  const impls = implementationsOf(records);
  const chart = impls.length
    ? {
        groups: records.map(shapeLabel),
        series: impls.map((key) => ({ key, label: humanise(key), values: records.map((r) => (typeof r[key]?.gflops === 'number' ? r[key].gflops : null)) })),
        peak: peakOf(meta),
      }
    : null;
  const cols = new Map();
  const rows = records.map((r) => flatten(r, cols));
  return { chart, meta, metaLine: metaLine(meta), table: { cols: [...cols.values()], rows } };
}
