// Entry for Node (ESM): reads the .wasm next to this package's dist/ from disk, or where options.wasmPaths says
// (js/wasm-paths.js). Node has shared memory and worker_threads without any headers: by default an instance runs
// min(4, available cores) threads.
import { access, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath } from 'node:url';

import { entry } from './instantiate.js';
import { given, hint, nodeFiles } from './wasm-paths.js';
import { nodeResolve } from './wasm-paths-node.js';

const require = createRequire(import.meta.url);

// file: URLs are read from disk; anything else (http:, https:, data:) with fetch.
async function compile(url) {
  let bytes;
  if (url.protocol === 'file:') {
    try {
      bytes = await readFile(url);
    } catch (e) {
      throw new Error(`could not read ${fileURLToPath(url)} (${e?.code ?? e?.message ?? e})`, { cause: e });
    }
  } else {
    let response;
    try {
      response = await fetch(url);
    } catch (e) {
      throw new Error(`could not fetch ${url.href} (${e?.cause?.code ?? e?.message ?? e})`, { cause: e });
    }
    if (!response.ok) throw new Error(`could not fetch ${url.href} (HTTP ${response.status})`);
    bytes = await response.arrayBuffer();
  }
  try {
    return await WebAssembly.compile(bytes);
  } catch (e) {
    throw new Error(`${url.protocol === 'file:' ? fileURLToPath(url) : url.href} is not a WebAssembly module (${e?.message ?? e})`,
      { cause: e });
  }
}

// The threaded builds' Node glues are CommonJS (Emscripten 3.1.6's module glue calls require() under Node), and
// so are their pthread worker scripts; the pool's worker threads are unref'd, so an idle instance never keeps
// the process alive. Each pthread worker reads the glue again: the one required here, or with
// options.wasmPaths the one it names.
function nodeThreadsGlue(relaxed, { worker, glue }) {
  return {
    factory: relaxed ? require('../dist/xattn-relaxed-simd-threads-node.cjs') : require('../dist/xattn-simd-threads-node.cjs'),
    moduleOptions: {
      ...(glue && { mainScriptUrlOrBlob: glue }),
      locateFile: (path, prefix) => (path.endsWith('.worker.js') ? worker : prefix + path),
      started(mod) {
        for (const w of [...mod.PThread.unusedWorkers, ...mod.PThread.runningWorkers]) w.unref();
      },
    },
  };
}

// worker_threads and the pthread workers' readFileSync load files only: a file path of a file: URL.
function filePath(url, name) {
  if (url.protocol !== 'file:') {
    throw new TypeError(`createXattn: options.wasmPaths gave ${given(url.href)} for ${name}, which the threaded build ` +
      "runs in Node's worker threads: they load files only (a path or a file: URL)");
  }
  return fileURLToPath(url);
}

async function readable(path) {
  try {
    await access(path);
  } catch (e) {
    throw new Error(`createXattn: could not read ${path} (${e?.code ?? e?.message ?? e}); ${hint(true)}`, { cause: e });
  }
}

const GLUE = {
  simd: () => import('../dist/xattn-simd.mjs'),
  'relaxed-simd': () => import('../dist/xattn-relaxed-simd.mjs'),
  scalar: () => import('../dist/xattn-scalar.mjs'),
};

export const createXattn = entry({
  files: (build, locate) => {
    const threads = build.endsWith('-threads');
    if (!locate) {
      const wasm = new URL(`../dist/xattn-${build}.wasm`, import.meta.url);
      return threads ? { wasm, worker: fileURLToPath(new URL(`../dist/xattn-${build}-node.worker.cjs`, import.meta.url)) } : { wasm };
    }
    const names = nodeFiles(build);
    const [wasm, worker, glue] = names.map(locate);
    return threads ? { wasm, worker: filePath(worker, names[1]), glue: filePath(glue, names[2]) } : { wasm };
  },
  compileWasm: compile,
  resolve: nodeResolve,
  loadGlue: async (build, where) => {
    if (build.endsWith('-threads')) {
      // A pthread worker that cannot load its script fails in an 'error' event that Emscripten rethrows, out of
      // reach of any caller: check the files options.wasmPaths gave before starting one.
      // (In turn, so that the same missing file is named every time.)
      if (where.glue) for (const path of [where.worker, where.glue]) await readable(path);
      return nodeThreadsGlue(build.startsWith('relaxed-'), where);
    }
    const glue = await GLUE[build]();
    return { factory: glue.default };
  },
  env: {
    defaultThreads: () => (typeof availableParallelism === 'function' ? availableParallelism() : cpus().length),
    sharedMemory: () => (typeof SharedArrayBuffer === 'function' ? null : 'this Node has no SharedArrayBuffer'),
  },
});

export default createXattn;
