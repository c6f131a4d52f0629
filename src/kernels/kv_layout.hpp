// Where a KV cache keeps each key and value element, within one key/value head's problem (elements float32 or
// float16 bits). Shared by the cache (kv_cache.cpp: append, keys(), values()) and the kernels that read it.
//
//   keys    blocks of kKeyBlock positions, each (E, kKeyBlock): element c of the block's keys is one run of
//           kKeyBlock, so a dot product puts keys in vector lanes and reads a block front to back;
//   values  tiles of kValueTile positions, each in column blocks of kValueCols columns (the last one of 16),
//           (column blocks, kValueTile, width): a P·V pass over one column block reads one run.
//
// Why not rows: a decoding step reads the whole cache once, so its speed is the speed the memory system streams
// it in. WebAssembly has no prefetch instruction, and with rows the score loop's loads walk a row 16 bytes at a
// time, then jump to the next block of keys, while the P·V passes read a part of each row: the hardware
// prefetchers followed neither, and the byte loads that asked for each tile ahead ("touches") stalled the core
// until their lines came. With these blocks every load of the hot loops steps through memory by a fixed stride
// that the prefetchers follow, with no touches (grouped-query float32 steps still ask for the next tile:
// attention_decode.hpp, touch_tile). Decoding steps timed against rows, and dot-product loops over rows and over
// blocks, showed it (src/kernels/README.md, "The KV cache's blocks").
//
// Padding: capacity to whole value tiles, Ev to a multiple of 16 (kValuePad; so every column block is whole
// vectors on every kernel set), the padding columns zero.
#pragma once

#include <cstddef>

namespace xattn::kernels {

constexpr std::size_t kKeyBlock = 16;   // positions per key block
constexpr std::size_t kValueTile = 64;  // positions per value tile: the decoding kernel's key tile
constexpr std::size_t kValueCols = 32;  // columns per value column block
constexpr std::size_t kValuePad = 16;   // value rows are padded to a multiple of this

// Positions stored for `capacity` (whole value tiles), and a value row's length as stored (Ev padded), in any
// unsigned width: the cache sizes its storage in 64 bits, where wasm's size_t is 32.
template <class N>
constexpr N padded_rows(N capacity) { return (capacity + kValueTile - 1) / kValueTile * kValueTile; }
template <class N>
constexpr N padded_value_dim(N Ev) { return (Ev + kValuePad - 1) / kValuePad * kValuePad; }

struct KvLayout {
    std::size_t E = 0, Ev = 0;

    static std::size_t rows(std::size_t capacity) { return padded_rows(capacity); }
    std::size_t evb() const { return padded_value_dim(Ev); }
    // Elements of one problem's keys and values for `capacity` positions.
    std::size_t key_elements(std::size_t capacity) const { return rows(capacity) * E; }
    std::size_t value_elements(std::size_t capacity) const { return rows(capacity) * evb(); }

    std::size_t key_offset(std::size_t pos, std::size_t c) const {
        return (pos / kKeyBlock * E + c) * kKeyBlock + pos % kKeyBlock;
    }
    // The key block holding position k0 (a multiple of kKeyBlock) starts at k0 · E.
    static std::size_t key_block(std::size_t k0, std::size_t E) { return k0 * E; }

    // Columns in column block cb: kValueCols, or 16 for the last when evb() is an odd multiple of 16.
    std::size_t value_width(std::size_t cb) const {
        const std::size_t left = evb() - cb * kValueCols;
        return left < kValueCols ? left : kValueCols;
    }
    // The value tile holding position k0 (a multiple of kValueTile) starts at k0 · evb().
    std::size_t value_tile(std::size_t k0) const { return k0 * evb(); }
    // Within its tile, column block cb starts at cb · kValueTile · kValueCols, rows value_width(cb) apart.
    std::size_t value_offset(std::size_t pos, std::size_t c) const {
        const std::size_t cb = c / kValueCols;
        return value_tile(pos / kValueTile * kValueTile) + cb * kValueTile * kValueCols + pos % kValueTile * value_width(cb) +
               c % kValueCols;
    }
};

}  // namespace xattn::kernels
