#include "xattn/dims.hpp"

#include <limits>

namespace xattn {

std::string shape_to_string(const Shape& shape) {
    std::string s = "(";
    for (std::size_t d = 0; d < shape.size(); ++d) {
        if (d) s += ", ";
        s += std::to_string(shape[d]);
    }
    if (shape.size() == 1) s += ",";  // a 1-tuple, spelled as Python spells it
    return s + ")";
}

bool element_count(const Shape& shape, std::uint64_t* count) {
    std::uint64_t n = 1;
    bool overflow = false;
    for (std::size_t dim : shape) {
        const std::uint64_t d = dim;
        if (d != 0 && n > std::numeric_limits<std::uint64_t>::max() / d) overflow = true;
        n *= d;
    }
    // A zero dim makes the product zero even after an overflowing partial product.
    for (std::size_t dim : shape)
        if (dim == 0) overflow = false, n = 0;
    *count = n;
    return !overflow;
}

Status check_tensor_size(const std::string& what, const Shape& shape, std::uint64_t bytes_per_element) {
    std::uint64_t n = 0;
    const bool counted = element_count(shape, &n);
    if (counted && n <= kMaxTensorBytes / bytes_per_element) return {};
    const bool bytes_fit = counted && n <= std::numeric_limits<std::uint64_t>::max() / bytes_per_element;
    return Status::fail(what + " of shape " + shape_to_string(shape) + " needs " +
                        (bytes_fit ? std::to_string(n * bytes_per_element) : std::string("more than 2^64")) +
                        " bytes, more than the limit of " + std::to_string(kMaxTensorBytes) + " bytes per tensor");
}

std::size_t numel(const Shape& shape) {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;
    return n;
}

}  // namespace xattn
