// options.wasmPaths in Node (js/wasm-paths.js): a string is a URL when it starts with a scheme of two letters or
// more (so that a Windows drive letter stays a path), else a path, against the working directory.
import { resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';

export function nodeResolve(value) {
  return /^[a-z][a-z\d+.-]+:/i.test(value) ? new URL(value) : pathToFileURL(resolvePath(value));
}
