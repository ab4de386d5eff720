// Ballistic — the event loop: the queue of every ball's earliest event, processed in time order,
// serially (event_loop.cpp) or by regions of space with their own loops at once (region_loop.hpp;
// docs/architecture.md, "Parallel event processing: regions").
//
// Invariants: every event is processed on exactly the state the serial loop gives it (so the
// result is the same for any thread count); the queue holds each ball's pending event in the part
// of its region; an event's physics is the response's (response.hpp), and the loop only applies
// what is shared: the queue, the counters, the record.
#pragma once

#include <ballistic/types.hpp>

#include "events/event_queue.hpp"
#include "space/cells.hpp"
#include "events/measurements.hpp"
#include "events/outcome.hpp"
#include "events/predictor.hpp"
#include "base/parallel.hpp"
#include "loop/region_choice.hpp"
#include "loop/region_loop.hpp"
#include "loop/region_shares.hpp"
#include "loop/regions.hpp"
#include "events/response.hpp"

#include <atomic>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

namespace ballistic::detail {

class EventLoop {
public:
    EventLoop(const WorldDef& def, const Cells& cells, Response& response, Measurements& measurements, Parallel& parallel,
              double time)
        : last_processed(time), def_(def), cells_(cells), response_(response), measurements_(measurements),
          parallel_(parallel), region_loop_(def, cells, response, queue_, parallel) {}

    // Plans the regions over `cells` (the world's, or the ones about to become them) and builds the
    // queue from every ball's pending event: aside, so that a failure leaves both as they were.
    void build(const std::vector<Pending>& events, const Cells& cells);
    // The same, given each ball's cell as `cells` holds it (`keys`, by slot).
    void build(const std::vector<Pending>& events, const Cells& cells, const std::vector<CellKey>& keys);
    // With WorldDef::regions_when_faster, plans the regions again over the world's `cells` once
    // their measured speeds call for other shares (RegionShares); true if so. Between steps. Cut
    // into as many regions as before, only the entries of the balls whose region changes move.
    bool balance(const Cells& cells);
    // Processes the events up to `end`, unless it stops first, after the event at
    // last_processed: at the budget of events (0: none) or at the interrupt flag.
    enum class End { Reached, Budget, Interrupted };
    End run_until(double end, std::uint64_t budget);
    // A whole step took `seconds` for its `events` (WorldDef::regions_when_faster): timed for the
    // choice of the way its events went when every run_until() since the last could choose.
    void took(std::uint64_t events, double seconds);
    // Queues the new pending event of a ball (in the part of its region).
    void requeue(std::uint32_t slot, const Pending& event);
    // The balls of `slots` predicted afresh at `now`, in parallel shares (a prediction writes only
    // its ball's contact), then queued in their order.
    void repredict(std::span<const std::uint32_t> slots, double now, Predictor& predictor);
    // A ball added at the next slot (`slot` == the slots queued) with its first event, in the
    // region of its cell; reserve() first makes room for the entries up to `slots`.
    void append(std::uint32_t slot, const Pending& event);
    void reserve(std::size_t slots) {
        queue_.reserve(slots);
    }
    Pending pending(std::uint32_t slot) const { return queue_.event(slot); }
    // The time of the earliest queued event (+inf when none).
    double next_time() {
        return queue_.empty() ? std::numeric_limits<double>::infinity() : queue_.event(queue_.top()).time;
    }

    const std::atomic<bool>* interrupt = nullptr;  // World::set_interrupt()
    std::uint64_t processed = 0;   // events processed since the world was created
    std::uint64_t in_regions = 0;  // of which processed by regions at once
    // The regions' runs, the busiest region's events per run summed, the events undone at stops,
    // the events near another region, in all and of the busiest region (StepResult).
    std::uint64_t region_runs = 0, region_span = 0, undone = 0, region_interface = 0, region_span_interface = 0;
    // The runs' wall-clock time, and the busiest region's own work in them (StepResult).
    double region_seconds = 0.0, region_work_seconds = 0.0;
    std::size_t regions() const { return regions_.count(); }
    std::size_t bytes() const { return region_loop_.bytes(); }  // beside the queue's nodes
    double last_processed = 0.0;   // the time of the last of them
    std::vector<std::uint32_t> woken;  // the balls events woke, in order (the world empties it)

private:
    // build() with the balls' cells and the regions planned.
    void build(const std::vector<Pending>& events, const Cells& cells, const std::vector<CellKey>& keys,
               RegionPlan regions);
    // The cell of each of the first `balls` slots.
    std::vector<CellKey> keys_of(const Cells& cells, std::size_t balls) const;
    // The regions over `cells` for balls at `keys` whose pending events come at time_of(slot), by
    // the shares measured (rebalanced first when they call for it).
    template <class TimeOf>
    RegionPlan plan(const Cells& cells, const std::vector<CellKey>& keys, TimeOf&& time_of);
    // Each ball's region in `plan` (none for one region).
    std::vector<std::uint32_t> regions_of(const RegionPlan& plan, const std::vector<CellKey>& keys) const;
    // Counters, statistics, the event record; a failure (the record cannot grow) changes nothing.
    void record(const Outcome& out);
    // The events up to `end` one at a time, at most `budget` (0: none) and at most `most` of them.
    End run_serially(double end, std::uint64_t budget, std::uint64_t most);
    // After a run of the regions stopped before an event too far apart for them, this many events
    // go serially before the regions run again.
    static constexpr std::uint64_t kSerialRun = 256;
    // The regions run when each has at least this many events of the budget left.
    static constexpr std::uint64_t kLeastRegionShare = 64;

    const WorldDef& def_;
    const Cells& cells_;
    Response& response_;
    Measurements& measurements_;
    Parallel& parallel_;
    EventQueue queue_;
    RegionPlan regions_;
    RegionLoop region_loop_;
    RegionChoice choice_;  // whether the regions run, by measurement
    RegionShares shares_;  // and their shares of the balls
    bool chose_ = true;    // every run_until() since the last took() could choose
    std::uint64_t serial_left_ = 0;  // events to go serially before the regions run again
    static constexpr std::size_t kPredictionsPerShare = 16;  // repredict()
    std::vector<Pending> predicted_;
};

}  // namespace ballistic::detail
