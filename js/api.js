// The JS API of xattn over one instantiated Emscripten module (any build): the boundary (js/boundary.js), the
// operation families built on it, and the instance's lifetime.
//
// An instance holds its module's memory (which WebAssembly never shrinks) and, in a threaded build, its worker
// threads. dispose() (or `using`, Symbol.dispose) stops the threads and lets the memory go; so does garbage
// collection of an instance that was never disposed, once neither it nor any module or cache made from it is
// reachable (each of those holds the instance's life token).
import { makeBoundary } from './boundary.js';
import { encoderFunctions } from './encoder.js';
import { kvFunctions } from './kv-cache.js';
import { layerFunctions } from './layers.js';
import { DISPOSE, LIFE } from './life.js';
import { mhaFunctions } from './mha.js';
import { rotaryFunctions } from './rotary.js';
import { sdpaFunctions } from './sdpa.js';

// Releases instances dropped without dispose(): the held value is the boundary's release, which holds the module
// but not the instance, so it never keeps the instance alive.
const instances = new FinalizationRegistry((release) => release());

// Made outside makeXattn: a closure made there would share its scope, and with it the life token.
const releaser = (boundary) => () => boundary.release();

// `build`: { simd, relaxedSimd, threads, spinMicroseconds, kernels }, what runs (instantiate.js).
export function makeXattn(mod, { simd, relaxedSimd = false, threads = 1, spinMicroseconds, kernels }) {
  const boundary = makeBoundary(mod);
  const version = mod.version();  // package.json's, compiled into the module
  const life = {};
  const release = releaser(boundary);
  instances.register(life, release, life);
  function dispose() {
    instances.unregister(life);
    release();
  }
  return {
    get simd() { return simd; },
    get relaxedSimd() { return relaxedSimd; },
    get threads() { return threads; },
    get spinMicroseconds() { return spinMicroseconds; },
    get kernels() { return kernels; },
    get version() { return version; },
    /** Whether dispose() was called (every call throws after it). */
    get disposed() { return !boundary.usable && boundary.module === null; },
    /** Current size of the module's linear memory, in bytes. */
    memoryBytes() {
      boundary.ensureUsable();
      return boundary.memoryBytes();
    },
    ...sdpaFunctions(boundary),
    ...rotaryFunctions(boundary),
    ...mhaFunctions(boundary, life),
    ...kvFunctions(boundary, life),
    ...layerFunctions(boundary),
    ...encoderFunctions(boundary, life),
    dispose,
    [DISPOSE]: dispose,
    [LIFE]: life,
  };
}
