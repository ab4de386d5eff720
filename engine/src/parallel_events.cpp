// Ballistic — parallel event processing: batches of the earliest events, taken, computed and
// queued slab by slab in parallel and committed in the serial order (engine/README.md, "Parallel
// event processing").
#include "event_loop.hpp"

#include <algorithm>

namespace ballistic::detail {

// A slab's earliest events with what the batch needs to know of them: their cells, whether those
// and their neighbours are dense cells, whether they lie near a slab boundary.
void EventLoop::select_candidates(Batch::Slab& slab, std::size_t index, std::size_t count) {
    slab.more = queue_.smallest(index, count, slab.queued);
    // The cells of the candidates' balls sit at scattered slots: load them all at once.
    for (const auto& [s, event] : slab.queued) {
        __builtin_prefetch(&grid_.key(s));
        if (pairwise(event.kind)) __builtin_prefetch(&grid_.key(event.other));
    }
    slab.candidates.resize(slab.queued.size());
    for (std::size_t k = 0; k < slab.queued.size(); ++k) {
        const auto& [s, event] = slab.queued[k];
        Batch::Candidate& c = slab.candidates[k];
        c.slot = s;
        c.event = event;
        c.n_cells = 0;
        c.cells[c.n_cells++] = grid_.key(s);
        if (pairwise(event.kind)) c.cells[c.n_cells++] = grid_.key(event.other);
        if (event.kind == Kind::Crossing) {
            // The crossing ball joins its new cell and is predicted from there: that cell counts
            // too, or two balls crossing towards each other would each miss the other.
            Vec3 shift;
            c.cells[c.n_cells++] = grid_.across(c.cells[0], static_cast<int>(event.other), shift);
        }
        c.dense = true;
        for (int i = 0; i < c.n_cells; ++i) c.dense = c.dense && grid_.dense_near(c.cells[i]);
        // A Wake due later than its prediction may find its support cells away from the ball it
        // wakes (SleepRules::wake_time): then it ends the batch, as its balls are not neighbours.
        if (event.kind == Kind::Wake) c.dense = c.dense && grid_.distance(c.cells[0], c.cells[1]) <= 1;
        c.near = slabs_.near_boundary(c.cells[0], grid_);
        c.slab = slabs_.slab_of(c.cells[0]);
    }
}

// One batch: the leading run of the earliest events in which no event conflicts with an earlier
// event of another slab (two events conflict when cells of theirs are closer than
// kIndependentCells: an event reads the 27 cells around its balls' cells and writes only its balls
// and their cell lists). Events whose cells or neighbouring cells are hashed end the batch:
// hashed buckets are shared by distant cells. Each slab computes its events in order in one task,
// so events of one slab may depend on each other; events of different slabs never read what the
// other writes. Then the batch is committed in order, each event only while it is still the
// event the serial loop would process next: no committed event has produced an earlier one, and
// a leftover (below) really is one. The rest is undone, in reverse order, and comes back later.
// Last, each slab updates its part of the queue.
bool EventLoop::run_batch(double end) {
    using Candidate = Batch::Candidate;
    using Touch = Batch::Touch;
    Batch& b = batch_;
    const std::size_t slab_count = slabs_.count();
    b.slabs.resize(slab_count);
    const std::size_t per_slab = std::max(Batch::kMinSize, b.size / slab_count);
    parallel_.for_each(slab_count, [&](std::size_t r) { select_candidates(b.slabs[r], r, per_slab); });
    b.clear();
    // The merged order is only known up to the earliest last candidate of a slab that has more.
    const Candidate* limit = nullptr;
    for (const Batch::Slab& slab : b.slabs) {
        if (!slab.more) continue;
        const Candidate& last = slab.candidates.back();
        if (!limit || before(last.event, last.slot, limit->event, limit->slot)) limit = &last;
    }
    for (Batch::Slab& slab : b.slabs) slab.events.clear();
    std::vector<std::size_t>& at = b.merge_at;
    at.assign(slab_count, 0);
    bool out_of_candidates = false, ended = false;
    for (;;) {
        const Candidate* next = nullptr;
        std::size_t from = 0;
        for (std::size_t r = 0; r < slab_count; ++r) {
            if (at[r] == b.slabs[r].candidates.size()) continue;
            const Candidate& c = b.slabs[r].candidates[at[r]];
            if (!next || before(c.event, c.slot, next->event, next->slot)) {
                next = &c;
                from = r;
            }
        }
        if (!next || !(next->event.time <= end)) {
            ended = true;
            break;
        }
        if (limit && before(limit->event, limit->slot, next->event, next->slot)) {
            out_of_candidates = true;
            break;
        }
        ++at[from];
        const Candidate& c = *next;
        const auto index = static_cast<std::uint32_t>(b.events.size());
        const Touch& first = b.touch(c.slot, index);
        if (first.event != index) {
            // An earlier event of the batch touches this ball. A collision sits in both balls'
            // slots, and committing the first copy replaces the second: then it is no event of
            // the serial sequence at all. The commit checks that it was replaced.
            b.events.push_back({&c, true, first.event});
            continue;
        }
        if (!c.dense) break;
        if (c.near) {
            bool fits = true;
            for (const Batch::BoundaryCell& other : b.boundary)
                for (int i = 0; i < c.n_cells && fits; ++i)
                    fits = other.slab == c.slab || grid_.distance(c.cells[i], other.cell) >= kIndependentCells;
            if (!fits) break;
            for (int i = 0; i < c.n_cells; ++i) b.boundary.push_back({c.cells[i], c.slab});
        }
        if (pairwise(c.event.kind)) b.touch(c.event.other, index);
        b.events.push_back({&c, false, 0});
        b.slabs[c.slab].events.push_back(index);
    }
    const std::size_t n = b.events.size();
    if (n < 2) {
        b.paced(0, ended);
        return false;
    }

    if (b.outcomes.size() < n) b.outcomes.resize(n);
    b.computed.assign(n, 0);
    // Should an event fail (out of memory), every event of the batch from `from` on is undone, in
    // reverse order (undo() of an outcome never computed does nothing), and the queue is rebuilt
    // (World::step).
    for (std::size_t k = 0; k < n; ++k) b.outcomes[k].clear();
    auto undo_from = [&](std::size_t from) {
        for (std::size_t u = n; u-- > from;)
            if (!b.events[u].leftover) response_.undo(b.outcomes[u]);
    };
    try {
        parallel_.for_each(slab_count, [&](std::size_t r) {
            // A slab stops at its first event that an earlier event of the slab has overtaken: the
            // commit stops there anyway.
            Earliest earliest;
            for (const std::uint32_t k : b.slabs[r].events) {
                const Candidate& c = *b.events[k].candidate;
                if (earliest.precedes(c.event, c.slot)) break;
                Outcome& out = b.outcomes[k];
                response_.compute(c.slot, c.event, out);
                queue_.warm(r);  // the next take moves the next buckets of this slab's part into its front
                b.computed[k] = 1;
                for (int i = 0; i < out.n_requeue; ++i)
                    earliest.lower(out.next[static_cast<std::size_t>(i)], out.requeue[static_cast<std::size_t>(i)]);
            }
        });
    } catch (...) {
        undo_from(0);
        throw;
    }

    Earliest earliest_new;  // earliest event produced by the committed part of the batch
    std::size_t k = 0;
    for (; k < n; ++k) {
        const Batch::Event& e = b.events[k];
        const Candidate& c = *e.candidate;
        if (earliest_new.precedes(c.event, c.slot)) break;
        if (e.leftover) {
            const Outcome& by = b.outcomes[e.toucher];
            const auto* requeued = by.requeue.begin() + by.n_requeue;
            if (std::find(by.requeue.begin(), requeued, c.slot) == requeued) break;  // still pending
            continue;
        }
        if (!b.computed[k]) break;
        const Outcome& out = b.outcomes[k];
        try {
            record(out);
        } catch (...) {
            undo_from(k);
            throw;
        }
        ++batched;
        for (int i = 0; i < out.n_requeue; ++i) {
            const std::uint32_t slot = out.requeue[static_cast<std::size_t>(i)];
            const Pending& next = out.next[static_cast<std::size_t>(i)];
            earliest_new.lower(next, slot);
            Touch& t = b.touch(slot, 0);
            t.requeued = true;
            t.next = next;
        }
    }
    std::size_t undone = 0;
    for (std::size_t u = n; u-- > k;) {
        if (b.events[u].leftover || !b.computed[u]) continue;
        response_.undo(b.outcomes[u]);
        ++undone;
    }

    // The queue learns the committed balls' final events: in their slab's part, by that slab's task, or,
    // for a ball that changed slabs, here.
    for (Batch::Slab& slab : b.slabs) slab.updates.clear();
    b.moves.clear();
    for (const std::uint32_t i : b.touched_at) {
        const Touch& t = b.touched[i];
        if (!t.requeued) continue;
        const std::uint32_t slab = queue_.part_of(t.slot);
        if (slabs_.slab_of(grid_.key(t.slot)) == slab) b.slabs[slab].updates.push_back(i);
        else b.moves.push_back(i);
    }
    parallel_.for_each(slab_count, [&](std::size_t r) {
        for (const std::uint32_t i : b.slabs[r].updates) queue_.update(b.touched[i].slot, b.touched[i].next);
    });
    for (const std::uint32_t i : b.moves) requeue(b.touched[i].slot, b.touched[i].next);

    // Batches grow while nearly all of them commits, and shrink when much is undone or less than
    // half commits (most of the rest was never computed: its slab stopped at an overtaken event).
    if (8 * undone > n || 2 * k < n) b.size = std::max(Batch::kMinSize, b.size / 2);
    else if (out_of_candidates) b.size = std::min(Batch::kMaxSize, 2 * b.size);
    b.paced(k, ended && k == n);
    return true;
}

}  // namespace ballistic::detail
