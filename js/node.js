// Entry for Node (ESM): reads the .wasm next to this package's dist/ from disk.
import { readFile } from 'node:fs/promises';

import { chooseBuild, instantiate } from './instantiate.js';

const compiled = new Map();  // flavour -> Promise<WebAssembly.Module>

function wasmModule(simd) {
  const key = simd ? 'simd' : 'scalar';
  if (!compiled.has(key)) {
    const url = new URL(`../dist/xattn-${key}.wasm`, import.meta.url);
    const promise = readFile(url).then((bytes) => WebAssembly.compile(bytes));
    promise.catch(() => compiled.delete(key));
    compiled.set(key, promise);
  }
  return compiled.get(key);
}

export async function createXattn(options) {
  const simd = chooseBuild(options);
  const [factory, module] = await Promise.all([
    simd ? import('../dist/xattn-simd.mjs') : import('../dist/xattn-scalar.mjs'),
    wasmModule(simd),
  ]);
  return instantiate(factory.default, module, simd);
}

export default createXattn;
