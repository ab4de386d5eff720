// Ballistic — per-ball columns on huge pages. An event reads a dozen columns at the scattered
// slots of its ball and its neighbours: with 4 KiB pages nearly every such read also misses the
// TLB. A column of at least kLeast bytes lies in 2 MiB pages that the kernel is asked to back with
// transparent huge pages (madvise: Debian's default mode; where it declines, the column is as any
// other). Within its first page each column starts at its own offset, its colour: columns that
// all began on a page's boundary would put the same slot of each in the same set of the cache.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <vector>

#include <sys/mman.h>

namespace ballistic::detail {

// The colour of the next large column, counted over the columns of every type: a ball's counter
// and its position are read together, and so is the same slot of every column.
inline std::atomic<std::size_t> next_colour{1};

template <class T>
struct HugePages {
    using value_type = T;
    static constexpr std::size_t kPage = std::size_t{2} << 20;
    // From 1 MiB: a column that small takes at most twice its size.
    static constexpr std::size_t kLeast = std::size_t{1} << 20;
    // Colours step by a page of 4 KiB and a cache line, 31 of them before they repeat: spread
    // within 128 KiB, one way of the second-level cache.
    static constexpr std::size_t kColourStep = 4096 + 64, kColours = 31;

    HugePages() = default;
    template <class U>
    HugePages(const HugePages<U>&) {}

    static_assert(alignof(T) <= 64, "a colour is a multiple of 64 bytes");
    static bool huge(std::size_t n) { return n >= kLeast / sizeof(T); }
    T* allocate(std::size_t n) {
        if (!huge(n)) return std::allocator<T>{}.allocate(n);
        if (n > (~std::size_t{0} - 2 * kPage) / sizeof(T)) throw std::bad_array_new_length();
        const std::size_t colour =
            (next_colour.fetch_add(1, std::memory_order_relaxed) % kColours + 1) * kColourStep;
        const std::size_t bytes = (colour + n * sizeof(T) + kPage - 1) / kPage * kPage;
        void* base = std::aligned_alloc(kPage, bytes);
        if (!base) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE  // Linux
        madvise(base, bytes, MADV_HUGEPAGE);  // advice: declined, the column is as any other
#endif
        char* column = static_cast<char*>(base) + colour;
        std::memcpy(column - sizeof(void*), &base, sizeof(void*));  // for deallocate()
        return reinterpret_cast<T*>(column);
    }
    void deallocate(T* p, std::size_t n) {
        if (!huge(n)) return std::allocator<T>{}.deallocate(p, n);
        void* base;
        std::memcpy(&base, reinterpret_cast<char*>(p) - sizeof(void*), sizeof(void*));
        std::free(base);
    }
    friend bool operator==(const HugePages&, const HugePages&) { return true; }
};

template <class T>
using Column = std::vector<T, HugePages<T>>;

}  // namespace ballistic::detail
