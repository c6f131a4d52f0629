// The JS API of xattn over one instantiated Emscripten module (any build): the boundary
// (js/boundary.js) and the operation families built on it.
import { makeBoundary } from './boundary.js';
import { kvFunctions } from './kv-cache.js';
import { mhaFunctions } from './mha.js';
import { sdpaFunctions } from './sdpa.js';

// `build`: { simd, relaxedSimd, threads, spinMicroseconds, kernels }, what runs (instantiate.js).
export function makeXattn(mod, { simd, relaxedSimd = false, threads = 1, spinMicroseconds, kernels }) {
  const boundary = makeBoundary(mod);
  const version = mod.version();  // package.json's, compiled into the module
  const api = {
    get simd() { return simd; },
    get relaxedSimd() { return relaxedSimd; },
    get threads() { return threads; },
    get spinMicroseconds() { return spinMicroseconds; },
    get kernels() { return kernels; },
    get version() { return version; },
    /** Current size of the module's linear memory, in bytes. */
    memoryBytes() {
      boundary.ensureUsable();
      return boundary.memoryBytes();
    },
    ...sdpaFunctions(boundary),
    ...mhaFunctions(boundary),
    ...kvFunctions(boundary),
  };
  // Not part of the API: bytes malloc holds right now, and plans not yet run or forgotten, for the
  // package's own leak tests.
  Object.defineProperty(api, 'heapInUseForTests', { value: () => mod.heapInUse(), enumerable: false });
  Object.defineProperty(api, 'pendingPlansForTests', { value: () => mod.pendingPlans(), enumerable: false });
  // … and for the thread tests: split even the tiniest call over every thread (0) or back to the default
  // least work per thread (1e6 FLOPs), and count the tasks helper threads have run.
  Object.defineProperty(api, 'setMinWorkForTests', { value: (flops) => mod.setMinWorkPerWorker(flops), enumerable: false });
  Object.defineProperty(api, 'helperTasksForTests', { value: () => mod.helperTasksRun(), enumerable: false });
  // … and make every thread a run wakes take part (the caller waits for each helper to join), so that a thread
  // test on a loaded machine cannot pass with the caller having done everything.
  Object.defineProperty(api, 'setEveryWorkerForTests', { value: (on) => mod.setEveryWorkerTakesPart(on), enumerable: false });
  // … and whether the helpers of a call on `threads` threads sleep now (rather than poll for the next call).
  Object.defineProperty(api, 'helpersAsleepForTests', { value: () => mod.helpersAsleep(threads), enumerable: false });
  return api;
}
