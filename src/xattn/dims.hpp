// Shapes, sizes and the error type shared by every part of xattn.
//
// Dimension legend, used in every comment and message of the project:
//   B  batch            H  heads (Hq query heads, Hkv key/value heads under GQA)
//   L  query length     S  key/value length
//   E  query/key dim    Ev value dim
// "…" stands for any number of leading dimensions (B, H, or more, or none).
#pragma once

#include <cstddef>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "xattn/messages.hpp"

namespace xattn {

using Shape = std::vector<std::size_t>;

// The largest tensor (input, output or weights) any call will accept or create.
// 1 GiB of float32 is half of what a 32-bit wasm heap can ever hold; anything larger
// is refused with a message that says how many bytes it would need.
constexpr std::uint64_t kMaxTensorBytes = std::uint64_t{1} << 30;

// The functions, arguments and refusals of the message table (xattn/messages.hpp), as enums.
#define XATTN_ENUM_ENTRY(id, ...) id,
enum class Function : std::uint8_t { none, XATTN_FUNCTIONS(XATTN_ENUM_ENTRY) };
enum class Argument : std::uint8_t { none, XATTN_ARGUMENTS(XATTN_ENUM_ENTRY) };
enum class Message : std::uint16_t { none, XATTN_MESSAGES(XATTN_ENUM_ENTRY) };
#undef XATTN_ENUM_ENTRY

// Outcome of validating a call: ok, or a refusal as data (a message of xattn/messages.hpp and what fills it),
// which message() prints with C++ names and the wasm bindings hand to JavaScript to print with its own.
// Validation never throws and never allocates tensors, so the wasm bindings can use it without letting a C++
// exception cross into JavaScript; a success allocates nothing at all.
struct Status {
    Message code = Message::none;
    Function function = Function::none;
    std::array<Argument, 4> arguments{};
    std::array<double, 4> numbers{};
    std::vector<Shape> shapes;       // up to 6
    std::vector<std::string> texts;  // up to 2; only refusals that stay in C++ carry text

    bool ok() const { return code == Message::none; }
    // "scaled_dot_product_attention: attn_mask shape (3,) does not broadcast …"
    std::string message() const;
    // A refusal of `function`, filled in order: arguments, numbers, shapes, texts.
    static Status fail(Function function, Message code, std::initializer_list<Argument> arguments = {},
                       std::initializer_list<double> numbers = {}, std::vector<Shape> shapes = {},
                       std::vector<std::string> texts = {});
    // The same refusal under another function's name (a planner shared by several calls).
    Status& as(Function f) {
        if (!ok()) function = f;
        return *this;
    }
};

// The names of the table, as C++ prints them.
const char* cpp_name(Function f);
const char* cpp_name(Argument a);
const char* message_template(Message m);

// "(4, 10, 64)" — the same spelling the lesson and the web page use.
std::string shape_to_string(const Shape& shape);

// A number as JavaScript prints it (0.5, 1e+39, 1e-50, NaN, -Infinity): messages read the same whichever
// side of the wasm boundary wrote them.
std::string number_to_string(double x);

// Product of dims, or false when it overflows 64 bits.
bool element_count(const Shape& shape, std::uint64_t* count);

// Refuses a tensor whose bytes overflow or exceed kMaxTensorBytes, as argument `what` of `function`.
Status check_tensor_size(Function function, Argument what, const Shape& shape, std::uint64_t bytes_per_element = 4);

// Number of elements, for shapes that already passed check_tensor_size.
std::size_t numel(const Shape& shape);

// One parameter of a module (MultiheadAttention): its name in PyTorch's state_dict, where its floats start
// among the module's (and among the gradients its backward writes), and its shape.
struct ParameterInfo {
    std::string name;
    std::size_t offset = 0;
    Shape shape;
    std::size_t size() const { return numel(shape); }
};

}  // namespace xattn
