// Entry for browsers, Web Workers and bundlers: fetches the .wasm next to this package's dist/.
// The URLs are literal so bundlers can see and copy them.
import { entry } from './instantiate.js';

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

export const createXattn = entry((simd) => compile(simd
  ? new URL('../dist/xattn-simd.wasm', import.meta.url)
  : new URL('../dist/xattn-scalar.wasm', import.meta.url)));

export default createXattn;
