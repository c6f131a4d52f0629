// Entry for browsers, Web Workers and bundlers: fetches the .wasm next to this package's dist/.
// The URLs and imports are literal so bundlers can see and copy them.
import { chooseBuild, instantiate } from './instantiate.js';

const compiled = new Map();  // flavour -> Promise<WebAssembly.Module>, so later instances skip compiling

async function compile(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`createXattn: could not fetch ${url} (HTTP ${response.status})`);
  try {
    return await WebAssembly.compileStreaming(response.clone());
  } catch {
    // Servers that send .wasm with the wrong MIME type defeat compileStreaming.
    return WebAssembly.compile(await response.arrayBuffer());
  }
}

function wasmModule(simd) {
  const key = simd ? 'simd' : 'scalar';
  if (!compiled.has(key)) {
    const url = simd ? new URL('../dist/xattn-simd.wasm', import.meta.url) : new URL('../dist/xattn-scalar.wasm', import.meta.url);
    const promise = compile(url);
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
