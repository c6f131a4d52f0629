// Loading and using the package leaves the process alone: no process-wide handlers, no new globals.
import assert from 'node:assert/strict';
import { test } from 'node:test';

test('createXattn installs no process handlers and defines no globals', async () => {
  const events = ['uncaughtException', 'unhandledRejection', 'exit', 'warning'];
  const listeners = Object.fromEntries(events.map((e) => [e, process.listenerCount(e)]));
  const globals = new Set(Object.getOwnPropertyNames(globalThis));
  const { createXattn } = await import('../../js/node.js');
  for (const simd of [true, false]) {
    const xa = await createXattn({ simd });
    const x = { data: new Float32Array(8).fill(1), shape: [2, 4] };
    xa.scaledDotProductAttention(x, x, x);
    assert.throws(() => xa.scaledDotProductAttention(x, x, { data: new Float32Array(3), shape: [3] }));
  }
  for (const e of events) assert.equal(process.listenerCount(e), listeners[e], `${e} listeners`);
  const added = Object.getOwnPropertyNames(globalThis).filter((name) => !globals.has(name));
  assert.deepEqual(added, []);
});

// Comments say why, once: a figure a benchmark printed, a date or a speed-up read on one host belongs in
// docs/performance.md (or git's history), not in the code. Comments of src/, js/, bench/, scripts/ and web/.
const FIGURE = [
  /\d\s?(GFLOP\/s|GB\/s)/,                        // a measured rate
  /\b20\d\d-[01]\d-[0-3]\d\b/,                    // a date
  /\d(\.\d+)?\s?[×x] (faster|slower)/,           // a measured speed-up
  /\d(\.\d+)?[–-]\d+(\.\d+)?[×x]\b/,              // a range of ratios
];

function commentsOf(file, text) {
  const hash = /\.(sh|py)$/.test(file);
  const out = [];
  let block = false;
  text.split('\n').forEach((line, i) => {
    let comment = null;
    if (hash) comment = line.match(/(?:^|\s)#\s(.*)$/)?.[1] ?? null;
    else {
      const trimmed = line.trim();
      if (trimmed.startsWith('/*')) block = true;
      if (block) comment = trimmed;
      if (trimmed.includes('*/')) block = false;
      comment ??= line.match(/(?:^|[\s;,)}])\/\/\s?(.*)$/)?.[1] ?? null;
    }
    if (comment) out.push({ line: i + 1, comment });
  });
  return out;
}

test('no source comment carries a benchmark figure, a date or a measured speed-up', async () => {
  const { readdirSync, readFileSync, statSync } = await import('node:fs');
  const { join } = await import('node:path');
  const root = new URL('../../', import.meta.url).pathname;
  const files = [];
  const walk = (dir) => {
    for (const name of readdirSync(join(root, dir))) {
      const rel = join(dir, name);
      if (statSync(join(root, rel)).isDirectory()) walk(rel);
      else if (/\.(cpp|hpp|js|mjs|cjs|sh|py)$/.test(name)) files.push(rel);
    }
  };
  for (const dir of ['src', 'js', 'bench', 'scripts', 'web/src']) walk(dir);
  files.push('web/vite.config.js');
  assert.ok(files.length > 100, `only ${files.length} source files found`);
  const found = [];
  for (const file of files) {
    for (const { line, comment } of commentsOf(file, readFileSync(join(root, file), 'utf8'))) {
      if (FIGURE.some((re) => re.test(comment))) found.push(`${file}:${line}: ${comment}`);
    }
  }
  assert.deepEqual(found, []);
});
