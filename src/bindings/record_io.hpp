// Reading requests from the call record and writing replies and refusals into it, all from the lists of
// call_record.hpp: a field added there is read and written here without another line.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "bindings/call_record.hpp"
#include "xattn/dims.hpp"

namespace xattn::bindings {

constexpr std::size_t kMaxRank = XATTN_RECORD_MAX_RANK;
constexpr std::size_t kRecordSlots = XATTN_RECORD_SLOTS;

// The record itself; only the calling thread reads or writes it.
inline double record[kRecordSlots];

// A shape as it crosses: its rank and up to kMaxRank dims (js/validate.js refuses more before any call).
struct WireShape {
    int rank = 0;
    std::array<double, kMaxRank> dims{};
    Shape shape() const {
        Shape s;
        for (int d = 0; d < rank && d < static_cast<int>(kMaxRank); ++d) s.push_back(static_cast<std::size_t>(dims[d]));
        return s;
    }
    static WireShape of(const Shape& s) {
        WireShape w;
        w.rank = static_cast<int>(s.size());
        for (std::size_t d = 0; d < s.size() && d < kMaxRank; ++d) w.dims[d] = static_cast<double>(s[d]);
        return w;
    }
};

// The C++ type of each kind.
#define XATTN_KIND_shape WireShape
#define XATTN_KIND_number double
#define XATTN_KIND_flag bool
#define XATTN_KIND_address double

enum class Op {
#define XATTN_OP_ID(op) op,
    XATTN_OPERATIONS(XATTN_OP_ID)
#undef XATTN_OP_ID
        count
};

// One struct per request (sdpa_request, mha_forward_request, …), its members named and ordered as the lists say.
#define XATTN_MEMBER(name, kind) XATTN_KIND_##kind name{};
#define XATTN_REQUEST_STRUCT(op) \
    struct op##_request {        \
        XATTN_REQUEST_##op(XATTN_MEMBER)                                                                          \
    };
XATTN_OPERATIONS(XATTN_REQUEST_STRUCT)
#undef XATTN_REQUEST_STRUCT

struct Reply {
    XATTN_REPLY(XATTN_MEMBER)
};
#undef XATTN_MEMBER

// Reads slots in order.
class RecordReader {
public:
    void get(double& x) { x = record[at_++]; }
    void get(bool& x) { x = record[at_++] != 0.0; }
    void get(WireShape& w) {
        w.rank = static_cast<int>(record[at_++]);
        for (std::size_t d = 0; d < kMaxRank; ++d) w.dims[d] = record[at_++];
    }

private:
    std::size_t at_ = 0;
};

// Writes slots in order.
class RecordWriter {
public:
    void put(double x) { record[at_++] = x; }
    void put(bool x) { record[at_++] = x ? 1.0 : 0.0; }
    void put(const WireShape& w) {
        put(static_cast<double>(w.rank));
        for (std::size_t d = 0; d < kMaxRank; ++d) put(w.dims[d]);
    }
    std::size_t at() const { return at_; }

private:
    std::size_t at_ = 0;
};

#define XATTN_READ_FIELD(name, kind) reader.get(request.name);
#define XATTN_READ_REQUEST(op)             \
    inline op##_request read_##op() {      \
        op##_request request;              \
        RecordReader reader;               \
        XATTN_REQUEST_##op(XATTN_READ_FIELD) \
        return request;                    \
    }
XATTN_OPERATIONS(XATTN_READ_REQUEST)
#undef XATTN_READ_REQUEST
#undef XATTN_READ_FIELD

// The names a parameter table may hold, by index.
inline constexpr const char* kParameterNames[] = {
#define XATTN_PARAMETER_NAME(name) name,
    XATTN_PARAMETER_NAMES(XATTN_PARAMETER_NAME)
#undef XATTN_PARAMETER_NAME
};

inline int parameter_name_index(std::string_view name) {
    for (std::size_t i = 0; i < sizeof kParameterNames / sizeof kParameterNames[0]; ++i)
        if (name == kParameterNames[i]) return static_cast<int>(i);
    return -1;
}

// Writes the reply, then `table` (a module's parameters) after it, as call_record.hpp describes.
template <class Table>
void write_reply(const Reply& r, const Table* table) {
    RecordWriter w;
#define XATTN_WRITE_FIELD(name, kind) w.put(r.name);
    XATTN_REPLY(XATTN_WRITE_FIELD)
#undef XATTN_WRITE_FIELD
    std::size_t written = 0;
    if (table)
        for (const ParameterInfo& p : *table) {
            if (written == XATTN_RECORD_PARAMETERS) break;
            w.put(static_cast<double>(parameter_name_index(p.name)));
            w.put(static_cast<double>(p.offset));
            w.put(static_cast<double>(p.shape.size()));
            for (std::size_t d = 0; d < 3; ++d) w.put(d < p.shape.size() ? static_cast<double>(p.shape[d]) : 0.0);
            ++written;
        }
    for (; written < XATTN_RECORD_PARAMETERS; ++written)
        for (int slot = 0; slot < 6; ++slot) w.put(slot == 0 ? -1.0 : 0.0);
}

// Writes a refusal as XATTN_ERROR lists it.
inline void write_error(const Status& st) {
    RecordWriter w;
    w.put(static_cast<double>(st.code));
    w.put(static_cast<double>(st.function));
    for (Argument a : st.arguments) w.put(static_cast<double>(a));
    for (double n : st.numbers) w.put(n);
    const std::size_t shapes = st.shapes.size() < 6 ? st.shapes.size() : 6;
    w.put(static_cast<double>(shapes));
    for (std::size_t s = 0; s < 6; ++s) w.put(s < shapes ? WireShape::of(st.shapes[s]) : WireShape{});
}

// The schema's signature: FNV-1a (32 bits) of the lists of call_record.hpp and the ids of xattn/messages.hpp,
// spelled as scripts/gen-boundary.mjs spells them.
#define XATTN_SIG_FIELD(name, kind) " " #name "/" #kind
#define XATTN_SIG_OP(op) " " #op ":" XATTN_REQUEST_##op(XATTN_SIG_FIELD) ";"
#define XATTN_SIG_NAME(name) " " name
#define XATTN_SIG_ID(id, ...) " " #id
#define XATTN_STRINGIFY2(x) #x
#define XATTN_STRINGIFY(x) XATTN_STRINGIFY2(x)
inline constexpr char kSignatureText[] =
    "slots " XATTN_STRINGIFY(XATTN_RECORD_SLOTS) " rank " XATTN_STRINGIFY(XATTN_RECORD_MAX_RANK) " parameters " XATTN_STRINGIFY(
        XATTN_RECORD_PARAMETERS) ";ops" XATTN_OPERATIONS(XATTN_SIG_OP) "reply:" XATTN_REPLY(XATTN_SIG_FIELD) ";error:" XATTN_ERROR(XATTN_SIG_FIELD) ";names:" XATTN_PARAMETER_NAMES(XATTN_SIG_NAME) ";functions:" XATTN_FUNCTIONS(XATTN_SIG_ID) ";arguments:" XATTN_ARGUMENTS(XATTN_SIG_ID) ";messages:" XATTN_MESSAGES(XATTN_SIG_ID);
#undef XATTN_SIG_FIELD
#undef XATTN_SIG_OP
#undef XATTN_SIG_NAME
#undef XATTN_SIG_ID

constexpr std::uint32_t signature() {
    std::uint32_t h = 2166136261u;
    for (std::size_t i = 0; i + 1 < sizeof kSignatureText; ++i) {
        h ^= static_cast<unsigned char>(kSignatureText[i]);
        h *= 16777619u;
    }
    return h;
}

}  // namespace xattn::bindings
