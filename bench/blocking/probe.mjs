// blocking-probe.sh's driver: each blocking of blocks.cpp, plain and relaxed, timed in turns with the bench's two
// peak loops (bench/js/wasm-probes.mjs: mul + add, relaxed_madd) in one process; prints each blocking's median
// GFLOP/s and its share of its own build's peak. Node 20 needs --experimental-wasm-relaxed-simd.
import { createRequire } from 'node:module';
import { median } from '../js/timing.mjs';
import { simdPeakProbe } from '../js/wasm-probes.mjs';

const [, , modulePath] = process.argv;
const probe = await createRequire(import.meta.url)(modulePath)();
const VARIANTS = ['2x4 (shipped)', '2x5', '2x6', '3x4', '4x3', '3x3', '4x4', '1x8',
  '2x4, broadcasts first', '3x3, broadcasts first', '2x5, broadcasts first', '2x4, 2 steps a pass', '2x4, 4 steps a pass',
  '2x4, broadcasts first, 4 steps a pass'];
const E = 64;
const ROUNDS = 15, WARM_ROUNDS = 2, REPS = 3000;

const peaks = { plain: simdPeakProbe(), relaxed: simdPeakProbe({ relaxed: true }) };
const gflops = (run) => {
  const t0 = performance.now();
  const flops = run();
  return flops / ((performance.now() - t0) / 1e3) / 1e9;
};
const samples = { plainPeak: [], relaxedPeak: [], plain: VARIANTS.map(() => []), relaxed: VARIANTS.map(() => []) };
for (let round = 0; round < WARM_ROUNDS + ROUNDS; round++) {  // the first rounds only warm up (V8 tiers up)
  const keep = round >= WARM_ROUNDS;
  const pp = gflops(() => (peaks.plain.run(), peaks.plain.flops));
  const rp = gflops(() => (peaks.relaxed.run(), peaks.relaxed.flops));
  if (keep) samples.plainPeak.push(pp), samples.relaxedPeak.push(rp);
  VARIANTS.forEach((_, b) => {
    const p = gflops(() => probe._blocks_run_plain(b, E, REPS));
    const r = gflops(() => probe._blocks_run_relaxed(b, E, REPS));
    if (keep) samples.plain[b].push(p), samples.relaxed[b].push(r);
  });
}
const pp = median(samples.plainPeak), rp = median(samples.relaxedPeak);
console.log(`score block Sᵀ (96 keys, NV·4 queries) over E = 64, in cache; medians of ${ROUNDS} rounds, GFLOP/s`);
console.log(`peaks: mul + add ${pp.toFixed(1)}, relaxed_madd ${rp.toFixed(1)} (${(rp / pp).toFixed(2)}×)`);
console.log(`${'R keys × NV vectors'.padEnd(38)}  plain  of peak   relaxed  of peak  relaxed ÷ plain`);
VARIANTS.forEach((name, b) => {
  const p = median(samples.plain[b]), r = median(samples.relaxed[b]);
  console.log(`${name.padEnd(38)} ${p.toFixed(1).padStart(6)} ${(100 * p / pp).toFixed(0).padStart(7)}% ` +
    `${r.toFixed(1).padStart(9)} ${(100 * r / rp).toFixed(0).padStart(7)}% ${(r / p).toFixed(2).padStart(14)}×`);
});
