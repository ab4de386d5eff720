// Ballistic — per-ball columns on huge pages. An event reads a dozen columns at the scattered
// slots of its ball and its neighbours: with 4 KiB pages nearly every such read also misses the
// TLB. A column of at least kLeast bytes lies in 2 MiB pages of its own; one of kShared bytes up
// to kLeast shares such pages with others, packed one after another (on a page of its own it would
// waste most of it). The kernel is asked to back them with transparent huge pages (madvise:
// Debian's default mode; where it declines, the column is as any other). Each column starts at its
// own offset, its colour: columns that all began on a page's boundary would put the same slot of
// each in the same set of the cache.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include <sys/mman.h>

namespace ballistic::detail {

// The colour of the next large column, counted over the columns of every type: a ball's counter
// and its position are read together, and so is the same slot of every column.
inline std::atomic<std::size_t> next_colour{1};

constexpr std::size_t kHugePage = std::size_t{2} << 20;

// `bytes` from 2 MiB pages asked to be huge, kHugePage-aligned and a multiple of it.
inline void* allocate_huge(std::size_t bytes) {
    void* base = std::aligned_alloc(kHugePage, bytes);
    if (!base) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE  // Linux
    madvise(base, bytes, MADV_HUGEPAGE);  // advice: declined, the pages are as any others
#endif
    return base;
}

// Blocks of 2 MiB pages, and the freed ones kept for the next block of the same size: a re-sort
// or a rebuild replaces each column by one of the same size, and a page fresh from the kernel
// costs a fault and a clear of 2 MiB. It keeps at most as many bytes as its blocks in use hold,
// and at most kKept blocks, so memory goes back with the columns that held it. Never destroyed:
// a column may be freed during the program's exit.
class HugeBlocks {
public:
    static constexpr std::size_t kKept = 64;

    static void* allocate(std::size_t bytes) {
        {
            const std::lock_guard guard(state().lock);
            State& s = state();
            for (std::size_t k = s.count; k-- > 0;) {
                if (s.kept[k].bytes != bytes) continue;
                void* base = s.kept[k].base;
                s.kept[k] = s.kept[--s.count];
                s.kept_bytes -= bytes;
                s.live += bytes;
                return base;
            }
        }
        void* base = allocate_huge(bytes);
        const std::lock_guard guard(state().lock);
        state().live += bytes;
        return base;
    }
    static void deallocate(void* base, std::size_t bytes) {
        const std::lock_guard guard(state().lock);
        State& s = state();
        s.live -= bytes;
        if (s.count == kKept) drop(0);
        s.kept[s.count++] = {base, bytes};
        s.kept_bytes += bytes;
        while (s.count > 0 && s.kept_bytes > s.live) drop(0);  // the oldest first
    }

    // Bytes in kept blocks, and in blocks in use.
    static std::size_t kept_bytes() {
        const std::lock_guard guard(state().lock);
        return state().kept_bytes;
    }
    static std::size_t live_bytes() {
        const std::lock_guard guard(state().lock);
        return state().live;
    }

private:
    struct Block {
        void* base;
        std::size_t bytes;
    };
    struct State {
        std::mutex lock;
        Block kept[kKept];
        std::size_t count = 0, kept_bytes = 0, live = 0;
    };
    static State& state() {
        static auto* s = new State;
        return *s;
    }
    static void drop(std::size_t k) {  // with the lock held
        State& s = state();
        std::free(s.kept[k].base);
        s.kept_bytes -= s.kept[k].bytes;
        for (std::size_t j = k + 1; j < s.count; ++j) s.kept[j - 1] = s.kept[j];
        --s.count;
    }
};

// The 2 MiB pages that columns share. A page counts its columns in a header at its start and is
// freed with its last one, unless it is the page columns go to next, which then starts afresh.
// Pages and lock are never destroyed: a column may be freed during the program's exit.
class SharedPages {
public:
    // `bytes` starting `colour` bytes (a multiple of 64) after the current page's last column.
    static void* allocate(std::size_t bytes, std::size_t colour) {
        const std::lock_guard guard(lock());
        Page*& page = current();
        auto start = [&] { return (page->used + 63) / 64 * 64 + colour; };
        // A page left with no column starts afresh (deallocate()), and then a column fits.
        if (!page || start() + bytes > kHugePage) page = new (HugeBlocks::allocate(kHugePage)) Page{};
        char* column = reinterpret_cast<char*>(page) + start();
        page->used = static_cast<std::size_t>(column - reinterpret_cast<char*>(page)) + bytes;
        ++page->live;
        return column;
    }
    static void deallocate(void* column) {
        auto* page = reinterpret_cast<Page*>(reinterpret_cast<std::uintptr_t>(column) & ~(kHugePage - 1));
        const std::lock_guard guard(lock());
        if (--page->live > 0) return;
        if (page == current()) page->used = sizeof(Page);
        else HugeBlocks::deallocate(page, kHugePage);
    }

private:
    struct Page {
        std::size_t live = 0;              // columns in it
        std::size_t used = sizeof(Page);  // bytes up to the end of its last column
    };
    static std::mutex& lock() {
        static auto* mutex = new std::mutex;
        return *mutex;
    }
    static Page*& current() {
        static Page* page = nullptr;
        return page;
    }
};

template <class T>
struct HugePages {
    using value_type = T;
    static constexpr std::size_t kPage = kHugePage;
    // From 1 MiB a column takes pages of its own: at most twice its size.
    static constexpr std::size_t kLeast = std::size_t{1} << 20;
    // From 256 KiB (3·10⁴ balls and more for a column of doubles) it shares pages.
    static constexpr std::size_t kShared = std::size_t{256} << 10;
    // Colours step by a page of 4 KiB and a cache line, 31 of them before they repeat: spread
    // within 128 KiB, one way of the second-level cache.
    static constexpr std::size_t kColourStep = 4096 + 64, kColours = 31;

    HugePages() = default;
    template <class U>
    HugePages(const HugePages<U>&) {}

    static_assert(alignof(T) <= 64, "a colour is a multiple of 64 bytes");
    static bool huge(std::size_t n) { return n >= kLeast / sizeof(T); }
    static bool shared(std::size_t n) { return !huge(n) && n >= kShared / sizeof(T); }
    T* allocate(std::size_t n) {
        if (shared(n)) return static_cast<T*>(SharedPages::allocate(n * sizeof(T), next_colour_bytes()));
        if (!huge(n)) return std::allocator<T>{}.allocate(n);
        if (n > (~std::size_t{0} - 2 * kPage) / sizeof(T)) throw std::bad_array_new_length();
        const std::size_t colour = next_colour_bytes();
        void* base = HugeBlocks::allocate(bytes_for(colour, n));
        char* column = static_cast<char*>(base) + colour;
        std::memcpy(column - sizeof(void*), &base, sizeof(void*));  // for deallocate()
        return reinterpret_cast<T*>(column);
    }
    void deallocate(T* p, std::size_t n) {
        if (shared(n)) return SharedPages::deallocate(p);
        if (!huge(n)) return std::allocator<T>{}.deallocate(p, n);
        void* base;
        std::memcpy(&base, reinterpret_cast<char*>(p) - sizeof(void*), sizeof(void*));
        HugeBlocks::deallocate(base, bytes_for(static_cast<std::size_t>(reinterpret_cast<char*>(p) - static_cast<char*>(base)), n));
    }
    friend bool operator==(const HugePages&, const HugePages&) { return true; }

private:
    // The pages of a column of n starting `colour` bytes into them.
    static std::size_t bytes_for(std::size_t colour, std::size_t n) { return (colour + n * sizeof(T) + kPage - 1) / kPage * kPage; }
    static std::size_t next_colour_bytes() {
        return (next_colour.fetch_add(1, std::memory_order_relaxed) % kColours + 1) * kColourStep;
    }
};

template <class T>
using Column = std::vector<T, HugePages<T>>;

}  // namespace ballistic::detail
