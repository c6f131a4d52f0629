// The check the no-throw create() of MultiheadAttention, KvCache and TransformerEncoderLayer makes after taking
// its one big block (parameters, or keys and values) with malloc: in wasm (built without exceptions) even a
// nothrow `new` aborts the module when it fails, so the object and its small members are allocated only when
// 64 KiB more can be had. Not installed: an implementation header.
#pragma once

#include <cstddef>
#include <cstdlib>

namespace xattn::detail {

// Whether `block` was allocated (not null) and malloc still gives 64 KiB beside it (which it takes back at once).
inline bool allocated_with_room(const void* block) {
    void* spare = block ? std::malloc(std::size_t{1} << 16) : nullptr;
    const bool room = spare != nullptr;
    std::free(spare);
    return room;
}

}  // namespace xattn::detail
