// Ballistic — the serial event loop and the queue built (event_loop.hpp); the batches are in
// parallel_events.cpp.
#include "event_loop.hpp"

namespace ballistic::detail {

// Processing an event is split in two: the response's compute() does the physics on the balls the
// event touches (saving their old state), moves a crossing ball to its new cell and predicts the
// next events; the commit applies what is shared (counters, the event record: record(); the queue).
// Serially the two follow each other, and an event that fails (out of memory) before its record is
// complete is undone. With several slabs, run_batch() computes batches of the earliest events
// in parallel and commits them in order, so that every committed event is exactly the event the
// serial loop would process next, computed from the same bits: the result is the same for any
// thread count.

void EventLoop::build(const std::vector<Pending>& events, const Grid& cells) {
    SlabPlan slabs;
    slabs.plan(cells, events.size(), parallel_.concurrency(), def_.parallel_events_min_balls);
    std::vector<std::uint32_t> slab_of;  // the queue has one part per slab
    if (slabs.count() > 1) {
        slab_of.resize(events.size());
        parallel_.for_blocks(events.size(), [&](std::size_t begin, std::size_t end) {
            for (std::size_t s = begin; s < end; ++s) slab_of[s] = slabs.slab_of(cells.key(static_cast<std::uint32_t>(s)));
        });
    }
    EventQueue queue;
    queue.build(events, slab_of, slabs.count(), parallel_);
    slabs_ = std::move(slabs);
    queue_ = std::move(queue);
    batch_.serial_left = batch_.serial_run = 0;
}

EventLoop::End EventLoop::run_until(double end, std::uint64_t budget) {
    const bool sliced = slabs_.count() > 1;
    // A batch commits at most this many events: with fewer left in the budget the loop goes on
    // serially, so that the budget ends the step at the same event for every thread count.
    const std::uint64_t largest_batch = slabs_.count() * Batch::kMaxSize;
    Outcome single;  // undoable: an event that fails (out of memory) is undone
    const std::uint64_t first = processed;
    while (!queue_.empty()) {
        const std::uint32_t s = queue_.top();
        const Pending event = queue_.event(s);
        if (!(event.time <= end)) break;
        const std::uint64_t done = processed - first;
        if (budget != 0 && done >= budget) return End::Budget;
        if (interrupt && interrupt->load(std::memory_order_relaxed)) return End::Interrupted;
        // While balls roam, every crossing reads and writes the counts of blocks: serially.
        if (sliced && (batch_.serial_left == 0 || !def_.parallel_events_pacing) && !response_.roaming() &&
            (budget == 0 || budget - done > largest_batch) && run_batch(end))
            continue;
        if (batch_.serial_left > 0) --batch_.serial_left;
        try {
            response_.compute(s, event, single);
            record(single);
        } catch (...) {
            response_.undo(single);
            throw;
        }
        // A failure from here on leaves the queue to be rebuilt (World::step).
        for (int k = 0; k < single.n_requeue; ++k)
            requeue(single.requeue[static_cast<std::size_t>(k)], single.next[static_cast<std::size_t>(k)]);
        if (single.crossing && response_.roaming()) {
            response_.crowd_roamers(s, single.new_key, single.time,
                                    [&](std::uint32_t r, const Pending& next) { requeue(r, next); });
            response_.settle_roaming();
        }
    }
    return End::Reached;
}

void EventLoop::record(const Outcome& out) {
    // Should what follows fail, the entry stays: harmless, as the step stops and the next one
    // empties the list.
    if (out.woken != Outcome::kNoBall && def_.sleep_interval > 0.0) woken.push_back(out.woken);
    if (out.collided) measurements_.count(out.event, out.virial, out.overlap, def_.event_record_limit);
    if (out.crossing) measurements_.count_crossing();
    ++processed;
    last_processed = out.time;
}

void EventLoop::append(std::uint32_t s, const Pending& event) {
    queue_.append(s, event, slabs_.count() == 1 ? 0 : slabs_.slab_of(grid_.key(s)));
}

void EventLoop::requeue(std::uint32_t s, const Pending& event) {
    if (slabs_.count() == 1) return queue_.update(s, event);
    const std::uint32_t slab = slabs_.slab_of(grid_.key(s));
    if (slab == queue_.part_of(s)) queue_.update(s, event);
    else queue_.update(s, event, slab);
}

}  // namespace ballistic::detail
