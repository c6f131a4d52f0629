#include "golden.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace golden {
namespace {

std::vector<Case> parse(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read fixture file " + path);
    std::vector<Case> out;
    std::string line;
    Case current;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream words(line);
        std::string word;
        words >> word;
        if (word == "case") {
            current = Case{};
            words >> current.name;
        } else if (word == "op") {
            words >> current.op;
        } else if (word == "opt") {
            std::string key, value;
            words >> key >> value;
            current.opts[key] = value;
        } else if (word == "tensor") {
            std::string name;
            Tensor t;
            std::size_t rank = 0;
            words >> name >> t.dtype >> rank;
            t.shape.resize(rank);
            for (auto& d : t.shape) words >> d;
            const std::size_t n = xattn::numel(t.shape);
            t.values.reserve(n);
            std::string token;
            while (words >> token) t.values.push_back(std::strtod(token.c_str(), nullptr));
            if (t.values.size() != n)
                throw std::runtime_error(path + ": tensor " + name + " of case " + current.name + " has " +
                                         std::to_string(t.values.size()) + " values, expected " + std::to_string(n));
            current.tensors[name] = std::move(t);
        } else if (word == "end") {
            out.push_back(std::move(current));
        } else {
            throw std::runtime_error(path + ": unexpected line starting with '" + word + "'");
        }
    }
    return out;
}

}  // namespace

xt::xarray<float> Tensor::f32() const {
    xt::xarray<float> a = xt::xarray<float>::from_shape(shape);
    std::copy(values.begin(), values.end(), a.begin());
    return a;
}

xt::xarray<bool> Tensor::boolean() const {
    xt::xarray<bool> a = xt::xarray<bool>::from_shape(shape);
    for (std::size_t i = 0; i < values.size(); ++i) a.data()[i] = values[i] != 0.0;
    return a;
}

xattn::Mask Tensor::mask() const {
    return dtype == "bool" ? xattn::Mask::boolean(boolean()) : xattn::Mask::additive(f32());
}

const Tensor& Case::at(const std::string& tensor) const {
    const auto it = tensors.find(tensor);
    if (it == tensors.end()) throw std::runtime_error("fixture " + name + " has no tensor " + tensor);
    return it->second;
}

bool Case::flag(const std::string& key) const {
    const auto it = opts.find(key);
    return it != opts.end() && it->second == "1";
}

std::size_t Case::size(const std::string& key) const {
    const auto it = opts.find(key);
    if (it == opts.end()) throw std::runtime_error("fixture " + name + " has no option " + key);
    return std::stoul(it->second);
}

const std::vector<Case>& cases(const std::string& file) {
    static std::map<std::string, std::vector<Case>> loaded;
    auto it = loaded.find(file);
    if (it == loaded.end()) it = loaded.emplace(file, parse(std::string(XATTN_GOLDEN_DIR) + "/" + file)).first;
    return it->second;
}

const Case& find(const std::string& file, const std::string& name) {
    for (const Case& c : cases(file))
        if (c.name == name) return c;
    throw std::runtime_error("no fixture named " + name + " in " + file);
}

namespace {

Mismatch compare_values(const xattn::Shape& got_shape, const float* got, const xattn::Shape& want_shape,
                        const std::vector<double>& want, double atol, double rtol) {
    Mismatch m;
    if (got_shape != want_shape) {
        m.ok = false;
        m.detail = "shape " + xattn::shape_to_string(got_shape) + " != expected " + xattn::shape_to_string(want_shape);
        return m;
    }
    double worst_excess = 0.0;
    std::size_t bad = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        const double g = got[i], w = want[i];
        const bool nan_ok = std::isnan(g) && std::isnan(w);
        const double err = std::fabs(g - w), allowed = atol + rtol * std::fabs(w);
        const bool same_inf = std::isinf(w) && g == w;
        if (nan_ok || same_inf || err <= allowed) continue;
        ++bad;
        const double excess = std::isnan(err) ? INFINITY : err / allowed;
        if (m.ok || excess > worst_excess) {
            worst_excess = excess;
            std::ostringstream s;
            s.precision(9);
            s << "element " << i << ": got " << g << ", want " << w << " (|diff| " << err << " > " << allowed << ")";
            m.detail = s.str();
        }
        m.ok = false;
    }
    if (!m.ok) m.detail = std::to_string(bad) + " of " + std::to_string(want.size()) + " elements differ; worst " + m.detail;
    return m;
}

}  // namespace

Mismatch compare(const xt::xarray<float>& got, const Tensor& want, double atol, double rtol) {
    return compare_values(xattn::Shape(got.shape().begin(), got.shape().end()), got.data(), want.shape, want.values,
                          atol, rtol);
}

Mismatch compare(const xt::xarray<float>& got, const xt::xarray<float>& want, double atol, double rtol) {
    return compare_values(xattn::Shape(got.shape().begin(), got.shape().end()), got.data(),
                          xattn::Shape(want.shape().begin(), want.shape().end()),
                          std::vector<double>(want.begin(), want.end()), atol, rtol);
}

namespace {

// The rules' options of a case (make_golden_rules.py): soft-cap, window, ALiBi slopes, key lengths.
template <class Settings>
void read_rules(const Case& c, Settings& o) {
    if (c.opts.count("softcap")) o.softcap = std::stod(c.opts.at("softcap"));
    if (c.opts.count("window_left")) o.window.left = std::stoll(c.opts.at("window_left"));
    if (c.opts.count("window_right")) o.window.right = std::stoll(c.opts.at("window_right"));
    if (c.has("alibi_slopes"))
        for (double x : c.at("alibi_slopes").values) o.alibi_slopes.push_back(static_cast<float>(x));
    if (c.has("key_lengths"))
        for (double x : c.at("key_lengths").values) o.key_lengths.push_back(static_cast<std::int32_t>(x));
}

}  // namespace

xattn::SdpaOptions sdpa_options(const Case& c) {
    xattn::SdpaOptions o;
    o.is_causal = c.flag("is_causal");
    if (c.opts.count("causal_alignment") && c.opts.at("causal_alignment") == "bottom_right")
        o.causal_alignment = xattn::CausalAlignment::bottom_right;
    if (c.opts.count("scale")) o.scale = std::stod(c.opts.at("scale"));
    o.enable_gqa = c.flag("enable_gqa");
    o.need_weights = c.flag("need_weights");
    if (c.opts.count("dropout_p")) o.dropout_p = std::stod(c.opts.at("dropout_p"));
    if (c.opts.count("seed")) o.seed = std::stoull(c.opts.at("seed"));
    if (c.has("attn_mask")) o.attn_mask = c.at("attn_mask").mask();
    read_rules(c, o);
    if (c.opts.count("return_scores")) {
        const std::string& stage = c.opts.at("return_scores");
        o.return_scores = stage == "scaled"       ? xattn::ScoresStage::scaled
                          : stage == "softcapped" ? xattn::ScoresStage::softcapped
                                                  : xattn::ScoresStage::biased;
    }
    return o;
}

xattn::MultiheadAttention make_mha(const Case& c) {
    xattn::MhaConfig config;
    config.embed_dim = c.size("embed_dim");
    config.num_heads = c.size("num_heads");
    config.kdim = c.size("kdim");
    config.vdim = c.size("vdim");
    config.bias = c.flag("bias");
    config.batch_first = c.flag("batch_first");
    config.add_bias_kv = c.flag("add_bias_kv");
    config.add_zero_attn = c.flag("add_zero_attn");
    if (c.opts.count("dropout")) config.dropout = std::stod(c.opts.at("dropout"));
    xattn::MultiheadAttention mha(config);
    for (const auto& [name, tensor] : c.tensors)
        if (name.rfind("param:", 0) == 0) mha.set_parameter(name.substr(6), tensor.f32());
    return mha;
}

xattn::MhaForwardOptions mha_options(const Case& c) {
    xattn::MhaForwardOptions o;
    o.need_weights = c.flag("need_weights");
    o.average_attn_weights = c.flag("average_attn_weights");
    o.is_causal = c.flag("is_causal");
    if (c.opts.count("causal_alignment") && c.opts.at("causal_alignment") == "bottom_right")
        o.causal_alignment = xattn::CausalAlignment::bottom_right;
    read_rules(c, o);
    if (c.opts.count("training")) o.training = c.flag("training");
    if (c.opts.count("seed")) o.seed = std::stoull(c.opts.at("seed"));
    if (c.has("key_padding_mask")) o.key_padding_mask = c.at("key_padding_mask").mask();
    if (c.has("attn_mask")) o.attn_mask = c.at("attn_mask").mask();
    return o;
}

void check_mha_gradients(const xattn::MhaGradientResult& r, const Case& c) {
    CHECK_GRAD(r.output, c.at("output"), c.name + " output");
    CHECK_GRAD(r.grad_query, c.at("grad_query"), c.name + " grad_query");
    CHECK_GRAD(r.grad_key, c.at("grad_key"), c.name + " grad_key");
    CHECK_GRAD(r.grad_value, c.at("grad_value"), c.name + " grad_value");
    std::size_t checked = 0;
    for (const auto& entry : c.tensors) {  // fixture names "grad:<state_dict name>"
        if (entry.first.rfind("grad:", 0) != 0) continue;
        const std::string param = entry.first.substr(5);
        REQUIRE_MESSAGE(r.grad_parameters.count(param) == 1, c.name << ": no gradient for " << param);
        CHECK_GRAD(r.grad_parameters.at(param), entry.second, c.name + " grad " + param);
        ++checked;
    }
    CHECK_MESSAGE(checked == r.grad_parameters.size(), c.name << ": gradients for parameters torch does not have");
}

}  // namespace golden
