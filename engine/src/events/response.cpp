// Ballistic — the response: processing one event on the balls it touches (response.hpp).
#include "events/response.hpp"

#include <algorithm>
#include <array>
#include <cassert>
#include <limits>
#include <span>

namespace ballistic::detail {

// ---------------------------------------------------------------------------------------------
// Response: processing an event on the balls it touches. compute() does the physics, saving the
// balls' old state first, moves a crossing ball to its new cell and
// predicts the next events; the commit (world_impl.hpp) applies what is shared.

void Response::compute(std::uint32_t s, const Pending& event, Outcome& out) {
    out.clear();
    const double now = event.time;
    out.time = now;
    // The predictions read the balls' cells last; their loads start now, beside the state's.
    cells_.prefetch(s);
    if (event.kind == Kind::BallBall) cells_.prefetch(event.other);
    switch (event.kind) {
        case Kind::BallBall:
        case Kind::Wake:
            assert(contacts_[s].event.kind == event.kind && contacts_[s].event.other == event.other);
            if (stale(s, event)) {
                save(s, out);  // the partner moved on: lazy invalidation
                out.queue(s, predictor_.predict(s, now));
                return;
            }
            if (event.kind == Kind::Wake) return wake_resting(s, event.other, now, out);
            return collide(s, event, now, out);
        case Kind::BallPlane:
        case Kind::BallCylinder:
        case Kind::BallCapsule:
        case Kind::BallBlock: return collide(s, event, now, out);
        case Kind::Crossing:
            // Moving the ball between the cell lists comes first: load its state meanwhile.
            balls_.prefetch_motion(s);
            prefetch(&contacts_[s]);
            cross_cell(s, event.other, now, out);
            return;
        case Kind::None: return;
    }
}

void Response::collide(std::uint32_t s, const Pending& event, double now, Outcome& out) {
    Impacts impacts;
    switch (event.kind) {
        case Kind::BallBall: collide_balls(s, event.other, now, out, impacts); break;
        case Kind::BallPlane: collide_plane(s, event.other, now, out, impacts); break;
        case Kind::BallCylinder: collide_cylinder(s, event.other, now, out, impacts); break;
        case Kind::BallCapsule: collide_finite(s, {false, event.other}, now, out, impacts); break;
        case Kind::BallBlock: collide_finite(s, {true, event.other}, now, out, impacts); break;
        default: return;  // compute() sends collisions only
    }
    after_response(impacts, now, out);
}

void Response::after_response(const Impacts& impacts, double now, Outcome& out) {
    // Where no ball can jam, none can sleep either: an elastic world skips the phase.
    const int hits = sleep_.jams() ? impacts.n_hits : 0;
    for (int k = 0; k < hits; ++k) {
        const Impacts::Hit& hit = impacts.hits[static_cast<std::size_t>(k)];
        sleep_.note_quiet(hit.ball, hit.approach, now, hit.jammed, hit.wedged);
        sleep_.sleep_if_carried(hit.ball, now, hit.partner, hit.push);
    }
    for (int k = 0; k < impacts.n_predicted; ++k) {
        const std::uint32_t ball = impacts.predicted[static_cast<std::size_t>(k)];
        out.queue(ball, predictor_.predict(ball, now));
    }
}

void Response::save(std::uint32_t s, Outcome& out) const {
    Outcome::Saved& saved = out.saved[static_cast<std::size_t>(out.n_saved++)];
    saved.slot = s;
    saved.position = balls_.position(s);
    saved.velocity = balls_.velocity(s);
    saved.t = balls_.t[s];
    saved.counter = balls_.counter[s];
    saved.rest = balls_.rest[s];
    saved.contact = contacts_[s];
    saved.trajectory = true;
    // Where no jam can stop a ball, only waking a sleeping one writes its quiet history: an
    // elastic world leaves three columns alone.
    saved.quiet = sleep_.jams() || balls_.asleep(s);
    if (!saved.quiet) return;
    saved.quiet_since = balls_.quiet_since[s];
    saved.quiet_events = balls_.quiet_events[s];
    saved.jam = balls_.jam[s];
}

void Response::save_contact(std::uint32_t s, Outcome& out) const {
    Outcome::Saved& saved = out.saved[static_cast<std::size_t>(out.n_saved++)];
    saved.slot = s;
    saved.contact = contacts_[s];
    saved.trajectory = saved.quiet = false;
}

void Response::undo(const Outcome& out) {
    if (out.crossing && out.dense) cells_.put_back(out.saved[0].slot, out.old_key, out.before);
    else if (out.crossing) cells_.move(out.saved[0].slot, out.old_key);
    if (out.counted) {  // serially, while balls roam
        roaming_->moved(out.new_key, out.old_key);
        roaming_->set_level(out.saved[0].slot, out.old_level);
    }
    for (int k = out.n_saved; k-- > 0;) {
        const Outcome::Saved& old = out.saved[static_cast<std::size_t>(k)];
        contacts_[old.slot] = old.contact;
        if (!old.trajectory) continue;
        balls_.set_position(old.slot, old.position);
        balls_.set_velocity(old.slot, old.velocity);
        balls_.set_time(old.slot, old.t);
        balls_.set_counter(old.slot, old.counter);
        balls_.rest[old.slot] = old.rest;
        if (!old.quiet) continue;
        balls_.quiet_since[old.slot] = old.quiet_since;
        balls_.quiet_events[old.slot] = old.quiet_events;
        balls_.jam[old.slot] = old.jam;
    }
}

void Response::release_supports(std::uint32_t s) {
    // After an impulse: a ball given a real normal velocity leaves that plane (moving into it, it
    // meets the plane again at once and settles or bounces); rounding noise is removed.
    if (balls_.rest[s] == RestTable::kNone) return;  // on nothing
    Supports sup = balls_.supports(s);
    bool changed = false;
    for (auto& k : sup) {
        if (k == kNoSupport) continue;
        const Vec3 v = balls_.velocity(s);
        const double vn = dot(v, statics_.supports()[k].normal);
        if (off_plane(vn, v, def_.rest_speed)) {
            k = kNoSupport;
            changed = true;
        }
    }
    if (changed) balls_.rest[s] = rest_for(sup);
    balls_.set_velocity(s, along_supports(sup, balls_.velocity(s), statics_.supports()));
}

Leaving Response::leave_immovables(std::uint32_t i, double now, Vec3 v, std::uint32_t hit, Vec3 n, double speed,
                                   const Vec3* before) const {
    std::array<Sleep::Immovable, Sleep::kMaxContacts> touching;
    // After a settle only a sleeping ball in contact calls for more (the statics are looked at
    // only then).
    const double slower_than = before ? std::numeric_limits<double>::infinity() : def_.rest_speed;
    const std::size_t found = sleep_.touching_immovables(i, now, hit, v, slower_than, hit == kFixed, touching);
    std::array<Vec3, Sleep::kMaxContacts + 1> normals;
    std::array<double, Sleep::kMaxContacts + 1> speeds;
    std::size_t m = 0;
    if (hit != kFixed) {
        normals[m] = n;
        speeds[m++] = speed;
    }
    bool sleeping = hit != kFixed;
    for (std::size_t k = 0; k < found; ++k) {
        const Sleep::Immovable& c = touching[k];
        normals[m] = c.n;
        speeds[m++] = c.ball ? kLeastLeaving * def_.rest_speed : 0.0;
        sleeping = sleeping || c.ball;
    }
    if (!sleeping || m == 1) return {v};
    if (!before) return leaving(v, normals.data(), speeds.data(), m);
    // A carried impact at several contacts at once, with Poisson's restitution: the perfectly
    // inelastic impact with all of them from before it (with the friction of the one hit), that
    // impulse again times the restitution, and whatever then still moves into one of them taken
    // out. The first step keeps the speed along the contacts and the second gives back e² of the
    // rest of the energy at most, so the ball never comes off faster than it came; restitution
    // targets per contact (Newton's) can (Sleep.ACarriedImpactIntoTwoContactsNeverSpeedsTheBallUp).
    // The ball hit is left like the others, and at rest_speed when acceleration presses the
    // ball into it, as alone (separation_speed()).
    const Vec3 start = v - n * dot(v - *before, n);
    const Vec3 stopped = leaving(start, normals.data(), nullptr, m).v;
    speeds[0] = std::max(pressed_speed(i, hit, -n), kLeastLeaving * def_.rest_speed);
    return leaving(stopped + (stopped - start) * def_.restitution, normals.data(), speeds.data(), m);
}

Vec3 Response::carried_impulse(std::uint32_t i, std::uint32_t j, Vec3 dp, Vec3 dv, double u, bool on_j) const {
    const Vec3 n = dp / length(dp);
    const double s = separation_speed(u, pressed_speed(i, j, n), def_.restitution, def_.rest_speed, true, faster(i, j));
    Vec3 impulse = n * (u + s);
    if (def_.friction > 0.0) impulse -= friction_change(dv, n, def_.friction * (u + s));  // as collide_balls()
    return on_j ? impulse : -impulse;
}

Vec3 Response::bounce(Vec3 v, Vec3 n, double u, double s) const {
    if (!(def_.friction > 0.0)) return v + n * (u + s);
    return after_friction(v + n * u, def_.friction * (u + s)) + n * s;  // v + n u: v along the contact
}

void Response::cross_cell(std::uint32_t i, std::uint32_t face, double now, Outcome& out) {
    const bool counting = roaming();
    if (counting && roaming_->level(i) > 0) [[unlikely]]
        return roam_on(i, face, now, out);
    Vec3 shift;
    out.old_key = cells_.key(i);
    out.new_key = cells_.across(out.old_key, static_cast<int>(face), shift);
    if (shift == Vec3{}) save_contact(i, out);
    else save(i, out);  // a periodic wrap moves it
    out.dense = cells_.dense(out.old_key) && cells_.dense(out.new_key);
    if (out.dense) out.before = cells_.move_dense(i, out.new_key);
    else cells_.move(i, out.new_key);  // as it was if it fails
    out.crossing = true;
    if (counting) [[unlikely]] {
        roaming_->moved(out.old_key, out.new_key);
        out.counted = true;
        out.old_level = 0;
        // Into another block, alone: it roams from here.
        if (!(Roaming::block(out.old_key, 1) == Roaming::block(out.new_key, 1)) && !balls_.asleep(i) &&
            roaming_->roamers().size() < Roaming::kMostRoamers) {
            if (const int level = roaming_->free_level(out.new_key); level > 0) {
                roaming_->set_level(i, level);
                out.queue(i, predictor_.roam(i, now, out.new_key, level));
                return;
            }
        }
    }
    if (shift == Vec3{}) {
        out.queue(i, predictor_.predict_entering(i, now, out.new_key, static_cast<int>(face)));
    } else {  // a periodic wrap: the contact was found from the other side of the box
        balls_.set_position(i, balls_.position(i) + shift);
        out.queue(i, predictor_.predict(i, now, out.new_key));
    }
}

void Response::roam_on(std::uint32_t i, std::uint32_t face, double now, Outcome& out) {
    save(i, out);
    const int level = roaming_->level(i);
    out.old_key = cells_.key(i);
    out.new_key = Roaming::entered(out.old_key, static_cast<int>(face), level, cells_.key_of(predictor_.motion(i, now).p));
    cells_.move(i, out.new_key);  // as it was if it fails
    out.crossing = true;
    roaming_->moved(out.old_key, out.new_key);
    out.counted = true;
    out.old_level = level;
    out.queue(i, roam_or_land(i, now, out.new_key));
}

Pending Response::roam_or_land(std::uint32_t i, double now, const CellKey& key) {
    // Its trajectory has not changed: its contact with the statics stays, as at a crossing of a
    // cell, and so do the bits of the events it holds.
    const int level = roaming_->free_level(key);
    roaming_->set_level(i, level);
    return level > 0 ? predictor_.roam(i, now, key, level) : predictor_.predict_around(i, now, key);
}

Pending Response::land(std::uint32_t r, double now) {
    const CellKey from = cells_.key(r), to = roamer_cell(r, now);
    cells_.move(r, to);
    roaming_->moved(from, to);
    return roam_or_land(r, now, to);
}

bool Response::meet(std::uint32_t i, double now, Outcome& out) {
    save(i, out);
    const bool jammed = sleep_.jammed(i, now);
    balls_.advance_awake(i, now);
    return jammed;
}

void Response::collide_balls(std::uint32_t i, std::uint32_t j, double now, Outcome& out, Impacts& impacts) {
    const bool jammed[2] = {meet(i, now, out), meet(j, now, out)};
    const Vec3 dp = min_image(def_, balls_.position(j) - balls_.position(i));
    const Vec3 dv = balls_.velocity(j) - balls_.velocity(i);
    const double d = length(dp);
    const double u = -dot(dp, dv) / d;  // same sign as the kernel's gap derivative
    // A sleeping ball (at most one: two cannot approach) stays asleep under a slow impact, and
    // under one that pushes it into what carries it (Sleep::carries()): the sleeping pile
    // carries those as an immovable ball. Any other wakes it, and it takes the impact with its
    // true mass.
    bool woke_j = false;
    if (balls_.asleep(i) || balls_.asleep(j)) {
        const std::uint32_t k = balls_.asleep(i) ? i : j, hitter = k == i ? j : i;
        if (!(u <= sleep_.slow()) && !sleep_.carries(k, hitter, now, carried_impulse(i, j, dp, dv, u, k == j), u)) {
            // it moves: it is not quiet until it has been slow again
            sleep_.wake(k, now);
            out.woken = k;
            balls_.restart_quiet(k, now);
            balls_.jam[k] = 0;
            woke_j = k == j;
        }
    }
    const bool carried = balls_.asleep(i) || balls_.asleep(j);
    const double s =
        separation_speed(u, pressed_speed(i, j, dp / d), def_.restitution, def_.rest_speed, carried, faster(i, j));
    const double wi = balls_.asleep(i) ? 0.0 : balls_.inv_mass[i], wj = balls_.asleep(j) ? 0.0 : balls_.inv_mass[j];
    if (!(u + s > 0.0) || !(d > 0.0)) {  // grazing by rounding: no contact after all
        impacts.predict(i);
        if (woke_j) impacts.predict(j);
        return;
    }
    const Vec3 n = dp / d;
    const double J = (u + s) / (wi + wj);
    // Coulomb friction: the tangential impulse Jt slows the sliding of the surfaces, at most to a
    // stop.
    const bool friction = def_.friction > 0.0;
    Vec3 Jt;
    if (friction) Jt = friction_change(dv, n, def_.friction * (u + s)) / (wi + wj);
    for (const auto& [ball, sign] : {std::pair{i, -1.0}, std::pair{j, 1.0}}) {
        if (balls_.asleep(ball)) continue;
        Vec3 v = balls_.velocity(ball) + n * (sign * J * balls_.inv_mass[ball]);
        if (friction) v -= Jt * (sign * balls_.inv_mass[ball]);
        bool wedged = false;
        if (carried) {
            const Vec3 before = balls_.velocity(ball);
            const Leaving left =
                leave_immovables(ball, now, v, ball == i ? j : i, n * sign, s, u < def_.rest_speed ? nullptr : &before);
            v = left.v;
            wedged = left.wedged;
        }
        balls_.set_velocity(ball, v);
        release_supports(ball);
        balls_.bump(ball);
        impacts.hit({ball, ball == i ? j : i, u, jammed[ball == j], wedged, dp * sign});
    }
    out.collided = true;
    out.virial = J * d;
    out.overlap = balls_.radius[i] + balls_.radius[j] - d;
    out.event = {now, EventKind::BallBall, balls_.id[i], balls_.id[j], 0, balls_.position(i) + n * balls_.radius[i], n, J};
    impacts.predict(i);
    impacts.predict(j);
}

void Response::collide_plane(std::uint32_t i, std::uint32_t k, double now, Outcome& out, Impacts& impacts) {
    const bool jammed = meet(i, now, out);
    const PlaneDef& plane = statics_.planes()[k];
    collide_flat(i, plane.normal, static_cast<std::int32_t>(k), height(plane, balls_.position(i)), EventKind::BallPlane,
                 k, now, jammed, out, impacts);
}

void Response::collide_flat(std::uint32_t i, Vec3 n, std::int32_t support, double gap, EventKind kind, std::uint32_t k,
                            double now, bool jammed, Outcome& out, Impacts& impacts) {
    const Vec3 v = balls_.velocity(i);
    const double u = -dot(v, n);
    const bool pressed = dot(balls_.acceleration(i), n) < 0.0;
    const double mass = 1.0 / balls_.inv_mass[i];
    double J;
    bool wedged = false;
    if (pressed && (u < def_.rest_speed || def_.restitution * u < def_.rest_speed)) {
        // Settle: the ball rests on the plane (and on the planes it already rested on) and
        // slides under the rest of its acceleration. Its velocity loses every component into the
        // supports, a perfectly inelastic contact at a speed below rest_speed. So does a ball
        // that would leave slower than rest_speed: bounced off at e u ≈ 0, it met the plane again
        // at once, at an approach that rounding set, again and again (e = 0 and rest_speed
        // 10⁻¹² under g = 1000: every 1.5·10⁻⁸ time units).
        Supports sup = balls_.supports(i);
        auto free = std::find(sup.begin(), sup.end(), kNoSupport);
        if (free != sup.end()) *free = support;
        balls_.rest[i] = rest_for(sup);
        const Vec3 along = after_friction(along_supports(sup, v - n * dot(v, n), statics_.supports()), def_.friction * u);
        const Leaving left = leave_immovables(i, now, along, kFixed, {}, 0.0, nullptr);
        balls_.set_velocity(i, left.v);
        if (!(left.v == along)) release_supports(i);  // a support it now leaves
        wedged = left.wedged;
        J = mass * u;
    } else if (u > 0.0) {
        const double s = separation_speed(u, 0.0, def_.restitution, def_.rest_speed, false, length(v));
        balls_.set_velocity(i, bounce(v, n, u, s));
        J = mass * (u + s);
        release_supports(i);
    } else {
        impacts.predict(i);
        return;
    }
    static_collided(i, u, jammed, wedged, {now, kind, balls_.id[i], BallId{}, k, balls_.position(i) - n * gap, -n, J},
                    balls_.radius[i] - gap, out, impacts);
}

void Response::static_collided(std::uint32_t i, double approach, bool jammed, bool wedged, const CollisionEvent& event,
                               double overlap, Outcome& out, Impacts& impacts) {
    balls_.bump(i);
    impacts.hit({i, kFixed, approach, jammed, wedged, {}});
    out.collided = true;
    out.overlap = overlap;
    out.event = event;
    impacts.predict(i);
}

void Response::collide_cylinder(std::uint32_t i, std::uint32_t k, double now, Outcome& out, Impacts& impacts) {
    const bool jammed = meet(i, now, out);
    const CylinderDef& c = statics_.cylinders()[k];
    auto across = [&](Vec3 w) { return detail::across(c, w); };
    const Vec3 w = from_axis(c, balls_.position(i));  // from the axis to the centre
    collide_round(i, w, dot(w, across(balls_.velocity(i))), dot(w, across(balls_.acceleration(i))), c.radius,
                  EventKind::BallCylinder, k, now, jammed, out, impacts);
}

void Response::collide_finite(std::uint32_t i, const Finite& f, double now, Outcome& out, Impacts& impacts) {
    const bool jammed = meet(i, now, out);
    if (f.block && leave_block(i, f.index, impacts)) return;
    const auto [w, radius] = statics_.nearest(f, balls_.position(i));  // from the static to the centre
    if (f.block && collide_face(i, f.index, w, now, jammed, out, impacts)) return;
    collide_round(i, w, dot(w, balls_.velocity(i)), dot(w, balls_.acceleration(i)), radius,
                  f.block ? EventKind::BallBlock : EventKind::BallCapsule, f.index, now, jammed, out, impacts);
}

bool Response::leave_block(std::uint32_t i, std::uint32_t k, Impacts& impacts) {
    Supports sup = balls_.supports(i);
    bool left = false;
    for (std::int32_t& s : sup) {
        if (!on_face_of(s, k)) continue;
        s = kNoSupport;
        left = true;
    }
    if (!left) return false;
    balls_.rest[i] = rest_for(sup);
    balls_.bump(i);  // a new trajectory: predictions of it are stale
    impacts.predict(i);
    return true;
}

bool Response::collide_face(std::uint32_t i, std::uint32_t k, Vec3 w, double now, bool jammed, Outcome& out,
                            Impacts& impacts) {
    // Over a face (w along one axis only), clear of its edges by more than rounding: an edge
    // would be met again at once.
    int d = -1;
    for (int e = 0; e < 3; ++e) {
        if (axis(w, e) == 0.0) continue;
        if (d >= 0) return false;
        d = e;
    }
    if (d < 0) return false;
    const BlockDef& b = statics_.blocks()[k];
    const Vec3 p = balls_.position(i);
    const double margin = 1e-9 * balls_.radius[i];
    for (int e = 0; e < 3; ++e)
        if (e != d && !(axis(p, e) - axis(b.min, e) > margin && axis(b.max, e) - axis(p, e) > margin)) return false;
    const std::int32_t face = face_support(k, 2 * d + (axis(w, d) > 0.0 ? 1 : 0));
    collide_flat(i, statics_.supports()[face].normal, face, std::abs(axis(w, d)), EventKind::BallBlock, k, now, jammed,
                 out, impacts);
    return true;
}

void Response::collide_round(std::uint32_t i, Vec3 w, double wv, double wa, double radius, EventKind kind,
                             std::uint32_t k, double now, bool jammed, Outcome& out, Impacts& impacts) {
    const Vec3 v = balls_.velocity(i);
    const double d = length(w);
    const double u = -wv / d;
    const double s = separation_speed(u, pressed_leaving(-wa / d, balls_.radius[i], def_.rest_speed), def_.restitution,
                                      def_.rest_speed, false, length(v));
    if (!(u + s > 0.0) || !(d > 0.0)) {
        impacts.predict(i);
        return;
    }
    const Vec3 n = w / d;
    const double J = (u + s) / balls_.inv_mass[i];
    balls_.set_velocity(i, bounce(v, n, u, s));
    release_supports(i);
    static_collided(i, u, jammed, /*wedged=*/false,
                    {now, kind, balls_.id[i], BallId{}, k, balls_.position(i) - n * (d - radius), -n, J},
                    radius + balls_.radius[i] - d, out, impacts);
}

void Response::wake_resting(std::uint32_t s, std::uint32_t k, double now, Outcome& out) {
    save(s, out);
    save(k, out);
    sleep_.wake(k, now);
    out.woken = k;
    out.queue(s, predictor_.predict(s, now));
    out.queue(k, predictor_.predict(k, now));
}

}  // namespace ballistic::detail
