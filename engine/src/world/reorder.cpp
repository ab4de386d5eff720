// Ballistic — memory locality: ball storage is periodically re-sorted along a Morton
// (Z-order) curve of the balls' cells, so that the neighbours a prediction reads share cache
// lines (event-driven codes are memory bound; docs/architecture.md, "Memory").
#include "world/world_impl.hpp"


namespace ballistic {

namespace {

// Spreads the low 21 bits of v so that two zero bits separate each.
std::uint64_t spread(std::uint64_t v) {
    v &= 0x1fffff;
    v = (v | v << 32) & 0x1f00000000ffffull;
    v = (v | v << 16) & 0x1f0000ff0000ffull;
    v = (v | v << 8) & 0x100f00f00f00f00full;
    v = (v | v << 4) & 0x10c30c30c30c30c3ull;
    v = (v | v << 2) & 0x1249249249249249ull;
    return v;
}

}  // namespace

void World::Impl::reorder(Resort resort) {
    const std::size_t n = balls.size();
    if (n < 2) return;
    // Every ball keeps the cell its crossings have tracked (recomputing it from the stored
    // position could disagree at a face by rounding).
    std::vector<detail::CellKey> old_keys(n);
    parallel.for_blocks(n, [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) old_keys[s] = cells.key(static_cast<std::uint32_t>(s));
    });
    const bool sort = resort == Resort::Slots;
    std::vector<std::uint32_t> order;  // new slot -> old slot, when sorted
    if (sort) {
        const detail::CellKey lowest = key_block(old_keys)[0];
        // (Morton code, slot): unique keys, so any sort gives the same order.
        std::vector<std::pair<std::uint64_t, std::uint32_t>> keyed(n);
        parallel.for_blocks(n, [&](std::size_t begin, std::size_t end) {
            for (std::size_t s = begin; s < end; ++s) {
                const detail::CellKey& k = old_keys[s];
                const std::uint64_t code = spread(static_cast<std::uint64_t>(k.x - lowest.x)) |
                                           spread(static_cast<std::uint64_t>(k.y - lowest.y)) << 1 |
                                           spread(static_cast<std::uint64_t>(k.z - lowest.z)) << 2;
                keyed[s] = {code, static_cast<std::uint32_t>(s)};
            }
        });
        parallel.sort(keyed);
        order.resize(n);
        parallel.for_blocks(n, [&](std::size_t begin, std::size_t end) {
            for (std::size_t s = begin; s < end; ++s) order[s] = keyed[s].second;
        });
    }
    auto from = [&](std::size_t s) { return sort ? order[s] : static_cast<std::uint32_t>(s); };
    // Everything that may fail (allocations) comes first and changes nothing; then the balls
    // move, which cannot fail: a failure leaves the world as it was.
    std::vector<std::uint64_t> scratch(order.size());
    // Trajectories do not change, so the cells, contacts and pending events stay right: they move
    // with their balls (a partner's slot renumbered).
    std::vector<std::uint32_t> slot_now(order.size());  // old slot -> new slot
    std::vector<detail::CellKey> keys(n);
    parallel.for_blocks(n, [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) {
            if (sort) slot_now[order[s]] = static_cast<std::uint32_t>(s);
            keys[s] = old_keys[from(s)];
        }
    });
    detail::Cells sorted;
    sorted.configure(cells.min_width(), def.periodic, def.periodic_axes, n);
    fit_cells(sorted, keys);
    sorted.assign(keys, parallel);
    if (!events_valid) {  // rebuild_events() comes next
        if (sort) move_balls(order, scratch);
        cells = std::move(sorted);
        return;
    }
    auto renumber = [&](detail::Pending& e) {
        if (sort && detail::pairwise(e.kind)) e.other = slot_now[e.other];
    };
    detail::Column<detail::Contact> moved(order.size());
    std::vector<detail::Pending> events(n);
    parallel.for_blocks(n, [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) {
            if (sort) {
                moved[s] = contacts[order[s]];
                renumber(moved[s].event);
            }
            events[s] = loop.pending(from(s));
            renumber(events[s]);
        }
    });
    loop.build(events, sorted, keys);  // the last that may fail; the queue takes the new slots
    if (sort) {
        move_balls(order, scratch);
        contacts = std::move(moved);
    }
    cells = std::move(sorted);
}

void World::Impl::move_balls(const std::vector<std::uint32_t>& order, std::vector<std::uint64_t>& scratch) {
    balls.permute(order, scratch, parallel);
    parallel.for_blocks(order.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) handles.moved(balls.id[s], static_cast<std::uint32_t>(s));
    });
}

}  // namespace ballistic
