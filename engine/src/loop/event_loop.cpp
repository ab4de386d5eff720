// Ballistic — the event loop and the queue built (event_loop.hpp); the regions' loops are in
// region_loop.cpp.
#include "loop/event_loop.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace ballistic::detail {

// Processing an event is split in two: the response's compute() does the physics on the balls the
// event touches (saving their old state), moves a crossing ball to its new cell and predicts the
// next events; the commit applies what is shared (counters, the event record: record(); the queue).
// Serially the two follow each other, and an event that fails (out of memory) before its record is
// complete is undone. With several regions, each runs this loop on its own part of the queue at
// the same time as the others (region_loop.hpp): the result is the same for any thread count.

std::vector<CellKey> EventLoop::keys_of(const Cells& cells, std::size_t balls) const {
    std::vector<CellKey> keys(balls);
    parallel_.for_blocks(balls, [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) keys[s] = cells.key(static_cast<std::uint32_t>(s));
    });
    return keys;
}

template <class TimeOf>
RegionPlan EventLoop::plan(const Cells& cells, const std::vector<CellKey>& keys, TimeOf&& time_of) {
    // The regions share out the balls that have events coming: a sleeping pile costs nothing.
    const std::size_t idle = parallel_.reduce(keys.size(), std::size_t{0}, [&](std::size_t begin, std::size_t end) {
        std::size_t k = 0;
        for (std::size_t s = begin; s < end; ++s) k += !std::isfinite(time_of(s));
        return k;
    }, std::plus<>());
    std::vector<CellKey> busy;
    if (idle > 0 && idle < keys.size()) {
        busy.reserve(keys.size() - idle);
        for (std::size_t s = 0; s < keys.size(); ++s)
            if (std::isfinite(time_of(s))) busy.push_back(keys[s]);
    }
    if (shares_.uneven(keys.size())) shares_.rebalance();
    RegionPlan plan;
    plan.plan(cells, busy.empty() ? keys : busy, keys.size(), def_.gravity, parallel_.concurrency(),
              def_.parallel_events_min_balls, shares_.weights());
    return plan;
}

std::vector<std::uint32_t> EventLoop::regions_of(const RegionPlan& plan, const std::vector<CellKey>& keys) const {
    std::vector<std::uint32_t> region(plan.count() > 1 ? keys.size() : 0);
    parallel_.for_blocks(region.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) region[s] = plan.region_of(keys[s]);
    });
    return region;
}

void EventLoop::build(const std::vector<Pending>& events, const Cells& cells) {
    build(events, cells, keys_of(cells, events.size()));
}

void EventLoop::build(const std::vector<Pending>& events, const Cells& cells, const std::vector<CellKey>& keys) {
    build(events, cells, keys, plan(cells, keys, [&](std::size_t s) { return events[s].time; }));
}

void EventLoop::build(const std::vector<Pending>& events, const Cells& cells, const std::vector<CellKey>& keys,
                      RegionPlan regions) {
    EventQueue queue;  // one part per region
    queue.build(events, regions_of(regions, keys), regions.count(), parallel_);
    region_loop_.prepare(regions, cells);
    shares_.planned(regions);
    regions_ = std::move(regions);
    queue_ = std::move(queue);
    serial_left_ = 0;
}

bool EventLoop::balance(const Cells& cells) {
    const std::size_t n = queue_.slots();
    if (!shares_.uneven(n)) return false;
    const std::vector<CellKey> keys = keys_of(cells, n);
    RegionPlan regions = plan(cells, keys, [&](std::size_t s) { return queue_.event(static_cast<std::uint32_t>(s)).time; });
    if (regions.count() < 2 || regions.count() != queue_.parts()) {  // the queue in other parts: built anew
        std::vector<Pending> events(n);
        parallel_.for_blocks(n, [&](std::size_t begin, std::size_t end) {
            for (std::size_t s = begin; s < end; ++s) events[s] = queue_.event(static_cast<std::uint32_t>(s));
        });
        build(events, cells, keys, std::move(regions));
        return true;
    }
    // The same parts, shares moved: only the entries of the balls between the old cuts and the new
    // change parts, and room for them is made before any does.
    const std::vector<std::uint32_t> region = regions_of(regions, keys);
    std::vector<std::uint32_t> moving;
    std::vector<std::size_t> into(regions.count(), 0);
    for (std::uint32_t s = 0; s < n; ++s)
        if (region[s] != queue_.part_of(s)) {
            moving.push_back(s);
            ++into[region[s]];
        }
    for (std::size_t part = 0; part < into.size(); ++part) queue_.reserve_front(part, into[part]);
    region_loop_.prepare(regions, cells);
    for (const std::uint32_t s : moving) queue_.update(s, queue_.event(s), region[s]);
    shares_.planned(regions);
    regions_ = std::move(regions);
    serial_left_ = 0;
    return true;
}

void EventLoop::took(std::uint64_t events, double seconds) {
    if (chose_ && regions_.count() > 1 && def_.regions_when_faster) choice_.measured(events, seconds);
    chose_ = true;
}

EventLoop::End EventLoop::run_until(double end, std::uint64_t budget) {
    // While balls roam, every crossing reads and writes the counts of blocks: serially.
    const bool may = regions_.count() > 1 && !response_.roaming();
    chose_ = chose_ && may;
    const std::uint64_t first = processed;
    for (;;) {
        const std::uint64_t left = budget == 0 ? 0 : budget - (processed - first);
        const bool regions = may && (choice_.regions() || !def_.regions_when_faster) &&
                             (budget == 0 || left >= kLeastRegionShare * regions_.count());
        if (regions && serial_left_ == 0) {
            RegionLoop::Counts counts;
            auto take = [&] {
                processed += counts.processed;
                in_regions += counts.processed;
                ++region_runs;
                region_span += counts.span;
                undone += counts.undone;
                region_interface += counts.interface;
                region_span_interface += counts.span_interface;
                region_seconds += counts.seconds;
                region_work_seconds += counts.busiest;
                measurements_.counts.cell_crossings += counts.crossings;
                if (counts.processed > 0) last_processed = std::max(last_processed, counts.last);
            };
            RegionLoop::End why;
            try {
                why = region_loop_.run(end, left, interrupt, measurements_, def_.event_record_limit, woken, counts);
            } catch (...) {
                take();
                throw;
            }
            take();
            // Measured only with regions_when_faster: without it the shares stay even.
            if (def_.regions_when_faster) shares_.ran(region_loop_.work(), counts.processed);
            if (why == RegionLoop::End::Reached) return End::Reached;
            if (why == RegionLoop::End::Interrupted) return End::Interrupted;
            if (why == RegionLoop::End::Serial) serial_left_ = kSerialRun;
            // A stop undoes every event past the earliest one a region has left. When that is more
            // than the run kept (at the budget: a region ran its share while another had not
            // begun), as many events go serially: the work stays within twice the events kept,
            // and a run that kept nothing cannot repeat.
            if (counts.undone > counts.processed) serial_left_ = std::max(kSerialRun, counts.undone);
            continue;  // what is left of the budget, or past the event regions cannot process, serially
        }
        const std::uint64_t most = regions ? serial_left_ : 0, before = processed;
        serial_left_ = 0;
        const End ended = run_serially(end, left, most);
        if (ended != End::Reached || !regions || processed - before < most) return ended;
    }
}

EventLoop::End EventLoop::run_serially(double end, std::uint64_t budget, std::uint64_t most) {
    Outcome single;  // undoable: an event that fails (out of memory) is undone
    const std::uint64_t first = processed;
    while (!queue_.empty()) {
        const std::uint32_t s = queue_.top();
        const Pending event = queue_.event(s);
        if (!(event.time <= end)) break;
        const std::uint64_t done = processed - first;
        if (budget != 0 && done >= budget) return End::Budget;
        if (most != 0 && done >= most) return End::Reached;
        if (interrupt && interrupt->load(std::memory_order_relaxed)) return End::Interrupted;
        response_.prefetch_next(queue_, queue_.part_of(s));
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
    if (out.collided) {
        measurements_.room_for(1, def_.event_record_limit);  // the record first: should it fail, nothing is counted
        measurements_.count(out.event, out.virial, out.overlap, def_.event_record_limit);
    }
    if (out.crossing) measurements_.count_crossing();
    ++processed;
    last_processed = out.time;
}

void EventLoop::append(std::uint32_t s, const Pending& event) {
    queue_.append(s, event, regions_.count() == 1 ? 0 : regions_.region_of(cells_.key(s)));
}

void EventLoop::repredict(std::span<const std::uint32_t> slots, double now, Predictor& predictor) {
    predicted_.resize(slots.size());
    parallel_.for_shares(slots.size(), kPredictionsPerShare, [&](std::size_t, std::size_t begin, std::size_t end) {
        for (std::size_t k = begin; k < end; ++k) predicted_[k] = predictor.predict(slots[k], now);
    });
    for (std::size_t k = 0; k < slots.size(); ++k) requeue(slots[k], predicted_[k]);
}

void EventLoop::requeue(std::uint32_t s, const Pending& event) {
    if (regions_.count() == 1) return queue_.update(s, event);
    const std::uint32_t region = regions_.region_of(cells_.key(s));
    if (region == queue_.part_of(s)) queue_.update(s, event);
    else queue_.update(s, event, region);
}

}  // namespace ballistic::detail
