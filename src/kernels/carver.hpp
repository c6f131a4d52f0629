// Buffers carved out of one caller-provided block, each 64-byte aligned (a cache line, and the widest
// vector load). Built on a null block it only counts: planners run the same carving code as the run
// itself, so the bytes a plan reports are exactly the bytes its run touches, plus `kSlack` for a block
// that is not itself 64-byte aligned (malloc promises 8 or 16). Counts are 64-bit even where size_t is
// 32-bit (wasm32): a plan's total can pass 4 GiB, and must be refused rather than wrap around.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xattn {
namespace {  // each kernel file compiles its own copy with its own flags (see src/kernels/README.md)

class Carver {
public:
    static constexpr std::size_t kAlign = 64;
    static constexpr std::size_t kSlack = kAlign - 1;

    explicit Carver(void* block) : base_(static_cast<unsigned char*>(block)) {
        if (base_) start_ = (kAlign - reinterpret_cast<std::uintptr_t>(base_) % kAlign) % kAlign;
        used_ = start_;
    }

    // `count` elements of T, or null when only counting. A count of 0 takes nothing.
    template <class T>
    T* take(std::uint64_t count) {
        T* p = base_ ? reinterpret_cast<T*>(base_ + used_) : nullptr;
        used_ += (count * sizeof(T) + kAlign - 1) / kAlign * kAlign;
        return p;
    }

    // Bytes a block must have for everything taken so far, whatever its alignment.
    std::uint64_t bytes() const { return used_ - start_ + (base_ ? 0 : kSlack); }

private:
    unsigned char* base_;
    std::uint64_t start_ = 0;
    std::uint64_t used_ = 0;
};

}  // namespace
}  // namespace xattn
