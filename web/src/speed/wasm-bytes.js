// Writing tiny WebAssembly modules byte by byte: the page's SIMD peak loop (simd-peak.js) and the benchmark's
// probes (bench/js/wasm-probes.mjs) are built from these, since neither has a compiler at hand.

// Unsigned LEB128: section sizes, counts, indices, SIMD opcodes.
export function uleb(n) {
  const out = [];
  do {
    let byte = n & 0x7f;
    n >>>= 7;
    if (n) byte |= 0x80;
    out.push(byte);
  } while (n);
  return out;
}

// Signed LEB128, for i32.const (64 needs two bytes: a lone 0x40 would read as -64).
export function sleb(n) {
  const out = [];
  for (;;) {
    const byte = n & 0x7f;
    n >>= 7;
    if ((n === 0 && !(byte & 0x40)) || (n === -1 && byte & 0x40)) return [...out, byte];
    out.push(byte | 0x80);
  }
}

export const HEADER = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00]; // \0asm, version 1
export const section = (id, bytes) => [id, ...uleb(bytes.length), ...bytes];
export const name = (text) => [...uleb(text.length), ...new TextEncoder().encode(text)];
export const f32 = (x) => [...new Uint8Array(Float32Array.of(x).buffer)];
const SIMD = (op) => [0xfd, ...uleb(op)];

// The opcodes the modules use (SIMD ones as their byte sequences).
export const OP = {
  localGet: 0x20, localSet: 0x21, localTee: 0x22, loop: 0x03, brIf: 0x0d, end: 0x0b, voidBlock: 0x40,
  i32Const: 0x41, i32Add: 0x6a, i32Sub: 0x6b, i32LtU: 0x49, f32Const: 0x43,
  load: SIMD(0x00),        // v128.load
  splat: SIMD(0x13),       // f32x4.splat
  extractLane: SIMD(0x1f), // f32x4.extract_lane
  add: SIMD(0xe4),         // f32x4.add
  mul: SIMD(0xe6),         // f32x4.mul
  madd: SIMD(0x105),       // f32x4.relaxed_madd a b c = a·b + c
};
