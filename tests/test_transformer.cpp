// TransformerEncoderLayer against torch.nn.TransformerEncoderLayer (tests/golden/transformer.txt): the output, the
// gradients reaching src and every parameter, both norm orders, both activations, masks, causal, dropout and
// every layout; its parameter table; its errors; and the same bits at every thread count.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "errors.hpp"
#include "golden.hpp"
#include "kernels/parallel.hpp"
#include "random_inputs.hpp"

namespace {

using test_inputs::randn;
using xattn::Shape;

xattn::EncoderLayerConfig config_of(const golden::Case& c) {
    xattn::EncoderLayerConfig cfg;
    cfg.d_model = c.size("d_model");
    cfg.nhead = c.size("nhead");
    cfg.dim_feedforward = c.size("dim_feedforward");
    cfg.dropout = std::stod(c.opts.at("dropout"));
    cfg.activation = c.opts.at("activation") == "gelu" ? xattn::Activation::gelu : xattn::Activation::relu;
    cfg.layer_norm_eps = std::stod(c.opts.at("layer_norm_eps"));
    cfg.batch_first = c.flag("batch_first");
    cfg.norm_first = c.flag("norm_first");
    return cfg;
}

xattn::TransformerEncoderLayer layer_of(const golden::Case& c) {
    xattn::TransformerEncoderLayer layer(config_of(c));
    int loaded = 0;
    for (const auto& [name, tensor] : c.tensors)
        if (name.rfind("param:", 0) == 0) layer.set_parameter(name.substr(6), tensor.f32()), ++loaded;
    REQUIRE(loaded == 12);
    return layer;
}

xattn::EncoderLayerOptions options_of(const golden::Case& c) {
    xattn::EncoderLayerOptions o;
    o.is_causal = c.flag("is_causal");
    o.training = c.flag("training");
    o.seed = std::stoull(c.opts.at("seed"));
    if (c.has("src_mask")) o.src_mask = c.at("src_mask").mask();
    if (c.has("src_key_padding_mask")) o.src_key_padding_mask = c.at("src_key_padding_mask").mask();
    return o;
}


bool same_bits(const xt::xarray<float>& a, const xt::xarray<float>& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("every transformer fixture matches torch.nn.TransformerEncoderLayer: output, grad_src, every parameter") {
    const auto& all = golden::cases("transformer.txt");
    REQUIRE(all.size() >= 18);
    for (const golden::Case& c : all) {
        INFO("fixture " << c.name);
        const xattn::TransformerEncoderLayer layer = layer_of(c);
        const auto o = options_of(c);
        const auto src = c.at("src").f32();
        CHECK_CLOSE(layer.forward(src, o), c.at("output"), c.name + " forward");
        const auto g = layer.backward(src, c.at("grad_output").f32(), o);
        CHECK_CLOSE(g.output, c.at("output"), c.name + " backward's output");
        CHECK_GRAD(g.grad_src, c.at("grad_src"), c.name + " grad_src");
        REQUIRE(g.grad_parameters.size() == 12);
        // Not a structured binding: doctest's message is a lambda, and C++17 lambdas cannot capture those (clang).
        for (const auto& entry : g.grad_parameters) {
            const std::string& name = entry.first;
            CHECK_GRAD(entry.second, c.at("grad:" + name), c.name + " " + name);
        }
    }
}

TEST_CASE("dropout drops: a training call differs from eval, and the same seed gives the same bits") {
    const golden::Case& c = golden::find("transformer.txt", "dropout_training_post_norm_relu");
    const xattn::TransformerEncoderLayer layer = layer_of(c);
    auto o = options_of(c);
    const auto src = c.at("src").f32();
    const auto trained = layer.forward(src, o);
    CHECK(same_bits(trained, layer.forward(src, o)));
    o.seed += 1;
    CHECK_FALSE(same_bits(trained, layer.forward(src, o)));
    o.training = false;
    CHECK_FALSE(same_bits(trained, layer.forward(src, o)));
}

TEST_CASE("a kept forward serves its backward: the same bits as the backward that runs its own forward") {
    for (const golden::Case& c : golden::cases("transformer.txt")) {
        INFO("fixture " << c.name);
        const xattn::TransformerEncoderLayer layer = layer_of(c);
        const auto o = options_of(c);
        const auto src = c.at("src").f32();
        const auto grad_output = c.at("grad_output").f32();
        const xattn::EncoderLayerSaved saved = layer.forward_saving(src, o);
        CHECK(same_bits(saved.output(), layer.forward(src, o)));
        const auto whole = layer.backward(src, grad_output, o);
        const auto kept = layer.backward(saved, grad_output);
        CHECK(same_bits(kept.output, whole.output));
        CHECK(same_bits(kept.grad_src, whole.grad_src));
        REQUIRE(kept.grad_parameters.size() == whole.grad_parameters.size());
        for (const auto& entry : whole.grad_parameters) {
            INFO(entry.first);
            CHECK(same_bits(kept.grad_parameters.at(entry.first), entry.second));
        }
        // `saved` stays whole: a second backward from it gives the same bits.
        CHECK(same_bits(layer.backward(saved, grad_output).grad_src, whole.grad_src));
    }
}

TEST_CASE("a kept forward is refused by another layer, after a parameter changed, and for another grad_output shape") {
    const golden::Case& c = golden::find("transformer.txt", "dropout_training_post_norm_relu");
    xattn::TransformerEncoderLayer layer = layer_of(c);
    const xattn::TransformerEncoderLayer twin = layer_of(c);
    const auto src = c.at("src").f32();
    const auto grad_output = c.at("grad_output").f32();
    const xattn::EncoderLayerSaved saved = layer.forward_saving(src, options_of(c));
    CHECK(error_of([&] { twin.backward(saved, grad_output); }) ==
          "transformer_encoder_layer: saved was kept by another layer's forward");
    CHECK(error_of([&] { layer.backward(saved, randn({1, 1, 1}, 3)); })
              .find("grad_output shape") != std::string::npos);
    const xt::xarray<float> original = layer.parameter("linear2.bias");
    xt::xarray<float> bias = original;
    bias(0) += 1.0f;
    layer.set_parameter("linear2.bias", bias);
    CHECK(error_of([&] { layer.backward(saved, grad_output); }) ==
          "transformer_encoder_layer: saved was kept by a forward with other parameters than this call's: pass the "
          "forward's arguments, and change no parameter between the two");
    layer.set_parameter("linear2.bias", original);  // the same bits again: the kept forward serves
    CHECK(same_bits(layer.backward(saved, grad_output).grad_src,
                    layer.backward(src, grad_output, options_of(c)).grad_src));
}

TEST_CASE("the parameter table: PyTorch's names in state_dict order, one flat layout for values and gradients") {
    xattn::EncoderLayerConfig cfg;
    cfg.d_model = 8, cfg.nhead = 2, cfg.dim_feedforward = 12;
    xattn::TransformerEncoderLayer layer(cfg);
    const std::vector<std::pair<std::string, Shape>> want{
        {"self_attn.in_proj_weight", {24, 8}}, {"self_attn.in_proj_bias", {24}}, {"self_attn.out_proj.weight", {8, 8}},
        {"self_attn.out_proj.bias", {8}},      {"linear1.weight", {12, 8}},      {"linear1.bias", {12}},
        {"linear2.weight", {8, 12}},           {"linear2.bias", {8}},           {"norm1.weight", {8}},
        {"norm1.bias", {8}},                   {"norm2.weight", {8}},           {"norm2.bias", {8}}};
    const auto& table = layer.parameters();
    REQUIRE(table.size() == want.size());
    std::size_t at = 0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        CHECK(table[i].name == want[i].first);
        CHECK(table[i].shape == want[i].second);
        CHECK(table[i].offset == at);  // contiguous, in order
        at += xattn::numel(table[i].shape);
    }
    CHECK(layer.parameter_floats() == at);
    // PyTorch's initialisation: LayerNorms 1 and 0, biases of self_attn 0, linear weights within ±1/sqrt(in).
    CHECK(xt::all(xt::equal(layer.parameter("norm1.weight"), 1.0f)));
    CHECK(xt::all(xt::equal(layer.parameter("norm2.bias"), 0.0f)));
    CHECK(xt::all(xt::equal(layer.parameter("self_attn.in_proj_bias"), 0.0f)));
    CHECK(xt::amax(xt::abs(layer.parameter("linear2.weight")))() <= 1.0f / std::sqrt(12.0f));
    CHECK(xt::amax(xt::abs(layer.parameter("linear1.weight")))() > 0.0f);
    // The flat layout round-trips, and set_parameter lands where the table says.
    std::vector<float> flat(layer.parameter_floats());
    for (std::size_t i = 0; i < flat.size(); ++i) flat[i] = 0.001f * static_cast<float>(i);
    layer.set_parameters(flat.data());
    std::vector<float> back(flat.size());
    layer.get_parameters(back.data());
    CHECK(back == flat);
    const auto* w2 = layer.find_parameter("linear2.weight");
    REQUIRE(w2 != nullptr);
    CHECK(layer.parameter("linear2.weight")(0, 0) == flat[w2->offset]);
    CHECK(layer.find_parameter("linear3.weight") == nullptr);
    // Errors name the layer, the parameter and the sizes.
    float one = 1;
    CHECK(layer.set_parameter("norm1.bias", &one, 1).message() == "transformer_encoder_layer: norm1.bias needs 8 values for shape (8,), got 1");
    const std::string unknown = layer.set_parameter("in_proj_weight", &one, 1).message();
    CHECK(unknown.rfind("transformer_encoder_layer: no parameter named 'in_proj_weight' in this configuration (it has "
                        "self_attn.in_proj_weight, ", 0) == 0);
    CHECK(error_of([&] { layer.set_parameter("norm1.bias", xt::xarray<float>::from_shape({2, 4})); }) ==
          "transformer_encoder_layer: norm1.bias has shape (8,), got (2, 4)");
}

TEST_CASE("the layer refuses bad configurations and calls with the argument and the shapes") {
    xattn::EncoderLayerConfig cfg;
    cfg.d_model = 8, cfg.nhead = 3;
    CHECK(xattn::TransformerEncoderLayer::check_config(cfg).message() ==
          "transformer_encoder_layer: d_model 8 is not divisible by nhead 3");
    cfg.nhead = 2, cfg.dropout = 1.0;
    CHECK(xattn::TransformerEncoderLayer::check_config(cfg).message() == "transformer_encoder_layer: dropout must be in [0, 1), got 1");
    cfg.dropout = 0.0, cfg.dim_feedforward = 0;
    CHECK(xattn::TransformerEncoderLayer::check_config(cfg).message() == "transformer_encoder_layer: dim_feedforward must be positive, got 0");
    cfg.dim_feedforward = 16, cfg.layer_norm_eps = -1e-5;
    CHECK(xattn::TransformerEncoderLayer::check_config(cfg).message() ==
          "transformer_encoder_layer: layer_norm_eps must be finite and >= 0, got -0.00001");
    cfg.layer_norm_eps = 1e-5;
    std::unique_ptr<xattn::TransformerEncoderLayer> made;
    REQUIRE(xattn::TransformerEncoderLayer::create(cfg, &made).ok());
    const xattn::TransformerEncoderLayer& layer = *made;

    CHECK(error_of([&] { layer.forward(randn({5, 2, 7}, 1)); }) ==
          "transformer_encoder_layer: src's last dim 7 != d_model 8 (src (5, 2, 7))");
    CHECK(error_of([&] { layer.forward(randn({8}, 1)); }) ==
          "transformer_encoder_layer: src must be 3-D (L, N, E) or 2-D (L, E) unbatched, got shape (8,)");
    xattn::EncoderLayerOptions o;
    o.src_key_padding_mask = xattn::Mask::boolean(xt::zeros<bool>({5, 2}));
    CHECK(error_of([&] { layer.forward(randn({5, 2, 8}, 1), o); }) ==
          "transformer_encoder_layer: src_key_padding_mask shape (5, 2) != (2, 5) (N, L) (src (5, 2, 8))");
    o.src_key_padding_mask = {};
    o.src_mask = xattn::Mask::additive(xt::zeros<float>({5, 4}));
    CHECK(error_of([&] { layer.forward(randn({5, 2, 8}, 1), o); }) ==
          "transformer_encoder_layer: src_mask shape (5, 4) is neither (5, 5) (L, L) nor (4, 5, 5) (N·nhead, L, L) "
          "(src (5, 2, 8))");
    CHECK(error_of([&] { layer.backward(randn({5, 2, 8}, 1), randn({2, 5, 8}, 2)); }) ==
          "transformer_encoder_layer: grad_output shape (2, 5, 8) != src shape (5, 2, 8)");
    // After errors the layer works as before.
    CHECK(layer.forward(randn({5, 2, 8}, 1)).shape() == std::vector<std::size_t>{5, 2, 8});
}

TEST_CASE("an empty batch or sequence gives an empty output and zero gradients") {
    xattn::EncoderLayerConfig cfg;
    cfg.d_model = 8, cfg.nhead = 2, cfg.dim_feedforward = 12;
    const xattn::TransformerEncoderLayer layer(cfg);
    for (const Shape& s : {Shape{0, 2, 8}, Shape{4, 0, 8}, Shape{0, 8}}) {
        CAPTURE(xattn::shape_to_string(s));
        const auto src = xt::xarray<float>::from_shape(s);
        CHECK(layer.forward(src).size() == 0);
        const auto g = layer.backward(src, src);
        CHECK(g.grad_src.size() == 0);
        for (const auto& [name, grad] : g.grad_parameters) CHECK(xt::all(xt::equal(grad, 0.0f)));
    }
}

namespace {

struct Threads {
    Threads(unsigned n) : saved(xattn::kernels::min_work_per_worker()) {
        REQUIRE(xattn::set_num_threads(n) == n);
        xattn::kernels::set_min_work_per_worker(0.0);  // split however small
        xattn::kernels::set_every_worker_takes_part(true);
    }
    ~Threads() {
        xattn::set_num_threads(1);
        xattn::kernels::set_min_work_per_worker(saved);
        xattn::kernels::set_every_worker_takes_part(false);
    }
    double saved;
};

}  // namespace

TEST_CASE("threads: the layer's forward and backward, linear's and layer_norm's, give the same bits at 1, 2, 3 and 4 threads") {
    // Past every block: 2 × 70 rows, dim_feedforward 300, gelu, pre-norm, causal, dropout; and post-norm, sequence
    // first, relu (both with self-attention's in-projection gradients as one product).
    xattn::EncoderLayerConfig cfg;
    cfg.d_model = 24, cfg.nhead = 3, cfg.dim_feedforward = 300, cfg.dropout = 0.1;
    cfg.activation = xattn::Activation::gelu, cfg.norm_first = true, cfg.batch_first = true, cfg.init_seed = 3;
    const xattn::TransformerEncoderLayer layer(cfg);
    xattn::EncoderLayerConfig post = cfg;
    post.activation = xattn::Activation::relu, post.norm_first = false, post.batch_first = false, post.init_seed = 4;
    const xattn::TransformerEncoderLayer post_layer(post);
    const auto src = randn({2, 70, 24}, 11), dy = randn({2, 70, 24}, 12);
    const auto w = randn({300, 24}, 13), b = randn({300}, 14), dlin = randn({2, 70, 300}, 15);
    // layer_norm over 40 values: its parameters' gradients are summed in tasks of 16 columns, the last one short.
    const auto x = randn({3, 50, 40}, 16), dx = randn({3, 50, 40}, 17);
    xattn::LayerNormOptions norm;
    norm.weight = randn({40}, 18), norm.bias = randn({40}, 19);
    xattn::EncoderLayerOptions o;
    o.is_causal = true, o.training = true, o.seed = 42;
    auto compute = [&] {
        std::vector<xt::xarray<float>> r;
        r.push_back(layer.forward(src, o));
        auto g = layer.backward(src, dy, o);
        r.push_back(g.output);
        r.push_back(g.grad_src);
        for (auto& [name, grad] : g.grad_parameters) r.push_back(grad);
        auto pg = post_layer.backward(src, dy, o);
        r.push_back(pg.output);
        r.push_back(pg.grad_src);
        for (auto& [name, grad] : pg.grad_parameters) r.push_back(grad);
        r.push_back(xattn::linear(src, w, b));
        auto lg = xattn::linear_backward(src, w, b, dlin);
        r.push_back(lg.grad_input), r.push_back(lg.grad_weight), r.push_back(lg.grad_bias);
        r.push_back(xattn::layer_norm(x, {40}, norm));
        auto ng = xattn::layer_norm_backward(x, {40}, dx, norm);
        r.push_back(ng.grad_input), r.push_back(ng.grad_weight), r.push_back(ng.grad_bias);
        return r;
    };
    std::vector<xt::xarray<float>> one;
    {
        Threads t(1);
        one = compute();
    }
    for (const unsigned n : {2u, 3u, 4u}) {
        const std::uint64_t before = xattn::kernels::helper_tasks_run();
        std::vector<xt::xarray<float>> got;
        {
            Threads t(n);
            got = compute();
        }
        REQUIRE(got.size() == one.size());
        for (std::size_t i = 0; i < got.size(); ++i) CHECK_MESSAGE(same_bits(got[i], one[i]), "result " << i << " at " << n);
        CHECK_MESSAGE(xattn::kernels::helper_tasks_run() > before, "no helper ran a task at " << n << " threads");
    }
}
