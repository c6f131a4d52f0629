// Entry 'xattn/worker' for pages, Workers and bundlers: createXattnWorker runs xattn in a module Worker and
// returns the same API with Promises (js/worker-client.js). The Worker URL is literal so bundlers see it.
import { connectWorker } from './worker-client.js';
import { browserFiles, browserResolve } from './wasm-paths.js';

// A page may start Workers only from its own origin: where this package is loaded from another (a CDN), the Worker
// is a blob: module of the page's that imports the script (a CORS request, as the package's other imports).
function startWorker() {
  const here = new URL(import.meta.url);
  if (globalThis.location === undefined || here.origin === globalThis.location.origin) {
    return new Worker(new URL('./worker-thread.js', import.meta.url), { type: 'module' });
  }
  // Not spelt new URL('./…', import.meta.url), which bundlers would take for a file to copy.
  const script = new URL('worker-thread.js', here).href;
  shim ??= URL.createObjectURL(new Blob([`import ${JSON.stringify(script)};\n`], { type: 'text/javascript' }));
  return new Worker(shim, { type: 'module' });
}
let shim;  // the blob: URL, one for the page

export function createXattnWorker(options) {
  return connectWorker(options, () => {
    const worker = startWorker();
    return {
      post: (message, transfer) => worker.postMessage(message, transfer),
      listen(onMessage, onFailure) {
        worker.addEventListener('message', (event) => onMessage(event.data));
        worker.addEventListener('error', (event) => {
          event.preventDefault();
          onFailure(new Error(event.message || 'the worker script failed to load or threw'));
        });
        worker.addEventListener('messageerror', () => onFailure(new Error('a reply from the worker could not be read')));
      },
      busy() {},
      terminate: async () => worker.terminate(),
    };
  }, { resolve: browserResolve, files: browserFiles });
}

export default createXattnWorker;
