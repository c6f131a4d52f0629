// Shared by the Node and browser entries: turn a compiled WebAssembly.Module and the Emscripten
// factory into the xattn API. The entries differ only in how they compile the .wasm.
import { makeXattn } from './api.js';
import { simdSupported } from './detect.js';

export function chooseBuild(options) {
  if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
    throw new TypeError(`createXattn: options must be an object, got ${options === null ? 'null' : typeof options}`);
  }
  for (const key of Object.keys(options ?? {})) {
    if (key !== 'simd') throw new TypeError(`createXattn: unknown option '${key}' (known: simd)`);
  }
  const forced = options?.simd;
  if (forced !== undefined && typeof forced !== 'boolean') {
    throw new TypeError(`createXattn: options.simd must be a boolean, got ${typeof forced}`);
  }
  if (forced === true && !simdSupported()) {
    throw new Error('createXattn: this engine has no WebAssembly SIMD; use { simd: false } or leave simd unset');
  }
  return forced ?? simdSupported();
}

// Instantiates `wasmModule` through the Emscripten `factory`. Rejects, never hangs, when instantiating
// or starting the module fails: the factory's own promise would wait for ever on a failed instantiateWasm.
export async function instantiate(factory, wasmModule, simd) {
  let fail;
  const failed = new Promise((_, reject) => { fail = reject; });
  const started = factory({
    // Hand Emscripten the already compiled module: its own loader would fetch a file path in Node.
    instantiateWasm(imports, receive) {
      WebAssembly.instantiate(wasmModule, imports).then((instance) => receive(instance, wasmModule)).catch(fail);
      return {};
    },
    onAbort: (what) => fail(new Error(`the module aborted while starting: ${what}`)),
    print() {},
    printErr() {},
  });
  try {
    const mod = await Promise.race([started, failed]);
    return Object.freeze(makeXattn(mod, simd));
  } catch (e) {
    throw new Error(`createXattn: could not start the ${simd ? 'SIMD' : 'scalar'} WebAssembly build: ${e?.message ?? e}`, { cause: e });
  }
}

// The createXattn of an entry, given how that entry compiles a build's .wasm (compileWasm(simd) ->
// Promise<WebAssembly.Module>). Compiled modules are kept per build, so later instances skip compiling;
// a failed compile is forgotten so that a later call can try again. The glue imports stay literal
// for bundlers.
export function entry(compileWasm) {
  const compiled = new Map();  // simd -> Promise<WebAssembly.Module>
  function wasmModule(simd) {
    if (!compiled.has(simd)) {
      const promise = compileWasm(simd);
      promise.catch(() => compiled.delete(simd));
      compiled.set(simd, promise);
    }
    return compiled.get(simd);
  }
  return async function createXattn(options) {
    const simd = chooseBuild(options);
    const [factory, module] = await Promise.all([
      simd ? import('../dist/xattn-simd.mjs') : import('../dist/xattn-scalar.mjs'),
      wasmModule(simd).catch((e) => {
        throw new Error(`createXattn: could not compile the ${simd ? 'SIMD' : 'scalar'} WebAssembly build: ${e?.message ?? e}`, { cause: e });
      }),
    ]);
    return instantiate(factory.default, module, simd);
  };
}
