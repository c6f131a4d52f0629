// float16 input and output (IEEE halves as uint16, as a JS Uint16Array or Float16Array holds them): a call that
// takes and gives halves widens its inputs into float32 copies at the front of its workspace, runs the float32 call
// on them with the rest of the workspace, and rounds its outputs to nearest even. Its plan states the copies'
// bytes with the call's own. Not installed: an implementation header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "xattn/sdpa.hpp"

namespace xattn {

// The workspace of a float16 forward or backward call: the copies, then the float32 call's `float32_bytes`.
std::uint64_t sdpa_half_workspace_bytes(const SdpaPlan& plan, std::uint64_t float32_bytes);
std::uint64_t sdpa_backward_half_workspace_bytes(const SdpaPlan& plan, std::uint64_t float32_bytes);

}  // namespace xattn

namespace xattn::half_io {

// Bytes of float32 copies of the given element counts, each 64-byte aligned, then `rest` bytes of the float32
// call's workspace.
std::uint64_t bytes(std::initializer_list<std::uint64_t> floats, std::uint64_t rest);
// The same layout carved from `block`: copies[i] for each count (in order); returns the float32 call's workspace.
void* carve(void* block, std::initializer_list<std::uint64_t> floats, float** copies);
void widen(const std::uint16_t* from, std::size_t n, float* to);
void narrow(const float* from, std::size_t n, std::uint16_t* to);

}  // namespace xattn::half_io
