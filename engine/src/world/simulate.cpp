// Ballistic — what World::Impl does between the components (world_impl.hpp): the cells and the
// event queue built afresh, every ball woken at once, and sleeping where it meets the event loop
// (settled clusters predicted afresh).
#include "rules/collision_rules.hpp"
#include "world/world_impl.hpp"

#include <algorithm>
#include <array>
#include <cmath>
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
        balls.advance(s, time);  // its path so far under the acceleration it had
        balls.rest[s] = a.now[balls.rest[s]];
        balls.hold_still(s, balls.position(s), time);  // what held it may be gone
        balls.jam[s] = 0;
    }
    balls.rests.swap(a.fresh);
    events_valid = false;
}

// ---------------------------------------------------------------------------------------------
// Cells and queue construction

void World::Impl::rebuild_cells(double radius) {
    if (balls.size() == 0) {  // no width to give the cells: add_balls() makes them with the first ball
        cells_valid = false;
        events_valid = false;
        return;
    }
    // Built aside: a failure leaves the cells as they were.
    detail::Cells fresh;
    fresh.configure(widths.for_radius(radius), def.periodic, def.periodic_axes, balls.size());
    std::vector<CellKey> keys(balls.size());
    parallel.for_blocks(balls.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) keys[s] = fresh.key_of(balls.position_at(s, time));
    });
    fit_cells(fresh, keys);
    fresh.assign(keys, parallel);
    cells = std::move(fresh);
    cells_valid = true;
    events_valid = false;  // pending cell crossings refer to the old cells
}

void World::Impl::index_finite() {
    // Within reach of a ball of the largest radius, touching within the sleeping rules' gap
    // (at most 10⁻³ of its radius) included.
    if (cells_valid) statics.index_finite(cells, 1.01 * max_radius);
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

void World::Impl::fit_cells(detail::Cells& into, const std::vector<CellKey>& keys) {
    if (keys.empty() || def.periodic) return;
    // The block of every ball, or, when a few balls far out would make it too large, of all but
    // the outermost thousandth on each side, or when that is still too large the slab of it that
    // holds the most balls.
    const auto [lowest, highest] = key_block(keys);
    if (into.fit_dense(lowest, highest)) return;
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
    if (!into.fit_dense(lo, hi)) into.fit_dense_slab(keys, lo, hi);
}

void World::Impl::rebuild_events(bool within_step) {
    // Each part either completes or leaves what it would change as it was; until the queue is
    // built, events_valid stays false and the world is consistent without them.
    for (std::uint32_t s = 0; s < balls.size(); ++s) balls.advance_awake(s, time);
    rebuild_cells(max_radius);
    index_finite();
    // A pile loaded at rest sleeps before it costs an event; no history of its balls is known here.
    sleep_clusters(time, detail::Sleep::Within::StillDrift);
    std::vector<Pending> events(balls.size());
    predictor.forget_contacts(balls.size(), time, within_step);
    parallel.for_blocks(balls.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) events[s] = predictor.predict(static_cast<std::uint32_t>(s), time);
    });
    loop.build(events, cells);
    events_valid = true;
}

// ---------------------------------------------------------------------------------------------
// Sleeping, where it meets the event loop (the rules and the state: sleep.hpp).

std::size_t World::Impl::sleep_clusters(double now, detail::Sleep::Within within) {
    if (!cells_valid) return 0;
    std::size_t fell = 0;
    sleep.sleep_clusters(now, [&](std::span<const std::uint32_t> members) {
        fell += members.size();
        if (events_valid) loop.repredict(members, now, predictor);
    }, within);
    return fell;
}

void World::Impl::wake_all() {
    Awakening awakening;
    prepare_awakening(awakening, def.gravity, statics.planes());
    commit_awakening(awakening);
}

}  // namespace ballistic

// ---------------------------------------------------------------------------------------------
// Lone balls that roam (roaming.hpp)

namespace ballistic {

void World::Impl::start_roaming(double dt) {
    using detail::Roaming;
    const std::size_t n = balls.size();
    if (!events_valid || !cells_valid || !roams() || n <= 16) return;
    // About the cells the balls would cross in the step, at most (their speeds at the step's
    // start, from what balls() shows, summed along the axes; gravity for every ball): counting
    // the balls in blocks is worth it when they are many. The speeds are summed as the balls
    // are shown (show_balls()); after a change between steps, in one pass over three columns.
    if (!balls.view_speeds) {
        auto block = [&](std::size_t begin, std::size_t end) { return balls.view_speeds_of(begin, end); };
        balls.view_speeds = parallel.reduce_here(n, 0.0, block, std::plus<>());
    }
    const double speeds = *balls.view_speeds;
    const double crossings = (speeds * dt + static_cast<double>(n) * 0.5 * length(def.gravity) * dt * dt) / cells.min_width();
    if (!(crossings >= Roaming::kCrossingsPerBall * static_cast<double>(n))) return;
    // Worlds too small for the regions keep counting once no ball roams (a ball may start to
    // roam again); larger ones go back to the regions then.
    roaming.count(cells, n, n < def.parallel_events_min_balls);  // a failure ends the step, which clears it
    for (std::uint32_t s = 0; s < n && roaming.roamers().size() < Roaming::kMostRoamers; ++s) {
        if (balls.asleep(s)) continue;
        const int level = roaming.free_level(cells.key(s));
        if (level == 0) continue;
        roaming.set_level(s, level);
        loop.requeue(s, predictor.roam(s, time, cells.key(s), level));
    }
    if (roaming.roamers().empty()) roaming.clear();
}

void World::Impl::stop_roaming(double at) {
    while (!roaming.roamers().empty()) {
        const std::uint32_t r = roaming.roamers().front();
        const detail::CellKey key = response.roamer_cell(r, at);
        cells.move(r, key);
        roaming.set_level(r, 0);
        if (events_valid) loop.requeue(r, predictor.predict_around(r, at, key));
    }
    roaming.clear();
}

void World::Impl::roaming_added(std::uint32_t first) {
    if (!roaming.active() || !events_valid) return;
    roaming.added(cells, first, balls.size());
    for (std::uint32_t s = first; s < balls.size(); ++s)
        response.crowd_roamers(s, cells.key(s), time, [&](std::uint32_t r, const detail::Pending& next) { loop.requeue(r, next); });
    roaming.settle();
}

}  // namespace ballistic
