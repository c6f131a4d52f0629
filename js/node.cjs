// Entry for require(): the same async factory as the ESM entry, reached through a dynamic import.
'use strict';

function createXattn(options) {
  return import('./node.js').then((m) => m.createXattn(options));
}

module.exports = createXattn;
module.exports.createXattn = createXattn;
module.exports.default = createXattn;
