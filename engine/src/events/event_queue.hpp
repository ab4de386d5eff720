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
// The entries are split into parts (the regions of parallel event processing), each with a
// calendar of its own: different parts may be read and updated concurrently, and top() is the
// earliest of the parts' earliest entries.
//
// The queue keeps its own copy of each key: several balls' pending events may change before the
// queue hears of them (a collision re-predicts two balls), and moving one entry must never read
// another entry's new, not yet placed key.
#pragma once

#include "base/columns.hpp"
#include "base/parallel.hpp"
#include "base/reserve.hpp"

#include <atomic>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace ballistic::detail {

// 32 bits wide, so that a Pending is 16 bytes without padding: with a one-byte kind, GCC copied
// its 13 bytes with overlapping 8-byte moves, whose loads span two stores and so wait for them
// (no store-to-load forwarding).
// Wake: an awake ball under a sleeping one wakes it once it has moved away from it by the
// touching gap (predictor.cpp), and a ball the jam put to sleep not before it has slept
// wake_delay, when the two may no longer touch (sleep_rules.hpp).
// BallCapsule and BallBlock came last: the kinds of the others (their order at equal times, and in snapshots)
// stay as they were.
enum class Kind : std::uint32_t {
    BallBall = 0,
    BallPlane = 1,
    BallCylinder = 2,
    Crossing = 3,
    Wake = 4,
    BallCapsule = 5,
    BallBlock = 6,
    None = 7
};
// Events that touch two balls, `other` being the second one's slot.
constexpr bool pairwise(Kind kind) { return kind == Kind::BallBall || kind == Kind::Wake; }

struct Pending {
    double time = std::numeric_limits<double>::infinity();  // absolute world time
    std::uint32_t other = 0;  // partner slot, plane, cylinder, capsule or block index, or cell face
    Kind kind = Kind::None;
};
static_assert(sizeof(Pending) == 16);

// The queue's total order: (time, kind, slot, other).
inline bool before(const Pending& x, std::uint32_t a, const Pending& y, std::uint32_t b) {
    if (x.time != y.time) return x.time < y.time;
    if (x.kind != y.kind) return x.kind < y.kind;
    if (a != b) return a < b;
    return x.other < y.other;
}

// An event's place in the serial order (before() in event_queue.hpp) as two words compared in
// turn: the time, as bits that order like the time, then kind, slot and the other index.
struct EventKey {
    std::uint64_t time = ~std::uint64_t{0};
    std::uint64_t rest = ~std::uint64_t{0};
    static std::uint64_t time_bits(double t) {
        const auto b = std::bit_cast<std::uint64_t>(t);
        return b >> 63 ? ~b : b | std::uint64_t{1} << 63;
    }
    static EventKey of(const Pending& e, std::uint32_t slot) {
        return {time_bits(e.time), std::uint64_t{static_cast<std::uint32_t>(e.kind)} << 61 |
                                        std::uint64_t{slot} << 32 | e.other};
    }
    static constexpr EventKey none() { return {0, 0}; }  // before every event
    friend bool operator<(const EventKey& a, const EventKey& b) {
        return a.time != b.time ? a.time < b.time : a.rest < b.rest;
    }
    friend bool operator==(const EventKey&, const EventKey&) = default;
};

class EventQueue {
    struct Entry {
        double time;
        std::uint32_t slot;
        std::uint32_t other_kind;  // other << 3 | kind
    };
    // One cache line holds two slots' nodes: an update reads and writes whole nodes (its own, its
    // list neighbours', the list head's), not five arrays each.
    struct alignas(32) Node {
        Entry key;                 // its key
        std::uint32_t part;        // its part
        std::int32_t where;        // list index in its part's calendar, or kInFront (below)
        std::int32_t next, prev;   // list links (next: heap index in the front)
    };

public:
    // Its node; the bucket heads add about half a byte per entry.
    static constexpr std::size_t kBytesPerEntry = sizeof(Node);
    // Entries per bucket the width aims at.
    static constexpr std::size_t kPerBucket = 32;

    // Takes slots [0, n) of `events` as the whole queue, slot s in part `part[s]` of `parts`
    // (all in part 0 when `part` is empty), O(n); the parts are built in parallel, each by a task
    // that scans every slot and takes its own.
    void build(const std::vector<Pending>& events, const std::vector<std::uint32_t>& part, std::size_t parts,
               Parallel& parallel);
    bool empty() const { return nodes_.empty(); }
    std::size_t parts() const { return calendars_.size(); }
    std::size_t slots() const { return nodes_.size(); }
    std::uint32_t part_of(std::uint32_t slot) const { return nodes_[slot].part; }
    // The same, read while the part's own user may move the entry to another (regions).
    std::uint32_t part_of_now(std::uint32_t slot) const {
        return std::atomic_ref<const std::uint32_t>(nodes_[slot].part).load(std::memory_order_relaxed);
    }
    // The key of `slot`: its pending event.
    Pending event(std::uint32_t slot) const { return pending(nodes_[slot].key); }
    EventKey key(std::uint32_t slot) const { return EventKey::of(event(slot), slot); }
    // The slot of the earliest entry (the queue must not be empty). Also warm()s every part.
    std::uint32_t top();
    // One step of the walk that brings the next buckets' nodes of `part` into cache, up to
    // kWarmBuckets ahead. It reads nodes and moves the part's own cursor only: a part's task may
    // call it while other parts are used.
    void warm(std::size_t part);
    static constexpr std::int64_t kWarmBuckets = 16;
    // Takes the new key of `slot`, which stays in its part; different parts may be updated
    // concurrently.
    void update(std::uint32_t slot, const Pending& event) {
        Calendar& c = calendars_[nodes_[slot].part];
        remove(c, slot);
        insert(c, slot, entry(slot, event));
    }
    // Takes a new slot, the next one (one past every slot it holds), into part `part` of the
    // built queue.
    // Should an allocation fail, the queue must be built again; reserve() makes room for the
    // slots up to `slots` first, so that appending them allocates nothing.
    void append(std::uint32_t slot, const Pending& event, std::uint32_t part) {
        assert(slot == nodes_.size());
        nodes_.emplace_back();
        nodes_[slot].part = part;
        insert(calendars_[part], slot, entry(slot, event));
    }
    void reserve(std::size_t slots) {
        const std::size_t more = slots > nodes_.size() ? slots - nodes_.size() : 0;
        reserve_for(nodes_, slots);
        for (Calendar& c : calendars_) reserve_for(c.front, c.front.size() + more);
    }
    // The same, moving the entry to another part. reserve_front() first makes room for `more`
    // entries moved into `part`, so that moving them allocates nothing.
    void update(std::uint32_t slot, const Pending& event, std::uint32_t part) {
        leave(slot);
        set_part(slot, part);
        insert(calendars_[part], slot, entry(slot, event));
    }
    void reserve_front(std::size_t part, std::size_t more) {
        Calendar& c = calendars_[part];
        reserve_for(c.front, c.front.size() + more);
    }
    // A region hands a ball to another (regions.hpp): its entry leaves its part, and until it is
    // attached again it is in no part (part_of() reads kNoPart) and no top() sees it. Only the
    // part's own user detaches and attaches.
    static constexpr std::uint32_t kNoPart = ~0u;
    void detach(std::uint32_t slot) {
        leave(slot);
        set_part(slot, kNoPart);
    }
    void attach(std::uint32_t slot, const Pending& event, std::uint32_t part) {
        set_part(slot, part);
        insert(calendars_[part], slot, entry(slot, event));
    }
    // The slot of the entry likely to come after the earliest of part `part` (the earlier child
    // of its front's root), and its event, or kNoSlot: a hint, for loading early what its event
    // reads.
    static constexpr std::uint32_t kNoSlot = ~0u;
    std::uint32_t second_of(std::size_t part, Pending& event) const {
        const std::vector<Entry>& f = calendars_[part].front;
        if (f.size() < 2) return kNoSlot;
        const Entry& e = f.size() == 2 || less(f[1], f[2]) ? f[1] : f[2];
        event = pending(e);
        return e.slot;
    }
    // The earliest entry of one part, in `slot`; false when the part holds no finite entry.
    // Different parts may be asked concurrently.
    bool top_of(std::size_t part, std::uint32_t& slot) {
        Calendar& c = calendars_[part];
        if (c.front.empty()) advance(c);
        if (c.front.empty()) return false;
        slot = c.front.front().slot;
        return true;
    }

private:
    void set_part(std::uint32_t slot, std::uint32_t part) {
        std::atomic_ref<std::uint32_t>(nodes_[slot].part).store(part, std::memory_order_relaxed);
    }
    // List indices in a calendar's heads: balls without an event, the overflow, then the ring of
    // buckets.
    static constexpr std::int32_t kNeverList = 0, kOverflowList = 1, kFirstBucket = 2;
    static constexpr std::int32_t kInFront = -1;  // where: in the front heap (next is its heap index)
    static constexpr std::int64_t kFar = std::int64_t{1} << 52;

    // A part's calendar, on cache lines of its own: each region's task changes its part's at
    // every event, and reads no other's.
    struct alignas(128) Calendar {
        Column<std::int32_t> head;       // per list: first slot, -1 when empty
        std::vector<Entry> front;        // binary heap of every entry whose bucket is <= current
        double origin = 0.0, inv_width = 1.0;
        std::int64_t current = -1;   // last bucket moved into the front
        std::int64_t year_end = 0;   // buckets current + 1 .. year_end − 1 are in the ring
        std::int64_t mask = 0;       // ring size − 1 (a power of two)
        std::size_t in_ring = 0;     // entries in ring buckets
        std::size_t overflow = 0;    // entries in the overflow
        std::vector<std::uint32_t> spread;    // scratch of new_year()
        std::vector<double> times;            // scratch of new_year()
        // The lists of the buckets after `current` are walked one node per warm() call ahead of
        // their move into the front, so that the move finds their nodes in cache (each list is one
        // dependent cache miss per entry otherwise). Only a hint: a node that moved to another
        // bucket meanwhile just warms that list; one pulled into the front ends the walk there.
        std::int32_t warm = -1;          // the node reached
        std::int64_t warm_bucket = -1;   // the bucket whose list it started in
        // Monotone in t: an earlier time never lands in a later bucket, equal times share one.
        std::int64_t bucket_of(double t) const {
            if (t < origin) return -1;
            const double x = (t - origin) * inv_width;
            return x < static_cast<double>(kFar) ? static_cast<std::int64_t>(x) : kFar;
        }
    };

    static Pending pending(const Entry& e) {
        return {e.time, e.other_kind >> 3, static_cast<Kind>(e.other_kind & 7u)};
    }
    static Entry entry(std::uint32_t slot, const Pending& e) {
        return {e.time, slot, e.other << 3 | static_cast<std::uint32_t>(e.kind)};
    }
    static bool less(const Entry& x, const Entry& y) {
        if (x.time != y.time) return x.time < y.time;
        const std::uint32_t kx = x.other_kind & 7u, ky = y.other_kind & 7u;
        if (kx != ky) return kx < ky;
        if (x.slot != y.slot) return x.slot < y.slot;
        return x.other_kind < y.other_kind;
    }

    void insert(Calendar& c, std::uint32_t slot, const Entry& e) {
        nodes_[slot].key = e;
        place(c, slot);
    }
    // Files `slot` by the key it holds. It writes the node's links only, never its key: a region
    // may read the key of another part's entry (its partner's) while that part re-files its
    // entries in a new year.
    void place(Calendar& c, std::uint32_t slot) {
        const Entry& e = nodes_[slot].key;
        if (!(e.time < std::numeric_limits<double>::infinity())) return link(c, slot, kNeverList);
        const std::int64_t b = c.bucket_of(e.time);
        if (b <= c.current) return push_front(c, slot);
        if (b >= c.year_end) return link(c, slot, kOverflowList);
        ++c.in_ring;
        link(c, slot, kFirstBucket + static_cast<std::int32_t>(b & c.mask));
    }
    void remove(Calendar& c, std::uint32_t slot) {
        const std::int32_t list = nodes_[slot].where;
        if (list == kInFront) return erase_front(c, static_cast<std::uint32_t>(nodes_[slot].next));
        if (list >= kFirstBucket) --c.in_ring;
        else if (list == kOverflowList) --c.overflow;
        const std::int32_t p = nodes_[slot].prev, n = nodes_[slot].next;
        (p >= 0 ? nodes_[static_cast<std::size_t>(p)].next : c.head[static_cast<std::size_t>(list)]) = n;
        if (n >= 0) nodes_[static_cast<std::size_t>(n)].prev = p;
    }
    // Takes the entry out of its part: the warming walk must not follow it into another part's
    // lists.
    void leave(std::uint32_t slot) {
        Calendar& c = calendars_[nodes_[slot].part];
        remove(c, slot);
        if (c.warm == static_cast<std::int32_t>(slot)) c.warm = -1;
    }
    void link(Calendar& c, std::uint32_t slot, std::int32_t list) {
        const std::int32_t n = c.head[static_cast<std::size_t>(list)];
        nodes_[slot].next = n;
        nodes_[slot].prev = -1;
        if (n >= 0) nodes_[static_cast<std::size_t>(n)].prev = static_cast<std::int32_t>(slot);
        c.head[static_cast<std::size_t>(list)] = static_cast<std::int32_t>(slot);
        nodes_[slot].where = list;
        if (list == kOverflowList) ++c.overflow;
    }

    // Moves buckets into the empty front until it holds an entry or no finite entry is left.
    void advance(Calendar& c);
    // Moves the next bucket of the year into the front.
    void pull(Calendar& c);
    // Spreads the overflow over a new year; false when it is empty.
    bool new_year(Calendar& c);
    // new_year() scans every node when the overflow holds at least 1 / kScanShare of them.
    static constexpr std::size_t kScanShare = 16;

    void push_front(Calendar& c, std::uint32_t slot) {
        nodes_[slot].where = kInFront;
        c.front.push_back(nodes_[slot].key);
        sift_up(c, static_cast<std::uint32_t>(c.front.size() - 1));
    }
    void erase_front(Calendar& c, std::uint32_t i) {
        const Entry last = c.front.back();
        c.front.pop_back();
        if (i == c.front.size()) return;
        place(c, i, last);
        if (i > 0 && less(c.front[i], c.front[(i - 1) / 2])) sift_up(c, i);
        else sift_down(c, i);
    }
    void place(Calendar& c, std::uint32_t i, const Entry& e) {
        c.front[i] = e;
        nodes_[e.slot].next = static_cast<std::int32_t>(i);
    }
    void sift_up(Calendar& c, std::uint32_t i) {
        const Entry e = c.front[i];
        while (i > 0) {
            const std::uint32_t parent = (i - 1) / 2;
            if (!less(e, c.front[parent])) break;
            place(c, i, c.front[parent]);
            i = parent;
        }
        place(c, i, e);
    }
    void sift_down(Calendar& c, std::uint32_t i) {
        const Entry e = c.front[i];
        const auto n = static_cast<std::uint32_t>(c.front.size());
        for (;;) {
            std::uint32_t child = 2 * i + 1;
            if (child >= n) break;
            if (child + 1 < n && less(c.front[child + 1], c.front[child])) ++child;
            if (!less(c.front[child], e)) break;
            place(c, i, c.front[child]);
            i = child;
        }
        place(c, i, e);
    }

    std::vector<Calendar> calendars_;
    // Per slot, shared by the parts (a slot belongs to one part at a time).
    Column<Node> nodes_;
};

}  // namespace ballistic::detail
