// Ballistic — the event loop: the queue of earliest events and the responses (a ball's next
// event is the predictor's, predictor.hpp).
#include "response.hpp"
#include "world_impl.hpp"

#include <algorithm>
#include <cassert>
#include <limits>

namespace ballistic {

using detail::CellKey;
using detail::Kind;
using detail::Pending;

std::uint32_t World::Impl::rest_for(Supports& supports) {
    return detail::rest_for(balls.rests, supports, def.gravity, statics.planes());
}

void World::Impl::prepare_awakening(Awakening& a, Vec3 gravity, const std::vector<PlaneDef>& planes,
                                    std::int32_t removed) const {
    // The same supports, awake, under this gravity and these planes: every entry again.
    a.fresh.reset(gravity);
    a.now.resize(balls.rests.size());
    const auto moved = static_cast<std::int32_t>(planes.size());  // the last plane's old index, after a removal
    for (std::uint32_t k = 0; k < a.now.size(); ++k) {
        Supports sup = balls.rests[k].supports;
        if (removed != detail::kNoSupport)
            for (std::int32_t& s : sup) s = s == removed ? detail::kNoSupport : (s == moved ? removed : s);
        const Vec3 acceleration = detail::acceleration_for(sup, gravity, planes);
        a.now[k] = a.fresh.intern(sup, false, acceleration);
    }
}

void World::Impl::commit_awakening(Awakening& a) noexcept {
    for (std::uint32_t s = 0; s < balls.size(); ++s) {
        if (balls.asleep(s)) ++balls.counter[s];  // woken: predictions of it are stale
        balls.rest[s] = a.now[balls.rest[s]];
    }
    balls.rests.swap(a.fresh);
    events_valid = false;
}

void World::Impl::release_supports(std::uint32_t s) {
    // After an impulse: a ball given a real normal velocity leaves that plane (moving into it, it
    // meets the plane again at once and settles or bounces); rounding noise is removed.
    Supports sup = balls.supports(s);
    bool changed = false;
    for (auto& k : sup) {
        if (k == detail::kNoSupport) continue;
        const Vec3 v = balls.velocity(s);
        const double vn = dot(v, statics.planes()[static_cast<std::size_t>(k)].normal);
        if (detail::off_plane(vn, v, def.rest_speed)) {
            k = detail::kNoSupport;
            changed = true;
        }
    }
    if (changed) balls.rest[s] = rest_for(sup);
    balls.set_velocity(s, detail::along_supports(sup, balls.velocity(s), statics.planes()));
}

// ---------------------------------------------------------------------------------------------
// Cells and queue construction

void World::Impl::rebuild_grid(double radius) {
    if (balls.size() == 0) {  // no width to give the cells: add_balls() makes them with the first ball
        grid_valid = false;
        events_valid = false;
        return;
    }
    grid.configure(cell_width_for(radius), def.periodic, balls.size());
    std::vector<CellKey> keys(balls.size());
    parallel.for_blocks(balls.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) keys[s] = grid.key_of(balls.position(s));
    });
    fit_grid(keys);
    grid.assign(keys, parallel);
    grid_valid = true;
    events_valid = false;  // pending cell crossings refer to the old cells
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

void World::Impl::fit_grid(const std::vector<CellKey>& keys) {
    if (keys.empty() || def.periodic) return;
    // The block of every ball, or, when a few balls far out would make it too large, of all but
    // the outermost thousandth on each side.
    const auto [lowest, highest] = key_block(keys);
    if (grid.fit_dense(lowest, highest)) return;
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
    grid.fit_dense(lo, hi);
}

void World::Impl::rebuild_events() {
    for (std::uint32_t s = 0; s < balls.size(); ++s) balls.advance(s, time);
    rebuild_grid(max_radius);
    sleep_islands(time);  // a loaded pile at rest sleeps before it costs an event
    contacts.assign(balls.size(), detail::Contact{});
    std::vector<Pending> events(balls.size());
    parallel.for_blocks(balls.size(), [&](std::size_t begin, std::size_t end) {
        for (std::size_t s = begin; s < end; ++s) events[s] = predictor.predict(static_cast<std::uint32_t>(s), time);
    });
    build_queue(events);
    events_valid = true;
}

// ---------------------------------------------------------------------------------------------
// Sleeping, where it meets the event loop (the rules and the state: sleep.hpp).

void World::Impl::sleep_islands(double now) {
    if (!grid_valid) return;
    sleep.settle(now, [&](std::span<const std::uint32_t> members) {
        if (events_valid)
            for (const std::uint32_t s : members) requeue(s, predictor.predict(s, now));
    });
}

void World::Impl::wake_all() {
    Awakening awakening;
    prepare_awakening(awakening, def.gravity, statics.planes());
    commit_awakening(awakening);
}

void World::Impl::wake_resting(std::uint32_t s, std::uint32_t k, double now, detail::Outcome& out) {
    save(s, out);
    save(k, out);
    sleep.wake(k, now);
    out.queue(s, predictor.predict(s, now));
    out.queue(k, predictor.predict(k, now));
}

// ---------------------------------------------------------------------------------------------
// The loop. Processing an event is split in two: compute() does the physics on the balls the
// event touches (saving their old state), moves a crossing ball to its new cell and predicts the
// next events; commit() applies what is shared (queue, counters, the event list). Serially the
// two follow each other. With several threads, run_batch() (parallel_events.cpp) computes batches
// of the earliest events in parallel and commits them in order, so that every committed event is
// exactly the event the serial loop would process next, computed from the same bits: the result
// is the same for any thread count.

World::Impl::RunEnd World::Impl::run_until(double end, std::uint64_t budget) {
    const bool batched = slabs.count() > 1;
    // A batch commits at most this many events: with fewer left in the budget the loop goes on
    // serially, so that the budget ends the step at the same event for every thread count.
    const std::uint64_t largest_batch = slabs.count() * detail::Batch::kMaxSize;
    detail::Outcome single;
    single.undoable = false;
    const std::uint64_t first = processed;
    while (!queue.empty()) {
        const std::uint32_t s = queue.top();
        const Pending event = queue.event(s);
        if (!(event.time <= end)) break;
        const std::uint64_t done = processed - first;
        if (budget != 0 && done >= budget) return RunEnd::Budget;
        if (interrupt && interrupt->load(std::memory_order_relaxed)) return RunEnd::Interrupted;
        if (batched && (budget == 0 || budget - done > largest_batch) && run_batch(end)) continue;
        compute(s, event, single);
        commit(single);
    }
    return RunEnd::Reached;
}

void World::Impl::compute(std::uint32_t s, const Pending& event, detail::Outcome& out) {
    out.clear();
    const double now = event.time;
    out.time = now;
    // The predictions read the balls' cells last; their loads start now, beside the state's.
    grid.prefetch(s);
    if (event.kind == Kind::BallBall) grid.prefetch(event.other);
    switch (event.kind) {
        case Kind::BallBall:
        case Kind::Wake:
            assert(contacts[s].event.kind == event.kind && contacts[s].event.other == event.other);
            if (balls.counter[event.other] != contacts[s].other_counter) {
                save(s, out);  // the partner moved on: lazy invalidation
                out.queue(s, predictor.predict(s, now));
                return;
            }
            if (event.kind == Kind::Wake) wake_resting(s, event.other, now, out);
            else collide_balls(s, event.other, now, out);
            return;
        case Kind::BallPlane: collide_plane(s, event.other, now, out); return;
        case Kind::BallCylinder: collide_cylinder(s, event.other, now, out); return;
        case Kind::Crossing:
            // Moving the ball between the cell lists comes first: load its state meanwhile.
            balls.prefetch_motion(s);
            __builtin_prefetch(&contacts[s]);
            cross_cell(s, event.other, now, out);
            return;
        case Kind::None: return;
    }
}

void World::Impl::save(std::uint32_t s, detail::Outcome& out) const {
    if (!out.undoable) return;
    out.saved[static_cast<std::size_t>(out.n_saved++)] = {s,
                                                          balls.position(s),
                                                          balls.velocity(s),
                                                          balls.t[s],
                                                          balls.counter[s],
                                                          balls.rest[s],
                                                          balls.quiet_since[s],
                                                          balls.quiet_events[s],
                                                          balls.instant[s],
                                                          contacts[s]};
}

void World::Impl::undo(const detail::Outcome& out) {
    if (out.crossing) grid.move(out.saved[0].slot, out.old_key);
    for (int k = out.n_saved; k-- > 0;) {
        const detail::Outcome::Saved& old = out.saved[static_cast<std::size_t>(k)];
        balls.set_position(old.slot, old.position);
        balls.set_velocity(old.slot, old.velocity);
        balls.t[old.slot] = old.t;
        balls.counter[old.slot] = old.counter;
        balls.rest[old.slot] = old.rest;
        balls.quiet_since[old.slot] = old.quiet_since;
        balls.quiet_events[old.slot] = old.quiet_events;
        balls.instant[old.slot] = old.instant;
        contacts[old.slot] = old.contact;
    }
}

void World::Impl::commit(const detail::Outcome& out) {
    record(out);
    for (int k = 0; k < out.n_requeue; ++k)
        requeue(out.requeue[static_cast<std::size_t>(k)], out.next[static_cast<std::size_t>(k)]);
}

void World::Impl::record(const detail::Outcome& out) {
    ++processed;
    last_processed = out.time;
    if (out.crossing) measurements.count_crossing();
    if (out.collided) measurements.count(out.event, out.virial, out.overlap, def.event_record_limit);
}

void World::Impl::requeue(std::uint32_t s, const Pending& event) {
    if (slabs.count() == 1) return queue.update(s, event);
    const std::uint32_t slab = slabs.slab_of(grid.key(s));
    if (slab == queue.part_of(s)) queue.update(s, event);
    else queue.update(s, event, slab);
}

void World::Impl::cross_cell(std::uint32_t i, std::uint32_t face, double now, detail::Outcome& out) {
    save(i, out);
    Vec3 shift;
    out.crossing = true;
    out.old_key = grid.key(i);
    out.new_key = grid.across(out.old_key, static_cast<int>(face), shift);
    grid.move(i, out.new_key);
    if (shift == Vec3{}) {
        out.queue(i, predictor.predict_entering(i, now, out.new_key, static_cast<int>(face)));
    } else {  // a periodic wrap: the contact was found from the other side of the box
        balls.set_position(i, balls.position(i) + shift);
        out.queue(i, predictor.predict(i, now, out.new_key));
    }
}

bool World::Impl::meet(std::uint32_t i, double now, detail::Outcome& out) {
    save(i, out);
    const bool same_instant = balls.t[i] == now;
    balls.advance(i, now);
    return same_instant;
}

void World::Impl::collide_balls(std::uint32_t i, std::uint32_t j, double now, detail::Outcome& out) {
    const bool same_instant[2] = {meet(i, now, out), meet(j, now, out)};
    const Vec3 dp = min_image(balls.position(j) - balls.position(i));
    const Vec3 dv = balls.velocity(j) - balls.velocity(i);
    const double d = length(dp);
    const double u = -dot(dp, dv) / d;  // same sign as the kernel's gap derivative
    // A sleeping ball (at most one: two cannot approach) stays asleep under a slow impact, which
    // the sleeping pile carries as an immovable ball; a faster one wakes it, and it takes the
    // impact with its true mass.
    bool woke_j = false;
    if (balls.asleep(i) || balls.asleep(j)) {
        const std::uint32_t k = balls.asleep(i) ? i : j;
        if (!(u <= def.sleep_speed)) {  // it moves: it is not quiet until it has been slow again
            sleep.wake(k, now);
            balls.quiet_since[k] = now;
            balls.quiet_events[k] = 0;
            woke_j = k == j;
        }
    }
    const bool pressed = dot(dp, balls.acceleration(j) - balls.acceleration(i)) < 0.0;
    const bool carried = balls.asleep(i) || balls.asleep(j);
    const double s = detail::separation_speed(u, pressed, def.restitution, def.rest_speed, carried);
    const double wi = balls.asleep(i) ? 0.0 : balls.inv_mass[i], wj = balls.asleep(j) ? 0.0 : balls.inv_mass[j];
    if (!(u + s > 0.0) || !(d > 0.0)) {  // grazing by rounding: no contact after all
        out.queue(i, predictor.predict(i, now));
        if (woke_j) out.queue(j, predictor.predict(j, now));
        return;
    }
    const Vec3 n = dp / d;
    const double J = (u + s) / (wi + wj);
    for (const auto& [ball, sign] : {std::pair{i, -1.0}, std::pair{j, 1.0}}) {
        if (balls.asleep(ball)) continue;
        balls.set_velocity(ball, balls.velocity(ball) + n * (sign * J * balls.inv_mass[ball]));
        release_supports(ball);
        ++balls.counter[ball];
        sleep.note_quiet(ball, u, now, same_instant[ball == j]);
        sleep.try_sleep(ball, now);
    }
    out.collided = true;
    out.virial = J * d;
    out.overlap = balls.radius[i] + balls.radius[j] - d;
    out.event = {now, EventKind::BallBall, balls.id[i], balls.id[j], 0, balls.position(i) + n * balls.radius[i], n, J};
    out.queue(i, predictor.predict(i, now));
    out.queue(j, predictor.predict(j, now));
}

void World::Impl::collide_plane(std::uint32_t i, std::uint32_t k, double now, detail::Outcome& out) {
    const bool same_instant = meet(i, now, out);
    const PlaneDef& plane = statics.planes()[k];
    const Vec3 n = plane.normal;
    const Vec3 v = balls.velocity(i);
    const double u = -dot(v, n);
    const bool pressed = dot(balls.acceleration(i), n) < 0.0;
    const double mass = 1.0 / balls.inv_mass[i];
    double J;
    if (pressed && u < def.rest_speed) {
        // Settle: the ball rests on the plane (and on the planes it already rested on) and
        // slides under the rest of its acceleration. Its velocity loses every component into the
        // supports, a perfectly inelastic contact at a speed below rest_speed.
        Supports sup = balls.supports(i);
        auto free = std::find(sup.begin(), sup.end(), detail::kNoSupport);
        if (free != sup.end()) *free = static_cast<std::int32_t>(k);
        balls.rest[i] = rest_for(sup);
        balls.set_velocity(i, detail::along_supports(sup, v - n * dot(v, n), statics.planes()));
        J = mass * u;
    } else if (u > 0.0) {
        const double s = detail::separation_speed(u, false, def.restitution, def.rest_speed);
        balls.set_velocity(i, v + n * (u + s));
        J = mass * (u + s);
        release_supports(i);
    } else {
        out.queue(i, predictor.predict(i, now));
        return;
    }
    const double gap = detail::height(plane, balls.position(i));
    static_collided(i, u, now, same_instant,
                    {now, EventKind::BallPlane, balls.id[i], BallId{}, k, balls.position(i) - n * gap, -n, J},
                    balls.radius[i] - gap, out);
}

void World::Impl::static_collided(std::uint32_t i, double approach, double now, bool same_instant,
                                  const CollisionEvent& event, double overlap, detail::Outcome& out) {
    ++balls.counter[i];
    sleep.note_quiet(i, approach, now, same_instant);
    sleep.try_sleep(i, now);
    out.collided = true;
    out.overlap = overlap;
    out.event = event;
    out.queue(i, predictor.predict(i, now));
}

void World::Impl::collide_cylinder(std::uint32_t i, std::uint32_t k, double now, detail::Outcome& out) {
    const bool same_instant = meet(i, now, out);
    const CylinderDef& c = statics.cylinders()[k];
    auto across = [&](Vec3 w) { return detail::across(c, w); };
    const Vec3 w = detail::from_axis(c, balls.position(i));  // from the axis to the centre
    const Vec3 v = balls.velocity(i);
    const double d = length(w);
    const double u = -dot(w, across(v)) / d;
    const bool pressed = dot(w, across(balls.acceleration(i))) < 0.0;
    const double s = detail::separation_speed(u, pressed, def.restitution, def.rest_speed);
    if (!(u + s > 0.0) || !(d > 0.0)) {
        out.queue(i, predictor.predict(i, now));
        return;
    }
    const Vec3 n = w / d;
    const double J = (u + s) / balls.inv_mass[i];
    balls.set_velocity(i, v + n * (u + s));
    release_supports(i);
    static_collided(i, u, now, same_instant,
                    {now, EventKind::BallCylinder, balls.id[i], BallId{}, k, balls.position(i) - n * (d - c.radius), -n, J},
                    c.radius + balls.radius[i] - d, out);
}

}  // namespace ballistic
