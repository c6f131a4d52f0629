// Entry for browsers, Web Workers and bundlers: fetches the .wasm next to this package's dist/, or where
// options.wasmPaths says (js/wasm-paths.js). The URLs and imports are literal so bundlers can see and copy them.
import { entry } from './instantiate.js';
import { browserFiles, browserResolve, hint } from './wasm-paths.js';

async function compile(url) {
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    // A network error, or another origin's response without Access-Control-Allow-Origin (the browser says which
    // in the console, never to the page).
    throw new Error(`could not fetch ${url.href} (${e?.message ?? e}: the server is unreachable, or it is another origin ` +
      'that does not send Access-Control-Allow-Origin)', { cause: e });
  }
  if (!response.ok) throw new Error(`could not fetch ${url.href} (HTTP ${response.status})`);
  try {
    return await WebAssembly.compileStreaming(response.clone());
  } catch {
    // Servers that send .wasm with the wrong MIME type defeat compileStreaming.
    try {
      return await WebAssembly.compile(await response.arrayBuffer());
    } catch (e) {
      // Such as a server that answers every path with its index page.
      throw new Error(`${url.href} is not a WebAssembly module (${e?.message ?? e})`, { cause: e });
    }
  }
}

// A pthread worker whose import() of the glue fails never says so to this thread, and the module would wait for
// it for ever: fetch the glue here first (as the worker will: CORS, a JavaScript MIME type) to reject instead.
async function checkGlue(url, located) {
  const fail = (why) => new Error(`createXattn: could not fetch ${url.href} (${why}), the glue that the threaded build's ` +
    `pthread workers import; ${hint(located)}`);
  let response;
  try {
    response = await fetch(url);
  } catch (e) {
    throw fail(`${e?.message ?? e}: the server is unreachable, or it is another origin that does not send Access-Control-Allow-Origin`);
  }
  response.body?.cancel().catch(() => {});
  if (!response.ok) throw fail(`HTTP ${response.status}`);
  const type = response.headers.get('content-type') ?? '';
  if (!/javascript|ecmascript/i.test(type)) {
    throw fail(`sent as ${type ? `'${type}'` : 'no Content-Type'}; browsers import modules only when sent as text/javascript`);
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
// so bundlers carry it like any other): a blob: worker runs in the page's origin, whatever origin the glue it
// imports comes from, and no server or bundler serves, rewrites or inlines a script file for it.
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
  files: (build, locate) => {
    if (!locate) return { wasm: WASM[build](), glue: THREADS[build]?.glueUrl() };
    const [wasm, glue] = browserFiles(build).map(locate);
    return { wasm, glue };
  },
  compileWasm: compile,
  resolve: browserResolve,
  loadGlue: async (build, { glue: glueUrl, located }) => {
    if (THREADS[build]) {
      const [glue, worker] = await Promise.all([GLUE[build](), pthreadWorker(build), checkGlue(glueUrl, located)]);
      // The pool's workers load the glue again, by this URL.
      return {
        factory: glue.default,
        moduleOptions: {
          mainScriptUrlOrBlob: glueUrl.href,
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
