// Entry for browsers, Web Workers and bundlers: fetches the .wasm next to this package's dist/.
// The URLs and imports are literal so bundlers can see and copy them.
import { entry } from './instantiate.js';

async function compile(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`createXattn: could not fetch ${url} (HTTP ${response.status})`);
  try {
    return await WebAssembly.compileStreaming(response.clone());
  } catch {
    // Servers that send .wasm with the wrong MIME type defeat compileStreaming.
    return WebAssembly.compile(await response.arrayBuffer());
  }
}

const WASM = {
  simd: () => new URL('../dist/xattn-simd.wasm', import.meta.url),
  'relaxed-simd': () => new URL('../dist/xattn-relaxed-simd.wasm', import.meta.url),
  scalar: () => new URL('../dist/xattn-scalar.wasm', import.meta.url),
  'simd-threads': () => new URL('../dist/xattn-simd-threads.wasm', import.meta.url),
  'relaxed-simd-threads': () => new URL('../dist/xattn-relaxed-simd-threads.wasm', import.meta.url),
};

// Each build's glue.
const GLUE = {
  simd: () => import('../dist/xattn-simd.mjs'),
  'relaxed-simd': () => import('../dist/xattn-relaxed-simd.mjs'),
  scalar: () => import('../dist/xattn-scalar.mjs'),
  'simd-threads': () => import('../dist/xattn-simd-threads.mjs'),
  'relaxed-simd-threads': () => import('../dist/xattn-relaxed-simd-threads.mjs'),
};
// The threaded builds' glue URL (the pool's workers load the glue again, by it) and pthread worker script,
// as the text of a module (scripts/build-wasm.sh writes it).
const THREADS = {
  'simd-threads': {
    glueUrl: () => new URL('../dist/xattn-simd-threads.mjs', import.meta.url),
    workerSource: () => import('../dist/xattn-simd-threads-worker-source.mjs'),
  },
  'relaxed-simd-threads': {
    glueUrl: () => new URL('../dist/xattn-relaxed-simd-threads.mjs', import.meta.url),
    workerSource: () => import('../dist/xattn-relaxed-simd-threads-worker-source.mjs'),
  },
};

// Threads need shared memory, which a page has only when cross-origin isolated (and a Worker only when
// the page that started it is).
function sharedMemory() {
  if (typeof SharedArrayBuffer !== 'function' || globalThis.crossOriginIsolated !== true) {
    return 'this page is not cross-origin isolated (crossOriginIsolated is false): serve it with the headers ' +
      'Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp (or credentialless)';
  }
  return null;
}

// A threaded build's pthread worker script, started from a blob: URL made of its text (a module of this package,
// so bundlers carry it like any other): a blob: worker runs in the page's origin, so the script's import() of
// the glue is a same-origin request, and no server or bundler serves, rewrites or inlines a script file for it.
const pthreadWorkerUrls = new Map();  // build -> Promise<blob: URL>
function pthreadWorker(build) {
  if (!pthreadWorkerUrls.has(build)) {
    const url = THREADS[build].workerSource()
      .then((source) => URL.createObjectURL(new Blob([source.default], { type: 'text/javascript' })));
    url.catch(() => pthreadWorkerUrls.delete(build));
    pthreadWorkerUrls.set(build, url);
  }
  return pthreadWorkerUrls.get(build);
}

export const createXattn = entry({
  compileWasm: (build) => compile(WASM[build]()),
  loadGlue: async (build) => {
    if (THREADS[build]) {
      const [glue, worker] = await Promise.all([GLUE[build](), pthreadWorker(build)]);
      // The pool's workers load the glue again, by this URL.
      const glueUrl = THREADS[build].glueUrl().href;
      return {
        factory: glue.default,
        moduleOptions: {
          mainScriptUrlOrBlob: glueUrl,
          locateFile: (path) => (path.endsWith('.worker.js') ? worker : new URL(path, glueUrl).href),
        },
      };
    }
    return { factory: (await GLUE[build]()).default };
  },
  env: {
    defaultThreads: () => globalThis.navigator?.hardwareConcurrency ?? 1,
    sharedMemory,
  },
});

export default createXattn;
