#include "xattn/dims.hpp"

#include <algorithm>
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

Status check_tensor_size(Function function, Argument what, const Shape& shape, std::uint64_t bytes_per_element) {
    std::uint64_t n = 0;
    const bool counted = element_count(shape, &n);
    if (counted && n <= kMaxTensorBytes / bytes_per_element) return {};
    const double limit = static_cast<double>(kMaxTensorBytes);
    if (counted && n <= std::numeric_limits<std::uint64_t>::max() / bytes_per_element)
        return Status::fail(function, Message::tensor_too_large, {what}, {static_cast<double>(n * bytes_per_element), limit},
                            {shape});
    return Status::fail(function, Message::tensor_size_overflow, {what}, {0.0, limit}, {shape});
}

namespace {

#define XATTN_CPP_NAME(id, cpp, js) cpp,
constexpr const char* kFunctionNames[] = {"", XATTN_FUNCTIONS(XATTN_CPP_NAME)};
constexpr const char* kArgumentNames[] = {"", XATTN_ARGUMENTS(XATTN_CPP_NAME)};
#undef XATTN_CPP_NAME
#define XATTN_TEMPLATE(id, text) text,
constexpr const char* kTemplates[] = {"", XATTN_MESSAGES(XATTN_TEMPLATE)};
#undef XATTN_TEMPLATE

}  // namespace

const char* cpp_name(Function f) { return kFunctionNames[static_cast<std::size_t>(f)]; }
const char* cpp_name(Argument a) { return kArgumentNames[static_cast<std::size_t>(a)]; }
const char* message_template(Message m) { return kTemplates[static_cast<std::size_t>(m)]; }

Status Status::fail(Function function, Message code, std::initializer_list<Argument> arguments,
                    std::initializer_list<double> numbers, std::vector<Shape> shapes, std::vector<std::string> texts) {
    Status st;
    st.code = code;
    st.function = function;
    std::copy(arguments.begin(), arguments.begin() + std::min(arguments.size(), st.arguments.size()), st.arguments.begin());
    std::copy(numbers.begin(), numbers.begin() + std::min(numbers.size(), st.numbers.size()), st.numbers.begin());
    st.shapes = std::move(shapes);
    st.texts = std::move(texts);
    return st;
}

// The template with every placeholder filled (the JavaScript twin: formatMessage in js/boundary.js).
std::string Status::message() const {
    if (ok()) return {};
    std::string out = std::string(cpp_name(function)) + ": ";
    for (const char* c = message_template(code); *c; ++c) {
        const bool placeholder = c[0] == '{' && c[1] && c[2] >= '0' && c[2] <= '9' && c[3] == '}';
        if (!placeholder) {
            out += *c;
            continue;
        }
        const std::size_t i = static_cast<std::size_t>(c[2] - '0');
        switch (c[1]) {
        case 'a': out += i < arguments.size() ? cpp_name(arguments[i]) : "?"; break;
        case 'n': out += i < numbers.size() ? number_to_string(numbers[i]) : "?"; break;
        case 's': out += i < shapes.size() ? shape_to_string(shapes[i]) : "?"; break;
        case 't': out += i < texts.size() ? texts[i] : "?"; break;
        default: out += std::string(c, 4);
        }
        c += 3;
    }
    return out;
}

std::size_t numel(const Shape& shape) {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;
    return n;
}

}  // namespace xattn
