// Ballistic — the serial event loop and the queue built (event_loop.hpp); the batches are in
// parallel_events.cpp.
#include "event_loop.hpp"

namespace ballistic::detail {

// Processing an event is split in two: the response's compute() does the physics on the balls the
// event touches (saving their old state), moves a crossing ball to its new cell and predicts the
// next events; commit() applies what is shared (queue, counters, the event record). Serially the
// two follow each other. With several slabs, run_batch() computes batches of the earliest events
// in parallel and commits them in order, so that every committed event is exactly the event the
// serial loop would process next, computed from the same bits: the result is the same for any
// thread count.

void EventLoop::build(const std::vector<Pending>& events) {
    slabs_.plan(grid_, events.size(), parallel_.concurrency(), def_.parallel_events_min_balls);
    std::vector<std::uint32_t> slab_of;  // the queue has one part per slab
    if (slabs_.count() > 1) {
        slab_of.resize(events.size());
        parallel_.for_blocks(events.size(), [&](std::size_t begin, std::size_t end) {
            for (std::size_t s = begin; s < end; ++s) slab_of[s] = slabs_.slab_of(grid_.key(static_cast<std::uint32_t>(s)));
        });
    }
    queue_.build(events, slab_of, slabs_.count(), parallel_);
}

EventLoop::End EventLoop::run_until(double end, std::uint64_t budget) {
    const bool batched = slabs_.count() > 1;
    // A batch commits at most this many events: with fewer left in the budget the loop goes on
    // serially, so that the budget ends the step at the same event for every thread count.
    const std::uint64_t largest_batch = slabs_.count() * Batch::kMaxSize;
    Outcome single;
    single.undoable = false;
    const std::uint64_t first = processed;
    while (!queue_.empty()) {
        const std::uint32_t s = queue_.top();
        const Pending event = queue_.event(s);
        if (!(event.time <= end)) break;
        const std::uint64_t done = processed - first;
        if (budget != 0 && done >= budget) return End::Budget;
        if (interrupt && interrupt->load(std::memory_order_relaxed)) return End::Interrupted;
        if (batched && (budget == 0 || budget - done > largest_batch) && run_batch(end)) continue;
        response_.compute(s, event, single);
        commit(single);
    }
    return End::Reached;
}

void EventLoop::commit(const Outcome& out) {
    record(out);
    for (int k = 0; k < out.n_requeue; ++k)
        requeue(out.requeue[static_cast<std::size_t>(k)], out.next[static_cast<std::size_t>(k)]);
}

void EventLoop::record(const Outcome& out) {
    ++processed;
    last_processed = out.time;
    if (out.crossing) measurements_.count_crossing();
    if (out.collided) measurements_.count(out.event, out.virial, out.overlap, def_.event_record_limit);
}

void EventLoop::requeue(std::uint32_t s, const Pending& event) {
    if (slabs_.count() == 1) return queue_.update(s, event);
    const std::uint32_t slab = slabs_.slab_of(grid_.key(s));
    if (slab == queue_.part_of(s)) queue_.update(s, event);
    else queue_.update(s, event, slab);
}

}  // namespace ballistic::detail
