// Shared by the Node and browser entries: pick a build, and turn a compiled WebAssembly.Module and the
// Emscripten factory into the xattn API. The entries differ only in how they compile the .wasm, load a
// build's glue, and what threads their environment offers.
import { makeXattn } from './api.js';
import { DEFAULT_MAX_THREADS, DEFAULT_SPIN_MICROSECONDS, MAX_SPIN_MICROSECONDS } from './boundary-schema.js';
import { relaxedSimdSupported, simdSupported } from './detect.js';
import { hint, locator } from './wasm-paths.js';

// The threaded build's most: the calling thread and up to 3 pool workers, started while it loads
// (scripts/build-wasm.sh).
export const MAX_THREADS = 4;
// The defaults are C++'s (src/xattn/threads.hpp, through the generated schema): min(DEFAULT_MAX_THREADS, cores)
// threads, and how long the threaded build's helpers poll for the next call before they sleep.
export { DEFAULT_MAX_THREADS, DEFAULT_SPIN_MICROSECONDS, MAX_SPIN_MICROSECONDS };

const OPTIONS = ['simd', 'threads', 'relaxedSimd', 'spinMicroseconds', 'wasmPaths'];

// Each build's name in messages. The relaxed ones are the SIMD ones with every a·b + c one f32x4.relaxed_madd.
export const BUILD_NAMES = {
  simd: 'SIMD', scalar: 'scalar', 'simd-threads': 'threaded SIMD',
  'relaxed-simd': 'relaxed SIMD', 'relaxed-simd-threads': 'threaded relaxed SIMD',
};

// { simd, relaxedSimd, threads, spinMicroseconds, build } for createXattn's options. `env` is the entry's
// environment:
//   defaultThreads()  the count to use when none is asked for (1 where shared memory is unavailable)
//   sharedMemory()    null when threads can run, else why not (a sentence for the error)
export function chooseBuild(options, env) {
  if (options !== undefined && (options === null || typeof options !== 'object' || Array.isArray(options))) {
    throw new TypeError(`createXattn: options must be an object, got ${options === null ? 'null' : typeof options}`);
  }
  for (const key of Object.keys(options ?? {})) {
    if (!OPTIONS.includes(key)) throw new TypeError(`createXattn: unknown option '${key}' (known: ${OPTIONS.join(', ')})`);
  }
  const forcedSimd = options?.simd;
  if (forcedSimd !== undefined && typeof forcedSimd !== 'boolean') {
    throw new TypeError(`createXattn: options.simd must be a boolean, got ${typeof forcedSimd}`);
  }
  if (forcedSimd === true && !simdSupported()) {
    throw new Error('createXattn: this engine has no WebAssembly SIMD; use { simd: false } or leave simd unset');
  }
  const simd = forcedSimd ?? simdSupported();
  // Relaxed SIMD wherever the engine has it (Chromium 114+, Firefox 146+, Node 20 with
  // --experimental-wasm-relaxed-simd); the plain SIMD build everywhere else.
  const forcedRelaxed = options?.relaxedSimd;
  if (forcedRelaxed !== undefined && typeof forcedRelaxed !== 'boolean') {
    throw new TypeError(`createXattn: options.relaxedSimd must be a boolean, got ${typeof forcedRelaxed}`);
  }
  if (forcedRelaxed === true) {
    if (!simd) throw new Error('createXattn: relaxedSimd: true needs the SIMD build (relaxed SIMD extends it), but simd is off');
    if (!relaxedSimdSupported()) {
      throw new Error('createXattn: this engine has no WebAssembly relaxed SIMD (Chromium 114+, Firefox 146+; Node 20 needs ' +
        '--experimental-wasm-relaxed-simd); use { relaxedSimd: false } or leave relaxedSimd unset');
    }
  }
  const relaxedSimd = simd && (forcedRelaxed ?? relaxedSimdSupported());
  const forcedThreads = options?.threads;
  if (forcedThreads !== undefined) {
    if (typeof forcedThreads !== 'number') {
      throw new TypeError(`createXattn: options.threads must be a number, got ${typeof forcedThreads}`);
    }
    if (!Number.isInteger(forcedThreads) || forcedThreads < 1 || forcedThreads > MAX_THREADS) {
      throw new RangeError(`createXattn: options.threads must be an integer from 1 to ${MAX_THREADS}, got ${forcedThreads}`);
    }
  }
  if (forcedThreads > 1) {
    if (!simd) throw new Error(`createXattn: threads: ${forcedThreads} needs the SIMD build (the threaded build is SIMD only), but simd is off`);
    const why = env.sharedMemory();
    if (why) throw new Error(`createXattn: threads: ${forcedThreads} needs shared memory, which is unavailable: ${why}`);
  }
  const threads = forcedThreads ??
    (simd && !env.sharedMemory() ? Math.max(1, Math.min(DEFAULT_MAX_THREADS, MAX_THREADS, env.defaultThreads())) : 1);
  const build = !simd ? 'scalar' : `${relaxedSimd ? 'relaxed-' : ''}simd${threads > 1 ? '-threads' : ''}`;
  // Taken whatever the thread count (with one thread there is no helper to poll), so that code choosing the
  // count by the environment can pass it alike.
  const spinMicroseconds = options?.spinMicroseconds ?? DEFAULT_SPIN_MICROSECONDS;
  if (typeof spinMicroseconds !== 'number') {
    throw new TypeError(`createXattn: options.spinMicroseconds must be a number, got ${typeof spinMicroseconds}`);
  }
  if (!Number.isInteger(spinMicroseconds) || spinMicroseconds < 0 || spinMicroseconds > MAX_SPIN_MICROSECONDS) {
    throw new RangeError(`createXattn: options.spinMicroseconds must be an integer from 0 to ${MAX_SPIN_MICROSECONDS}, got ${spinMicroseconds}`);
  }
  return { simd, relaxedSimd, threads, spinMicroseconds, build };
}

// Instantiates `wasmModule` through the Emscripten `factory` (with `moduleOptions` of the entry's, such as
// where the threaded build's worker script is), and sets the instance's thread count and its helpers' polling.
// `build` is what chooseBuild returned ({ simd, relaxedSimd, threads, spinMicroseconds, build }), or for the scalar
// and SIMD builds just `simd`.
// Rejects, never hangs, when instantiating or starting the module fails: the factory's own promise would
// wait for ever on a failed instantiateWasm.
export async function instantiate(factory, wasmModule, build, moduleOptions = {}) {
  const { simd, relaxedSimd = false, threads = 1, spinMicroseconds = DEFAULT_SPIN_MICROSECONDS } =
    typeof build === 'object' ? build : { simd: build };
  let fail;
  const failed = new Promise((_, reject) => { fail = reject; });
  const started = factory({
    ...moduleOptions,
    // The threaded build's pool: one worker per thread beside the caller (scripts/build-wasm.sh); at least one, as
    // Emscripten 3.1.6's threaded glue waits for ever for an empty pool to load.
    xattnPoolSize: Math.max(1, threads - 1),
    // Hand Emscripten the already compiled module: its own loader would fetch a file path in Node.
    instantiateWasm(imports, receive) {
      WebAssembly.instantiate(wasmModule, imports).then((instance) => receive(instance, wasmModule)).catch(fail);
      return {};
    },
    onAbort: (what) => fail(new Error(`the module aborted while starting: ${what}`)),
    print() {},
    printErr() {},
  });
  const name = `${relaxedSimd ? 'relaxed ' : ''}${threads > 1 ? `threaded SIMD (${threads} threads)` : simd ? 'SIMD' : 'scalar'}`;
  try {
    const mod = await Promise.race([started, failed]);
    const running = mod.setThreads(threads);
    if (running !== threads) throw new Error(`the build runs at most ${mod.maxThreads()} threads, not ${threads}`);
    const spinning = mod.setSpinMicroseconds(spinMicroseconds);
    if (spinning !== spinMicroseconds) throw new Error(`the build polls for at most ${spinning} µs, not ${spinMicroseconds}`);
    const kernels = mod.kernelsName();
    moduleOptions.started?.(mod);
    return Object.freeze(makeXattn(mod, { simd, relaxedSimd, threads, spinMicroseconds, kernels }));
  } catch (e) {
    throw new Error(`createXattn: could not start the ${name} WebAssembly build: ${e?.message ?? e}`, { cause: e });
  }
}

// The createXattn of an entry:
//   files(build, locate) → { wasm: URL, … }: where the build's files are, by locate(fileName) → URL when
//                         options.wasmPaths is given (js/wasm-paths.js), else beside the entry; synchronous,
//                         so that a bad location is a TypeError of its own
//   compileWasm(url)    → Promise<WebAssembly.Module>; rejects with what went wrong and where
//   loadGlue(build, where) → Promise<{ factory, moduleOptions? }>: the Emscripten factory (imports stay literal
//                         for bundlers) and what else the factory needs; `where` is what files() returned, with
//                         `located`: whether options.wasmPaths gave it
//   resolve(string)     → URL: a string of options.wasmPaths as a URL (js/wasm-paths.js)
//   env                 as chooseBuild's
// Compiled modules are kept per .wasm URL, so later instances skip compiling; a failed compile is forgotten
// so that a later call can try again.
export function entry({ files, compileWasm, loadGlue, resolve, env }) {
  const compiled = new Map();  // .wasm URL -> Promise<WebAssembly.Module>
  function wasmModule(url) {
    if (!compiled.has(url.href)) {
      const promise = compileWasm(url);
      promise.catch(() => compiled.delete(url.href));
      compiled.set(url.href, promise);
    }
    return compiled.get(url.href);
  }
  return async function createXattn(options) {
    const chosen = chooseBuild(options, env);
    const { build } = chosen;
    const locate = locator('createXattn', options?.wasmPaths, resolve);
    const where = { ...files(build, locate), located: locate !== undefined };
    const [glue, module] = await Promise.all([
      loadGlue(build, where),
      wasmModule(where.wasm).catch((e) => {
        throw new Error(`createXattn: could not load the ${BUILD_NAMES[build]} WebAssembly build: ${e?.message ?? e}; ${hint(locate)}`,
          { cause: e });
      }),
    ]);
    return instantiate(glue.factory, module, chosen, glue.moduleOptions);
  };
}
