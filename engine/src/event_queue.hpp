// Ballistic — the pending-event queue: one entry per ball (its earliest event), an indexed
// binary heap ordered by (time, kind, ball, other). The key breaks every tie, so the order of
// processing never depends on insertion history.
#pragma once

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

class EventQueue {
public:
    static constexpr std::size_t kBytesPerEntry = 2 * sizeof(std::uint32_t);  // heap + position

    // Rebuilds the heap over slots [0, n) of `events` in O(n).
    void build(const std::vector<Pending>& events) {
        events_ = &events;
        const auto n = static_cast<std::uint32_t>(events.size());
        heap_.resize(n);
        position_.resize(n);
        for (std::uint32_t s = 0; s < n; ++s) heap_[s] = position_[s] = s;
        for (std::uint32_t i = n / 2; i-- > 0;) sift_down(i);
    }
    bool empty() const { return heap_.empty(); }
    std::uint32_t top() const { return heap_.front(); }
    // Restores the order after events[slot] changed.
    void update(std::uint32_t slot) {
        const std::uint32_t i = position_[slot];
        if (i > 0 && less(slot, heap_[(i - 1) / 2])) sift_up(i);
        else sift_down(i);
    }

private:
    bool less(std::uint32_t a, std::uint32_t b) const {
        const Pending& x = (*events_)[a];
        const Pending& y = (*events_)[b];
        if (x.time != y.time) return x.time < y.time;
        if (x.kind != y.kind) return x.kind < y.kind;
        if (a != b) return a < b;
        return x.other < y.other;
    }
    void place(std::uint32_t i, std::uint32_t slot) {
        heap_[i] = slot;
        position_[slot] = i;
    }
    void sift_up(std::uint32_t i) {
        const std::uint32_t slot = heap_[i];
        while (i > 0) {
            const std::uint32_t parent = (i - 1) / 2;
            if (!less(slot, heap_[parent])) break;
            place(i, heap_[parent]);
            i = parent;
        }
        place(i, slot);
    }
    void sift_down(std::uint32_t i) {
        const std::uint32_t slot = heap_[i];
        const auto n = static_cast<std::uint32_t>(heap_.size());
        for (;;) {
            std::uint32_t child = 2 * i + 1;
            if (child >= n) break;
            if (child + 1 < n && less(heap_[child + 1], heap_[child])) ++child;
            if (!less(heap_[child], slot)) break;
            place(i, heap_[child]);
            i = child;
        }
        place(i, slot);
    }

    const std::vector<Pending>* events_ = nullptr;
    std::vector<std::uint32_t> heap_;      // heap of slots
    std::vector<std::uint32_t> position_;  // slot -> heap index
};

}  // namespace ballistic::detail
