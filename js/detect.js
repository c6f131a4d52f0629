// Synchronous detection of what the engine's WebAssembly offers, each by validating a tiny module of our own
// bytes whose one function uses the feature: the same idea as every feature probe.

// (func (result v128) i32.const 0 i8x16.splat i8x16.popcnt): SIMD128.
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

// (func (result v128) three zero vectors, f32x4.relaxed_madd): relaxed SIMD, in its standard encoding
// (0xfd 0x105). Node 20 validates it only with --experimental-wasm-relaxed-simd; Chromium 114+ as is.
const RELAXED_SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, //       type section: () -> v128
  0x03, 0x02, 0x01, 0x00, //                         function section: one function of type 0
  0x0a, 0x13, 0x01, 0x11, 0x00, //                   code section: one body of 17 bytes, no locals
  0x41, 0x00, 0xfd, 0x0f, //                         i32.const 0, i8x16.splat   (a)
  0x41, 0x00, 0xfd, 0x0f, //                         i32.const 0, i8x16.splat   (b)
  0x41, 0x00, 0xfd, 0x0f, //                         i32.const 0, i8x16.splat   (c)
  0xfd, 0x85, 0x02, //                               f32x4.relaxed_madd: a·b + c
  0x0b, //                                           end
]);

function validates(bytes) {
  try {
    return WebAssembly.validate(bytes);
  } catch {
    return false;
  }
}

export function simdSupported() {
  return validates(SIMD_PROBE);
}

export function relaxedSimdSupported() {
  return validates(RELAXED_SIMD_PROBE);
}
