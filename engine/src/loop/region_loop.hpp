// Ballistic — regions with their own event loops (docs/architecture.md, "Parallel event processing:
// regions"): each region processes the events of its balls in key order on its own part of the
// queue, at the same time as the others.
//
// Touching. An event writes its balls (the partner within one cell of its ball: the rare one
// farther goes serially; a crossing ball's new cell, next to its old one) and reads the cells
// around what it writes. An event that writes a cell within two cells of another region (an
// interface event) holds the locks of those regions while it runs; one that writes only cells
// farther away touches nothing another region's events touch. So no two events that
// touch the same balls ever run at once. The balls of cells that are not dense share lists with
// others anywhere: their events go serially.
//
// Order. The serial loop processes the earliest key, and an event's key comes after the keys of
// the events that created it, unless one creates an event at its own instant with an earlier key
// (in a jam). That one comes next, before every other, and so does any it creates before the
// first one's key: a cascade. Its region holds the cascade apart and processes it first, each
// event under the first one's key (one for a ball of another region goes serially). So every
// event has a key in the serial order, its own or its cascade's. Every event stamps the cells of
// the balls it writes with that key. An event that comes late, after one with
// a later key touched what it touches (a chain of events from a neighbour's message can reach
// into a region that has run ahead), finds a later stamp around what it writes: the run then
// stops, every event at or after the earliest one not yet processed is undone, and the caller
// goes on serially from there. Every event kept is processed on exactly the state the serial loop
// gives it, and the result is the serial one, bit for bit, for any number of regions. That needs
// the wait: an interface event runs only once the regions it locks have passed its key (their
// floors: the earliest event not yet processed, or message sent and not yet taken in). Its message
// to another region replaces the event of the ball it wrote there, and an earlier one not yet run
// would be lost unseen by any stamp. The wait also keeps late events rare.
//
// Invariants (between runs): every ball's entry is in the part of the region of its cell; no
// message is on its way; the logs are empty; the stamps of earlier runs do not count.
#pragma once

#include "events/event_queue.hpp"
#include "space/cells.hpp"
#include "events/outcome.hpp"
#include "loop/regions.hpp"

#include <ballistic/types.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <limits>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace ballistic::detail {

struct Measurements;
class Parallel;
class Response;

class RegionLoop {
public:
    // Why a run ended: every event up to `end` processed; or stopped, the world standing at a
    // prefix of the serial order (every event before a key done, none after), so that the caller
    // goes on serially from there: at `limit` events, at the interrupt flag, or before an event
    // regions cannot process (Serial: one that came late, one whose cascade reaches a ball of
    // another region, a ball–ball event whose partner is more than a cell away and not stale, or
    // one beside a cell that is not dense).
    enum class End { Reached, Limit, Interrupted, Serial };

    struct Counts {
        std::uint64_t processed = 0, crossings = 0;
        std::uint64_t span = 0, undone = 0;  // the busiest region's events (undone ones too); those undone
        // The events near another region (undone ones too): in all, and of the busiest region.
        std::uint64_t interface = 0, span_interface = 0;
        double last = -std::numeric_limits<double>::infinity();
        // The run's wall-clock seconds, and the most any region spent on its own work in them.
        double seconds = 0.0, busiest = 0.0;
    };

    RegionLoop(const WorldDef& def, const Cells& cells, Response& response, EventQueue& queue, Parallel& parallel)
        : def_(def), cells_(cells), response_(response), queue_(queue), parallel_(parallel) {}

    // The regions of `plan` (its count of parts in the queue), with stamps and locks for the dense
    // cells of `cells`: the cells the world has when the regions next run (a re-sort builds it
    // aside, and it replaces the world's cells after this call).
    void prepare(const RegionPlan& plan, const Cells& cells);
    std::size_t bytes() const { return stamps_.capacity() * sizeof(Stamp) + locks_.capacity() * sizeof(BlockLock); }
    // Per region, the seconds of the last run it spent on its own work, its waits left out.
    std::span<const double> work() const { return work_; }
    // Processes the events up to `end`, at most `limit` of them (0: none), in parallel; the
    // measurements take its collisions in the serial loop's order (the keys'), `woken` the balls
    // events woke, and `counts` how many events it processed. On an exception (out of memory),
    // every event at or after the earliest floor is undone (the balls: the queue is left to be
    // built again) and it is rethrown.
    End run(double end, std::uint64_t limit, const std::atomic<bool>* interrupt, Measurements& measurements,
            std::size_t record_limit, std::vector<std::uint32_t>& woken, Counts& counts);

private:
    struct Message {
        std::uint32_t slot;
        Pending event;
        std::uint32_t from;
        std::uint64_t seq;  // the sender's count of messages to this region
    };
    struct Outstanding {  // a message sent, not yet taken in
        std::uint32_t to;
        std::uint64_t seq;
        EventKey key;
    };
    struct Collided {  // a collision, for the measurements
        EventKey key;
        CollisionEvent event;
        double virial, overlap;
    };
    struct Woken {  // a ball an event woke
        EventKey key;
        std::uint32_t slot;
    };
    // What a region's events leave for the run's end (its collisions, the balls they woke), by
    // their keys: those that come in key order, and apart the few that come after a later key (of
    // an event parked, or brought by a neighbour's message), each list in the order they came.
    template <class Item>
    struct ByKey {
        std::vector<Item> in_order, late;
        void push(const Item& item) {
            if (in_order.empty() || !(item.key < in_order.back().key)) in_order.push_back(item);
            else late.push_back(item);
        }
        std::size_t size() const { return in_order.size() + late.size(); }
        void erase_from(const EventKey& key) {
            auto after = [&](const Item& item) { return !(item.key < key); };
            std::erase_if(in_order, after);
            std::erase_if(late, after);
        }
        void clear() {
            in_order.clear();
            late.clear();
        }
    };
    struct Parked {  // an event its region set aside while it waits (its entry detached)
        std::uint32_t slot;
        Pending event;
        EventKey key;
        RegionSet near;  // the regions it waits for (none: only for an earlier parked one)
        CellKey cell;    // its ball's
    };
    struct Cascade {  // an event created at its creator's instant with an earlier key (its entry detached)
        std::uint32_t slot;
        Pending event;
        EventKey key;   // its own
        EventKey root;  // the key of the event that began the cascade, which orders it
    };
    struct Stamp {  // the latest event that wrote a ball in a patch of cells, in run `run`
        EventKey key;
        std::uint32_t run;  // 0: none
    };
    struct Logged {  // a processed event, to undo it
        EventKey key;
        Outcome out;
        std::array<Pending, 2> previous;     // its balls' entries before
        std::array<std::uint32_t, 2> part;   // and their parts
    };
    // What other regions read of a region, a cache line each: its floor (a sequence lock: one
    // writer) and whether its loop runs, which a neighbour that waits reads again and again; its
    // mailbox, which the region reads at every event.
    struct alignas(128) Floor {
        std::atomic<std::uint32_t> seq{0};
        std::atomic<std::uint64_t> time{0}, rest{0};
        std::atomic<bool> active{false};
    };
    struct alignas(128) Mailbox {
        std::atomic<bool> mail{false};
        std::atomic<std::uint64_t> wanted{~std::uint64_t{0}};  // the time a neighbour waits for its floor to pass
        std::mutex lock;
        std::vector<Message> messages;
    };
    // A region's processed events that a stop may undo, the earliest first, in a ring that grows
    // by doubling and never shrinks: its entries are used again, event after event, while they are
    // still in the cache, and an event costs no allocation. An entry taken by emplace_back() holds
    // what its last event left: process() writes every field it reads.
    class Log {
    public:
        bool empty() const { return size_ == 0; }
        std::size_t size() const { return size_; }
        Logged& operator[](std::size_t k) { return items_[(first_ + k) & mask_]; }
        Logged& front() { return items_[first_]; }
        Logged& emplace_back() {
            if (size_ == items_.size()) grow();
            return (*this)[size_++];
        }
        void pop_back() { --size_; }
        void pop_front() {
            first_ = (first_ + 1) & mask_;
            --size_;
        }
        void clear() { first_ = size_ = 0; }
        // Drops the events at or after `key`, keeping the others in order.
        void drop_from(const EventKey& key) {
            std::size_t kept = 0;
            for (std::size_t k = 0; k < size_; ++k)
                if ((*this)[k].key < key) (*this)[kept++] = (*this)[k];
            size_ = kept;
        }

    private:
        void grow() {
            std::vector<Logged> items(std::max<std::size_t>(64, 2 * items_.size()));  // first: may fail
            for (std::size_t k = 0; k < size_; ++k) items[k] = (*this)[k];
            items_ = std::move(items);
            mask_ = items_.size() - 1;
            first_ = 0;
        }
        std::vector<Logged> items_;
        std::size_t first_ = 0, size_ = 0, mask_ = 0;
    };
    struct alignas(128) Region {  // one region's loop state: only the task running it touches it
        Log log;
        ByKey<Collided> records;
        ByKey<Woken> woken;
        std::vector<Message> incoming;
        std::vector<Outstanding> outstanding;
        std::vector<std::uint64_t> sent;  // per region: messages sent there
        Counts counts;
        std::uint64_t run_processed = 0, run_interface = 0;  // this run: events, and those near another region
        EventKey top;                     // its earliest event, as last seen
        EventKey published;               // its floor, as last published
        std::uint32_t unpublished = 0;    // publications skipped since
        EventKey latest = EventKey::none();     // the latest event it processed this run
        EventKey unstamped = EventKey::none();  // and the latest that stamped nothing
        std::vector<Parked> parked;  // by key
        int parked_depth = 0;        // while any are parked: their cells' depth, at most
        std::vector<Cascade> cascade;  // by root, then key
        std::uint32_t unchecked = 0;  // events since it looked at the parked ones
    };

    enum class Step { Done, Blocked, Parked };
    Step run_region(std::uint32_t r, double end, std::uint64_t limit, const std::atomic<bool>* interrupt);
    // Within a catch of region r's task (out of memory): the exception kept for run() to rethrow,
    // and the run stopped. The queue may be left half-changed, and is built again (World::step).
    void keep_error(std::uint32_t r);
    // Does the run stop at `key`, region r at its `limit` of events or the interrupt flag set? The
    // stop is then requested.
    bool stops_at(std::uint32_t r, const EventKey& key, std::uint64_t limit, const std::atomic<bool>* interrupt);
    // Region r has nothing to do but wait: one turn of waiting (`spin` counts them); false when its
    // task should end (the driver starts it again).
    bool wait_once(std::uint32_t r, std::uint32_t& spin);
    // Sets aside the event of `slot` (`depth` cells from another region), which waits for the
    // regions `near` (none: for an earlier parked one), its entry detached; false when region r
    // has no room for it.
    bool park(std::uint32_t r, std::uint32_t slot, const Pending& event, const EventKey& key, RegionSet near,
              int depth);
    // Processes region r's event of ball s (its locks held when `interface`; `depth` cells from
    // another region), under `key` (its own, or its cascade's): computed, logged, stamped, its
    // balls' next events queued, held in the cascade or sent. False, with nothing changed, when it
    // must go serially (a far partner not stale, a cascade reaching another region, or late).
    bool process(std::uint32_t r, std::uint32_t s, const Pending& event, const EventKey& key, bool interface, int depth);
    // The next events of the balls `logged` touched, into region r's part or sent to the region
    // of their cells; their entries before, logged.
    void pass_on(std::uint32_t r, Logged& logged);
    // The other regions an event of ball `slot` may touch what their events touch (none: an
    // inner event); `serial` when regions cannot process it.
    // `depth`: cells from its ball's to the nearest of another region (RegionPlan::depth()).
    RegionSet touches(std::uint32_t r, std::uint32_t slot, const Pending& event, int& depth, bool& serial) const;
    // Are all floors of `regions` past `key`, and every message region r sent them before it
    // taken in?
    bool ready(std::uint32_t r, RegionSet regions, const EventKey& key);
    bool running(RegionSet regions) const;
    // Region r's floor, and its count of changes (`version`).
    EventKey floor_of(std::uint32_t r, std::uint32_t* version = nullptr) const;
    // Region r's floor from its earliest event (`top`), those parked and its messages not yet
    // taken in: published `now`, or when it drops (never higher than the true one, then).
    void publish(std::uint32_t r, bool now = false);
    void publish_key(std::uint32_t r, const EventKey& key);
    // Region r's earliest event (its messages taken in first), published: the cascade's first
    // (`cascade`), under its root's key, when that comes first.
    EventKey top_key(std::uint32_t r, std::uint32_t& slot, Pending& event, bool& cascade);
    EventKey earliest(std::uint32_t r) const;  // the same key, nothing taken in
    // A cascade (in a jam): an event creates one at its instant with a key before its own (the
    // `key` it is processed under). Serially that one comes next, before every other, and so on:
    // its region holds them apart and processes them first, each under the first one's key.
    static bool cascades(const Outcome& out, std::size_t i, const EventKey& key) {
        return out.next[i].time == out.time && EventKey::of(out.next[i], out.requeue[i]) < key;
    }
    bool in_cascade(std::uint32_t r, std::uint32_t slot) const;
    bool leave_cascade(std::uint32_t r, std::uint32_t slot);  // false if it was not in it
    void join_cascade(std::uint32_t r, const Cascade& joining);
    // Takes the messages on their way to region r into its part, and says so to their senders.
    void drain(std::uint32_t r);
    void send(std::uint32_t from, std::uint32_t to, std::uint32_t slot, const Pending& event);
    // The events done that every region has passed: they are final.
    void forget_final(std::uint32_t r);
    // The locks of blocks of dense cells (kLockCells along each axis the plan cuts, all along the
    // others) an interface event holds: of the cells within two of its ball's, and of its far
    // partner's cell. Taken in ascending order, so that no two tasks wait for each other.
    struct Held {
        std::array<std::uint32_t, 9> blocks;
        int n = 0;
    };
    // The block of a cell, and the block along axis d of coordinate c.
    std::uint32_t block_of(const CellKey& cell) const;
    std::int64_t block_along(int d, std::int64_t c) const;
    void lock_near(const CellKey& cell, const CellKey* far, Held& held);
    void lock_cell(const CellKey& cell, Held& held) { lock_near(cell, &cell, held); }
    // The lock of the queue entry of a ball in `cell`, taken only one cell from another region:
    // another region's interface events read no entry deeper in.
    void lock_entry(const CellKey& cell, Held& held) {
        if (plan_.depth(cell) <= 1) lock_cell(cell, held);
    }
    void unlock(Held& held);
    // Did an event with a later key than `key` touch what the event just computed in `out` (of
    // region r, an interface event or not, `depth` cells from another region, with a `far`
    // partner) touches? Its own cells and the partner's, and the cells around those.
    bool late(std::uint32_t r, const EventKey& key, const Pending& event, const Outcome& out, bool interface,
              int depth, bool far) const;
    // Is ball `slot`, `depth` cells from another region, within kParkedReach cells of an event
    // region r parked before `key`?
    bool beside_parked(std::uint32_t r, std::uint32_t slot, int depth, const EventKey& key) const;
    // When the earliest event region r parked may go on, puts them all back in its part; true if so.
    bool unpark_ready(std::uint32_t r);
    RegionSet everyone(std::uint32_t r) const {
        return (plan_.count() == 64 ? ~RegionSet{0} : (RegionSet{1} << plan_.count()) - 1) & ~(RegionSet{1} << r);
    }
    // Stamps the cells of the balls `logged.out` wrote with its key. Undoing it leaves the stamps:
    // only a stop undoes, and the run ends there (the next one's stamps start afresh).
    void stamp(const Logged& logged);
    void request_stop(const EventKey& key, End why);
    // Undoes every event at or after the earliest floor (every region parked): the world stands
    // at a prefix of the serial order.
    void undo_to_prefix();
    void undo(Logged& logged, bool queue);
    // fn(item) for the items of every region's `list` (records or woken) in the serial order.
    template <class Item, class Fn>
    void in_key_order(ByKey<Item> Region::*list, Fn&& fn);
    std::atomic<std::uint64_t>& acked(std::uint32_t receiver, std::uint32_t sender) {
        return acked_[receiver * plan_.count() + sender];
    }

    const WorldDef& def_;
    const Cells& cells_;
    Response& response_;
    EventQueue& queue_;
    Parallel& parallel_;
    RegionPlan plan_;
    std::vector<Floor> floors_;
    std::vector<Mailbox> mail_;
    std::unique_ptr<std::atomic<std::uint64_t>[]> acked_;  // receiver × sender: the last message taken in
    std::vector<Region> regions_;
    std::vector<double> work_;  // work(): each region's task adds its own
    // Per patch of dense cells (prepare()). Only this run's count: the events of the runs and
    // serial stretches before came in the serial order, and the serial loop's order at one
    // instant is not the keys'.
    std::vector<Stamp> stamps_;
    Cells::Patches patches_;
    std::uint32_t run_ = 0;
    struct alignas(64) BlockLock {
        std::atomic<bool> held{false};
    };
    static constexpr std::int64_t kLockCells = 6;
    std::vector<BlockLock> locks_;
    std::array<std::int64_t, 3> blocks_{};  // per axis

    std::atomic<std::uint64_t> stop_time_{~std::uint64_t{0}};  // a stop was asked for (its time)
    std::mutex stop_lock_;
    End why_ = End::Reached;
    std::exception_ptr error_;
};

}  // namespace ballistic::detail
