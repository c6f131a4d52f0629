// The module Worker that createXattnWorker starts in pages and bundlers (js/worker.js).
import { createXattn } from './browser.js';
import { serve } from './worker-host.js';

serve(createXattn, {
  post: (message, transfer) => self.postMessage(message, transfer),
  listen: (onMessage) => self.addEventListener('message', (event) => onMessage(event.data)),
});
