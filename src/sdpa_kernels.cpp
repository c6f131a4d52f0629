// run_sdpa: a validated plan on the kernels of src/kernels/ (or, for heads too wide for a tile, on the row
// kernel), with the plan's numbers turned into the kernels' AttentionProblem.
#include "sdpa_kernels.hpp"

#include <vector>

#include "kernels/dropout_hash.hpp"

namespace xattn {
namespace {

// Attention scratch is O(tile): Qᵀ panels (E, 64) and output rows (64, Ev) of one query block, well under
// 1 MiB for heads up to 1024 wide. Only heads hundreds of thousands wide would need more than this; they run
// on the row kernel's O(S) scratch instead.
constexpr std::size_t kMaxAttentionScratch = std::size_t{64} << 20;

bool attention_on_rows(const kernels::KernelSet& set, const kernels::AttentionProblem& p) {
    // First a 64-bit bound (Qᵀ panels and output rows of up to 64 queries, plus the tiles), so that the
    // kernel's own size_t arithmetic only ever sees heads small enough not to overflow in wasm32.
    const std::uint64_t bound = (std::uint64_t{p.in.E} + p.in.Ev + 64) * 64 * 4 * sizeof(float);
    return bound > kMaxAttentionScratch || set.attention_workspace(p) > kMaxAttentionScratch;
}

kernels::MaskType mask_type(MaskKind kind) {
    return kind == MaskKind::boolean ? kernels::MaskType::boolean
           : kind == MaskKind::additive ? kernels::MaskType::additive
                                        : kernels::MaskType::none;
}

}  // namespace

const kernels::KernelSet& plan_kernels(const SdpaPlan& plan) {
    return plan.kernel_set ? *plan.kernel_set : kernels::active_kernels();
}

static_assert(static_cast<int>(ScoresStage::biased) == static_cast<int>(kernels::ScoresKind::biased) &&
                  static_cast<int>(ScoresStage::scaled) == static_cast<int>(kernels::ScoresKind::scaled),
              "the kernels name the stages in the same order");

kernels::MaskLayout mask_layout(const SdpaPlan& plan, const MaskRef& mask) {
    kernels::MaskLayout m;
    m.type = mask_type(plan.mask_kind);
    if (m.type == kernels::MaskType::none) return m;
    m.bools = mask.bools;
    m.values = mask.values;
    const std::size_t rank = plan.weights_shape.size();
    m.outer_extents = plan.weights_shape.data();
    m.outer_strides = plan.mask_strides.data();
    m.outer_rank = rank - 2;
    m.query_stride = plan.mask_strides[rank - 2];
    m.key_stride = plan.mask_col_stride();
    return m;
}

kernels::AttentionProblem attention_problem(const SdpaPlan& plan, const float* query, const float* key,
                                            const float* value, const MaskRef& mask, float* output, float* weights) {
    kernels::AttentionProblem p;
    kernels::AttentionInputs& in = p.in;
    in.batch = plan.batch, in.L = plan.L, in.S = plan.S, in.E = plan.E, in.Ev = plan.Ev;
    in.q_heads = plan.q_heads, in.kv_heads = plan.kv_heads;
    in.query = query, in.key = key, in.value = value;
    kernels::AttentionRules& r = p.rules;
    r.scale = plan.scale;
    r.softcap = plan.softcap;
    r.causal = plan.is_causal;
    r.bottom_right = plan.causal_alignment == CausalAlignment::bottom_right;
    r.window_left = plan.window.left, r.window_right = plan.window.right;
    r.heads = plan.heads;
    r.key_lengths = plan.key_lengths.empty() ? nullptr : plan.key_lengths.data();
    r.alibi_slopes = plan.alibi_slopes.empty() ? nullptr : plan.alibi_slopes.data();
    r.stack_rows = plan.L;
    r.mask = mask_layout(plan, mask);
    r.dropout = plan.dropout_p > 0.0;
    r.seed = plan.seed;
    r.dropout_threshold = kernels::dropout_threshold(plan.dropout_p);
    r.keep_scale = r.dropout ? static_cast<float>(1.0 / (1.0 - plan.dropout_p)) : 1.0f;
    p.out.output = output, p.out.weights = weights;
    p.out.scores_kind = static_cast<kernels::ScoresKind>(plan.return_scores);
    p.threads = plan.threads;
    return p;
}

std::uint64_t attention_workspace_bytes(const kernels::KernelSet& set, const SdpaPlan& plan) {
    if (plan.batch == 0 || plan.L == 0) return 0;
    const kernels::AttentionProblem p = attention_problem(plan, nullptr, nullptr, nullptr, MaskRef{}, nullptr, nullptr);
    return attention_on_rows(set, p) ? sdpa_rows_workspace_bytes(plan) : set.attention_workspace(p);
}

void run_attention(const kernels::KernelSet& set, const SdpaPlan& plan, const float* query, const float* key,
                   const float* value, const MaskRef& mask, float* output, float* weights, void* workspace,
                   float* scores) {
    if (plan.batch == 0 || plan.L == 0) return;
    kernels::AttentionProblem p = attention_problem(plan, query, key, value, mask, output, weights);
    if (attention_on_rows(set, p))
        return run_sdpa_rows(plan, query, key, value, mask, output, weights, workspace, scores);
    p.out.scores = plan.return_scores == ScoresStage::none ? nullptr : scores;
    set.attention(p, workspace);
}

void run_attention(const kernels::KernelSet& set, const SdpaPlan& plan, const float* query, const float* key,
                   const float* value, const MaskRef& mask, float* output, float* weights) {
    std::vector<unsigned char> workspace = kernels::allocate_workspace(attention_workspace_bytes(set, plan));
    run_attention(set, plan, query, key, value, mask, output, weights, workspace.data());
}

void run_sdpa(const SdpaPlan& plan, const float* query, const float* key, const float* value, const MaskRef& mask,
              float* output, float* weights, void* workspace, float* scores) {
    run_attention(plan_kernels(plan), plan, query, key, value, mask, output, weights, workspace, scores);
}

void run_sdpa(const SdpaPlan& plan, const float* query, const float* key, const float* value, const MaskRef& mask,
              float* output, float* weights) {
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_sdpa(plan, query, key, value, mask, output, weights, workspace.data());
}

}  // namespace xattn
