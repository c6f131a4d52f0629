// linear and layer_norm against torch.nn.functional (tests/golden/layers.txt), their errors, and the pieces the
// TransformerEncoderLayer is made of: the products with transposed operands on every kernel set, and GELU's erf.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "errors.hpp"
#include "gelu.hpp"
#include "golden.hpp"
#include "kernels/kernels.hpp"
#include "layer_ops.hpp"
#include "random_inputs.hpp"

namespace {

using test_inputs::randn;
using xattn::Shape;

Shape normalized_shape_of(const golden::Case& c) {
    Shape s;
    std::stringstream in(c.opts.at("normalized_shape"));
    for (std::string d; std::getline(in, d, ',');) s.push_back(std::stoul(d));
    return s;
}

xattn::LayerNormOptions layer_norm_options(const golden::Case& c) {
    xattn::LayerNormOptions o;
    if (c.has("weight")) o.weight = c.at("weight").f32();
    if (c.has("bias")) o.bias = c.at("bias").f32();
    o.eps = std::stod(c.opts.at("eps"));
    return o;
}


}  // namespace

TEST_CASE("every linear fixture matches torch.nn.functional.linear, forward and backward") {
    int n = 0;
    for (const golden::Case& c : golden::cases("layers.txt")) {
        if (c.op != "linear") continue;
        INFO("fixture " << c.name);
        ++n;
        const auto x = c.at("input").f32(), w = c.at("weight").f32(), dy = c.at("grad_output").f32();
        if (c.has("bias")) {
            const auto b = c.at("bias").f32();
            CHECK_CLOSE(xattn::linear(x, w, b), c.at("output"), c.name + " output");
            const auto g = xattn::linear_backward(x, w, b, dy);
            CHECK_GRAD(g.grad_input, c.at("grad_input"), c.name + " grad_input");
            CHECK_GRAD(g.grad_weight, c.at("grad_weight"), c.name + " grad_weight");
            CHECK_GRAD(g.grad_bias, c.at("grad_bias"), c.name + " grad_bias");
        } else {
            CHECK_CLOSE(xattn::linear(x, w), c.at("output"), c.name + " output");
            const auto g = xattn::linear_backward(x, w, dy);
            CHECK_GRAD(g.grad_input, c.at("grad_input"), c.name + " grad_input");
            CHECK_GRAD(g.grad_weight, c.at("grad_weight"), c.name + " grad_weight");
            CHECK(g.grad_bias.size() == 0);
        }
    }
    CHECK(n >= 7);
}

TEST_CASE("every layer_norm fixture matches torch.nn.functional.layer_norm, forward and backward") {
    int n = 0;
    for (const golden::Case& c : golden::cases("layers.txt")) {
        if (c.op != "layer_norm") continue;
        INFO("fixture " << c.name);
        ++n;
        const auto x = c.at("input").f32(), dy = c.at("grad_output").f32();
        const Shape ns = normalized_shape_of(c);
        const auto o = layer_norm_options(c);
        CHECK_CLOSE(xattn::layer_norm(x, ns, o), c.at("output"), c.name + " output");
        const auto g = xattn::layer_norm_backward(x, ns, dy, o);
        CHECK_GRAD(g.grad_input, c.at("grad_input"), c.name + " grad_input");
        if (c.has("grad_weight")) CHECK_GRAD(g.grad_weight, c.at("grad_weight"), c.name + " grad_weight");
        else CHECK(g.grad_weight.size() == 0);
        if (c.has("grad_bias")) CHECK_GRAD(g.grad_bias, c.at("grad_bias"), c.name + " grad_bias");
        else CHECK(g.grad_bias.size() == 0);
    }
    CHECK(n >= 9);
}

TEST_CASE("linear and layer_norm refuse bad shapes with the function, the argument and the shapes") {
    const auto x = randn({2, 3}, 1), w = randn({4, 3}, 2);
    CHECK(error_of([&] { xattn::linear(x, randn({4, 5}, 3)); }) ==
          "linear: input's last dim 3 != weight's in 5 (input (2, 3), weight (4, 5))");
    CHECK(error_of([&] { xattn::linear(x, randn({12}, 3)); }) == "linear: weight must be 2-D (out, in) (input (2, 3), weight (12,))");
    CHECK(error_of([&] { xattn::linear(x, w, randn({3}, 4)); }) ==
          "linear: bias must be 1-D (out,) = (4,) (input (2, 3), weight (4, 3), bias (3,))");
    CHECK(error_of([&] { xattn::linear_backward(x, w, randn({2, 5}, 4)); }) ==
          "linear_backward: grad_output shape (2, 5) != output shape (2, 4)");
    CHECK(error_of([&] { xattn::layer_norm(x, {2}); }) ==
          "layer_norm: normalized_shape must be input's trailing dims (input (2, 3), normalized_shape (2,))");
    CHECK(error_of([&] { xattn::layer_norm(x, {}); }) ==
          "layer_norm: normalized_shape must have at least 1 dim (input (2, 3), normalized_shape ())");
    xattn::LayerNormOptions o;
    o.weight = randn({4}, 5);
    CHECK(error_of([&] { xattn::layer_norm(x, {3}, o); }) ==
          "layer_norm: weight shape (4,) != normalized_shape (input (2, 3), normalized_shape (3,))");
    o.weight.reset();
    o.eps = -1.0;
    CHECK(error_of([&] { xattn::layer_norm(x, {3}, o); }) == "layer_norm: eps must be finite and >= 0, got -1");
    CHECK(error_of([&] { xattn::layer_norm_backward(x, {3}, randn({3, 2}, 6)); }) ==
          "layer_norm_backward: grad_output shape (3, 2) != input shape (2, 3)");
}

namespace {

// The three products in float64, from their definitions: Y = X Wᵀ + b, dX = dY W, dW = dYᵀ X.
struct ProductReference {
    std::size_t rows, in, out;
    std::vector<double> y, dx, dw;
    ProductReference(const xt::xarray<float>& x, const xt::xarray<float>& w, const xt::xarray<float>& b,
                     const xt::xarray<float>& dy)
        : rows(x.shape()[0]), in(x.shape()[1]), out(w.shape()[0]), y(rows * out), dx(rows * in), dw(out * in) {
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t o = 0; o < out; ++o) {
                double s = b(o);
                for (std::size_t k = 0; k < in; ++k) s += double(x(r, k)) * w(o, k);
                y[r * out + o] = s;
            }
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t k = 0; k < in; ++k) {
                double s = 0;
                for (std::size_t o = 0; o < out; ++o) s += double(dy(r, o)) * w(o, k);
                dx[r * in + k] = s;
            }
        for (std::size_t o = 0; o < out; ++o)
            for (std::size_t k = 0; k < in; ++k) {
                double s = 0;
                for (std::size_t r = 0; r < rows; ++r) s += double(dy(r, o)) * x(r, k);
                dw[o * in + k] = s;
            }
    }
};

// float32 sums of K terms of size ~1: within K · 2^-24 · (sum of |terms|), loosely 1e-6 · K.
void check_near(const std::vector<float>& got, const std::vector<double>& want, std::size_t K, const char* what) {
    double worst = 0;
    for (std::size_t i = 0; i < want.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
    CHECK_MESSAGE(worst <= 1e-6 * (K + 1), what << ": worst |error| " << worst << " over " << K << " terms");
}

}  // namespace

TEST_CASE("the products read W (out, in) and X's columns in place on every kernel set, at awkward sizes") {
    // 1, 3, vector widths ± 1, the 64-row blocks ± 1, the 256-deep slices ± 1.
    const std::size_t rows_set[] = {1, 3, 17, 63, 65, 130};
    const std::size_t in_set[] = {1, 5, 16, 255, 257};
    const std::size_t out_set[] = {1, 7, 33, 64, 65};
    for (const xattn::kernels::KernelSet* set : xattn::kernels::available_kernels()) {
        CAPTURE(set->name);
        unsigned seed = 100;
        for (const std::size_t rows : rows_set)
            for (const std::size_t in : in_set)
                for (const std::size_t out : out_set) {
                    if ((rows * in * out) % 3 != 0 && rows != 130) continue;  // a third of the grid, and the largest rows
                    CAPTURE(rows);
                    CAPTURE(in);
                    CAPTURE(out);
                    const auto x = randn({rows, in}, ++seed), w = randn({out, in}, ++seed), b = randn({out}, ++seed);
                    const auto dy = randn({rows, out}, ++seed);
                    const ProductReference ref(x, w, b, dy);
                    std::vector<float> y(rows * out), dx(rows * in), dw(out * in);
                    std::vector<unsigned char> ws =
                        xattn::kernels::allocate_workspace(xattn::detail::Products::workspace_bytes(*set, 1, rows, in, out, true));
                    const xattn::detail::Products p{set, 1, ws.data()};
                    p.forward(rows, in, out, x.data(), w.data(), b.data(), y.data());
                    p.input_grad(rows, in, out, dy.data(), w.data(), dx.data());
                    p.weight_grad(rows, in, out, dy.data(), x.data(), dw.data());
                    check_near(y, ref.y, in, "Y = X Wᵀ + b");
                    check_near(dx, ref.dx, out, "dX = dY W");
                    check_near(dw, ref.dw, rows, "dW = dYᵀ X");
                }
        // Wᵀ past the 4 MiB the kernel packs once per call: each task packs its own panels.
        const std::size_t rows = 3, in = 1100, out = 1000;
        const auto x = randn({rows, in}, 90), w = randn({out, in}, 91), b = randn({out}, 92), dy = randn({rows, out}, 93);
        const ProductReference ref(x, w, b, dy);
        std::vector<float> y(rows * out), dx(rows * in);
        std::vector<unsigned char> ws =
            xattn::kernels::allocate_workspace(xattn::detail::Products::workspace_bytes(*set, 1, rows, in, out, true));
        const xattn::detail::Products p{set, 1, ws.data()};
        p.forward(rows, in, out, x.data(), w.data(), b.data(), y.data());
        p.input_grad(rows, in, out, dy.data(), w.data(), dx.data());
        check_near(y, ref.y, in, "Y = X Wᵀ + b, Wᵀ packed per task");
        check_near(dx, ref.dx, out, "dX = dY W, W packed per task");
    }
}

TEST_CASE("GELU is the erf form within float32 rounding, and its derivative likewise") {
    // |gelu(x) − x Φ(x)| within 3e-7 · max(1, |x|): the rational erf's 3.5e-7 times |x| / 2, and two float32
    // roundings (1 + erf, then the products) of 2^-24 · |x| each. The derivative Φ(x) + x φ(x) likewise, its exp
    // within a few units of φ.
    double worst = 0, worst_slope = 0;
    for (int i = -200000; i <= 200000; ++i) {
        const float x = static_cast<float>(i) * 1e-4f;  // [-20, 20]
        const double xd = x;
        const double cdf = 0.5 * (1.0 + std::erf(xd / std::sqrt(2.0)));
        const double want = xd * cdf;
        const double slope = cdf + xd * std::exp(-0.5 * xd * xd) / std::sqrt(2.0 * M_PI);
        worst = std::max(worst, std::fabs(xattn::detail::gelu(x) - want) / std::max(1.0, std::fabs(xd)));
        worst_slope = std::max(worst_slope, std::fabs(xattn::detail::gelu_derivative(x) - slope));
    }
    CHECK(worst <= 3e-7);
    CHECK(worst_slope <= 5e-7);
    // Tails and specials: exactly 0 far left, x far right, NaN stays NaN.
    CHECK(xattn::detail::gelu(-1e30f) == 0.0f);
    CHECK(xattn::detail::gelu(-100.0f) == 0.0f);
    CHECK(std::fabs(xattn::detail::gelu(100.0f) - 100.0f) <= 100.0f * 2e-7f);
    CHECK(xattn::detail::gelu_derivative(-1e30f) == 0.0f);
    CHECK(std::fabs(xattn::detail::gelu_derivative(1e30f) - 1.0f) <= 2e-7f);
    CHECK(std::isnan(xattn::detail::gelu(NAN)));
    CHECK(std::isnan(xattn::detail::gelu_derivative(NAN)));
}

TEST_CASE("the GELU and ReLU passes compute the scalar functions, whatever the chunking") {
    const std::size_t n = 3 * 4096 + 5;  // whole tasks and a tail
    const xt::xarray<float> f = randn({n}, 7) * 3.0f;
    std::vector<float> g(n), d(n, 1.0f), r(n), dr(n, 1.0f);
    xattn::detail::activation_forward(xattn::Activation::gelu, f.data(), n, g.data(), 1);
    xattn::detail::activation_backward(xattn::Activation::gelu, f.data(), d.data(), n, 1);
    xattn::detail::activation_forward(xattn::Activation::relu, f.data(), n, r.data(), 1);
    xattn::detail::activation_backward(xattn::Activation::relu, f.data(), dr.data(), n, 1);
    bool same = true;
    for (std::size_t i = 0; i < n; ++i) {
        same = same && g[i] == xattn::detail::gelu(f(i)) && d[i] == xattn::detail::gelu_derivative(f(i));
        same = same && r[i] == (f(i) > 0 ? f(i) : 0.0f) && dr[i] == (f(i) > 0 ? 1.0f : 0.0f);
    }
    CHECK(same);
    float zero = 0.0f, grad = 1.0f;
    xattn::detail::activation_backward(xattn::Activation::relu, &zero, &grad, 1, 1);
    CHECK(grad == 0.0f);  // as PyTorch: ReLU's derivative at 0 is 0
}
