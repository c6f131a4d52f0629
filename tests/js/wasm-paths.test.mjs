// options.wasmPaths in Node: the files a build loads at run time come from where it says (a directory, a file:
// URL, an http: URL for the .wasm, or a function per file), for createXattn and createXattnWorker alike; a file
// that cannot be had is named in the error, and what is not a location is a TypeError naming the option.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, appendFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { createXattn } from '../../js/node.js';
import { createXattnWorker } from '../../js/worker-node.js';
import { serve } from '../package/static-server.mjs';
import { loadCases, mismatch, tensor } from './golden.mjs';

const dist = fileURLToPath(new URL('../../dist/', import.meta.url));
const lesson = loadCases('sdpa.txt').find((c) => c.name === 'lesson_example_4x10x64');
const inputs = () => [tensor(lesson.tensors.query), tensor(lesson.tensors.key), tensor(lesson.tensors.value)];
const THREADED = ['xattn-simd-threads.wasm', 'xattn-simd-threads-node.worker.cjs', 'xattn-simd-threads-node.cjs'];

let root;      // a temporary folder
let files;     // a copy of the run-time files of the scalar and threaded SIMD builds
let marks;     // what the copied pthread worker script and glue append to when a pthread worker runs them
let server;    // serves `files` over http:
before(async () => {
  root = mkdtempSync(join(tmpdir(), 'xattn-wasm-paths-'));
  files = join(root, 'files');
  mkdirSync(files);
  for (const name of ['xattn-scalar.wasm', ...THREADED]) copyFileSync(join(dist, name), join(files, name));
  // The copies say when they run: only a pthread worker runs them (this thread requires the package's own glue).
  marks = join(root, 'marks');
  writeFileSync(marks, '');
  for (const [name, mark] of [['xattn-simd-threads-node.worker.cjs', 'worker'], ['xattn-simd-threads-node.cjs', 'glue']]) {
    appendFileSync(join(files, name), `\n;require('fs').appendFileSync(${JSON.stringify(marks)}, '${mark}\\n');\n`);
  }
  server = await serve(files);
});
after(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

function computesTheLesson(xa, what) {
  const bad = mismatch(xa.scaledDotProductAttention(...inputs()).output, lesson.tensors.output);
  assert.equal(bad, '', what);
}

async function rejects(promise, Kind, pattern) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof Kind, `expected ${Kind.name}, got ${e?.constructor?.name}: ${e?.message}`);
    assert.match(e.message, pattern);
    return true;
  });
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

describe('createXattn({ wasmPaths })', () => {
  test('a directory, as a relative or absolute path, a file: URL or a URL object, holds the files under their names', async () => {
    for (const wasmPaths of [files, `${files}/`, relative(process.cwd(), files), pathToFileURL(files).href,
      pathToFileURL(`${files}/`), new URL('.', pathToFileURL(join(files, 'x')))]) {
      const xa = await createXattn({ simd: false, wasmPaths });
      computesTheLesson(xa, String(wasmPaths));
    }
  });

  test('a function is asked for each file the build loads, and the pthread workers run the files it gives', async () => {
    const asked = [];
    const located = (name) => {
      asked.push(name);
      return join(files, name);
    };
    computesTheLesson(await createXattn({ simd: false, wasmPaths: located }), 'scalar');
    assert.deepEqual(asked, ['xattn-scalar.wasm']);
    asked.length = 0;
    writeFileSync(marks, '');
    const xa = await createXattn({ threads: 3, relaxedSimd: false, wasmPaths: (name) => pathToFileURL(located(name)) });
    assert.equal(xa.threads, 3);
    computesTheLesson(xa, 'threaded');
    assert.deepEqual(asked, THREADED);
    // Two pool workers, each started from the copied script, each reading the copied glue.
    assert.deepEqual(readFileSync(marks, 'utf8').split('\n').filter(Boolean).sort(), ['glue', 'glue', 'worker', 'worker']);
  });

  test('an http: URL is fetched; the threaded build refuses one for the files its worker threads load', async () => {
    computesTheLesson(await createXattn({ simd: false, wasmPaths: server.url }), 'http: base');
    computesTheLesson(await createXattn({ simd: false, wasmPaths: (name) => new URL(name, server.url) }), 'http: function');
    await rejects(createXattn({ simd: false, wasmPaths: `${server.url}elsewhere` }), Error, new RegExp(
      `^createXattn: could not load the scalar WebAssembly build: could not fetch ${escape(server.url)}elsewhere/xattn-scalar\\.wasm ` +
      "\\(HTTP 404\\); check that options.wasmPaths points where this version's dist files are$"));
    await rejects(createXattn({ threads: 2, relaxedSimd: false, wasmPaths: server.url }), TypeError, new RegExp(
      `^createXattn: options.wasmPaths gave '${escape(server.url)}xattn-simd-threads-node\\.worker\\.cjs' for ` +
      "xattn-simd-threads-node\\.worker\\.cjs, which the threaded build runs in Node's worker threads: they load files only"));
  });

  test('a file that is missing or not WebAssembly rejects, naming it and wasmPaths; the instance works after', async () => {
    const empty = join(root, 'empty');
    mkdirSync(empty, { recursive: true });
    await rejects(createXattn({ simd: false, wasmPaths: empty }), Error, new RegExp(
      `^createXattn: could not load the scalar WebAssembly build: could not read ${escape(empty)}/xattn-scalar\\.wasm \\(ENOENT\\); ` +
      "check that options.wasmPaths points where this version's dist files are$"));
    // Only the .wasm there: the pthread worker script is named before any worker starts.
    copyFileSync(join(dist, 'xattn-simd-threads.wasm'), join(empty, 'xattn-simd-threads.wasm'));
    await rejects(createXattn({ threads: 2, relaxedSimd: false, wasmPaths: empty }), Error,
      new RegExp(`^createXattn: could not read ${escape(empty)}/xattn-simd-threads-node\\.worker\\.cjs \\(ENOENT\\); check that options.wasmPaths`));
    writeFileSync(join(empty, 'xattn-scalar.wasm'), '<!doctype html>');
    await rejects(createXattn({ simd: false, wasmPaths: empty }), Error,
      new RegExp(`could not load the scalar WebAssembly build: ${escape(empty)}/xattn-scalar\\.wasm is not a WebAssembly module \\(`));
    // A failed load is not kept: the same build loads from a good place.
    computesTheLesson(await createXattn({ simd: false, wasmPaths: files }), 'after the failures');
  });

  test('what is not a location is a TypeError naming wasmPaths and what was given', async () => {
    const cases = [
      [3, "options.wasmPaths must be a string, a URL or a function (fileName) => string | URL, got number 3"],
      [null, 'options.wasmPaths must be a string, a URL or a function (fileName) => string | URL, got null'],
      [{ href: files }, 'options.wasmPaths must be a string, a URL or a function (fileName) => string | URL, got Object'],
      ['', 'options.wasmPaths must not be an empty string'],
      ['data:application/wasm;base64,AGFzbQ==', "options.wasmPaths cannot hold files (a data: URL has no folders): 'data:application/wasm;base64,AGFzbQ=='"],
      ['http://[bad', "options.wasmPaths is not a URL (Invalid URL): 'http://[bad'"],
      [() => 5, "options.wasmPaths('xattn-scalar.wasm') must return a string or a URL, got number 5"],
      [() => undefined, "options.wasmPaths('xattn-scalar.wasm') must return a string or a URL, got undefined"],
      [() => '', "options.wasmPaths('xattn-scalar.wasm') must not be an empty string"],
    ];
    for (const [wasmPaths, message] of cases) {
      await assert.rejects(createXattn({ simd: false, wasmPaths }), (e) => {
        assert.ok(e instanceof TypeError, `${String(wasmPaths)}: ${e?.constructor?.name}: ${e?.message}`);
        assert.equal(e.message, `createXattn: ${message}`);
        return true;
      });
    }
    await rejects(createXattn({ simd: false, wasmPaths: (name) => { throw new RangeError(`no ${name} here`); } }), Error,
      /^createXattn: options.wasmPaths\('xattn-scalar\.wasm'\) threw: no xattn-scalar\.wasm here$/);
  });
});

describe('createXattnWorker({ wasmPaths })', () => {
  test('a relative directory means the same folder in the worker', async () => {
    const worker = await createXattnWorker({ simd: false, wasmPaths: relative(process.cwd(), files) });
    try {
      const r = await worker.scaledDotProductAttention(...inputs());
      assert.equal(mismatch(r.output, lesson.tensors.output), '');
    } finally {
      await worker.terminate();
    }
  });

  test('a function is called on this thread for every file any build may load, and the worker loads from there', async () => {
    const asked = [];
    writeFileSync(marks, '');
    const worker = await createXattnWorker({ threads: 2, relaxedSimd: false, wasmPaths: (name) => {
      asked.push(name);
      return join(files, name);
    } });
    try {
      assert.equal(worker.threads, 2);
      const r = await worker.scaledDotProductAttention(...inputs());
      assert.equal(mismatch(r.output, lesson.tensors.output), '');
    } finally {
      await worker.terminate();
    }
    const builds = ['simd', 'relaxed-simd', 'scalar', 'simd-threads', 'relaxed-simd-threads'];
    assert.deepEqual(asked.sort(), builds.flatMap((b) => [`xattn-${b}.wasm`,
      ...(b.endsWith('-threads') ? [`xattn-${b}-node.worker.cjs`, `xattn-${b}-node.cjs`] : [])]).sort());
    assert.deepEqual(readFileSync(marks, 'utf8').split('\n').filter(Boolean).sort(), ['glue', 'worker']);
  });

  test('bad wasmPaths are refused before a worker starts; a missing file is named', async () => {
    await rejects(createXattnWorker({ wasmPaths: 7 }), TypeError,
      /^createXattnWorker: options.wasmPaths must be a string, a URL or a function \(fileName\) => string \| URL, got number 7$/);
    await rejects(createXattnWorker({ wasmPaths: () => false }), TypeError,
      /^createXattnWorker: options.wasmPaths\('xattn-simd.wasm'\) must return a string or a URL, got boolean false$/);
    const nowhere = join(root, 'nowhere');
    await rejects(createXattnWorker({ simd: false, wasmPaths: nowhere }), Error, new RegExp(
      `^createXattnWorker: the worker could not start xattn: createXattn: could not load the scalar WebAssembly build: could not read ${escape(nowhere)}/xattn-scalar\\.wasm \\(ENOENT\\)`));
  });
});
