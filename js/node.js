// Entry for Node (ESM): reads the .wasm next to this package's dist/ from disk.
import { readFile } from 'node:fs/promises';

import { entry } from './instantiate.js';

export const createXattn = entry((simd) =>
  readFile(new URL(`../dist/xattn-${simd ? 'simd' : 'scalar'}.wasm`, import.meta.url)).then((bytes) => WebAssembly.compile(bytes)));

export default createXattn;
