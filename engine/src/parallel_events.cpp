// Ballistic — parallel event processing: batches of the earliest events, taken, computed and
// queued slab by slab in parallel and committed in the serial order (engine/README.md, "Parallel
// event processing").
#include "world_impl.hpp"

#include <algorithm>

namespace ballistic {

using detail::CellKey;
using detail::Kind;
using detail::Pending;

void World::Impl::plan_regions() {
    regions = 1;
    region_bounds.clear();
    if (parallel.concurrency() < 2 || balls.size() == 0 || balls.size() < def.parallel_events_min_balls) return;
    int axis = 0;
    for (int d = 1; d < 3; ++d)
        if (grid.dense_cells(d) > grid.dense_cells(axis)) axis = d;
    const std::int64_t cells = grid.dense_cells(axis);
    const std::int64_t slab_count = std::min<std::int64_t>(parallel.concurrency(), cells / kMinSlabCells);
    if (slab_count < 2) return;
    region_axis = axis;
    // Slabs holding equal numbers of balls, each at least kMinSlabCells thick.
    const std::int64_t lo = grid.dense_lo(axis);
    std::vector<std::uint32_t> count(static_cast<std::size_t>(cells), 0);
    std::uint64_t total = 0;
    for (std::uint32_t s = 0; s < balls.size(); ++s) {
        const std::int64_t k = grid.key(s)[axis] - lo;
        if (k >= 0 && k < cells) {
            ++count[static_cast<std::size_t>(k)];
            ++total;
        }
    }
    std::uint64_t seen = 0;
    std::int64_t cell = 0, previous = 0;
    for (std::int64_t r = 1; r < slab_count; ++r) {
        while (cell < cells && seen * static_cast<std::uint64_t>(slab_count) < static_cast<std::uint64_t>(r) * total)
            seen += count[static_cast<std::size_t>(cell++)];
        previous = std::clamp(cell, previous + kMinSlabCells, cells - (slab_count - r) * kMinSlabCells);
        region_bounds.push_back(lo + previous);
    }
    regions = static_cast<std::size_t>(slab_count);
}

void World::Impl::build_queue(const std::vector<Pending>& events) {
    plan_regions();
    std::vector<std::uint32_t> part;
    if (regions > 1) {
        part.resize(balls.size());
        parallel.for_blocks(balls.size(), [&](std::size_t begin, std::size_t end) {
            for (std::size_t s = begin; s < end; ++s) part[s] = region_of(grid.key(static_cast<std::uint32_t>(s)));
        });
    }
    queue.build(events, part, regions, parallel);
}

std::uint32_t World::Impl::region_of(const CellKey& key) const {
    std::uint32_t region = 0;
    for (const std::int64_t bound : region_bounds) region += key[region_axis] >= bound;
    return region;
}

bool World::Impl::near_region_boundary(const CellKey& key) const {
    const std::int64_t k = key[region_axis];
    for (const std::int64_t bound : region_bounds)
        if (k >= bound - kBoundaryReach && k < bound + kBoundaryReach) return true;
    if (!grid.periodic()) return false;
    // The last slab of a periodic box meets the first one across the wrap.
    const std::int64_t lo = grid.dense_lo(region_axis), n = grid.dense_cells(region_axis);
    return k < lo + kBoundaryReach || k >= lo + n - kBoundaryReach;
}

World::Impl::Touch& World::Impl::touch(std::uint32_t slot, std::uint32_t event) {
    for (std::size_t i = (slot * 0x9E3779B1u) & (kTouchCapacity - 1);; i = (i + 1) & (kTouchCapacity - 1)) {
        Touch& t = batch_touched[i];
        if (t.slot == slot) return t;
        if (t.slot == ~0u) {
            t = {slot, event, false, {}};
            batch_touched_at.push_back(static_cast<std::uint32_t>(i));
            return t;
        }
    }
}

// A slab's earliest events with what the batch needs to know of them: their cells, whether those
// and their neighbours are dense cells, whether they lie near a slab boundary.
void World::Impl::select_candidates(Slab& slab, std::size_t region, std::size_t count) {
    slab.more = queue.smallest(region, count, slab.queued);
    // The cells of the candidates' balls sit at scattered slots: load them all at once.
    for (const auto& [s, event] : slab.queued) {
        __builtin_prefetch(&grid.key(s));
        if (detail::pairwise(event.kind)) __builtin_prefetch(&grid.key(event.other));
    }
    slab.candidates.resize(slab.queued.size());
    for (std::size_t k = 0; k < slab.queued.size(); ++k) {
        const auto& [s, event] = slab.queued[k];
        Candidate& c = slab.candidates[k];
        c.slot = s;
        c.event = event;
        c.n_cells = 0;
        c.cells[c.n_cells++] = grid.key(s);
        if (detail::pairwise(event.kind)) c.cells[c.n_cells++] = grid.key(event.other);
        if (event.kind == Kind::Crossing) {
            // The crossing ball joins its new cell and is predicted from there: that cell counts
            // too, or two balls crossing towards each other would each miss the other.
            Vec3 shift;
            c.cells[c.n_cells++] = grid.across(c.cells[0], static_cast<int>(event.other), shift);
        }
        c.dense = true;
        for (int i = 0; i < c.n_cells; ++i) c.dense = c.dense && grid.dense_near(c.cells[i]);
        c.near = near_region_boundary(c.cells[0]);
        c.region = region_of(c.cells[0]);
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
bool World::Impl::run_batch(double end) {
    slabs.resize(regions);
    const std::size_t per_slab = std::max(kMinBatch, batch_size / regions);
    parallel.for_each(regions, [&](std::size_t r) { select_candidates(slabs[r], r, per_slab); });

    if (batch_touched.empty()) batch_touched.resize(kTouchCapacity);
    for (const std::uint32_t i : batch_touched_at) batch_touched[i] = Touch{};
    batch_touched_at.clear();
    batch_events.clear();
    batch_boundary.clear();
    // The merged order is only known up to the earliest last candidate of a slab that has more.
    const Candidate* limit = nullptr;
    for (const Slab& slab : slabs) {
        if (!slab.more) continue;
        const Candidate& last = slab.candidates.back();
        if (!limit || detail::before(last.event, last.slot, limit->event, limit->slot)) limit = &last;
    }
    for (Slab& slab : slabs) slab.events.clear();
    std::vector<std::size_t>& at = batch_merge_at;
    at.assign(regions, 0);
    bool out_of_candidates = false;
    for (;;) {
        const Candidate* next = nullptr;
        std::size_t from = 0;
        for (std::size_t r = 0; r < regions; ++r) {
            if (at[r] == slabs[r].candidates.size()) continue;
            const Candidate& c = slabs[r].candidates[at[r]];
            if (!next || detail::before(c.event, c.slot, next->event, next->slot)) {
                next = &c;
                from = r;
            }
        }
        if (!next || !(next->event.time <= end)) break;
        if (limit && detail::before(limit->event, limit->slot, next->event, next->slot)) {
            out_of_candidates = true;
            break;
        }
        ++at[from];
        const Candidate& c = *next;
        const auto index = static_cast<std::uint32_t>(batch_events.size());
        const Touch& first = touch(c.slot, index);
        if (first.event != index) {
            // An earlier event of the batch touches this ball. A collision sits in both balls'
            // slots, and committing the first copy replaces the second: then it is no event of
            // the serial sequence at all. The commit checks that it was replaced.
            batch_events.push_back({&c, true, first.event});
            continue;
        }
        if (!c.dense) break;
        if (c.near) {
            bool fits = true;
            for (const BoundaryCell& other : batch_boundary)
                for (int i = 0; i < c.n_cells && fits; ++i)
                    fits = other.region == c.region || grid.distance(c.cells[i], other.cell) >= kIndependentCells;
            if (!fits) break;
            for (int i = 0; i < c.n_cells; ++i) batch_boundary.push_back({c.cells[i], c.region});
        }
        if (detail::pairwise(c.event.kind)) touch(c.event.other, index);
        batch_events.push_back({&c, false, 0});
        slabs[c.region].events.push_back(index);
    }
    const std::size_t n = batch_events.size();
    if (n < 2) return false;

    if (batch_outcomes.size() < n) batch_outcomes.resize(n);
    batch_computed.assign(n, 0);
    parallel.for_each(regions, [&](std::size_t r) {
        // A slab stops at its first event that an earlier event of the slab has overtaken: the
        // commit stops there anyway.
        Pending earliest;
        std::uint32_t earliest_slot = 0;
        for (const std::uint32_t k : slabs[r].events) {
            const Candidate& c = *batch_events[k].candidate;
            if (detail::before(earliest, earliest_slot, c.event, c.slot)) break;
            detail::Outcome& out = batch_outcomes[k];
            compute(c.slot, c.event, out);
            queue.warm(r);  // the next take moves the next buckets of this part into its front
            batch_computed[k] = 1;
            for (int i = 0; i < out.n_requeue; ++i) {
                const std::uint32_t slot = out.requeue[static_cast<std::size_t>(i)];
                const Pending& next = out.next[static_cast<std::size_t>(i)];
                if (detail::before(next, slot, earliest, earliest_slot)) {
                    earliest = next;
                    earliest_slot = slot;
                }
            }
        }
    });

    Pending earliest_new;  // earliest event produced by the committed part of the batch
    std::uint32_t earliest_slot = 0;
    std::size_t k = 0;
    for (; k < n; ++k) {
        const BatchEvent& e = batch_events[k];
        const Candidate& c = *e.candidate;
        if (detail::before(earliest_new, earliest_slot, c.event, c.slot)) break;
        if (e.leftover) {
            const detail::Outcome& by = batch_outcomes[e.toucher];
            const auto* requeued = by.requeue.begin() + by.n_requeue;
            if (std::find(by.requeue.begin(), requeued, c.slot) == requeued) break;  // still pending
            continue;
        }
        if (!batch_computed[k]) break;
        const detail::Outcome& out = batch_outcomes[k];
        record(out);
        for (int i = 0; i < out.n_requeue; ++i) {
            const std::uint32_t slot = out.requeue[static_cast<std::size_t>(i)];
            const Pending& next = out.next[static_cast<std::size_t>(i)];
            if (detail::before(next, slot, earliest_new, earliest_slot)) {
                earliest_new = next;
                earliest_slot = slot;
            }
            Touch& t = touch(slot, 0);
            t.requeued = true;
            t.next = next;
        }
    }
    std::size_t undone = 0;
    for (std::size_t u = n; u-- > k;) {
        if (batch_events[u].leftover || !batch_computed[u]) continue;
        undo(batch_outcomes[u]);
        ++undone;
    }

    // The queue learns the committed balls' final events: in their part, by that part's task, or,
    // for a ball that changed slabs, here.
    for (Slab& slab : slabs) slab.updates.clear();
    batch_moves.clear();
    for (const std::uint32_t i : batch_touched_at) {
        const Touch& t = batch_touched[i];
        if (!t.requeued) continue;
        const std::uint32_t part = queue.part_of(t.slot);
        if (region_of(grid.key(t.slot)) == part) slabs[part].updates.push_back(i);
        else batch_moves.push_back(i);
    }
    parallel.for_each(regions, [&](std::size_t r) {
        for (const std::uint32_t i : slabs[r].updates) queue.update(batch_touched[i].slot, batch_touched[i].next);
    });
    for (const std::uint32_t i : batch_moves) requeue(batch_touched[i].slot, batch_touched[i].next);

    // Batches grow while nearly all of them commits, and shrink when much is undone.
    if (8 * undone > n) batch_size = std::max(kMinBatch, batch_size / 2);
    else if (out_of_candidates) batch_size = std::min(kMaxBatch, 2 * batch_size);
    return true;
}

}  // namespace ballistic
