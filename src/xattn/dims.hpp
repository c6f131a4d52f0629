// Shapes, sizes and the error type shared by every part of xattn.
//
// Dimension legend, used in every comment and message of the project:
//   B  batch            H  heads (Hq query heads, Hkv key/value heads under GQA)
//   L  query length     S  key/value length
//   E  query/key dim    Ev value dim
// "…" stands for any number of leading dimensions (B, H, or more, or none).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace xattn {

using Shape = std::vector<std::size_t>;

// The largest tensor (input, output or weights) any call will accept or create.
// 1 GiB of float32 is half of what a 32-bit wasm heap can ever hold; anything larger
// is refused with a message that says how many bytes it would need.
constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{1} << 30;

// Outcome of validating a call: empty error means the call may go ahead.
// Validation never throws and never allocates tensors, so the wasm bindings can use it
// without letting a C++ exception cross into JavaScript.
struct Status {
    std::string error;
    bool ok() const { return error.empty(); }
    static Status fail(std::string message) { return Status{std::move(message)}; }
};

// "(4, 10, 64)" — the same spelling the lesson and the web page use.
std::string shape_to_string(const Shape& shape);

// A number as JavaScript prints it (0.5, 1e+39, 1e-50, NaN, -Infinity): messages read the same whichever
// side of the wasm boundary wrote them.
std::string number_to_string(double x);

// Product of dims, or false when it overflows 64 bits.
bool element_count(const Shape& shape, std::uint64_t* count);

// Refuses a tensor whose float32 bytes overflow or exceed kMaxTensorBytes.
// `what` names the function and the tensor, e.g. "scaled_dot_product_attention: weights".
Status check_tensor_size(const std::string& what, const Shape& shape, std::uint64_t bytes_per_element = 4);

// Number of elements, for shapes that already passed check_tensor_size.
std::size_t numel(const Shape& shape);

}  // namespace xattn
