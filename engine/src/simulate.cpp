// Ballistic — what World::Impl does between the components (world_impl.hpp): the cells and the
// event queue built afresh, every ball woken at once, and sleeping where it meets the event loop
// (settled clusters predicted afresh).
#include "collision_rules.hpp"
#include "world_impl.hpp"

#include <algorithm>
#include <limits>

namespace ballistic {

using detail::CellKey;
using detail::Pending;

void World::Impl::prepare_awakening(Awakening& a, Vec3 gravity, const std::vector<PlaneDef>& planes,
                                    std::int32_t removed, bool off_faces) const {
    // The same supports, awake, under this gravity and these planes: every entry again.
    a.fresh.reset(gravity);
    a.now.resize(balls.rests.size());
    const auto moved = static_cast<std::int32_t>(planes.size());  // the last plane's old index, after a removal
    for (std::uint32_t k = 0; k < a.now.size(); ++k) {
        Supports sup = balls.rests[k].supports;
        if (removed != detail::kNoSupport)
            for (std::int32_t& s : sup) s = s == removed ? detail::kNoSupport : (s == moved ? removed : s);
        if (off_faces)
            for (std::int32_t& s : sup) s = detail::is_face(s) ? detail::kNoSupport : s;
        const Vec3 acceleration = detail::acceleration_for(sup, gravity, {planes, statics.blocks()});
        a.now[k] = a.fresh.intern(sup, false, acceleration);
    }
}

void World::Impl::commit_awakening(Awakening& a) noexcept {
    for (std::uint32_t s = 0; s < balls.size(); ++s) {
        if (balls.asleep(s)) ++balls.counter[s];  // woken: predictions of it are stale
        balls.rest[s] = a.now[balls.rest[s]];
        balls.hold_still(s, balls.position(s), time);  // what held it may be gone
    }
    balls.rests.swap(a.fresh);
    events_valid = false;
}

// ---------------------------------------------------------------------------------------------
// Cells and queue construction

void World::Impl::rebuild_grid(double radius) {
    if (balls.size() == 0) {  // no width to give the cells: add_balls() makes them with the first ball
        grid_valid = false;
        events_valid = false;
        return;
    }
    // Built aside: a failure leaves the cells as they were.
    detail::Grid fresh;
    fresh.configure(cell_width_for(radius), def.periodic, def.periodic_axes, balls.size());
    std::vector<CellKey> keys(balls.size());
    parallel.for_blocks(balls.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) keys[s] = fresh.key_of(balls.position(s));
    });
    fit_grid(fresh, keys);
    fresh.assign(keys, parallel);
    grid = std::move(fresh);
    grid_valid = true;
    events_valid = false;  // pending cell crossings refer to the old cells
}

void World::Impl::index_finite() {
    // Within reach of a ball of the largest radius, touching within the sleeping rules' gap
    // (at most 10⁻³ of its radius) included.
    if (grid_valid) statics.index_finite(grid, 1.01 * max_radius);
}

std::array<CellKey, 2> World::Impl::key_block(const std::vector<CellKey>& keys) {
    using Block = std::array<CellKey, 2>;
    constexpr std::int32_t kMax = std::numeric_limits<std::int32_t>::max();
    auto widen = [](const Block& a, const Block& b) {
        return Block{CellKey{std::min(a[0].x, b[0].x), std::min(a[0].y, b[0].y), std::min(a[0].z, b[0].z)},
                     CellKey{std::max(a[1].x, b[1].x), std::max(a[1].y, b[1].y), std::max(a[1].z, b[1].z)}};
    };
    return parallel.reduce(
        keys.size(), Block{CellKey{kMax, kMax, kMax}, CellKey{-kMax, -kMax, -kMax}},
        [&](std::size_t begin, std::size_t end) {
            Block block{keys[begin], keys[begin]};
            for (std::size_t s = begin + 1; s < end; ++s) block = widen(block, {keys[s], keys[s]});
            return block;
        },
        widen);
}

void World::Impl::fit_grid(detail::Grid& cells, const std::vector<CellKey>& keys) {
    if (keys.empty() || def.periodic) return;
    // The block of every ball, or, when a few balls far out would make it too large, of all but
    // the outermost thousandth on each side.
    const auto [lowest, highest] = key_block(keys);
    if (cells.fit_dense(lowest, highest)) return;
    const std::size_t trim = keys.size() / 1000;
    if (trim == 0) return;
    std::vector<CellKey> sorted = keys;
    CellKey lo, hi;
    for (int d = 0; d < 3; ++d) {
        auto by_axis = [d](const CellKey& a, const CellKey& b) { return a[d] < b[d]; };
        const auto first = sorted.begin() + static_cast<std::ptrdiff_t>(trim);
        const auto last = sorted.end() - 1 - static_cast<std::ptrdiff_t>(trim);
        std::nth_element(sorted.begin(), first, sorted.end(), by_axis);
        lo[d] = (*first)[d];
        std::nth_element(sorted.begin(), last, sorted.end(), by_axis);
        hi[d] = (*last)[d];
    }
    cells.fit_dense(lo, hi);
}

void World::Impl::rebuild_events() {
    // Each part either completes or leaves what it would change as it was; until the queue is
    // built, events_valid stays false and the world is consistent without them.
    for (std::uint32_t s = 0; s < balls.size(); ++s) balls.advance(s, time);
    rebuild_grid(max_radius);
    index_finite();
    sleep_islands(time);  // a loaded pile at rest sleeps before it costs an event
    std::vector<Pending> events(balls.size());
    contacts.assign(balls.size(), detail::Contact{});
    parallel.for_blocks(balls.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) events[s] = predictor.predict(static_cast<std::uint32_t>(s), time);
    });
    loop.build(events, grid);
    events_valid = true;
}

// ---------------------------------------------------------------------------------------------
// Sleeping, where it meets the event loop (the rules and the state: sleep.hpp).

std::size_t World::Impl::sleep_islands(double now) {
    if (!grid_valid) return 0;
    std::size_t fell = 0;
    sleep.settle(now, [&](std::span<const std::uint32_t> members) {
        fell += members.size();
        if (events_valid)
            for (const std::uint32_t s : members) loop.requeue(s, predictor.predict(s, now));
    });
    return fell;
}

void World::Impl::wake_all() {
    Awakening awakening;
    prepare_awakening(awakening, def.gravity, statics.planes());
    commit_awakening(awakening);
}

}  // namespace ballistic
