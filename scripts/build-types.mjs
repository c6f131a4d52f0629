// Writes js/index.d.cts and js/worker.d.cts, the declarations for require('xattn') and require('xattn/worker'),
// from js/index.d.ts and js/worker.d.ts, the ones written by hand. index.d.cts holds the same declarations
// inside `declare namespace createXattn`, with `export =` (one file for both module kinds gives TS1471).
// Run by the wasm build and before packing; `--check` exits 1 when a file on disk is not what it would write
// (tests/js/types.test.mjs).
import { readFileSync, writeFileSync } from 'node:fs';

const esmPath = new URL('../js/index.d.ts', import.meta.url);
const cjsPath = new URL('../js/index.d.cts', import.meta.url);
const workerEsmPath = new URL('../js/worker.d.ts', import.meta.url);
const workerCjsPath = new URL('../js/worker.d.cts', import.meta.url);

export function cjsDeclarations(esm) {
  const lines = esm.split('\n');
  let start = 0;
  while (lines[start].startsWith('//')) start += 1;  // the ESM file's own header
  // Triple-slash directives (the lib that declares Symbol.dispose) must stay first in both files.
  const directives = lines.slice(0, start).filter((l) => l.startsWith('/// <'));
  const factoryAt = lines.findIndex((l) => l.startsWith('export function createXattn('));
  if (factoryAt < 0) throw new Error('index.d.ts: no `export function createXattn(…)` line');
  const factory = lines[factoryAt].match(/^export function createXattn(\(.*\)): (.*);$/);
  if (!factory) throw new Error(`index.d.ts: cannot read the createXattn signature: ${lines[factoryAt]}`);
  // The doc comment right above the factory goes with it.
  let docAt = factoryAt;
  while (docAt > 0 && /^(\/\*\*| \*)/.test(lines[docAt - 1])) docAt -= 1;
  const body = lines.slice(start, docAt).join('\n').trim().split('\n')
    .map((l) => l.replace(/^export (interface|type|declare) /, '$1 '))
    .map((l) => (l ? `  ${l}` : l));
  const returns = factory[2].replace(/\b(Xattn)\b/g, 'createXattn.$1');
  const params = factory[1].replace(/\b(XattnOptions)\b/g, 'createXattn.$1');
  return [
    ...directives,
    '// Generated from index.d.ts by scripts/build-types.mjs: do not edit. The declarations for',
    "// require('xattn'): module.exports is the createXattn function itself (with .createXattn and .default).",
    `type CreateXattn = ${params} => ${returns};`,
    '',
    ...lines.slice(docAt, factoryAt),
    'declare const createXattn: CreateXattn & { createXattn: CreateXattn; default: CreateXattn };',
    '',
    'declare namespace createXattn {',
    ...body,
    '}',
    '',
    'export = createXattn;',
    '',
  ].join('\n');
}

// js/worker.d.cts, for require('xattn/worker'): module.exports is an object ({ createXattnWorker, default }),
// so the ESM declarations serve as they are, with the types taken from the CJS declarations of the main entry.
export function workerCjsDeclarations(esm) {
  const lines = esm.split('\n');
  let start = 0;
  while (lines[start].startsWith('//')) start += 1;
  const directives = lines.slice(0, start).filter((l) => l.startsWith('/// <'));
  if (!esm.includes("from './index.js';")) throw new Error("worker.d.ts: no import from './index.js'");
  return [
    ...directives,
    "// Generated from worker.d.ts by scripts/build-types.mjs: do not edit. The declarations for require('xattn/worker').",
    ...lines.slice(start).map((l) => l.replace("from './index.js';", "from './index.cjs';")),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const outputs = [
    [cjsPath, cjsDeclarations(readFileSync(esmPath, 'utf8')), 'js/index.d.cts', 'js/index.d.ts'],
    [workerCjsPath, workerCjsDeclarations(readFileSync(workerEsmPath, 'utf8')), 'js/worker.d.cts', 'js/worker.d.ts'],
  ];
  for (const [path, want, name, from] of outputs) {
    if (process.argv.includes('--check')) {
      let have = '';
      try {
        have = readFileSync(path, 'utf8');
      } catch {}
      if (have !== want) {
        console.error(`${name} is not what scripts/build-types.mjs writes from ${from}`);
        process.exit(1);
      }
    } else {
      writeFileSync(path, want);
    }
  }
}
