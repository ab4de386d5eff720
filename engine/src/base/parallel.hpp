// Ballistic — the engine's parallel patterns over the world's TaskSystem.
//
// Work is cut into fixed blocks whose boundaries depend only on the item count, never on the
// concurrency, and reductions combine the per-block results in block order: results are
// bit-identical for any task system and any number of threads.
#pragma once

#include <ballistic/task_system.hpp>

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

namespace ballistic::detail {

class Parallel {
public:
    static constexpr std::size_t kBlock = 4096;

    explicit Parallel(std::shared_ptr<TaskSystem> tasks)
        : tasks_(std::move(tasks)), concurrency_(tasks_->concurrency()) {}
    // oneTBB with `threads` threads (0: all).
    explicit Parallel(int threads) : Parallel(make_tbb_task_system(threads)) {}

    int concurrency() const { return concurrency_; }

    // fn(begin, end) over fixed blocks of [0, count).
    template <class Fn>
    void for_blocks(std::size_t count, Fn&& fn) const {
        const std::size_t blocks = (count + kBlock - 1) / kBlock;
        auto block = [&](std::size_t b) { fn(b * kBlock, std::min(count, (b + 1) * kBlock)); };
        if (concurrency_ == 1 || blocks <= 1) {
            for (std::size_t b = 0; b < blocks; ++b) block(b);
            return;
        }
        tasks_->run(blocks, block);
    }

    // fn(k) for k in [0, count), one task each: for a few coarse independent items.
    template <class Fn>
    void for_each(std::size_t count, Fn&& fn) const {
        if (concurrency_ == 1 || count <= 1) {
            for (std::size_t k = 0; k < count; ++k) fn(k);
            return;
        }
        tasks_->run(count, fn);
    }

    // fn(share, begin, end) over [0, count) cut into count / per_share + 1 shares, at most
    // concurrency(), one task each; returns the count of shares. The cut depends on the
    // concurrency: only for work whose result does not depend on it.
    template <class Fn>
    std::size_t for_shares(std::size_t count, std::size_t per_share, Fn&& fn) const {
        const std::size_t shares = std::min<std::size_t>(static_cast<std::size_t>(concurrency_), count / per_share + 1);
        for_each(shares, [&](std::size_t share) { fn(share, share * count / shares, (share + 1) * count / shares); });
        return shares;
    }
    // Deterministic reduction: block(begin, end) -> T per block, then combine(acc, part) in
    // block order.
    template <class T, class Block, class Combine>
    T reduce(std::size_t count, T identity, Block&& block, Combine&& combine) const {
        const std::size_t blocks = (count + kBlock - 1) / kBlock;
        std::vector<T> parts(blocks, identity);
        for_blocks(count, [&](std::size_t begin, std::size_t end) { parts[begin / kBlock] = block(begin, end); });
        T total = identity;
        for (const T& part : parts) total = combine(total, part);
        return total;
    }
    // The same bits as reduce(), on the calling thread, allocating nothing (for what must not fail).
    template <class T, class Block, class Combine>
    T reduce_here(std::size_t count, T identity, Block&& block, Combine&& combine) const {
        T total = identity;
        for (std::size_t begin = 0; begin < count; begin += kBlock)
            total = combine(total, block(begin, std::min(count, begin + kBlock)));
        return total;
    }

    // reduce() for a light pass (a few nanoseconds an item, as the step's passes over the balls):
    // over fewer than kLightBlocks * kBlock items, on the calling thread, where handing blocks to
    // other cores and their cache lines back costs more than the cores save. The same bits.
    static constexpr std::size_t kLightBlocks = 8;
    template <class T, class Block, class Combine>
    T reduce_light(std::size_t count, T identity, Block&& block, Combine&& combine) const {
        return count < kLightBlocks * kBlock ? reduce_here(count, identity, block, combine)
                                             : reduce(count, identity, block, combine);
    }

    // Sorts by operator<: one run per task, then rounds of pairwise merges. The elements must be
    // distinct (unique keys), so that the order, unlike the work, does not depend on the
    // concurrency.
    template <class T>
    void sort(std::vector<T>& items) const {
        const std::size_t runs = std::min<std::size_t>(static_cast<std::size_t>(concurrency_), items.size() / kBlock);
        if (runs <= 1) {
            std::sort(items.begin(), items.end());
            return;
        }
        auto bound = [&](std::size_t r) {
            return items.begin() + static_cast<std::ptrdiff_t>(std::min(r, runs) * items.size() / runs);
        };
        for_each(runs, [&](std::size_t r) { std::sort(bound(r), bound(r + 1)); });
        std::vector<T> merged(items.size());
        for (std::size_t width = 1; width < runs; width *= 2) {
            // Runs [2kw, 2kw + w) and [2kw + w, 2kw + 2w) of `items` become one run of `merged`.
            for_each((runs + 2 * width - 1) / (2 * width), [&](std::size_t k) {
                const std::size_t first = 2 * k * width;
                std::merge(bound(first), bound(first + width), bound(first + width), bound(first + 2 * width),
                           merged.begin() + (bound(first) - items.begin()));
            });
            items.swap(merged);
        }
    }

private:
    std::shared_ptr<TaskSystem> tasks_;
    int concurrency_;
};

}  // namespace ballistic::detail
