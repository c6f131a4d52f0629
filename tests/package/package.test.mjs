// The packed tarball, installed into a fresh project, works as a user would use it: Node ESM,
// CommonJS, TypeScript (both module kinds, the README's examples, and node10 resolution with TypeScript 5), attw
// finds no problem in its types, the README's examples run (in Node, and those that can in Chromium),
// 'xattn/worker' from Node ESM and CommonJS, wasmPaths in Node after a deploy moved the files, a plain module
// page, a module Worker and a page using 'xattn/worker' in Chromium, the JS suites' checks in a Chromium page (on
// the relaxed-SIMD builds, which Chromium runs unflagged), a Vite build with the worker, an esbuild bundle given
// wasmPaths, and pages loading the files from a second origin, each served cross-origin isolated (threaded) and
// not (one thread); and it ships exactly the files it needs, its LICENSE among them.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { provideFiles, readmeBlocks, sameOutput } from '../js/readme-blocks.mjs';
import * as files from './app-files.mjs';
import { launch, pageResult } from './chromium.mjs';
import { runBrowserBlocks, writeBrowserPages } from './readme-browser.mjs';
import { serve } from './static-server.mjs';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const work = join(repo, 'build', 'package-test');
const app = join(work, 'app');
const bin = (name) => join(repo, 'node_modules', '.bin', name);
// TypeScript 7 has no node10 resolution any more: the node10 consumer is compiled by TypeScript 5.
const tsc5 = join(repo, 'node_modules', 'typescript-5', 'bin', 'tsc');
const run = (cmd, args, cwd = app) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
const golden = new URL('../js/golden.mjs', import.meta.url);

let tarball;
let browser;

before(() => {
  rmSync(work, { recursive: true, force: true });
  mkdirSync(app, { recursive: true });
  // prepack builds the wasm (reusing build/wasm), then npm writes the tarball.
  const out = run('npm', ['pack', '--json', '--pack-destination', work], repo);
  tarball = join(work, JSON.parse(out.slice(out.indexOf('[')))[0].filename);
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, version: '1.0.0' }));
  run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', tarball]);
  const lesson = readFileSync(join(repo, 'tests/golden/sdpa.txt'), 'utf8').split('\n');
  const start = lesson.indexOf('case lesson_example_4x10x64');
  const entry = {};
  for (const line of lesson.slice(start, lesson.indexOf('end', start))) {
    const w = line.split(' ');
    if (w[0] === 'tensor') entry[w[1]] = { shape: w.slice(4, 4 + Number(w[3])).map(Number), values: w.slice(4 + Number(w[3])).map(Number) };
  }
  writeFileSync(join(app, 'case.json'), JSON.stringify(entry));
  writeFileSync(join(app, 'check.js'), files.pageCheck);
});

after(async () => {
  await browser?.close();
});

describe('the packed tarball', () => {
  test('ships the loader, declarations, the five builds, and nothing else', () => {
    const listed = run('tar', ['tzf', tarball]).trim().split('\n').map((f) => f.replace(/^package\//, '')).sort();
    assert.deepEqual(listed, [
      'LICENSE', 'README.md', 'dist/xattn-relaxed-simd-threads-node.cjs', 'dist/xattn-relaxed-simd-threads-node.worker.cjs',
      'dist/xattn-relaxed-simd-threads-worker-source.mjs', 'dist/xattn-relaxed-simd-threads.mjs',
      'dist/xattn-relaxed-simd-threads.wasm', 'dist/xattn-relaxed-simd.mjs', 'dist/xattn-relaxed-simd.wasm',
      'dist/xattn-scalar.mjs', 'dist/xattn-scalar.wasm', 'dist/xattn-simd-threads-node.cjs',
      'dist/xattn-simd-threads-node.worker.cjs', 'dist/xattn-simd-threads-worker-source.mjs',
      'dist/xattn-simd-threads.mjs', 'dist/xattn-simd-threads.wasm', 'dist/xattn-simd.mjs', 'dist/xattn-simd.wasm',
      'js/api.js', 'js/boundary-schema.js', 'js/boundary.js', 'js/browser.js', 'js/detect.js', 'js/encoder.js', 'js/float-formats.js',
      'js/index.d.cts', 'js/index.d.ts', 'js/instantiate.js', 'js/kv-cache.js', 'js/layers.js', 'js/life.js', 'js/mha-state.js', 'js/mha.js', 'js/node.cjs', 'js/node.js',
      'js/rotary.js', 'js/rules.js',
      'js/safetensors.js', 'js/sdpa.js', 'js/state-dict.js', 'js/validate.js', 'js/wasm-paths-node.js',
      'js/wasm-paths.js', 'js/worker-client.js',
      'js/worker-host.js', 'js/worker-node.cjs', 'js/worker-node.js', 'js/worker-snapshot.js',
      'js/worker-thread-node.js', 'js/worker-thread.js', 'js/worker.d.cts', 'js/worker.d.ts', 'js/worker.js',
      'package.json',
    ]);
    const license = run('tar', ['xzOf', tarball, 'package/LICENSE']);
    assert.match(license, /^MIT License\n\nCopyright \(c\) 2026 the xattn authors\n/);
    assert.equal(license, readFileSync(join(repo, 'LICENSE'), 'utf8'));
  });

  test('import in Node ESM, every build (relaxed SIMD with its flag), matches PyTorch', () => {
    writeFileSync(join(app, 'esm.mjs'), files.esmScript(golden.href));
    assert.match(run('node', ['--experimental-wasm-relaxed-simd', 'esm.mjs']), /esm ok/);
  });

  test('require from CommonJS resolves to the same async factory (Node without the flag: plain SIMD)', () => {
    writeFileSync(join(app, 'cjs.cjs'), files.cjsScript(golden.href));
    assert.match(run('node', ['cjs.cjs']), /cjs ok/);
  });

  test("xattn/worker from Node ESM and CommonJS computes it right, and an idle worker lets Node exit", () => {
    writeFileSync(join(app, 'worker-esm.mjs'), files.workerEsmScript(golden.href));
    writeFileSync(join(app, 'worker-cjs.cjs'), files.workerCjsScript(golden.href));
    assert.match(execFileSync('node', ['worker-esm.mjs'], { cwd: app, encoding: 'utf8', timeout: 30000 }), /worker esm ok/);
    assert.match(execFileSync('node', ['worker-cjs.cjs'], { cwd: app, encoding: 'utf8', timeout: 30000 }), /worker cjs ok/);
  });

  test('wasmPaths in Node: after a deploy moved the .wasm files and pthread worker scripts, a directory or a function finds them, from ESM, CommonJS and xattn/worker', () => {
    const moved = join(work, 'moved');
    mkdirSync(moved, { recursive: true });
    writeFileSync(join(moved, 'package.json'), JSON.stringify({ name: 'moved', private: true, version: '1.0.0' }));
    run('npm', ['install', '--no-audit', '--no-fund', '--no-package-lock', tarball], moved);
    const dist = join(moved, 'node_modules', 'xattn', 'dist');
    const assets = join(moved, 'assets');
    mkdirSync(assets);
    for (const file of readdirSync(dist)) {
      if (file.endsWith('.wasm') || file.endsWith('-node.worker.cjs')) renameSync(join(dist, file), join(assets, file));
      else if (file.endsWith('-node.cjs')) copyFileSync(join(dist, file), join(assets, file));
    }
    writeFileSync(join(moved, 'moved-esm.mjs'), files.movedEsmScript(golden.href));
    writeFileSync(join(moved, 'moved-cjs.cjs'), files.movedCjsScript(golden.href));
    assert.match(run('node', ['moved-esm.mjs'], moved), /moved esm ok/);
    assert.match(run('node', ['moved-cjs.cjs'], moved), /moved cjs ok/);
  });

  test("the README's examples run against the tarball and print what they say", () => {
    provideFiles(app);
    const failures = [];  // every block runs, so one failure does not hide another
    for (const b of readmeBlocks()) {
      writeFileSync(join(app, b.file), b.code);
      let lines;
      try {
        lines = run('node', [b.file]).trimEnd().split('\n');
      } catch (e) {
        failures.push(`${b.file}: ${String(e.stderr || e.message).split('\n').find((l) => /Error/.test(l)) ?? e.message}`);
        continue;
      }
      if (lines.length !== b.prints.length || b.prints.some((want, i) => !sameOutput(lines[i], want))) {
        failures.push(`${b.file}: printed ${lines.join(' | ')}; README says ${b.prints.join(' | ')}`);
      }
    }
    assert.deepEqual(failures, []);
  });

  test("the README's page and browser-ready examples (the Worker's among them) run in Chromium and print what they say", async () => {
    const blocks = writeBrowserPages(app);
    browser ??= await launch();
    const failures = [];  // every block runs on both servers, so one failure does not hide another
    for (const isolated of [true, false]) {
      const server = await serve(app, { isolated });
      try {
        failures.push(...await runBrowserBlocks(browser.context, server, blocks, isolated ? 'cross-origin isolated' : 'not isolated'));
      } finally {
        await server.close();
      }
    }
    assert.deepEqual(failures, []);
  });

  test("TypeScript: the README's examples and the type tests compile, strict, from import and from require", () => {
    const types = new URL('./types/', import.meta.url);
    copyFileSync(new URL('esm.mts', types), join(app, 'types-esm.mts'));
    copyFileSync(new URL('cjs.cts', types), join(app, 'types-cjs.cts'));
    writeFileSync(join(app, 'node-shim.d.ts'), files.nodeShim);
    const readme = readmeBlocks().map((b) => b.file);
    for (const b of readmeBlocks()) writeFileSync(join(app, b.file), b.code);
    writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, exactOptionalPropertyTypes: true,
        noEmit: true, allowJs: true, checkJs: true, lib: ['es2022', 'dom'], types: [],
      },
      files: ['types-esm.mts', 'types-cjs.cts', 'node-shim.d.ts', ...readme],
    }));
    run(bin('tsc'), ['-p', 'tsconfig.json']);  // throws with the compiler's output on any error
  });

  test('TypeScript 5 with moduleResolution node10 and module commonjs (older CommonJS projects) types both entries', () => {
    copyFileSync(new URL('./types/node10.ts', import.meta.url), join(app, 'types-node10.ts'));
    writeFileSync(join(app, 'tsconfig.node10.json'), JSON.stringify({
      compilerOptions: {
        module: 'commonjs', moduleResolution: 'node10', target: 'es2022', strict: true, esModuleInterop: true,
        exactOptionalPropertyTypes: true, noEmit: true, lib: ['es2022', 'dom'], types: [],
      },
      files: ['types-node10.ts'],
    }));
    run('node', [tsc5, '-p', 'tsconfig.node10.json']);  // throws with the compiler's output on any error
  });

  test('attw finds no problem in the types for node10, node16 (from CommonJS and from ESM) and bundler', () => {
    let out;
    try {
      out = run(bin('attw'), [tarball, '--format', 'json', '--profile', 'strict', '--no-definitely-typed']);
    } catch (e) {
      assert.fail(`attw: ${e.stdout || e.message}`);
    }
    const { analysis, problems } = JSON.parse(out);
    assert.deepEqual(Object.keys(analysis.entrypoints).sort(), ['.', './package.json', './worker']);
    for (const [name, entry] of Object.entries(analysis.entrypoints)) {
      for (const kind of ['node10', 'node16-cjs', 'node16-esm', 'bundler']) {
        assert.ok(entry.resolutions[kind]?.resolution?.fileName, `${name} under ${kind}: no resolution`);
      }
    }
    assert.deepEqual(analysis.problems, []);
    assert.deepEqual(problems, {});
  });

  // The page's result: the lesson right, relaxed SIMD by default (Chromium has it unflagged) and the plain SIMD
  // build when asked, and threads as the page's isolation allows.
  function checkPage(page, result, errors, isolated) {
    assert.deepEqual(errors, [], `${page}: console errors`);
    assert.equal(result.error, undefined, `${page}: ${result.error}`);
    assert.equal(result.simd, true, page);
    assert.equal(result.relaxedSimd, true, `${page}: relaxed SIMD by default`);
    assert.deepEqual(result.shape, [4, 10, 64], page);
    assert.deepEqual(result.weightsShape, [4, 10, 10], page);
    assert.ok(result.maxExcess <= 1, `${page}: error ${result.maxExcess}x the tolerance`);
    if (result.isolated === undefined) return;  // through xattn/worker: checked by the caller
    assert.equal(result.plain.relaxedSimd, false, `${page}: { relaxedSimd: false }`);
    assert.ok(result.plain.maxExcess <= 1, `${page}: plain SIMD error ${result.plain.maxExcess}x the tolerance`);
    assert.equal(result.isolated, isolated, page);
    if (isolated) {
      assert.equal(result.threads, Math.min(4, result.cores), `${page}: threads where the page is isolated`);
      if (result.cores > 1) {
        assert.ok(result.poolWorkers >= result.threads - 1, `${page}: ${result.poolWorkers} pool workers for ${result.threads} threads`);
        assert.equal(result.workersLeft, 0, `${page}: instances made and disposed in a loop left workers running`);
        assert.equal(result.sameBits, true, `${page}: split over every thread, the result changed`);
      }
    } else {
      assert.equal(result.threads, 1, page);
      assert.match(result.refused, /^createXattn: threads: 2 needs shared memory, which is unavailable: this page is not cross-origin isolated .*Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp/, page);
    }
  }

  test('a <script type="module"> page, a module Worker and a page using xattn/worker in Chromium compute it right, with relaxed SIMD, threaded where isolated', async () => {
    writeFileSync(join(app, 'plain.html'), files.plainHtml);
    writeFileSync(join(app, 'worker.html'), files.workerHtml);
    writeFileSync(join(app, 'worker.js'), files.workerJs);
    writeFileSync(join(app, 'async-worker.html'), files.asyncWorkerHtml);
    browser ??= await launch();
    for (const isolated of [true, false]) {
      const server = await serve(app, { isolated });
      try {
        for (const page of ['plain.html', 'worker.html', 'async-worker.html']) {
          const { result, errors } = await pageResult(browser.context, server.url + page);
          checkPage(`${page} (${isolated ? '' : 'not '}isolated)`, result, errors, isolated);
          if (page === 'async-worker.html') {
            assert.equal(result.moved, true, 'transfer: true moved the query to the worker');
            assert.equal(result.threads > 1, isolated, `xattn/worker runs ${result.threads} threads`);
          }
        }
      } finally {
        await server.close();
      }
    }
  });

  test('every fixture, gradient, kernel and KV cache check runs in Chromium on the relaxed builds, threaded where isolated', async () => {
    writeFileSync(join(app, 'suites.html'), files.suitesHtml);
    for (const file of ['browser-suites.js']) copyFileSync(new URL(file, import.meta.url), join(app, file));
    for (const file of ['golden-cases.mjs', 'test-data.mjs', 'halves.mjs', 'float16-arrays.mjs']) copyFileSync(new URL(`../js/${file}`, import.meta.url), join(app, file));
    copyFileSync(new URL('../../web/src/shared/attention-reference.js', import.meta.url), join(app, 'attention-reference.js'));
    mkdirSync(join(app, 'golden'), { recursive: true });
    for (const file of ['sdpa.txt', 'mha.txt', 'sdpa_grad.txt']) copyFileSync(join(repo, 'tests/golden', file), join(app, 'golden', file));
    browser ??= await launch();
    for (const isolated of [true, false]) {
      const server = await serve(app, { isolated });
      try {
        const { result, errors } = await pageResult(browser.context, `${server.url}suites.html`);
        const page = `suites.html (${isolated ? '' : 'not '}isolated)`;
        assert.deepEqual(errors, [], `${page}: console errors`);
        assert.equal(result.error, undefined, `${page}: ${result.error}`);
        assert.equal(result.build.relaxedSimd, true, page);
        assert.equal(result.build.threads > 1, isolated, `${page}: ${result.build.threads} threads`);
        assert.deepEqual(result.failures, [], page);
        // Every case of each fixture file ran (their counts as in tests/js), and every other check.
        assert.ok(result.counts['sdpa fixtures'] >= 30 && result.counts['mha fixtures'] >= 15 && result.counts['gradient fixtures'] >= 15,
          JSON.stringify(result.counts));
        assert.equal(result.counts.kernels, 7, JSON.stringify(result.counts));
        assert.equal(result.counts['kv cache steps'], 24, JSON.stringify(result.counts));
        assert.equal(result.counts['float16 arrays'], 1, `${JSON.stringify(result.counts)}: Chromium has Float16Array`);
      } finally {
        await server.close();
      }
    }
  });

  test('a Vite build bundles it and its worker, wasm included, and the page computes it right both ways', async () => {
    const site = join(app, 'site');
    mkdirSync(site, { recursive: true });
    writeFileSync(join(site, 'index.html'), files.viteHtml);
    writeFileSync(join(site, 'main.js'), files.viteMain);
    writeFileSync(join(site, 'check.js'), files.pageCheck);
    // No Vite configuration: a user's default build bundles the worker and the wasm.
    run(bin('vite'), ['build', site, '--outDir', join(app, 'vite-dist'), '--emptyOutDir', '--logLevel', 'error']);
    writeFileSync(join(app, 'vite-dist', 'case.json'), readFileSync(join(app, 'case.json')));
    const built = run('ls', ['-R', join(app, 'vite-dist')]);
    assert.match(built, /\.wasm/, 'the bundle carries the .wasm files');
    for (const isolated of [true, false]) {
      const server = await serve(join(app, 'vite-dist'), { isolated });
      try {
        browser ??= await launch();
        const { result, errors } = await pageResult(browser.context, server.url);
        checkPage(`Vite page (${isolated ? '' : 'not '}isolated)`, result, errors, isolated);
        assert.equal(result.worker.error, undefined, result.worker.error);
        assert.equal(result.worker.relaxedSimd, true, 'Vite xattn/worker runs relaxed SIMD');
        assert.deepEqual(result.worker.weightsShape, [4, 10, 10]);
        assert.ok(result.worker.maxExcess <= 1, `worker: error ${result.worker.maxExcess}x the tolerance`);
        assert.equal(result.worker.threads > 1, isolated, `Vite xattn/worker runs ${result.worker.threads} threads`);
      } finally {
        await server.close();
      }
    }
  });
  // The files wasmPaths covers in browsers (what a deploy must put where it points): every build's .wasm, and the
  // threaded builds' glue, which their pthread workers import by URL.
  const locatedFiles = (dir) => readdirSync(dir).filter((f) => f.endsWith('.wasm') || /^xattn-.*-threads\.mjs$/.test(f));

  test('an esbuild bundle computes it right from the files wasmPaths points at, threaded where isolated; without wasmPaths it fails naming the URL and wasmPaths', async () => {
    const site = join(app, 'esbuild-site');
    const dist = join(app, 'node_modules', 'xattn', 'dist');
    mkdirSync(join(site, 'xattn-files'), { recursive: true });
    for (const file of locatedFiles(dist)) copyFileSync(join(dist, file), join(site, 'xattn-files', file));
    writeFileSync(join(app, 'esbuild-main.js'), files.esbuildMain);
    writeFileSync(join(site, 'index.html'), files.esbuildHtml);
    writeFileSync(join(site, 'case.json'), readFileSync(join(app, 'case.json')));
    run(bin('esbuild'), ['esbuild-main.js', '--bundle', '--format=esm', `--outfile=${join(site, 'app', 'main.js')}`, '--log-level=error']);
    browser ??= await launch();
    for (const isolated of [true, false]) {
      const server = await serve(site, { isolated });
      try {
        const { result, errors } = await pageResult(browser.context, `${server.url}?base=./xattn-files/`);
        checkPage(`esbuild page (${isolated ? '' : 'not '}isolated)`, result, errors, isolated);
        assert.ok(server.requests.includes(`/xattn-files/xattn-relaxed-simd${isolated ? '-threads' : ''}.wasm`), server.requests.join());
        if (isolated) assert.ok(server.requests.includes('/xattn-files/xattn-relaxed-simd-threads.mjs'), server.requests.join());
        if (!isolated) {
          // The bundle's new URL('../dist/…', import.meta.url) points beside it, where nothing is.
          const without = await pageResult(browser.context, server.url);
          assert.equal(without.result.error, `Error: createXattn: could not load the relaxed SIMD WebAssembly build: could not fetch ${server.url}dist/` +
            "xattn-relaxed-simd.wasm (HTTP 404); if a bundler or a server moved the package's dist files, set options.wasmPaths to where they are");
        }
      } finally {
        await server.close();
      }
    }
  });

  test('a page and xattn/worker load the files from a second origin that sends CORS headers, threaded where isolated; a missing header or file is named', async () => {
    writeFileSync(join(app, 'located.html'), files.locatedHtml);
    writeFileSync(join(app, 'located-worker.html'), files.locatedWorkerHtml);
    const dist = join(app, 'node_modules', 'xattn', 'dist');
    // What a CDN holds (the covered files only), the same without CORS headers, and one with the .wasm files only.
    const cdnRoot = join(work, 'cdn');
    const wasmOnlyRoot = join(work, 'cdn-wasm-only');
    mkdirSync(cdnRoot, { recursive: true });
    mkdirSync(wasmOnlyRoot, { recursive: true });
    for (const file of locatedFiles(dist)) {
      copyFileSync(join(dist, file), join(cdnRoot, file));
      if (file.endsWith('.wasm')) copyFileSync(join(dist, file), join(wasmOnlyRoot, file));
    }
    const cdn = await serve(cdnRoot, { cors: true });
    const noCors = await serve(cdnRoot);
    const wasmOnly = await serve(wasmOnlyRoot, { cors: true });
    browser ??= await launch();
    try {
      for (const isolated of [true, false]) {
        const server = await serve(app, { isolated });
        const label = (page) => `${page} (${isolated ? '' : 'not '}isolated)`;
        try {
          cdn.requests.length = 0;
          const page = await pageResult(browser.context, `${server.url}located.html?base=${encodeURIComponent(cdn.url)}`);
          checkPage(label('located.html'), page.result, page.errors, isolated);
          // The default instance, { relaxedSimd: false, threads: 1 }, and where isolated { threads: 1 } beside it.
          assert.deepEqual([...new Set(cdn.requests)].sort(), isolated
            ? ['/xattn-relaxed-simd-threads.mjs', '/xattn-relaxed-simd-threads.wasm', '/xattn-relaxed-simd.wasm', '/xattn-simd.wasm']
            : ['/xattn-relaxed-simd.wasm', '/xattn-simd.wasm'], label('located.html'));
          assert.equal(server.requests.filter((p) => p.endsWith('.wasm')).length, 0, 'no .wasm from the page\'s origin');

          cdn.requests.length = 0;
          const worker = await pageResult(browser.context, `${server.url}located-worker.html?files=${encodeURIComponent(cdn.url)}`);
          checkPage(label('located-worker.html'), worker.result, worker.errors, isolated);
          assert.equal(worker.result.threads > 1, isolated, `${label('located-worker.html')}: ${worker.result.threads} threads`);
          assert.deepEqual([...new Set(cdn.requests)].sort(), isolated
            ? ['/xattn-relaxed-simd-threads.mjs', '/xattn-relaxed-simd-threads.wasm'] : ['/xattn-relaxed-simd.wasm'], label('located-worker.html'));

          const refused = await pageResult(browser.context, `${server.url}located.html?base=${encodeURIComponent(noCors.url)}`);
          assert.match(refused.result.error ?? '', new RegExp(`^Error: createXattn: could not (load the (threaded )?relaxed SIMD WebAssembly build: could not )?` +
            `fetch ${noCors.url}xattn-relaxed-simd(-threads)?\\.(wasm|mjs) \\(Failed to fetch: the server is unreachable, or it is another ` +
            'origin that does not send Access-Control-Allow-Origin\\)'), label('without CORS'));
          if (isolated) {
            // Without this check the module would wait for ever for its pthread workers.
            const noGlue = await pageResult(browser.context, `${server.url}located.html?base=${encodeURIComponent(wasmOnly.url)}`);
            assert.equal(noGlue.result.error, `Error: createXattn: could not fetch ${wasmOnly.url}xattn-relaxed-simd-threads.mjs (HTTP 404), ` +
              "the glue that the threaded build's pthread workers import; check that options.wasmPaths points where this version's dist files are");
          }
        } finally {
          await server.close();
        }
      }
    } finally {
      await Promise.all([cdn.close(), noCors.close(), wasmOnly.close()]);
    }
  });
  test('the package itself on a second origin (a CDN): createXattn and xattn/worker find their files beside it, threaded where isolated', async () => {
    writeFileSync(join(app, 'cdn-package.html'), files.cdnPackageHtml);
    const cdn = await serve(join(app, 'node_modules', 'xattn'), { cors: true });
    browser ??= await launch();
    try {
      for (const isolated of [true, false]) {
        const server = await serve(app, { isolated });
        const page = `cdn-package.html (${isolated ? '' : 'not '}isolated)`;
        try {
          cdn.requests.length = 0;
          const { result, errors } = await pageResult(browser.context, `${server.url}cdn-package.html?package=${encodeURIComponent(cdn.url)}`);
          checkPage(page, result, errors, isolated);
          assert.equal(result.worker.error, undefined, result.worker.error);
          assert.ok(result.worker.maxExcess <= 1, `${page}: worker error ${result.worker.maxExcess}x the tolerance`);
          assert.equal(result.worker.threads > 1, isolated, `${page}: the worker runs ${result.worker.threads} threads`);
          // The Worker's script came from the CDN (through a blob: module of the page's), as did every .wasm.
          assert.ok(cdn.requests.includes('/js/worker-thread.js'), cdn.requests.join());
          assert.ok(cdn.requests.includes(`/dist/xattn-relaxed-simd${isolated ? '-threads' : ''}.wasm`), cdn.requests.join());
          assert.deepEqual(server.requests.filter((p) => !['/cdn-package.html', '/check.js', '/case.json'].includes(p)), [], page);
        } finally {
          await server.close();
        }
      }
    } finally {
      await cdn.close();
    }
  });
});
