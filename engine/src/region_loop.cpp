// Ballistic — regions with their own event loops (region_loop.hpp).
#include "region_loop.hpp"

#include "measurements.hpp"
#include "parallel.hpp"
#include "response.hpp"

#include <algorithm>
#include <immintrin.h>

namespace ballistic::detail {

namespace {

constexpr std::uint64_t kNever = ~std::uint64_t{0};
// Reach of an event, in cells, within which another region's events may touch what it touches:
// its balls lie within one cell of its own ball's (two at an instant when one of them crosses a
// face), an event reads the cells around its balls', and another region's balls lie within one
// cell of that region.
constexpr int kReach = 3;
// A region that waits spins this many times before it leaves its task (the driver starts it again).
constexpr std::uint32_t kSpins = 1u << 16;
// A region forgets the events every region has passed once this many events since the last time.
constexpr std::uint64_t kForgetEvery = 64;

void pause() { _mm_pause(); }

}  // namespace

void RegionLoop::prepare(const RegionPlan& plan) {
    plan_ = plan;
    const std::size_t n = plan.count();
    if (floors_.size() != n) {
        floors_ = std::vector<Floor>(n);
        mail_ = std::vector<Mailbox>(n);
        regions_ = std::vector<Region>(n);
    }
}

EventKey RegionLoop::floor_of(std::uint32_t r) const {
    const Floor& f = floors_[r];
    for (;;) {
        const std::uint32_t s1 = f.seq.load(std::memory_order_acquire);
        if (s1 & 1u) {
            pause();
            continue;
        }
        const EventKey key{f.time.load(std::memory_order_relaxed), f.rest.load(std::memory_order_relaxed)};
        std::atomic_thread_fence(std::memory_order_acquire);
        if (f.seq.load(std::memory_order_relaxed) == s1) return key;
    }
}

void RegionLoop::publish(std::uint32_t r, const EventKey& key) {
    Floor& f = floors_[r];
    const std::uint32_t s = f.seq.load(std::memory_order_relaxed);
    if (f.time.load(std::memory_order_relaxed) == key.time && f.rest.load(std::memory_order_relaxed) == key.rest) return;
    f.seq.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    f.time.store(key.time, std::memory_order_relaxed);
    f.rest.store(key.rest, std::memory_order_relaxed);
    f.seq.store(s + 2, std::memory_order_release);
}

bool RegionLoop::ready(RegionSet regions, const EventKey& key) const {
    for (; regions != 0; regions &= regions - 1) {
        const auto b = static_cast<std::uint32_t>(std::countr_zero(regions));
        // The messages first: a region that takes one publishes its new floor before it lets the
        // message's time go.
        if (mail_[b].inbound.load(std::memory_order_seq_cst) <= key.time) return false;
        if (!(key < floor_of(b))) return false;
    }
    return true;
}

EventKey RegionLoop::top_key(std::uint32_t r, std::uint32_t& slot, Pending& event) {
    if (mail_[r].inbound.load(std::memory_order_acquire) != kNever) drain(r);
    EventKey key;
    if (queue_.top_of(r, slot)) {
        event = queue_.event(slot);
        key = EventKey::of(event, slot);
    } else {
        event = Pending{};
    }
    publish(r, key);
    return key;
}

bool RegionLoop::drain(std::uint32_t r) {
    Mailbox& box = mail_[r];
    Region& g = regions_[r];
    const std::uint64_t seen = box.inbound.load(std::memory_order_acquire);
    {
        const std::lock_guard lock(box.lock);
        g.incoming.swap(box.messages);
    }
    const bool any = !g.incoming.empty();
    for (const Message& m : g.incoming) {
        if (queue_.part_of(m.slot) == EventQueue::kNoPart) queue_.attach(m.slot, m.event, r);
        else queue_.update(m.slot, m.event);
    }
    g.incoming.clear();
    // The new floor is out before the messages' time goes (ready() reads them in that order).
    std::uint32_t slot;
    publish(r, queue_.top_of(r, slot) ? EventKey::of(queue_.event(slot), slot) : EventKey{});
    std::uint64_t expected = seen;
    box.inbound.compare_exchange_strong(expected, kNever, std::memory_order_seq_cst);
    return any;
}

void RegionLoop::send(std::uint32_t to, std::uint32_t slot, const Pending& event) {
    Mailbox& box = mail_[to];
    {
        const std::lock_guard lock(box.lock);
        box.messages.push_back({slot, event});
    }
    const std::uint64_t t = EventKey::time_bits(event.time);
    std::uint64_t seen = box.inbound.load(std::memory_order_relaxed);
    while (t < seen && !box.inbound.compare_exchange_weak(seen, t, std::memory_order_seq_cst)) {}
}

RegionSet RegionLoop::waits_for(std::uint32_t r, std::uint32_t slot, const Pending& event) const {
    const CellKey& cell = grid_.key(slot);
    const RegionSet everyone = (plan_.count() == 64 ? ~RegionSet{0} : (RegionSet{1} << plan_.count()) - 1) & ~(RegionSet{1} << r);
    if (!grid_.dense_near(cell)) return everyone;
    RegionSet set = plan_.near(cell, r, kReach);
    if (pairwise(event.kind)) {
        // The partner's counter tells whether the event is stale: its region must have passed
        // the event, wherever the partner has gone since the event was predicted.
        const std::uint32_t p = queue_.part_of_now(event.other);
        if (p == EventQueue::kNoPart) return everyone;  // on its way to another region
        if (p != r) set |= RegionSet{1} << p;
    }
    return set;
}

void RegionLoop::forget_final(std::uint32_t r) {
    EventKey final;
    for (std::uint32_t b = 0; b < plan_.count(); ++b) {
        const std::uint64_t inbound = mail_[b].inbound.load(std::memory_order_seq_cst);
        const EventKey floor = floor_of(b);
        if (inbound <= floor.time) final = std::min(final, EventKey{inbound, 0});
        else final = std::min(final, floor);
    }
    Region& g = regions_[r];
    while (!g.log.empty() && g.log.front().key < final) {
        g.counts.last = std::max(g.counts.last, g.log.front().out.time);
        g.log.pop_front();
    }
}

void RegionLoop::request_stop(const EventKey& key, End why) {
    const std::lock_guard lock(stop_lock_);
    // An interruption or a failure outranks a limit, which outranks an event too far apart.
    if (why == End::Interrupted || why_ == End::Reached || (why == End::Limit && why_ == End::Apart)) why_ = why;
    const std::uint64_t t = stop_time_.load(std::memory_order_relaxed);
    stop_time_.store(std::min(t, key.time), std::memory_order_seq_cst);
}

RegionLoop::Step RegionLoop::run_region(std::uint32_t r, double end, std::uint64_t limit,
                                        const std::atomic<bool>* interrupt) {
    Region& g = regions_[r];
    Mailbox& box = mail_[r];
    box.active.store(true, std::memory_order_seq_cst);
    struct Leave {
        Mailbox& box;
        ~Leave() { box.active.store(false, std::memory_order_seq_cst); }
    } leave{box};
    std::uint64_t since_forget = 0;
    try {
        for (;;) {
            if (stop_time_.load(std::memory_order_relaxed) != kNever) return Step::Parked;
            std::uint32_t s = 0;
            Pending event;
            const EventKey key = top_key(r, s, event);
            if (!(event.time <= end)) {
                g.done = true;
                return Step::Done;
            }
            g.done = false;
            if (limit != 0 && g.run_processed >= limit) {
                request_stop(key, End::Limit);
                return Step::Parked;
            }
            if (interrupt && interrupt->load(std::memory_order_relaxed)) {
                request_stop(key, End::Interrupted);
                return Step::Parked;
            }
            RegionSet wait = waits_for(r, s, event);
            if (wait != 0 && !ready(wait, key)) {
                // Its own mail may bring an earlier event; a neighbour whose loop is not running
                // cannot move on: then the task ends, and the driver starts it again.
                bool go_on = false;
                for (std::uint32_t spin = 0; !go_on; ++spin) {
                    if (stop_time_.load(std::memory_order_relaxed) != kNever) return Step::Parked;
                    if (box.inbound.load(std::memory_order_acquire) != kNever) break;  // mail: look again
                    if (ready(wait, key)) {
                        go_on = true;
                        break;
                    }
                    for (RegionSet w = wait; w != 0; w &= w - 1)
                        if (!mail_[static_cast<std::size_t>(std::countr_zero(w))].active.load(std::memory_order_seq_cst))
                            return Step::Blocked;
                    if (spin == kSpins) return Step::Blocked;
                    pause();
                }
                if (!go_on) continue;
            }
            if (pairwise(event.kind)) {
                // The partner may have moved to another region meanwhile: that one must have
                // passed the event too.
                const RegionSet again = waits_for(r, s, event);
                if ((again & ~wait) != 0) continue;
                // Not stale and more than a cell apart: it would touch what another region's
                // events may touch without their waiting for it. Serially, then.
                if (!response_.stale(s, event) && grid_.distance(grid_.key(s), grid_.key(event.other)) > 1) {
                    request_stop(key, End::Apart);
                    return Step::Parked;
                }
            }
            Logged& logged = g.log.emplace_back();
            logged.key = key;
            Outcome& out = logged.out;
            out.clear();
            std::vector<Origin>& origins = *origins_;
            const std::uint64_t id = std::uint64_t{r} << 56 | (g.ids++ & ((std::uint64_t{1} << 56) - 1));
            try {
                response_.compute(s, event, out);
                const std::uint64_t parent = origins[s].time == key.time ? origins[s].id : kNoParent;
                bool creates = false;  // an event at this instant
                for (int k = 0; k < out.n_requeue; ++k) creates |= out.next[static_cast<std::size_t>(k)].time == event.time;
                if (out.collided || parent != kNoParent || creates)
                    g.records.push_back({key, id, parent, out.collided, out.event, out.virial, out.overlap});
                if (out.woken != Outcome::kNoBall && def_.sleep_interval > 0.0) g.woken.emplace_back(key, out.woken);
            } catch (...) {
                response_.undo(out);
                g.log.pop_back();
                throw;
            }
            ++g.run_processed;
            ++g.counts.processed;
            if (out.crossing) ++g.counts.crossings;
            for (int k = 0; k < out.n_requeue; ++k) {
                const std::uint32_t slot = out.requeue[static_cast<std::size_t>(k)];
                const Pending& next = out.next[static_cast<std::size_t>(k)];
                const std::uint32_t part = queue_.part_of(slot);
                logged.previous[static_cast<std::size_t>(k)] = queue_.event(slot);
                logged.part[static_cast<std::size_t>(k)] = part;
                logged.origin[static_cast<std::size_t>(k)] = origins[slot];
                if (next.time == event.time) origins[slot] = {key.time, id};
                const std::uint32_t to = plan_.region_of(grid_.key(slot));
                if (part != r) {
                    send(part, slot, next);  // a neighbour's ball
                } else if (to == r) {
                    queue_.update(slot, next);
                } else {  // crossed into another region
                    queue_.detach(slot);
                    send(to, slot, next);
                }
            }
            queue_.warm(r);
            if (++since_forget == kForgetEvery) {
                since_forget = 0;
                forget_final(r);
            }
        }
    } catch (...) {
        // Out of memory: the queue may be left half-changed, and is built again (World::step).
        {
            const std::lock_guard lock(stop_lock_);
            if (!error_) error_ = std::current_exception();
        }
        request_stop(floor_of(r), End::Interrupted);
        return Step::Parked;
    }
}

void RegionLoop::undo(Logged& logged, bool queue) {
    Outcome& out = logged.out;
    response_.undo(out);
    for (int k = out.n_requeue; k-- > 0;) (*origins_)[out.requeue[static_cast<std::size_t>(k)]] = logged.origin[static_cast<std::size_t>(k)];
    if (!queue) return;
    for (int k = out.n_requeue; k-- > 0;) {
        const auto i = static_cast<std::size_t>(k);
        const std::uint32_t slot = out.requeue[i], part = logged.part[i];
        const std::uint32_t now = queue_.part_of(slot);
        if (now == EventQueue::kNoPart) queue_.attach(slot, logged.previous[i], part);
        else if (now == part) queue_.update(slot, logged.previous[i]);
        else queue_.update(slot, logged.previous[i], part);
    }
}

void RegionLoop::undo_to_prefix() {
    const std::size_t n = plan_.count();
    // After a failure the queue is built again: only the balls are put back, and the messages on
    // their way count by their times.
    const bool queue = !error_;
    EventKey prefix;
    for (std::uint32_t r = 0; r < n; ++r) {
        if (queue) drain(r);
        const std::uint64_t inbound = mail_[r].inbound.load();
        prefix = std::min(prefix, inbound != kNever ? EventKey{inbound, 0} : floor_of(r));
        if (inbound != kNever) prefix = std::min(prefix, floor_of(r));
    }
    // Every logged event at or after the prefix, the latest first across the regions. A region's
    // log is in the order it processed its events, which is not always theirs: a neighbour's
    // message may bring an event earlier than some it has processed (they touch nothing the same).
    struct Entry {
        EventKey key;
        Region* region;
        std::size_t index;
    };
    std::vector<Entry> late;
    for (Region& g : regions_)
        for (std::size_t k = 0; k < g.log.size(); ++k)
            if (!(g.log[k].key < prefix)) late.push_back({g.log[k].key, &g, k});
    std::sort(late.begin(), late.end(), [](const Entry& a, const Entry& b) { return b.key < a.key; });
    for (const Entry& e : late) {
        Logged& logged = e.region->log[e.index];
        undo(logged, queue);
        --e.region->run_processed;
        --e.region->counts.processed;
        if (logged.out.crossing) --e.region->counts.crossings;
    }
    for (Region& g : regions_)
        std::erase_if(g.log, [&](const Logged& logged) { return !(logged.key < prefix); });
    for (Region& g : regions_) {
        std::erase_if(g.records, [&](const Processed& c) { return !(c.key < prefix); });
        std::erase_if(g.woken, [&](const auto& w) { return !(w.first < prefix); });
    }
    if (!queue) return;
    for (std::uint32_t r = 0; r < n; ++r) {
        std::uint32_t slot;
        publish(r, queue_.top_of(r, slot) ? EventKey::of(queue_.event(slot), slot) : EventKey{});
    }
}

RegionLoop::End RegionLoop::run(double end, std::uint64_t limit, const std::atomic<bool>* interrupt,
                                Measurements& measurements, std::size_t record_limit, std::vector<Origin>& origins,
                                std::vector<std::uint32_t>& woken, Counts& counts) {
    origins_ = &origins;
    const auto n = static_cast<std::uint32_t>(plan_.count());
    const std::uint64_t cap = limit == 0 ? 0 : limit / n;  // so that together they never pass it
    stop_time_.store(kNever);
    why_ = End::Reached;
    error_ = nullptr;
    for (std::uint32_t r = 0; r < n; ++r) {
        Region& g = regions_[r];
        g.run_processed = 0;
        g.counts = {};
        g.done = false;
        mail_[r].inbound.store(kNever);
        std::uint32_t slot;
        publish(r, queue_.top_of(r, slot) ? EventKey::of(queue_.event(slot), slot) : EventKey{});
    }
    std::vector<Step> steps(n);
    for (;;) {
        parallel_.for_each(n, [&](std::size_t r) { steps[r] = run_region(static_cast<std::uint32_t>(r), end, cap, interrupt); });
        if (stop_time_.load() != kNever) break;
        bool all_done = true;
        for (std::uint32_t r = 0; r < n; ++r)
            all_done = all_done && steps[r] == Step::Done && mail_[r].inbound.load() == kNever;
        if (all_done) break;
    }
    End why = End::Reached;
    if (stop_time_.load() != kNever) {
        why = why_;
        undo_to_prefix();
    }
    // What the regions did, counted first: should the lists below fail to grow, the caller knows
    // where the world stands, and only the measurements miss this run's collisions.
    for (Region& g : regions_) {
        counts.processed += g.counts.processed;
        counts.crossings += g.counts.crossings;
        counts.last = std::max(counts.last, g.counts.last);
        for (const Logged& logged : g.log) counts.last = std::max(counts.last, logged.out.time);
        g.log.clear();
    }
    try {
        processed_.clear();
        for (Region& g : regions_) {
            processed_.insert(processed_.end(), g.records.begin(), g.records.end());
            for (const auto& w : g.woken) woken.push_back(w.second);
            g.records.clear();
            g.woken.clear();
        }
        serial_order(processed_);
        measurements.room_for(processed_.size(), record_limit);
        for (const Processed& c : processed_)
            if (c.collision) measurements.count(c.event, c.virial, c.overlap, record_limit);
    } catch (...) {
        for (Region& g : regions_) {
            g.records.clear();
            g.woken.clear();
        }
        throw;
    }
    if (error_) std::rethrow_exception(error_);
    return why;
}

}  // namespace ballistic::detail
