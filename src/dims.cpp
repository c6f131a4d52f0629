#include "xattn/dims.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
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

std::string number_to_string(double x) {
    if (std::isnan(x)) return "NaN";
    if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
    if (x == 0) return "0";
    // The shortest digits that read back as x (JS's rule), from "d.ddde±x" at growing precision.
    char buf[40];
    for (int precision = 0; precision < 17; ++precision) {
        std::snprintf(buf, sizeof buf, "%.*e", precision, x);
        if (std::strtod(buf, nullptr) == x) break;
    }
    std::string text = buf;
    const std::size_t e_at = text.find('e');
    const int exponent = std::atoi(text.c_str() + e_at + 1);
    std::string digits;
    for (std::size_t c = 0; c < e_at; ++c)
        if (text[c] >= '0' && text[c] <= '9') digits += text[c];
    const std::string sign = x < 0 ? "-" : "";
    const int n = static_cast<int>(digits.size());
    if (exponent >= 21 || exponent < -6) {  // JS switches to exponent form outside [1e-7, 1e21)
        std::string mantissa = digits.substr(0, 1) + (n > 1 ? "." + digits.substr(1) : "");
        return sign + mantissa + "e" + (exponent >= 0 ? "+" : "-") + std::to_string(std::abs(exponent));
    }
    if (exponent < 0) return sign + "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
    if (exponent + 1 >= n) return sign + digits + std::string(static_cast<std::size_t>(exponent + 1 - n), '0');
    return sign + digits.substr(0, static_cast<std::size_t>(exponent + 1)) + "." +
           digits.substr(static_cast<std::size_t>(exponent + 1));
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
