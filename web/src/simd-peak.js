// The wasm SIMD arithmetic peak of this browser, measured where the speed comparison runs: the ceiling the
// speed chart draws its bars against. The package's own benchmark measures the same thing in C
// (6 chains of f32x4 multiplies and 6 chains of f32x4 adds, independent so they overlap; wasm has no FMA in
// every engine); here the loop is a tiny WebAssembly module written out byte by byte, since the page has no
// compiler. Each iteration issues 12 f32x4 operations, 48 flops.

const FLOPS_PER_ITERATION = 48;
const CHAINS = 6;

// LEB128 for the small unsigned numbers this module needs (section sizes, counts, SIMD opcodes).
function uleb(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
}

const f32 = (x) => [...new Uint8Array(Float32Array.of(x).buffer)];
const section = (id, bytes) => [id, ...uleb(bytes.length), ...bytes];
const SIMD = (op) => [0xfd, ...uleb(op)];
const OP = {
  f32Const: 0x43,
  localGet: 0x20,
  localSet: 0x21,
  localTee: 0x22,
  loop: 0x03,
  brIf: 0x0d,
  end: 0x0b,
  i32Const: 0x41,
  i32Sub: 0x6b,
  voidBlock: 0x40,
  splat: SIMD(0x13), // f32x4.splat
  extractLane: SIMD(0x1f), // f32x4.extract_lane
  add: SIMD(0xe4), // f32x4.add
  mul: SIMD(0xe6), // f32x4.mul
};

// (func (export "peak") (param $n i32) (result f32)): runs $n iterations (n ≥ 1) and returns lane 0 of the
// sum of every chain, so the engine cannot drop the loop as dead code.
export function peakModuleBytes() {
  // Locals after the parameter (index 0): multiply chains 1…6, add chains 7…12, the factor 13, the step 14.
  const mulChain = (k) => 1 + k;
  const addChain = (k) => 1 + CHAINS + k;
  const FACTOR = 1 + 2 * CHAINS;
  const STEP = FACTOR + 1;
  const splatTo = (value, local) => [OP.f32Const, ...f32(value), ...OP.splat, OP.localSet, local];
  const body = [];
  for (let k = 0; k < CHAINS; k++) body.push(...splatTo(1 + k / 10, mulChain(k)), ...splatTo(1 + k / 10, addChain(k)));
  body.push(...splatTo(0.9999999, FACTOR), ...splatTo(1e-7, STEP));
  body.push(OP.loop, OP.voidBlock);
  for (let k = 0; k < CHAINS; k++) body.push(OP.localGet, mulChain(k), OP.localGet, FACTOR, ...OP.mul, OP.localSet, mulChain(k));
  for (let k = 0; k < CHAINS; k++) body.push(OP.localGet, addChain(k), OP.localGet, STEP, ...OP.add, OP.localSet, addChain(k));
  body.push(OP.localGet, 0, OP.i32Const, 1, OP.i32Sub, OP.localTee, 0, OP.brIf, 0, OP.end);
  body.push(OP.localGet, mulChain(0));
  for (let k = 1; k < CHAINS; k++) body.push(OP.localGet, mulChain(k), ...OP.add);
  for (let k = 0; k < CHAINS; k++) body.push(OP.localGet, addChain(k), ...OP.add);
  body.push(...OP.extractLane, 0, OP.end);
  const locals = [1, ...uleb(2 * CHAINS + 2), 0x7b]; // one run of v128 locals
  const func = [...locals, ...body];
  return Uint8Array.from([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // \0asm, version 1
    ...section(1, [1, 0x60, 1, 0x7f, 1, 0x7d]), // one type: (i32) → f32
    ...section(3, [1, 0]), // one function of type 0
    ...section(7, [1, 4, ...new TextEncoder().encode('peak'), 0x00, 0]), // export it as "peak"
    ...section(10, [1, ...uleb(func.length), ...func]),
  ]);
}

// GFLOP/s of the mul+add loop: the best of `repeats` runs of `iterations` iterations each (a few ms each, well
// above the coarse clocks of browsers without cross-origin isolation; the best, since
// anything else on the machine only slows a run down). Returns null where wasm SIMD is unavailable.
export function measureSimdPeak({ clock, iterations = 4_000_000, repeats = 12 } = {}) {
  const bytes = peakModuleBytes();
  if (!WebAssembly.validate(bytes)) return null;
  const { peak } = new WebAssembly.Instance(new WebAssembly.Module(bytes)).exports;
  peak(1000); // let the engine compile the loop with its optimising tier before timing it
  let best = 0;
  let sink = 0;
  for (let r = 0; r < repeats; r++) {
    const t0 = clock();
    sink += peak(iterations);
    const ms = clock() - t0;
    if (ms > 0) best = Math.max(best, (iterations * FLOPS_PER_ITERATION) / (ms * 1e6));
  }
  // The loop's result is used, so it cannot be skipped: a finite sum is all the caller needs to know.
  return Number.isFinite(sink) && best > 0 ? best : null;
}
