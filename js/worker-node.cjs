// Entry require('xattn/worker'): the same createXattnWorker as the ESM entry, reached through a dynamic import.
'use strict';

function createXattnWorker(options) {
  return import('./worker-node.js').then((m) => m.createXattnWorker(options));
}

module.exports = { createXattnWorker, default: createXattnWorker };
