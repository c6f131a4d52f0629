// A validated SdpaPlan handed to a kernel set (src/kernels/): the plan's numbers as the kernels' AttentionProblem,
// the scratch a set needs for it, and the runs. The core points at the kernels, never the other way round.
// Not installed: an implementation header, for the library's sources and the tests.
#pragma once

#include <cstdint>

#include "kernels/kernels.hpp"
#include "xattn/sdpa.hpp"

namespace xattn {

// The kernel set a plan was made for.
const kernels::KernelSet& plan_kernels(const SdpaPlan& plan);
// The plan's call as the kernels take it: shapes, scale, rules (the mask's strides resolved from the plan, which
// must outlive the problem) and the buffers.
kernels::AttentionProblem attention_problem(const SdpaPlan& plan, const float* query, const float* key,
                                            const float* value, const MaskRef& mask, float* output, float* weights);
// The mask part alone (the decoding kernel places a per-head plan's mask on its stacked rows).
kernels::MaskLayout mask_layout(const SdpaPlan& plan, const MaskRef& mask);
// Bytes of scratch run_attention will use for `plan` with `set`: the tiled kernel's O(tile) scratch, or,
// for heads so wide (E or Ev in the hundreds of thousands) that a tile's scratch would pass 64 MiB, the
// S floats of run_sdpa_rows's score row.
std::uint64_t attention_workspace_bytes(const kernels::KernelSet& set, const SdpaPlan& plan);
// Runs one validated attention plan with `set` in `workspace` (attention_workspace_bytes of it). Allocates
// nothing and never throws.
void run_attention(const kernels::KernelSet& set, const SdpaPlan& plan, const float* query, const float* key,
                   const float* value, const MaskRef& mask, float* output, float* weights, void* workspace,
                   float* scores = nullptr);
// The same with a workspace of its own (tests and benchmarks; may throw std::bad_alloc).
void run_attention(const kernels::KernelSet& set, const SdpaPlan& plan, const float* query, const float* key,
                   const float* value, const MaskRef& mask, float* output, float* weights);

}  // namespace xattn
