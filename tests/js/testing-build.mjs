// The testing build (scripts/build-wasm.sh, link_testing): the threaded SIMD build with the library's test
// settings and counters compiled in (XATTN_TESTING), for the tests that watch the heap or steer the thread pool.
// Never shipped: the package's builds have none of these exports (tests/js/hygiene.test.mjs checks).
//
//   const { xa, testing } = await createTestingXattn({ threads: 2 });
//   testing.heapInUse()               bytes malloc holds, the block calls reuse released first
//   testing.setMinWorkPerWorker(n)    0 splits every call over every thread; 1e6 the default
//   testing.helperTasksRun()          tasks helper threads (not callers) have run so far
//   testing.setEveryWorkerTakesPart(on)  every worker a run wakes takes part
//   testing.helpersAsleep()           whether every helper of this instance's count sleeps now
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import { DEFAULT_SPIN_MICROSECONDS, instantiate } from '../../js/instantiate.js';

const require = createRequire(import.meta.url);
const compiled = new Map();  // build -> Promise<WebAssembly.Module>

// `relaxedSimd`: the testing build of the threaded relaxed-SIMD build (Node needs --experimental-wasm-relaxed-simd).
export async function createTestingXattn({ threads = 2, spinMicroseconds = DEFAULT_SPIN_MICROSECONDS, relaxedSimd = false } = {}) {
  const build = `${relaxedSimd ? 'relaxed-' : ''}simd-threads-testing`;
  const dir = new URL(`../../build/wasm/${build}/`, import.meta.url);
  if (!compiled.has(build)) {
    compiled.set(build, readFile(new URL(`xattn-${build}.wasm`, dir)).then((bytes) => WebAssembly.compile(bytes)));
  }
  const factory = require(fileURLToPath(new URL(`xattn-${build}.cjs`, dir)));
  const worker = fileURLToPath(new URL(`xattn-${build}.worker.cjs`, dir));
  let mod = null;
  const xa = await instantiate(factory, await compiled.get(build), { simd: true, relaxedSimd, threads, spinMicroseconds }, {
    locateFile: (path, prefix) => (path.endsWith('.worker.js') ? worker : prefix + path),
    started(m) {
      mod = m;
      for (const w of [...m.PThread.unusedWorkers, ...m.PThread.runningWorkers]) w.unref();
    },
  });
  const testing = {
    heapInUse: () => mod.heapInUse(),
    setMinWorkPerWorker: (flops) => mod.setMinWorkPerWorker(flops),
    helperTasksRun: () => mod.helperTasksRun(),
    setEveryWorkerTakesPart: (on) => mod.setEveryWorkerTakesPart(on),
    helpersAsleep: () => mod.helpersAsleep(threads),
  };
  return { xa, testing };
}
