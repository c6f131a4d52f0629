// The wasm SIMD arithmetic peak of this browser, measured where the speed comparison runs: the ceiling the
// speed chart draws its bars against. The package's own benchmark measures the same loop (bench/js/wasm-probes.mjs
// runs this module; bench/peak.hpp is the same in C): 7 chains of f32x4 multiplies and 7 chains of f32x4 adds,
// independent so they overlap (wasm has no FMA in every engine). Here the loop is a tiny WebAssembly module
// written out byte by byte, since the page has no compiler. Each iteration issues 14 f32x4 operations, 56 flops.
//
// Why 7 and 7: a core with two multiply and two add pipes of latency 3 (AMD's Zen) needs 6 chains of each in
// flight, so 6 leave it no slack; one chain more of each gives some. Both kinds step by the same constant, so
// that the 14 chains and it fit V8's 15 allocatable vector registers on x86-64 without a spill. (On a busy host,
// 6 and 7 alike read far below the peak in some processes and all of it in others.)

import { HEADER, OP, f32, name, section, uleb } from './wasm-bytes.js';

const CHAINS = 7;
export const FLOPS_PER_ITERATION = 2 * CHAINS * 4; // 14 f32x4 ops of 4 lanes

// (func (export "peak") (param $n i32) (result f32)): runs $n iterations (n ≥ 1) and returns lane 0 of the
// sum of every chain, so the engine cannot drop the loop as dead code.
export function peakModuleBytes() {
  // Locals after the parameter (index 0): multiply chains 1…7, add chains 8…14, then the constant 15 that is
  // both the multiply chains' factor and the add chains' step.
  const mulChain = (k) => 1 + k;
  const addChain = (k) => 1 + CHAINS + k;
  const CONSTANT = 1 + 2 * CHAINS;
  const splatTo = (value, local) => [OP.f32Const, ...f32(value), ...OP.splat, OP.localSet, local];
  const body = [];
  for (let k = 0; k < CHAINS; k++) body.push(...splatTo(1 + k / 10, mulChain(k)), ...splatTo(1 + k / 10, addChain(k)));
  body.push(...splatTo(0.9999999, CONSTANT));
  body.push(OP.loop, OP.voidBlock);
  for (let k = 0; k < CHAINS; k++) body.push(OP.localGet, mulChain(k), OP.localGet, CONSTANT, ...OP.mul, OP.localSet, mulChain(k));
  for (let k = 0; k < CHAINS; k++) body.push(OP.localGet, addChain(k), OP.localGet, CONSTANT, ...OP.add, OP.localSet, addChain(k));
  body.push(OP.localGet, 0, OP.i32Const, 1, OP.i32Sub, OP.localTee, 0, OP.brIf, 0, OP.end);
  body.push(OP.localGet, mulChain(0));
  for (let k = 1; k < CHAINS; k++) body.push(OP.localGet, mulChain(k), ...OP.add);
  for (let k = 0; k < CHAINS; k++) body.push(OP.localGet, addChain(k), ...OP.add);
  body.push(...OP.extractLane, 0, OP.end);
  const locals = [1, ...uleb(2 * CHAINS + 1), 0x7b]; // one run of v128 locals
  const func = [...locals, ...body];
  return Uint8Array.from([
    ...HEADER,
    ...section(1, [1, 0x60, 1, 0x7f, 1, 0x7d]), // one type: (i32) → f32
    ...section(3, [1, 0]), // one function of type 0
    ...section(7, [1, ...name('peak'), 0x00, 0]), // export it as "peak"
    ...section(10, [1, ...uleb(func.length), ...func]),
  ]);
}

// GFLOP/s of the mul+add loop: the best of `repeats` runs of `iterations` iterations each (a few ms each, well
// above the coarse clocks of browsers without cross-origin isolation; the best, since
// anything else on the machine only slows a run down), spread over `compiles` separate compilations of the
// module. Returns null where wasm SIMD is unavailable.
//
// Separate compilations, because the same loop can read far less in one compilation than in the next, in one
// process. They narrow the spread but do not remove it: on a busy host the best of 4 still moves from one
// process to the next, more than the relaxed_madd chains do.
export function measureSimdPeak({ clock, iterations = 4_000_000, repeats = 12, compiles = 4 } = {}) {
  const bytes = peakModuleBytes();
  if (!WebAssembly.validate(bytes)) return null;
  let best = 0;
  let sink = 0;
  for (let c = 0; c < compiles; c++) {
    const { peak } = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
    peak(1000); // let the engine compile the loop with its optimising tier before timing it
    for (let r = 0; r < Math.ceil(repeats / compiles); r++) {
      const t0 = clock();
      sink += peak(iterations);
      const ms = clock() - t0;
      if (ms > 0) best = Math.max(best, (iterations * FLOPS_PER_ITERATION) / (ms * 1e6));
    }
  }
  // The loop's result is used, so it cannot be skipped: a finite sum is all the caller needs to know.
  return Number.isFinite(sink) && best > 0 ? best : null;
}
