// Ballistic — regions with their own event loops (engine/README.md, "Regions"): each region
// processes the events of its balls in time order on its own part of the queue, at the same time
// as the others, and talks to its neighbours only through the boundary below.
//
// The boundary. Each region publishes its floor, the key of its earliest event not yet processed,
// and takes messages: the new pending events of its balls that a neighbour's event changed, or of
// balls that crossed into it. An event whose cells lie within reach of another region (an
// interface event) waits until that region's floor, and the earliest message on its way to it,
// are past the event's key: then every event of the neighbour that comes before it is done, and
// none after it that touches what it touches can start before it is. Events farther from every
// neighbour touch nothing another region's events touch, and go on at once. So every event is
// processed on exactly the state the serial loop gives it, and the result is the serial one, bit
// for bit, for any number of regions.
//
// Invariants (between runs): every ball's entry is in the part of the region of its cell; no
// message is on its way; the logs are empty.
#pragma once

#include "event_queue.hpp"
#include "grid.hpp"
#include "outcome.hpp"
#include "processed.hpp"
#include "regions.hpp"

#include <ballistic/types.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <vector>

namespace ballistic::detail {

struct Measurements;
class Parallel;
class Response;

class RegionLoop {
public:
    // Why a run ended: every event up to `end` processed; stopped, the world standing at the
    // events done before `stop` (every region's events before it, none after), so that the caller
    // goes on serially from there: at `limit` events (exactly: the serial loop would have been
    // there), at the interrupt flag, or before an event that reaches beyond what its region may
    // touch (a rare ball–ball event whose partner is more than a cell away, and not stale).
    enum class End { Reached, Limit, Interrupted, Apart };

    struct Counts {
        std::uint64_t processed = 0, crossings = 0;
        double last = -std::numeric_limits<double>::infinity();
    };

    RegionLoop(const WorldDef& def, const Grid& grid, Response& response, EventQueue& queue, Parallel& parallel)
        : def_(def), grid_(grid), response_(response), queue_(queue), parallel_(parallel) {}

    // The regions of `plan` (its count of parts in the queue).
    void prepare(const RegionPlan& plan);
    // Processes the events up to `end`, at most `limit` of them (0: none), in parallel; the
    // measurements take its collisions in the serial loop's order (processed.hpp: `origins` is
    // the world's), `woken` the balls events woke.
    // On an exception (out of memory), every event after the last one all regions had passed is
    // undone and it is rethrown, the world standing at the events before. Returns how many events
    // it processed in `counts`.
    End run(double end, std::uint64_t limit, const std::atomic<bool>* interrupt, Measurements& measurements,
            std::size_t record_limit, std::vector<Origin>& origins, std::vector<std::uint32_t>& woken, Counts& counts);

private:
    struct Message {
        std::uint32_t slot;
        Pending event;
    };
    struct Logged {  // a processed event, to undo it
        EventKey key;
        Outcome out;
        std::array<Pending, 2> previous;     // its balls' entries before
        std::array<std::uint32_t, 2> part;   // and their parts
        std::array<Origin, 2> origin;        // and their origins
    };
    // What other regions read of a region: its floor (a sequence lock: one writer), the earliest
    // message on its way to it, and its mailbox. A cache line of its own each.
    struct alignas(128) Floor {
        std::atomic<std::uint32_t> seq{0};
        std::atomic<std::uint64_t> time{0}, rest{0};
    };
    struct alignas(128) Mailbox {
        std::atomic<std::uint64_t> inbound{~std::uint64_t{0}};
        std::atomic<bool> active{false};  // its loop is running
        std::mutex lock;
        std::vector<Message> messages;
    };
    struct Region {  // one region's loop state: only the task running it touches it
        std::deque<Logged> log;
        std::vector<Processed> records;
        std::vector<std::pair<EventKey, std::uint32_t>> woken;
        std::vector<Message> incoming;
        Counts counts;
        std::uint64_t run_processed = 0;  // this run
        std::uint64_t ids = 0;            // of its events (processed.hpp), never reused
        bool done = false;
    };

    enum class Step { Done, Blocked, Parked };
    Step run_region(std::uint32_t r, double end, std::uint64_t limit, const std::atomic<bool>* interrupt);
    std::vector<Origin>* origins_ = nullptr;  // the run's
    // The regions an event of ball `slot` at its key must wait for (none: it goes on at once).
    RegionSet waits_for(std::uint32_t r, std::uint32_t slot, const Pending& event) const;
    bool ready(RegionSet regions, const EventKey& key) const;
    EventKey floor_of(std::uint32_t r) const;
    void publish(std::uint32_t r, const EventKey& key);
    EventKey top_key(std::uint32_t r, std::uint32_t& slot, Pending& event);
    // Takes the messages on their way to region r into its part; true if there were any.
    bool drain(std::uint32_t r);
    void send(std::uint32_t to, std::uint32_t slot, const Pending& event);
    // The events done that every region has passed: they are final.
    void forget_final(std::uint32_t r);
    void request_stop(const EventKey& key, End why);
    // Undoes every event at or after the earliest floor (all regions parked): the world stands at
    // a prefix of the serial order.
    void undo_to_prefix();
    // Undoes events from the latest down until `keep` events of this run remain.
    void undo_beyond(std::uint64_t keep);
    void undo(Logged& logged, bool queue);

    const WorldDef& def_;
    const Grid& grid_;
    Response& response_;
    EventQueue& queue_;
    Parallel& parallel_;
    RegionPlan plan_;
    std::vector<Floor> floors_;
    std::vector<Mailbox> mail_;
    std::vector<Region> regions_;
    std::vector<Processed> processed_;  // every region's records at a run's end

    std::atomic<std::uint64_t> stop_time_{~std::uint64_t{0}};  // a stop was asked for (its time)
    std::mutex stop_lock_;
    End why_ = End::Reached;
    std::exception_ptr error_;
};

}  // namespace ballistic::detail
