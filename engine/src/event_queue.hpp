// Ballistic — the pending-event queue: one entry per ball (its earliest event), an indexed
// binary heap ordered by (time, kind, ball, other). The key breaks every tie, so the order of
// processing never depends on insertion history. The heap keeps its own copy of each key:
// several balls' pending events may change before the queue hears of them (a collision
// re-predicts two balls, a parallel batch many), and sifting one entry must never compare
// against another entry's new, not yet placed key.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace ballistic::detail {

enum class Kind : std::uint8_t { BallBall = 0, BallPlane = 1, BallCylinder = 2, Crossing = 3, None = 4 };

struct Pending {
    double time = std::numeric_limits<double>::infinity();  // absolute world time
    std::uint64_t other_counter = 0;  // partner's event counter at prediction (ball–ball only)
    std::uint32_t other = 0;          // partner slot, plane or cylinder index, or cell face
    Kind kind = Kind::None;
};

// The queue's total order: (time, kind, slot, other).
inline bool before(const Pending& x, std::uint32_t a, const Pending& y, std::uint32_t b) {
    if (x.time != y.time) return x.time < y.time;
    if (x.kind != y.kind) return x.kind < y.kind;
    if (a != b) return a < b;
    return x.other < y.other;
}

class EventQueue {
public:
    // heap entry (16 B) + position (4 B)
    static constexpr std::size_t kBytesPerEntry = 20;

    // Rebuilds the heap over slots [0, n) of `events` in O(n).
    void build(const std::vector<Pending>& events) {
        const auto n = static_cast<std::uint32_t>(events.size());
        heap_.resize(n);
        position_.resize(n);
        for (std::uint32_t s = 0; s < n; ++s) {
            heap_[s] = entry(events[s], s);
            position_[s] = s;
        }
        for (std::uint32_t i = n / 2; i-- > 0;) sift_down(i);
    }
    bool empty() const { return heap_.empty(); }
    std::uint32_t top() const { return heap_.front().slot; }
    // An event as the queue holds it: the slot and its key (other_counter is not kept: 0).
    struct Queued {
        std::uint32_t slot;
        Pending event;
    };
    // The `count` smallest entries in queue order (fewer when the queue is shorter), without
    // removing them: a best-first walk of the heap, O(count log count). The keys come from the
    // heap itself, so the walk reads no per-ball array.
    void smallest(std::size_t count, std::vector<Queued>& out) const {
        out.clear();
        if (heap_.empty()) return;
        frontier_.assign(1, 0);  // heap indices, itself a min-heap
        auto later = [&](std::uint32_t x, std::uint32_t y) { return less(heap_[y], heap_[x]); };
        while (!frontier_.empty() && out.size() < count) {
            std::pop_heap(frontier_.begin(), frontier_.end(), later);
            const std::uint32_t i = frontier_.back();
            frontier_.pop_back();
            const Entry& e = heap_[i];
            out.push_back({e.slot, Pending{e.time, 0, e.other_kind >> 3, static_cast<Kind>(e.other_kind & 7u)}});
            for (std::uint32_t child = 2 * i + 1; child <= 2 * i + 2 && child < heap_.size(); ++child) {
                frontier_.push_back(child);
                std::push_heap(frontier_.begin(), frontier_.end(), later);
            }
        }
    }
    // Takes the new key of `slot` and restores the order.
    void update(std::uint32_t slot, const Pending& event) {
        const std::uint32_t i = position_[slot];
        heap_[i] = entry(event, slot);
        if (i > 0 && less(heap_[i], heap_[(i - 1) / 2])) sift_up(i);
        else sift_down(i);
    }

private:
    struct Entry {
        double time;
        std::uint32_t slot;
        std::uint32_t other_kind;  // other << 3 | kind
    };
    static Entry entry(const Pending& e, std::uint32_t slot) {
        return {e.time, slot, e.other << 3 | static_cast<std::uint32_t>(e.kind)};
    }
    static bool less(const Entry& x, const Entry& y) {
        if (x.time != y.time) return x.time < y.time;
        const std::uint32_t kx = x.other_kind & 7u, ky = y.other_kind & 7u;
        if (kx != ky) return kx < ky;
        if (x.slot != y.slot) return x.slot < y.slot;
        return x.other_kind < y.other_kind;
    }
    void place(std::uint32_t i, const Entry& e) {
        heap_[i] = e;
        position_[e.slot] = i;
    }
    void sift_up(std::uint32_t i) {
        const Entry e = heap_[i];
        while (i > 0) {
            const std::uint32_t parent = (i - 1) / 2;
            if (!less(e, heap_[parent])) break;
            place(i, heap_[parent]);
            i = parent;
        }
        place(i, e);
    }
    void sift_down(std::uint32_t i) {
        const Entry e = heap_[i];
        const auto n = static_cast<std::uint32_t>(heap_.size());
        for (;;) {
            std::uint32_t child = 2 * i + 1;
            if (child >= n) break;
            if (child + 1 < n && less(heap_[child + 1], heap_[child])) ++child;
            if (!less(heap_[child], e)) break;
            place(i, heap_[child]);
            i = child;
        }
        place(i, e);
    }

    std::vector<Entry> heap_;
    std::vector<std::uint32_t> position_;          // slot -> heap index
    mutable std::vector<std::uint32_t> frontier_;  // scratch of smallest()
};

}  // namespace ballistic::detail
