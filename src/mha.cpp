// torch.nn.MultiheadAttention's forward: project, split heads, attend (the SDPA core), merge heads, project.
#include "xattn/mha.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <new>
#include <stdexcept>

#include "kernels/carver.hpp"
#include "kernels/kernels.hpp"

namespace xattn {
namespace {

constexpr const char* kFn = "multi_head_attention: ";

std::string num(std::size_t n) { return std::to_string(n); }

kernels::LinearProblem linear_problem(std::size_t rows, const float* x, std::size_t x_stride, const float* W,
                                      const float* b, std::size_t in, std::size_t out, float* y, std::size_t y_stride) {
    kernels::LinearProblem p;
    p.rows = rows, p.in = in, p.out = out;
    p.x = x, p.x_stride = x_stride, p.w = W, p.bias = b, p.y = y, p.y_stride = y_stride;
    return p;
}

}  // namespace

Status MultiheadAttention::check_config(const MhaConfig& c) {
    const std::string fn = kFn;
    if (c.embed_dim == 0 || c.num_heads == 0)
        return Status::fail(fn + "embed_dim and num_heads must be positive, got embed_dim " + num(c.embed_dim) +
                            ", num_heads " + num(c.num_heads));
    if (c.embed_dim % c.num_heads != 0)
        return Status::fail(fn + "embed_dim " + num(c.embed_dim) + " is not divisible by num_heads " +
                            num(c.num_heads));
    const std::size_t E = c.embed_dim, kdim = c.kdim ? c.kdim : E, vdim = c.vdim ? c.vdim : E;
    for (const auto& [name, shape] : {std::pair{"in_proj_weight", Shape{3 * E, std::max({E, kdim, vdim})}},
                                      std::pair{"out_proj.weight", Shape{E, E}}})
        if (Status st = check_tensor_size(fn + name, shape); !st.ok()) return st;
    return {};
}

std::size_t MultiheadAttention::parameter_floats(const MhaConfig& c) {
    const std::size_t E = c.embed_dim, kdim = c.kdim ? c.kdim : E, vdim = c.vdim ? c.vdim : E;
    return E * (E + kdim + vdim) + E * E + (c.bias ? 4 * E : 0) + (c.add_bias_kv ? 2 * E : 0);
}

std::size_t MultiheadAttention::parameter_bytes(const MhaConfig& c) { return parameter_floats(c) * sizeof(float); }

Status MultiheadAttention::create(const MhaConfig& config, std::unique_ptr<MultiheadAttention>* out) {
    if (Status st = check_config(config); !st.ok()) return st;
    // malloc, not new: in wasm (built without exceptions) even a nothrow new aborts the module when it fails.
    Storage storage(static_cast<float*>(std::malloc(parameter_bytes(config))));
    // The module object itself is small: 64 KiB to spare makes sure its allocation cannot fail.
    void* spare = storage ? std::malloc(std::size_t{1} << 16) : nullptr;
    if (!spare)
        return Status::fail(kFn + std::string("the parameters of embed_dim ") + num(config.embed_dim) + " need " +
                            num(parameter_bytes(config)) + " bytes, more than the memory left can hold");
    std::free(spare);
    out->reset(new MultiheadAttention(config, std::move(storage)));
    return {};
}

MultiheadAttention::MultiheadAttention(const MhaConfig& config)
    : MultiheadAttention(config, [&config] {
          if (Status st = check_config(config); !st.ok()) throw std::invalid_argument(st.error);
          Storage storage(static_cast<float*>(std::malloc(parameter_bytes(config))));
          if (!storage) throw std::bad_alloc();
          return storage;
      }()) {}

MultiheadAttention::MultiheadAttention(const MhaConfig& config, Storage storage)
    : config_(config), storage_(std::move(storage)) {
    const std::size_t E = config.embed_dim;
    // One block, in the order of PyTorch's in_proj_weight: q, k, v weights side by side.
    float* at = storage_.get();
    auto span = [&at](std::size_t n) {
        const ParamSpan s{at, n};
        at += n;
        return s;
    };
    q_weight_ = span(E * E), k_weight_ = span(E * kdim()), v_weight_ = span(E * vdim());
    in_bias_ = span(config.bias ? 3 * E : 0);
    out_weight_ = span(E * E), out_bias_ = span(config.bias ? E : 0);
    bias_k_ = span(config.add_bias_kv ? E : 0), bias_v_ = span(config.add_bias_kv ? E : 0);
    // Initialised with PyTorch's distributions (not its values): Xavier-uniform in-projections,
    // uniform(±1/sqrt(E)) out-projection, zero biases, Xavier-normal bias_k / bias_v. A splitmix64
    // stream rather than <random>: large modules are created in wasm too, where this is several times faster.
    std::uint64_t state = config.init_seed;
    auto next_unit = [&state] {  // uniform in [0, 1)
        std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
    };
    auto uniform = [&](ParamSpan w, std::size_t /*n*/, double bound) {
        for (float& x : w) x = static_cast<float>((2.0 * next_unit() - 1.0) * bound);
    };
    const double in_bound = packed_in_proj() ? std::sqrt(6.0 / (E + 3 * E)) : 0.0;
    uniform(q_weight_, E * E, packed_in_proj() ? in_bound : std::sqrt(6.0 / (E + E)));
    uniform(k_weight_, E * kdim(), packed_in_proj() ? in_bound : std::sqrt(6.0 / (E + kdim())));
    uniform(v_weight_, E * vdim(), packed_in_proj() ? in_bound : std::sqrt(6.0 / (E + vdim())));
    uniform(out_weight_, E * E, 1.0 / std::sqrt(static_cast<double>(E)));
    std::fill(in_bias_.begin(), in_bias_.end(), 0.0f);
    std::fill(out_bias_.begin(), out_bias_.end(), 0.0f);
    if (config.add_bias_kv) {
        const double stddev = std::sqrt(2.0 / (E + E));
        for (const ParamSpan& w : {bias_k_, bias_v_}) {
            for (float& x : w) {  // Box-Muller
                const double u1 = 1.0 - next_unit(), u2 = next_unit();
                x = static_cast<float>(stddev * std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2));
            }
        }
    }
}

std::map<std::string, Shape> MultiheadAttention::parameter_shapes() const {
    const std::size_t E = config_.embed_dim;
    std::map<std::string, Shape> shapes;
    if (packed_in_proj()) {
        shapes["in_proj_weight"] = {3 * E, E};
    } else {
        shapes["q_proj_weight"] = {E, E};
        shapes["k_proj_weight"] = {E, kdim()};
        shapes["v_proj_weight"] = {E, vdim()};
    }
    shapes["out_proj.weight"] = {E, E};
    if (config_.bias) {
        shapes["in_proj_bias"] = {3 * E};
        shapes["out_proj.bias"] = {E};
    }
    if (config_.add_bias_kv) {
        shapes["bias_k"] = {1, 1, E};
        shapes["bias_v"] = {1, 1, E};
    }
    return shapes;
}

std::size_t MultiheadAttention::parameter_count(const std::string& name) const {
    const std::size_t E = config_.embed_dim;
    if (name == "in_proj_weight") return packed_in_proj() ? 3 * E * E : 0;
    if (name == "q_proj_weight") return packed_in_proj() ? 0 : E * E;
    if (name == "k_proj_weight") return packed_in_proj() ? 0 : E * kdim();
    if (name == "v_proj_weight") return packed_in_proj() ? 0 : E * vdim();
    if (name == "out_proj.weight") return E * E;
    if (name == "in_proj_bias") return config_.bias ? 3 * E : 0;
    if (name == "out_proj.bias") return config_.bias ? E : 0;
    if (name == "bias_k" || name == "bias_v") return config_.add_bias_kv ? E : 0;
    return 0;
}

Status MultiheadAttention::set_parameter(const std::string& name, const float* data, std::size_t count) {
    // A valid call allocates nothing (the parameters' storage already has their size); only errors build text.
    const std::size_t want = parameter_count(name);
    if (want == 0) {
        std::string known;
        for (const auto& [n, s] : parameter_shapes()) known += (known.empty() ? "" : ", ") + n;
        return Status::fail(kFn + std::string("no parameter named '") + name + "' in this configuration (it has " +
                            known + ")");
    }
    if (count != want) {
        const Shape shape = parameter_shapes().at(name);
        return Status::fail(kFn + name + " needs " + num(want) + " values for shape " + shape_to_string(shape) +
                            ", got " + num(count));
    }
    const std::size_t E = config_.embed_dim;
    auto put = [&](const ParamSpan& dst, std::size_t from, std::size_t n) {
        std::copy(data + from, data + from + n, dst.begin());  // dst already holds n floats
    };
    if (name == "in_proj_weight") {
        put(q_weight_, 0, E * E);
        put(k_weight_, E * E, E * E);
        put(v_weight_, 2 * E * E, E * E);
    } else if (name == "q_proj_weight") {
        put(q_weight_, 0, count);
    } else if (name == "k_proj_weight") {
        put(k_weight_, 0, count);
    } else if (name == "v_proj_weight") {
        put(v_weight_, 0, count);
    } else if (name == "in_proj_bias") {
        put(in_bias_, 0, count);
    } else if (name == "out_proj.weight") {
        put(out_weight_, 0, count);
    } else if (name == "out_proj.bias") {
        put(out_bias_, 0, count);
    } else if (name == "bias_k") {
        put(bias_k_, 0, count);
    } else if (name == "bias_v") {
        put(bias_v_, 0, count);
    }
    return {};
}

void MultiheadAttention::set_parameter(const std::string& name, const xt::xarray<float>& value) {
    if (Status st = set_parameter(name, value.data(), value.size()); !st.ok()) throw std::invalid_argument(st.error);
}

Status MultiheadAttention::get_parameter(const std::string& name, float* data, std::size_t count) const {
    const std::size_t want = parameter_count(name);
    if (want == 0) return Status::fail(kFn + std::string("no parameter named '") + name + "' in this configuration");
    if (count != want)
        return Status::fail(kFn + name + " has " + num(want) + " values, asked for " + num(count));
    ParamSpan flat;
    if (name == "in_proj_weight") flat = ParamSpan{q_weight_.data(), 3 * q_weight_.size()};  // q, k, v are adjacent
    else if (name == "q_proj_weight") flat = q_weight_;
    else if (name == "k_proj_weight") flat = k_weight_;
    else if (name == "v_proj_weight") flat = v_weight_;
    else if (name == "in_proj_bias") flat = in_bias_;
    else if (name == "out_proj.weight") flat = out_weight_;
    else if (name == "out_proj.bias") flat = out_bias_;
    else if (name == "bias_k") flat = bias_k_;
    else if (name == "bias_v") flat = bias_v_;
    std::copy(flat.begin(), flat.end(), data);
    return {};
}

xt::xarray<float> MultiheadAttention::parameter(const std::string& name) const {
    const auto shapes = parameter_shapes();
    const auto it = shapes.find(name);
    if (it == shapes.end()) throw std::invalid_argument(kFn + std::string("no parameter named '") + name + "'");
    xt::xarray<float> result = xt::xarray<float>::from_shape(it->second);
    if (Status st = get_parameter(name, result.data(), result.size()); !st.ok()) throw std::invalid_argument(st.error);
    return result;
}

// What one forward call works in, carved from the caller's workspace.
struct MultiheadAttention::Scratch {
    float* qh;            // (N, H, L, hd)        projected queries, split into heads
    float* kh;            // (N, H, S_total, hd)  projected keys (+ bias_k, + a zero key)
    float* vh;            // (N, H, S_total, hd)  projected values likewise
    float* y;             // (max(L, S), E)       one batch element's projected rows
    float* bias;          // (N, H, L, S_total)   merged additive mask, when any mask is given
    float* attn;          // (N, H, L, hd)        the heads' attention output
    float* head_weights;  // (N, H, L, S_total)   every head's weights, when they are averaged
    float* merged;        // (L, E)               one batch element's heads side by side
    void* linear;         // the linear kernel's scratch, for the largest projection
    void* attention;      // the attention kernel's scratch (plan.attention.workspace_bytes)

    static std::uint64_t layout(const MultiheadAttention& m, const MhaPlan& plan, void* block, Scratch* out) {
        // 64-bit counts: where size_t is 32-bit (wasm32) the total must not wrap.
        const std::uint64_t E = m.config_.embed_dim, H = m.config_.num_heads, N = plan.N, L = plan.L, S = plan.S,
                            St = plan.S_total;
        Carver c(block);
        Scratch x;
        x.qh = c.take<float>(N * L * E);
        x.kh = c.take<float>(N * St * E);
        x.vh = c.take<float>(N * St * E);
        x.y = c.take<float>(std::max(L, S) * E);
        x.bias = c.take<float>(plan.any_mask ? N * H * L * St : 0);
        x.attn = c.take<float>(N * L * E);
        x.head_weights = c.take<float>(plan.need_weights && plan.average_attn_weights ? N * H * L * St : 0);
        x.merged = c.take<float>(L * E);
        const kernels::KernelSet& set = *plan.attention.kernel_set;
        std::uint64_t linear = 0;
        for (const auto& [rows, in] : {std::pair{plan.L, m.config_.embed_dim}, std::pair{plan.S, m.kdim()},
                                       std::pair{plan.S, m.vdim()}}) {
            kernels::LinearProblem p;
            p.rows = rows, p.in = in, p.out = m.config_.embed_dim;
            linear = std::max(linear, kernels::linear_workspace_bytes(set, p));
        }
        x.linear = c.take<unsigned char>(linear);
        x.attention = c.take<unsigned char>(plan.attention.workspace_bytes);
        if (out) *out = x;
        return c.bytes();
    }
};

Status MultiheadAttention::plan_forward(const Shape& q, const Shape& k, const Shape& v, MaskKind kpm_kind,
                                        const Shape& kpm, MaskKind attn_kind, const Shape& am, bool need_weights,
                                        bool average_attn_weights, bool is_causal, MhaPlan* plan) const {
    const std::string fn = kFn;
    const std::size_t E = config_.embed_dim, H = config_.num_heads;
    const std::string shapes = " (query " + shape_to_string(q) + ", key " + shape_to_string(k) + ", value " +
                               shape_to_string(v) + ")";
    if (q.size() != 2 && q.size() != 3)
        return Status::fail(fn + "query must be 3-D " + (config_.batch_first ? "(N, L, E)" : "(L, N, E)") +
                            " or 2-D (L, E) unbatched, got shape " + shape_to_string(q));
    if (k.size() != q.size() || v.size() != q.size())
        return Status::fail(fn + "key and value must have the same rank as query" + shapes);
    const bool batched = q.size() == 3;
    const bool bf = config_.batch_first && batched;
    // Positions of the sequence and batch dims in each input.
    const std::size_t seq = bf ? 1 : 0, bat = bf ? 0 : 1;
    const std::size_t L = q[seq], S = k[seq], N = batched ? q[bat] : 1;
    if (q.back() != E)
        return Status::fail(fn + "query embedding size " + num(q.back()) + " != embed_dim " + num(E) + shapes);
    if (k.back() != kdim())
        return Status::fail(fn + "key embedding size " + num(k.back()) + " != kdim " + num(kdim()) + shapes);
    if (v.back() != vdim())
        return Status::fail(fn + "value embedding size " + num(v.back()) + " != vdim " + num(vdim()) + shapes);
    if (batched && (k[bat] != N || v[bat] != N))
        return Status::fail(fn + "query, key and value batch sizes differ" + shapes);
    if (v[seq] != S) return Status::fail(fn + "key and value sequence lengths differ" + shapes);

    const std::size_t S_total = S + (config_.add_bias_kv ? 1 : 0) + (config_.add_zero_attn ? 1 : 0);
    if (kpm_kind != MaskKind::none) {
        const Shape want = batched ? Shape{N, S} : Shape{S};
        if (kpm != want)
            return Status::fail(fn + "key_padding_mask shape " + shape_to_string(kpm) + " != " +
                                shape_to_string(want) + (batched ? " (N, S)" : " (S,)") + shapes);
    }
    bool per_head = false;
    if (attn_kind != MaskKind::none) {
        const Shape two{L, S}, three{N * H, L, S};
        per_head = am == three && am.size() == 3;
        if (am != two && !per_head)
            return Status::fail(fn + "attn_mask shape " + shape_to_string(am) + " is neither " +
                                shape_to_string(two) + " (L, S) nor " + shape_to_string(three) + " (N·H, L, S)" +
                                shapes);
    }

    Shape weights_shape = average_attn_weights ? Shape{N, L, S_total} : Shape{N, H, L, S_total};
    if (!batched) weights_shape.erase(weights_shape.begin());
    // Internally every head's weights and the merged mask are (N, H, L, S_total) floats.
    const Shape per_head_shape{N, H, L, S_total};
    for (const auto& [name, shape] :
         {std::pair{"query", q}, std::pair{"key", k}, std::pair{"value", v}, std::pair{"projected key", Shape{N, S_total, E}},
          std::pair{"projected value", Shape{N, S_total, E}}})
        if (Status st = check_tensor_size(fn + name, shape); !st.ok()) return st;
    if (need_weights || kpm_kind != MaskKind::none || attn_kind != MaskKind::none || is_causal)
        if (Status st = check_tensor_size(fn + "per-head weights", per_head_shape); !st.ok()) return st;

    MhaPlan p;
    p.batched = batched;
    p.N = N, p.L = L, p.S = S, p.S_total = S_total;
    p.need_weights = need_weights;
    p.average_attn_weights = average_attn_weights;
    p.is_causal = is_causal;
    p.attn_mask_per_head = per_head;
    p.output_shape = q;
    p.weights_shape = std::move(weights_shape);
    // The heads' attention is planned here, so the run plans (and allocates) nothing.
    p.any_mask = is_causal || attn_kind != MaskKind::none || kpm_kind != MaskKind::none;
    const std::size_t hd = E / H;
    SdpaSettings settings;
    settings.need_weights = need_weights;
    if (Status st = plan_sdpa({N, H, L, hd}, {N, H, S_total, hd}, {N, H, S_total, hd},
                              p.any_mask ? MaskKind::additive : MaskKind::none,
                              p.any_mask ? Shape{N, H, L, S_total} : Shape{}, settings, &p.attention);
        !st.ok())
        return st;
    p.workspace_bytes = Scratch::layout(*this, p, nullptr, nullptr);
    *plan = std::move(p);
    return {};
}

void MultiheadAttention::run_forward(const MhaPlan& plan, const float* query, const float* key, const float* value,
                                     const MhaMasks& masks, float* output, float* weights, void* workspace) const {
    const std::size_t E = config_.embed_dim, H = config_.num_heads, hd = E / H;
    const std::size_t N = plan.N, L = plan.L, S = plan.S, St = plan.S_total;
    // E >= 1, so an empty output means N = 0 or L = 0: nothing to compute, and no loop over a huge N.
    if (numel(plan.output_shape) == 0) return;
    const bool bf = config_.batch_first && plan.batched;
    // Row (n, t) of an input laid out (T, N, X), or (N, T, X) with batch_first.
    auto row = [&](auto* base, std::size_t n, std::size_t t, std::size_t T, std::size_t X) {
        return base + (bf ? n * T + t : t * N + n) * X;
    };
    Scratch w{};
    Scratch::layout(*this, plan, workspace, &w);
    const kernels::KernelSet& set = *plan.attention.kernel_set;
    auto linear = [&](std::size_t rows, const float* x, std::size_t x_stride, const float* W, const float* b,
                      std::size_t in, std::size_t out, float* y, std::size_t y_stride) {
        kernels::run_linear(set, linear_problem(rows, x, x_stride, W, b, in, out, y, y_stride), w.linear);
    };
    const float* bq = config_.bias ? in_bias_.data() : nullptr;
    const float* bk = config_.bias ? in_bias_.data() + E : nullptr;
    const float* bv = config_.bias ? in_bias_.data() + 2 * E : nullptr;

    // 1. In-projections, split into heads.   q (N, H, L, hd), k and v (N, H, St, hd)
    float* qh = w.qh;  // (N, H, L, hd)
    float* kh = w.kh;  // (N, H, St, hd)
    float* vh = w.vh;  // (N, H, St, hd)
    float* y = w.y;    // (T, E) one batch element's projected rows
    std::fill(kh, kh + N * St * E, 0.0f);  // the add_zero_attn key and value stay 0
    std::fill(vh, vh + N * St * E, 0.0f);
    auto scatter_heads = [&](float* dst, std::size_t n, std::size_t t, std::size_t T, const float* src) {
        for (std::size_t h = 0; h < H; ++h) std::copy(src + h * hd, src + (h + 1) * hd, dst + ((n * H + h) * T + t) * hd);
    };
    // Rows of one batch element are N·X floats apart in the (T, N, X) layout, X with batch_first.
    auto stride = [&](std::size_t X) { return bf ? X : N * X; };
    for (std::size_t n = 0; n < N; ++n) {
        linear(L, row(query, n, 0, L, E), stride(E), q_weight_.data(), bq, E, E, y, E);  // (L, E)
        for (std::size_t l = 0; l < L; ++l) scatter_heads(qh, n, l, L, y + l * E);
        linear(S, row(key, n, 0, S, kdim()), stride(kdim()), k_weight_.data(), bk, kdim(), E, y, E);  // (S, E)
        for (std::size_t s = 0; s < S; ++s) scatter_heads(kh, n, s, St, y + s * E);
        linear(S, row(value, n, 0, S, vdim()), stride(vdim()), v_weight_.data(), bv, vdim(), E, y, E);
        for (std::size_t s = 0; s < S; ++s) scatter_heads(vh, n, s, St, y + s * E);
        // add_bias_kv appends one learned key/value; add_zero_attn then one of zeros (already 0).
        if (config_.add_bias_kv) {
            scatter_heads(kh, n, S, St, bias_k_.data());
            scatter_heads(vh, n, S, St, bias_v_.data());
        }
    }

    // 2. One additive mask (N, H, L, St) from attn_mask, key_padding_mask and is_causal.
    //    The appended bias/zero keys are never masked, as PyTorch pads masks with zeros.
    const float neg_inf = -std::numeric_limits<float>::infinity();
    const bool causal = plan.is_causal && masks.attn_mask.kind == MaskKind::none;
    const bool any_mask = plan.any_mask;
    float* bias = w.bias;  // (N, H, L, St)
    if (any_mask) {
        std::fill(bias, bias + N * H * L * St, 0.0f);  // the appended keys' columns stay 0
        auto mask_value = [&](const MaskRef& m, std::size_t at) {
            // MHA polarity: a true boolean forbids.
            if (m.kind == MaskKind::boolean) return m.bools[at] ? neg_inf : 0.0f;
            return m.values[at];
        };
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t i = 0; i < L; ++i) {
                    float* b = bias + ((n * H + h) * L + i) * St;  // (St,)
                    for (std::size_t j = 0; j < S; ++j) {
                        float add = 0.0f;
                        if (causal && j > i) add = neg_inf;
                        if (masks.attn_mask.kind != MaskKind::none)
                            add += mask_value(masks.attn_mask,
                                              ((plan.attn_mask_per_head ? n * H + h : 0) * L + i) * S + j);
                        if (masks.key_padding_mask.kind != MaskKind::none)
                            add += mask_value(masks.key_padding_mask, n * S + j);
                        b[j] = add;
                    }
                }
    }

    // 3. Attention per (n, h): the SDPA core with scale 1/sqrt(hd).   (N, H, L, hd)
    MaskRef mask;
    if (any_mask) mask = MaskRef{MaskKind::additive, nullptr, bias, {}};  // its shape was planned: the run needs none
    float* attn = w.attn;  // (N, H, L, hd)
    float* head_weights = w.head_weights;  // (N, H, L, St) when averaged
    float* weights_out = !plan.need_weights ? nullptr : plan.average_attn_weights ? head_weights : weights;
    run_sdpa(plan.attention, qh, kh, vh, mask, attn, weights_out, w.attention);

    // 4. Merge heads and project out.   (N, H, L, hd) -> (L, E) per batch element -> output layout
    float* merged = w.merged;  // (L, E)
    for (std::size_t n = 0; n < N; ++n) {
        for (std::size_t l = 0; l < L; ++l)
            for (std::size_t h = 0; h < H; ++h)
                std::copy_n(attn + ((n * H + h) * L + l) * hd, hd, merged + l * E + h * hd);
        linear(L, merged, E, out_weight_.data(), config_.bias ? out_bias_.data() : nullptr, E, E,
               row(output, n, 0, L, E), stride(E));
    }

    // 5. Weights averaged over heads.   (N, H, L, St) -> (N, L, St)
    if (plan.need_weights && plan.average_attn_weights)
        for (std::size_t n = 0; n < N; ++n)
            for (std::size_t x = 0; x < L * St; ++x) {
                float acc = 0.0f;
                for (std::size_t h = 0; h < H; ++h) acc += head_weights[(n * H + h) * L * St + x];
                weights[n * L * St + x] = acc / static_cast<float>(H);
            }
}

void MultiheadAttention::run_forward(const MhaPlan& plan, const float* query, const float* key, const float* value,
                                     const MhaMasks& masks, float* output, float* weights) const {
    std::vector<unsigned char> workspace = kernels::allocate_workspace(plan.workspace_bytes);
    run_forward(plan, query, key, value, masks, output, weights, workspace.data());
}

AttentionResult MultiheadAttention::forward(const xt::xarray<float>& query, const xt::xarray<float>& key,
                                            const xt::xarray<float>& value, const MhaForwardOptions& o) const {
    const Shape q(query.shape().begin(), query.shape().end());
    const Shape k(key.shape().begin(), key.shape().end());
    const Shape v(value.shape().begin(), value.shape().end());
    const MhaMasks masks{o.key_padding_mask.ref(), o.attn_mask.ref()};
    MhaPlan plan;
    if (Status st = plan_forward(q, k, v, masks.key_padding_mask.kind, masks.key_padding_mask.shape,
                                 masks.attn_mask.kind, masks.attn_mask.shape, o.need_weights, o.average_attn_weights,
                                 o.is_causal, &plan);
        !st.ok())
        throw std::invalid_argument(st.error);
    AttentionResult result;
    result.output = xt::xarray<float>::from_shape(plan.output_shape);
    // Without need_weights the weights are an empty (0,) array (a default xarray would be a 0-D scalar).
    result.weights = xt::xarray<float>::from_shape(plan.need_weights ? plan.weights_shape : Shape{0});
    run_forward(plan, query.data(), key.data(), value.data(), masks, result.output.data(),
                plan.need_weights ? result.weights.data() : nullptr);
    return result;
}

}  // namespace xattn
