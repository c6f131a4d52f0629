// Entry for Node (ESM): reads the .wasm next to this package's dist/ from disk. Node has shared memory and
// worker_threads without any headers: by default an instance runs min(4, available cores) threads.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { availableParallelism, cpus } from 'node:os';
import { fileURLToPath } from 'node:url';

import { entry } from './instantiate.js';

const require = createRequire(import.meta.url);

// The threaded build's Node glue is CommonJS (Emscripten 3.1.6's module glue calls require() under Node), and
// so is its pthread worker script; the pool's worker threads are unref'd, so an idle instance never keeps
// the process alive.
function nodeThreadsGlue() {
  const worker = fileURLToPath(new URL('../dist/xattn-simd-threads-node.worker.cjs', import.meta.url));
  return {
    factory: require('../dist/xattn-simd-threads-node.cjs'),
    moduleOptions: {
      locateFile: (path, prefix) => (path.endsWith('.worker.js') ? worker : prefix + path),
      started(mod) {
        for (const w of [...mod.PThread.unusedWorkers, ...mod.PThread.runningWorkers]) w.unref();
      },
    },
  };
}

export const createXattn = entry({
  compileWasm: (build) =>
    readFile(new URL(`../dist/xattn-${build}.wasm`, import.meta.url)).then((bytes) => WebAssembly.compile(bytes)),
  loadGlue: async (build) => {
    if (build === 'simd-threads') return nodeThreadsGlue();
    const glue = build === 'simd' ? await import('../dist/xattn-simd.mjs') : await import('../dist/xattn-scalar.mjs');
    return { factory: glue.default };
  },
  env: {
    defaultThreads: () => (typeof availableParallelism === 'function' ? availableParallelism() : cpus().length),
    sharedMemory: () => (typeof SharedArrayBuffer === 'function' ? null : 'this Node has no SharedArrayBuffer'),
  },
});

export default createXattn;
