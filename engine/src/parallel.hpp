// Ballistic — the one seam to oneTBB. Every parallel phase goes through Parallel.
//
// Work is cut into fixed blocks whose boundaries depend only on the item count, never on the
// thread count, and reductions combine the per-block results in block order: results are
// bit-identical for any number of threads.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/parallel_sort.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ballistic::detail {

class Parallel {
public:
    static constexpr std::size_t kBlock = 4096;

    explicit Parallel(int threads)
        : threads_(threads), arena_(threads > 0 ? threads : tbb::task_arena::automatic) {}

    int concurrency() { return threads_ == 1 ? 1 : arena_.max_concurrency(); }

    // fn(begin, end) over fixed blocks of [0, count).
    template <class Fn>
    void for_blocks(std::size_t count, Fn&& fn) {
        const std::size_t blocks = (count + kBlock - 1) / kBlock;
        if (threads_ == 1 || blocks <= 1) {
            for (std::size_t b = 0; b < blocks; ++b) fn(b * kBlock, std::min(count, (b + 1) * kBlock));
            return;
        }
        arena_.execute([&] {
            tbb::parallel_for(tbb::blocked_range<std::size_t>(0, blocks, 1),
                              [&](const tbb::blocked_range<std::size_t>& r) {
                                  for (std::size_t b = r.begin(); b != r.end(); ++b)
                                      fn(b * kBlock, std::min(count, (b + 1) * kBlock));
                              });
        });
    }

    // fn(k) for k in [0, count), one task each: for a few coarse independent items.
    template <class Fn>
    void for_each(std::size_t count, Fn&& fn) {
        if (threads_ == 1) {
            for (std::size_t k = 0; k < count; ++k) fn(k);
            return;
        }
        arena_.execute([&] {
            tbb::parallel_for(tbb::blocked_range<std::size_t>(0, count, 1),
                              [&](const tbb::blocked_range<std::size_t>& r) {
                                  for (std::size_t k = r.begin(); k != r.end(); ++k) fn(k);
                              });
        });
    }

    // Deterministic reduction: block(begin, end) -> T per block, then combine(acc, part) in
    // block order.
    template <class T, class Block, class Combine>
    T reduce(std::size_t count, T identity, Block&& block, Combine&& combine) {
        const std::size_t blocks = (count + kBlock - 1) / kBlock;
        std::vector<T> parts(blocks, identity);
        for_blocks(count, [&](std::size_t begin, std::size_t end) {
            parts[begin / kBlock] = block(begin, end);
        });
        T total = identity;
        for (const T& part : parts) total = combine(total, part);
        return total;
    }

    // Sorts [first, last) by operator<. The elements must be distinct (unique keys), so that the
    // order, unlike the work, does not depend on the thread count.
    template <class It>
    void sort(It first, It last) {
        if (threads_ == 1) {
            std::sort(first, last);
            return;
        }
        arena_.execute([&] { tbb::parallel_sort(first, last); });
    }

private:
    int threads_;
    tbb::task_arena arena_;
};

}  // namespace ballistic::detail
