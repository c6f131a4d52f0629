// Synchronous wasm SIMD detection: does the engine validate a module whose one function uses a v128 op?
// (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt) — same idea as every SIMD probe, our own bytes.
const SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, //       type section: () -> v128
  0x03, 0x02, 0x01, 0x00, //                         function section: one function of type 0
  0x0a, 0x0a, 0x01, 0x08, 0x00, //                   code section: one body, no locals
  0x41, 0x00, //                                     i32.const 0
  0xfd, 0x0f, //                                     i8x16.splat
  0xfd, 0x62, //                                     i8x16.popcnt
  0x0b, //                                           end
]);

export function simdSupported() {
  try {
    return WebAssembly.validate(SIMD_PROBE);
  } catch {
    return false;
  }
}
