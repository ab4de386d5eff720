// Ballistic — the pending-event queue: one entry per ball (its earliest event), ordered by
// (time, kind, ball, other). The key breaks every tie, so the order of processing never depends on
// insertion history or on the queue's internal layout.
//
// A calendar queue (Paul, J. Comput. Phys. 221, 2007): time is cut into buckets of equal width;
// the entries of the earliest buckets sit in a small binary heap (the front), later buckets of the
// current "year" are intrusive lists, entries beyond the year wait in an overflow list, and balls
// with no event at all in a list of their own. An update unlinks and relinks one entry, O(1),
// unless the entry is in the front (O(log m), m ≈ kPerBucket). When the front runs empty the next
// bucket moves into it; when the year runs out the overflow is spread over a new year whose
// bucket width is measured from the overflow's own times, so the width follows the event rate.
// A binary heap over all N balls costs O(log N) cache misses per update instead.
//
// The queue keeps its own copy of each key: several balls' pending events may change before the
// queue hears of them (a collision re-predicts two balls, a parallel batch many), and moving one
// entry must never read another entry's new, not yet placed key.
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

// The queue's total order: (time, kind, slot, other).
inline bool before(const Pending& x, std::uint32_t a, const Pending& y, std::uint32_t b) {
    if (x.time != y.time) return x.time < y.time;
    if (x.kind != y.kind) return x.kind < y.kind;
    if (a != b) return a < b;
    return x.other < y.other;
}

class EventQueue {
    struct Entry {
        double time;
        std::uint32_t slot;
        std::uint32_t other_kind;  // other << 3 | kind
    };

public:
    // key copy + list index + two links; the bucket heads add about half a byte per entry.
    static constexpr std::size_t kBytesPerEntry = sizeof(Entry) + 3 * sizeof(std::int32_t);
    // Entries per bucket the width aims at.
    static constexpr std::size_t kPerBucket = 32;

    // Takes slots [0, n) of `events` as the whole queue, O(n).
    void build(const std::vector<Pending>& events);
    bool empty() const { return key_.empty(); }
    // The slot of the earliest entry (the queue must not be empty).
    std::uint32_t top() {
        if (front_.empty()) advance();
        return front_.empty() ? static_cast<std::uint32_t>(head_[kNeverList]) : front_.front().slot;
    }
    // An event as the queue holds it: the slot and its key (other_counter is not kept: 0).
    struct Queued {
        std::uint32_t slot;
        Pending event;
    };
    // The earliest entries in queue order, at most `count` and at least one unless the queue is
    // empty (fewer than `count` when the current year holds fewer), without removing them.
    void smallest(std::size_t count, std::vector<Queued>& out);
    // Takes the new key of `slot` and restores the order.
    void update(std::uint32_t slot, const Pending& event) {
        remove(slot);
        insert(slot, {event.time, slot, event.other << 3 | static_cast<std::uint32_t>(event.kind)});
    }

private:
    // List indices in head_: balls without an event, the overflow, then the ring of buckets.
    static constexpr std::int32_t kNeverList = 0, kOverflowList = 1, kFirstBucket = 2;
    static constexpr std::int32_t kInFront = -1;  // where_: in the front heap (next_ is its heap index)
    static constexpr std::int64_t kFar = std::int64_t{1} << 52;

    static bool less(const Entry& x, const Entry& y) {
        if (x.time != y.time) return x.time < y.time;
        const std::uint32_t kx = x.other_kind & 7u, ky = y.other_kind & 7u;
        if (kx != ky) return kx < ky;
        if (x.slot != y.slot) return x.slot < y.slot;
        return x.other_kind < y.other_kind;
    }
    // Monotone in t: an earlier time never lands in a later bucket, equal times share a bucket.
    std::int64_t bucket_of(double t) const {
        if (t < origin_) return -1;
        const double x = (t - origin_) * inv_width_;
        return x < static_cast<double>(kFar) ? static_cast<std::int64_t>(x) : kFar;
    }

    void insert(std::uint32_t slot, const Entry& e) {
        key_[slot] = e;
        if (!(e.time < std::numeric_limits<double>::infinity())) return link(slot, kNeverList);
        const std::int64_t b = bucket_of(e.time);
        if (b <= current_) return push_front(slot);
        if (b >= year_end_) return link(slot, kOverflowList);
        ++in_ring_;
        link(slot, kFirstBucket + static_cast<std::int32_t>(b & mask_));
    }
    void remove(std::uint32_t slot) {
        const std::int32_t list = where_[slot];
        if (list == kInFront) return erase_front(static_cast<std::uint32_t>(next_[slot]));
        if (list >= kFirstBucket) --in_ring_;
        const std::int32_t p = prev_[slot], n = next_[slot];
        (p >= 0 ? next_[static_cast<std::size_t>(p)] : head_[static_cast<std::size_t>(list)]) = n;
        if (n >= 0) prev_[static_cast<std::size_t>(n)] = p;
    }
    void link(std::uint32_t slot, std::int32_t list) {
        const std::int32_t n = head_[static_cast<std::size_t>(list)];
        next_[slot] = n;
        prev_[slot] = -1;
        if (n >= 0) prev_[static_cast<std::size_t>(n)] = static_cast<std::int32_t>(slot);
        head_[static_cast<std::size_t>(list)] = static_cast<std::int32_t>(slot);
        where_[slot] = list;
    }

    // Moves buckets into the empty front until it holds an entry or no finite entry is left.
    void advance();
    // Moves the next bucket of the year into the front.
    void pull();
    // Spreads the overflow over a new year; false when it is empty.
    bool new_year();

    // The front: a binary heap of every entry whose bucket is <= current_.
    void push_front(std::uint32_t slot) {
        where_[slot] = kInFront;
        front_.push_back(key_[slot]);
        sift_up(static_cast<std::uint32_t>(front_.size() - 1));
    }
    void erase_front(std::uint32_t i) {
        const Entry last = front_.back();
        front_.pop_back();
        if (i == front_.size()) return;
        place(i, last);
        if (i > 0 && less(front_[i], front_[(i - 1) / 2])) sift_up(i);
        else sift_down(i);
    }
    void place(std::uint32_t i, const Entry& e) {
        front_[i] = e;
        next_[e.slot] = static_cast<std::int32_t>(i);
    }
    void sift_up(std::uint32_t i) {
        const Entry e = front_[i];
        while (i > 0) {
            const std::uint32_t parent = (i - 1) / 2;
            if (!less(e, front_[parent])) break;
            place(i, front_[parent]);
            i = parent;
        }
        place(i, e);
    }
    void sift_down(std::uint32_t i) {
        const Entry e = front_[i];
        const auto n = static_cast<std::uint32_t>(front_.size());
        for (;;) {
            std::uint32_t child = 2 * i + 1;
            if (child >= n) break;
            if (child + 1 < n && less(front_[child + 1], front_[child])) ++child;
            if (!less(front_[child], e)) break;
            place(i, front_[child]);
            i = child;
        }
        place(i, e);
    }

    std::vector<Entry> key_;            // per slot: its key
    std::vector<std::int32_t> where_;   // per slot: list index, or kInFront
    std::vector<std::int32_t> next_, prev_;  // per slot: list links (next_: heap index in the front)
    std::vector<std::int32_t> head_;    // per list: first slot, -1 when empty
    std::vector<Entry> front_;
    double origin_ = 0.0, inv_width_ = 1.0;
    std::int64_t current_ = -1;   // last bucket moved into the front
    std::int64_t year_end_ = 0;   // buckets current_ + 1 .. year_end_ − 1 are in the ring
    std::int64_t mask_ = 0;       // ring size − 1 (a power of two)
    std::size_t in_ring_ = 0;     // entries in ring buckets
    std::vector<std::uint32_t> frontier_;  // scratch of smallest()
    std::vector<double> times_;            // scratch of new_year()
};

}  // namespace ballistic::detail
