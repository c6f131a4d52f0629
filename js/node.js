// Entry for Node (ESM): reads the .wasm next to this package's dist/ from disk. Node has shared memory and
// worker_threads without any headers: by default an instance runs min(4, available cores) threads.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath } from 'node:url';

import { entry } from './instantiate.js';

const require = createRequire(import.meta.url);

// The threaded builds' Node glues are CommonJS (Emscripten 3.1.6's module glue calls require() under Node), and
// so are their pthread worker scripts; the pool's worker threads are unref'd, so an idle instance never keeps
// the process alive.
function nodeThreadsGlue(relaxed) {
  const worker = fileURLToPath(relaxed
    ? new URL('../dist/xattn-relaxed-simd-threads-node.worker.cjs', import.meta.url)
    : new URL('../dist/xattn-simd-threads-node.worker.cjs', import.meta.url));
  return {
    factory: relaxed ? require('../dist/xattn-relaxed-simd-threads-node.cjs') : require('../dist/xattn-simd-threads-node.cjs'),
    moduleOptions: {
      locateFile: (path, prefix) => (path.endsWith('.worker.js') ? worker : prefix + path),
      started(mod) {
        for (const w of [...mod.PThread.unusedWorkers, ...mod.PThread.runningWorkers]) w.unref();
      },
    },
  };
}

const GLUE = {
  simd: () => import('../dist/xattn-simd.mjs'),
  'relaxed-simd': () => import('../dist/xattn-relaxed-simd.mjs'),
  scalar: () => import('../dist/xattn-scalar.mjs'),
};

export const createXattn = entry({
  compileWasm: (build) =>
    readFile(new URL(`../dist/xattn-${build}.wasm`, import.meta.url)).then((bytes) => WebAssembly.compile(bytes)),
  loadGlue: async (build) => {
    if (build.endsWith('-threads')) return nodeThreadsGlue(build.startsWith('relaxed-'));
    const glue = await GLUE[build]();
    return { factory: glue.default };
  },
  env: {
    defaultThreads: () => (typeof availableParallelism === 'function' ? availableParallelism() : cpus().length),
    sharedMemory: () => (typeof SharedArrayBuffer === 'function' ? null : 'this Node has no SharedArrayBuffer'),
  },
});

export default createXattn;
