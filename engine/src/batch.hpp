// Ballistic — the two pieces of parallel event processing that are not the event loop itself:
// the plan that cuts space into slabs, and a batch's scratch (parallel_events.cpp runs batches).
//
// Space is cut into slabs along one axis, one per thread, and the queue into one part per slab.
// A batch is the leading run of the slabs' earliest events, merged in queue order, in which no
// event lies within kIndependentCells cells of an earlier event of another slab. Each slab takes
// its candidates, computes its events in order and updates its part of the queue in one task;
// the batch is committed in order up to the first event that an earlier one has overtaken.
#pragma once

#include "event_queue.hpp"
#include "grid.hpp"
#include "outcome.hpp"

#include <cstdint>
#include <vector>

namespace ballistic::detail {

// Two events conflict when cells of theirs are closer than this: an event reads the 27 cells
// around its balls' cells.
inline constexpr std::int64_t kIndependentCells = 3;

// Invariant: count() slabs, the bounds ascending and at least kMinSlabCells apart.
class SlabPlan {
public:
    // Thinner slabs would put most of their events near a boundary.
    static constexpr std::int64_t kMinSlabCells = 8;
    // An event's cells lie within one cell of its ball's: an event whose ball is farther than this
    // from every slab boundary cannot conflict with an event of another slab.
    static constexpr std::int64_t kBoundaryReach = kIndependentCells + 1;

    // Up to `concurrency` slabs across the axis with the most dense cells, holding equal numbers
    // of the `balls` balls in `grid`; one slab (serial processing) for worlds smaller than
    // `min_balls` or too thin.
    void plan(const Grid& grid, std::size_t balls, int concurrency, std::size_t min_balls);
    std::size_t count() const { return count_; }
    std::uint32_t slab_of(const CellKey& key) const {
        std::uint32_t slab = 0;
        for (const std::int64_t bound : bounds_) slab += key[axis_] >= bound;
        return slab;
    }
    bool near_boundary(const CellKey& key, const Grid& grid) const;

private:
    std::size_t count_ = 1;
    int axis_ = 0;
    std::vector<std::int64_t> bounds_;  // first cell of every slab after the first
};

// The earliest of the events a run of batch events produced (queue order: time, then slot).
struct Earliest {
    Pending event;
    std::uint32_t slot = 0;
    // Is the event of `s` later than this (so an event this early may change it)?
    bool precedes(const Pending& e, std::uint32_t s) const { return before(event, slot, e, s); }
    void lower(const Pending& e, std::uint32_t s) {
        if (before(e, s, event, slot)) {
            event = e;
            slot = s;
        }
    }
};

// A batch's scratch, kept between batches.
struct Batch {
    static constexpr std::size_t kMinSize = 32, kMaxSize = 1024;
    static constexpr std::size_t kTouchCapacity = 4 * kMaxSize;  // a power of two

    struct Candidate {
        std::uint32_t slot;
        Pending event;
        CellKey cells[3];      // its balls' cells and a crossing's new cell
        std::uint8_t n_cells;
        bool dense;            // its cells and their neighbours are dense cells
        bool near;             // within kBoundaryReach cells of a slab boundary
        std::uint32_t slab;    // slab of its ball's cell
    };
    struct Event {
        const Candidate* candidate;
        // A ball an earlier event of the batch touches: its event is only a leftover copy if that
        // event (batch index `toucher`) re-predicts the ball; it is not computed.
        bool leftover;
        std::uint32_t toucher;
    };
    struct BoundaryCell {  // a cell of a batch event near a slab boundary
        CellKey cell;
        std::uint32_t slab;
    };
    // Slots the batch touches -> index of the first batch event touching them (open addressing).
    struct Touch {
        std::uint32_t slot = ~0u, event = 0;
        bool requeued = false;
        Pending next;  // its new pending event (of the last committed event requeueing it)
    };
    struct Slab {  // one slab's share of a batch
        std::vector<EventQueue::Queued> queued;
        bool more = false;                   // the slab has events after its candidates
        std::vector<Candidate> candidates;
        std::vector<std::uint32_t> events;   // batch indices in order
        std::vector<std::uint32_t> updates;  // balls whose queue entry (in this slab's part)
                                             // changes, as positions in `touched`
    };

    std::size_t size = kMinSize;  // candidates per batch, adapted to how many commit

    // Pacing (WorldDef::parallel_events_pacing): a batch that commits fewer than kPaceBelow
    // events (leftover copies counted) rarely pays for its take, merge and hand-overs between
    // threads. After one, the loop processes `serial_left` events serially before it tries again;
    // the run doubles with each such batch in a row (from kFirstSerialRun up to
    // kLongestSerialRun) and ends at a batch that commits enough, or one that the end of the
    // loop's run cut short (a step's end, a test of sleeping, a pause: not the batch's fault). A
    // pile's landing is such a world: an impact rings through touching balls at once, so that a
    // batch's first events already produce events earlier than the rest of it (about 10 of ~40
    // commit).
    static constexpr std::size_t kPaceBelow = 32;
    static constexpr std::uint64_t kFirstSerialRun = 64, kLongestSerialRun = std::uint64_t{1} << 16;
    std::uint64_t serial_left = 0, serial_run = 0;
    // After a batch that committed `committed` events, `ended` when the run's end cut it short.
    void paced(std::size_t committed, bool ended) {
        if (committed >= kPaceBelow || ended) {
            serial_run = 0;
            return;
        }
        serial_run = serial_run == 0 ? kFirstSerialRun : std::min(2 * serial_run, kLongestSerialRun);
        serial_left = serial_run;
    }
    std::vector<Slab> slabs;
    std::vector<Event> events;
    std::vector<BoundaryCell> boundary;
    std::vector<Touch> touched;
    std::vector<std::uint32_t> touched_at;  // its used positions, to clear
    std::vector<char> computed;             // per batch event
    std::vector<std::uint32_t> moves;       // positions in `touched` of balls changing slab
    std::vector<std::size_t> merge_at;      // per slab: next candidate to merge
    std::vector<Outcome> outcomes;

    // A new batch: no slot touched, no event.
    void clear();
    // Marks `slot` as touched by batch event `event`; returns its entry.
    Touch& touch(std::uint32_t slot, std::uint32_t event);
};

}  // namespace ballistic::detail
