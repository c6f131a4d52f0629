// Entry 'xattn/worker' for Node (ESM): createXattnWorker over a worker_threads Worker (js/worker-client.js).
// The worker is unref'd while no call is pending, so an idle one never keeps the process alive.
import { Worker } from 'node:worker_threads';

import { connectWorker } from './worker-client.js';
import { nodeFiles } from './wasm-paths.js';
import { nodeResolve } from './wasm-paths-node.js';

export function createXattnWorker(options) {
  return connectWorker(options, () => {
    // The thread inherits Node's flags, but --input-type (node -e with ESM) makes it refuse to run a file; a
    // given execArgv must hold no per-process flag, so then it gets none.
    const options = process.execArgv.some((flag) => flag.startsWith('--input-type')) ? { execArgv: [] } : {};
    const worker = new Worker(new URL('./worker-thread-node.js', import.meta.url), options);
    return {
      post: (message, transfer) => worker.postMessage(message, transfer),
      listen(onMessage, onFailure) {
        worker.on('message', onMessage);
        worker.on('error', onFailure);
        worker.on('messageerror', () => onFailure(new Error('a reply from the worker could not be read')));
        worker.on('exit', (code) => onFailure(new Error(`the worker thread exited with code ${code}`)));
      },
      busy: (isBusy) => (isBusy ? worker.ref() : worker.unref()),
      terminate: async () => { await worker.terminate(); },
    };
  }, { resolve: nodeResolve, files: nodeFiles });
}

export default createXattnWorker;
