// Ballistic — sleeping: when a ball may sleep, what a sleeping ball carries, and waking.
// engine/README.md, "Piles that settle", gives the rules and why they are these.
#include "world_impl.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace ballistic {

namespace {

constexpr double kConeTolerance = 1e-9;  // relative: a direction counts as in a cone this close to it
constexpr std::size_t kMaxContacts = 24;  // twelve touching equal balls and three planes fit

// Is the unit vector u a non-negative combination of the unit normals? In three dimensions it is
// one of one normal, of two, or of three (Carathéodory), so those are tried in turn.
bool in_cone(Vec3 u, const Vec3* n, std::size_t m) {
    const double eps = kConeTolerance;
    for (std::size_t a = 0; a < m; ++a)
        if (dot(u, n[a]) > 0.0 && length(cross(u, n[a])) <= eps) return true;
    for (std::size_t a = 0; a < m; ++a) {
        for (std::size_t b = a + 1; b < m; ++b) {
            const double c = dot(n[a], n[b]), det = 1.0 - c * c;
            if (!(det > eps)) continue;
            const double ua = dot(u, n[a]), ub = dot(u, n[b]);
            const double alpha = (ua - c * ub) / det, beta = (ub - c * ua) / det;
            if (alpha >= -eps && beta >= -eps && length(u - n[a] * alpha - n[b] * beta) <= eps) return true;
        }
    }
    for (std::size_t a = 0; a < m; ++a) {
        for (std::size_t b = a + 1; b < m; ++b) {
            const Vec3 bc_ab = cross(n[a], n[b]);
            for (std::size_t c = b + 1; c < m; ++c) {
                const double det = dot(n[c], bc_ab);
                if (!(std::abs(det) > eps)) continue;
                const double alpha = dot(u, cross(n[b], n[c])) / det;
                const double beta = dot(u, cross(n[c], n[a])) / det;
                const double gamma = dot(u, bc_ab) / det;
                if (alpha >= -eps && beta >= -eps && gamma >= -eps) return true;
            }
        }
    }
    return false;
}

}  // namespace

bool World::Impl::sleeping_enabled() const {
    return def.sleep_speed > 0.0 && def.restitution < 1.0 && !(def.gravity == Vec3{}) && !planes.empty();
}

double World::Impl::touch_gap(double radius) const {
    // A ball slower than sleep_speed rises at most sleep_speed² / 2|g| above what it rests on.
    const double rise = def.sleep_speed * def.sleep_speed / (2.0 * length(def.gravity));
    return std::min(rise, 1e-3 * radius);
}

bool World::Impl::resting_on(Vec3 dp, double sigma, double gap) const {
    // dp from the lower ball's centre to the upper's: they touch, and the lower one's normal
    // force has an upward part (a contact side by side carries no weight).
    const double d = length(dp);
    return d - sigma <= gap && dot(dp, -def.gravity) > 1e-6 * d * length(def.gravity);
}

bool World::Impl::can_stand(std::uint32_t s, double now) const {
    // The normals (towards the ball) of the statics and the still balls it touches (asleep, or
    // awake and quiet), and the pushes of the balls resting on it. A ball that is not still and
    // touches it from below means no.
    Vec3 normals[kMaxContacts], loads[kMaxContacts];
    std::size_t m = 0, l = 0;
    auto add = [](Vec3* list, std::size_t& count, Vec3 n) {
        if (count < kMaxContacts) list[count++] = n;
    };
    const Vec3 p = balls.position_at(s, now);
    const double r = balls.radius[s];
    const double gap = touch_gap(r);
    for (const PlaneDef& plane : planes)
        if (dot(plane.normal, p - plane.point) - r <= gap) add(normals, m, plane.normal);
    for (const CylinderDef& c : cylinders) {
        const Vec3 d = p - c.point, w = d - c.axis * dot(d, c.axis);
        const double len = length(w);
        if (len - c.radius - r <= gap && len > 0.0) add(normals, m, w / len);
    }
    bool moving_below = false;
    grid.for_each_near(grid.key(s), [&](std::uint32_t j, const auto& shift) {
        if (j == s || moving_below) return;
        Vec3 dp = p - balls.position_at(j, now);
        if constexpr (std::is_same_v<std::decay_t<decltype(shift)>, Vec3>) dp = dp - shift;
        const double sigma = r + balls.radius[j], pair_gap = std::min(gap, touch_gap(balls.radius[j]));
        const double d = length(dp);
        if (!(d - sigma <= pair_gap && d > 0.0)) return;
        if (resting_on(-dp, sigma, pair_gap)) add(loads, l, -dp / d);
        if (balls.asleep(j) || quiet(j, now)) add(normals, m, dp / d);
        else moving_below = resting_on(dp, sigma, pair_gap);
    }, detail::Grid::kAllNear);
    if (moving_below || !in_cone(normalize(-def.gravity), normals, m)) return false;
    for (std::size_t k = 0; k < l; ++k)
        if (!in_cone(loads[k], normals, m)) return false;
    return true;
}

void World::Impl::note_quiet(std::uint32_t s, double approach, double now) {
    const double v = length(balls.velocity(s));
    if (approach > def.sleep_speed || !(v <= def.sleep_speed)) {
        balls.quiet_since[s] = now;
        balls.quiet_events[s] = 0;
    } else if (balls.quiet_events[s] < def.sleep_events) {
        ++balls.quiet_events[s];
    }
}

bool World::Impl::quiet(std::uint32_t s, double now) const {
    return now - balls.quiet_since[s] >= def.sleep_time || balls.quiet_events[s] >= def.sleep_events;
}

bool World::Impl::try_sleep(std::uint32_t s, double now) {
    if (!sleeping_enabled() || balls.asleep(s) || !quiet(s, now)) return false;
    if (!(length(balls.velocity(s)) <= def.sleep_speed)) return false;
    if (!can_stand(s, now)) return false;
    balls.advance(s, now);
    balls.set_velocity(s, {});
    balls.rest[s] = balls.rests.intern(balls.supports(s), true, {});
    ++balls.counter[s];
    return true;
}

void World::Impl::wake(std::uint32_t s, double now) {
    balls.advance(s, now);
    Supports sup = balls.supports(s);
    balls.rest[s] = rest_for(sup);
    ++balls.counter[s];  // its quiet history stays: an impact that was not slow resets it
}

void World::Impl::wake_all() {
    for (std::uint32_t s = 0; s < balls.size(); ++s)
        if (balls.asleep(s)) wake(s, time);
    events_valid = false;
}

void World::Impl::wake_touching(std::uint32_t s) {
    // An API call between steps, which rebuilds every event anyway: a scan is no extra order.
    const Vec3 p = balls.position_at(s, time);
    for (std::uint32_t j = 0; j < balls.size(); ++j) {
        if (j == s || !balls.asleep(j)) continue;
        const double gap = std::min(touch_gap(balls.radius[s]), touch_gap(balls.radius[j]));
        if (length(balls.position_at(j, time) - p) - balls.radius[s] - balls.radius[j] <= gap) wake(j, time);
    }
}

void World::Impl::wake_resting(std::uint32_t s, std::uint32_t k, double now, detail::Outcome& out) {
    save(s, out);
    save(k, out);
    wake(k, now);
    out.queue(s, predict(s, now));
    out.queue(k, predict(k, now));
}

}  // namespace ballistic
