// The worker_threads Worker that createXattnWorker starts in Node (js/worker-node.js).
import { parentPort } from 'node:worker_threads';

import { createXattn } from './node.js';
import { serve } from './worker-host.js';

serve(createXattn, {
  post: (message, transfer) => parentPort.postMessage(message, transfer),
  listen: (onMessage) => parentPort.on('message', onMessage),
});
