// Entry 'xattn/worker' for pages, Workers and bundlers: createXattnWorker runs xattn in a module Worker and
// returns the same API with Promises (js/worker-client.js). The Worker URL is literal so bundlers see it.
import { connectWorker } from './worker-client.js';
import { browserFiles, browserResolve } from './wasm-paths.js';

export function createXattnWorker(options) {
  return connectWorker(options, () => {
    const worker = new Worker(new URL('./worker-thread.js', import.meta.url), { type: 'module' });
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
