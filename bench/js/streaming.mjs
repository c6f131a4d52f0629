// The long-sequence path: one head, L = S = 16384, E = Ev = 64, needWeights false. The (L, S) matrix alone
// would be 1 GiB of float32; a streaming (online-softmax, tiled) kernel needs only the inputs, the output
// (16 MiB together) and O(tile) scratch. A fresh instance is used so memoryBytes() reflects this call only.
import { makeProblem } from './inputs.mjs';
import { agreement, referenceRows, sampleRows } from './reference.mjs';
import { TOLERANCE, loadXattn } from './peers.mjs';
import { median } from './timing.mjs';

export const STREAMING_DIMS = { BH: 1, L: 16384, S: 16384, E: 64, Ev: 64 };

export async function measureStreaming({ runs = 5, log = () => {} } = {}) {
  const problem = makeProblem(STREAMING_DIMS, 7);
  const xa = await loadXattn(true);
  const before = xa.memoryBytes();
  const options = { needWeights: false };
  const run = () => xa.scaledDotProductAttention(problem.query, problem.key, problem.value, options).output.data;
  try {
    // The first call is the check (and the warm-up); 64 rows against float64 cost ~0.27 GFLOP of plain JS.
    const out = run();
    const rows = sampleRows(problem.dims, 2.7e8);
    const check = agreement(out, problem, rows, referenceRows(problem, rows), TOLERANCE);
    if (!check.ok) return { error: `wrong result: ${check.why}` };
    const times = [];
    for (let r = 0; r < runs; r++) {
      const t0 = performance.now();
      run();
      times.push(performance.now() - t0);
      log(`  streaming run ${r + 1}/${runs}: ${times[r].toFixed(0)} ms`);
    }
    const ms = median(times);
    return { ms, gflops: problem.flops / (ms * 1e6), memoryBytes: xa.memoryBytes(), memoryBytesBefore: before, maxAbs: check.maxAbs, checked: check.checked };
  } catch (err) {
    return { error: `failed: ${String(err?.message ?? err).split('\n')[0]}`, memoryBytes: xa.memoryBytes() };
  }
}
