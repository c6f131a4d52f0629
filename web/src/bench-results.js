// bench/results.json as a table, whatever the benchmark's exact layout: an array of records, or an object
// holding one array of records beside scalar fields (shown as notes above the table).
import { formatShape } from './shapes.js';

function recordsOf(json) {
  if (Array.isArray(json)) return { records: json, meta: {} };
  if (json && typeof json === 'object') {
    const key = Object.keys(json).find((k) => Array.isArray(json[k]) && json[k].every((r) => r && typeof r === 'object'));
    if (key) {
      const meta = Object.fromEntries(Object.entries(json).filter(([k, v]) => k !== key && (typeof v !== 'object' || v === null)));
      return { records: json[key], meta };
    }
  }
  return null;
}

// Nested values become dotted columns ({ shape: { L: 10 } } → shape.L); arrays of numbers read as shapes.
function flatten(record, prefix = '', out = {}) {
  for (const [k, v] of Object.entries(record)) {
    const name = prefix ? `${prefix}.${k}` : k;
    if (Array.isArray(v) && v.every((x) => typeof x === 'number')) out[name] = formatShape(v);
    else if (v && typeof v === 'object' && !Array.isArray(v)) flatten(v, name, out);
    else out[name] = typeof v === 'number' ? Number(v.toPrecision(4)) : String(v);
  }
  return out;
}

// { cols, rows (flat records of display strings/numbers), meta }, or null when there is nothing to show.
export function benchTable(json) {
  const parsed = recordsOf(json);
  if (!parsed || parsed.records.length === 0) return null;
  const rows = parsed.records.map((r) => flatten(r));
  const cols = [...new Set(rows.flatMap((r) => Object.keys(r)))];
  return { cols, rows, meta: parsed.meta };
}
