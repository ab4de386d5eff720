// Ballistic — sleeping: when a ball may sleep, what a sleeping ball carries, and waking.
// engine/README.md, "Piles that settle", gives the rules and why they are these.
#include "world_impl.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace ballistic {

using detail::IslandContact;
using detail::Islands;
using detail::kFixed;

namespace {

constexpr double kConeTolerance = 1e-9;  // relative: a direction counts as in a cone this close to it
constexpr std::size_t kMaxContacts = 24;  // twelve touching equal balls and three planes fit
constexpr std::uint32_t kInstantBudget = 64;  // collisions of a ball at one instant before it stops

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
    return def.sleep_speed > 0.0 && def.restitution < 1.0 && !(def.gravity == Vec3{}) && !statics.planes().empty();
}

template <class Fn>
void World::Impl::for_each_touching(std::uint32_t s, double now, Fn&& fn) const {
    const Vec3 p = balls.position_at(s, now);
    const double r = balls.radius[s];
    const double gap = rules.touch_gap(r);
    for (const PlaneDef& plane : statics.planes())
        if (detail::clearance(plane, p, r) <= gap) fn(kFixed, plane.normal);
    for (const CylinderDef& c : statics.cylinders()) {
        const Vec3 w = detail::from_axis(c, p);
        const double len = length(w);
        if (len - c.radius - r <= gap && len > 0.0) fn(kFixed, w / len);
    }
    grid.for_each_near(grid.key(s), [&](std::uint32_t j, const auto& shift) {
        if (j == s) return;
        Vec3 dp = p - balls.position_at(j, now);
        if constexpr (std::is_same_v<std::decay_t<decltype(shift)>, Vec3>) dp = dp - shift;
        const double d = length(dp);
        if (d - r - balls.radius[j] <= std::min(gap, rules.touch_gap(balls.radius[j])) && d > 0.0) fn(j, dp / d);
    }, detail::Grid::kAllNear);
}

bool World::Impl::can_stand(std::uint32_t s, double now) const {
    // The normals (towards the ball) of the statics and the sleeping balls it touches, and the
    // pushes of the balls resting on it. An awake ball under it means no: a ball falls asleep on
    // its own only on supports known to stand (whole clusters fall asleep in sleep_islands()).
    Vec3 normals[kMaxContacts], loads[kMaxContacts];
    std::size_t m = 0, l = 0;
    auto add = [](Vec3* list, std::size_t& count, Vec3 n) {
        if (count < kMaxContacts) list[count++] = n;
    };
    bool awake_below = false;
    for_each_touching(s, now, [&](std::uint32_t j, Vec3 n) {
        if (j == kFixed || balls.asleep(j)) add(normals, m, n);
        else if (rules.above(n)) awake_below = true;
        if (j != kFixed && rules.above(-n)) add(loads, l, -n);
    });
    if (awake_below || !in_cone(normalize(-def.gravity), normals, m)) return false;
    for (std::size_t k = 0; k < l; ++k)
        if (!in_cone(loads[k], normals, m)) return false;
    return true;
}

void World::Impl::sleep_islands(double now) {
    if (!sleeping_enabled() || !grid_valid) return;
    Islands& is = islands;
    const auto n = static_cast<std::uint32_t>(balls.size());
    is.parent.assign(n, kFixed);
    is.candidates.clear();
    for (std::uint32_t s = 0; s < n; ++s) {
        if (!may_sleep(s, now)) continue;
        is.parent[s] = s;
        is.candidates.push_back(s);
    }
    if (is.candidates.empty()) return;
    // Contacts, clusters (union–find), and the clusters an awake ball that is not quiet touches.
    is.disturbed.assign(n, 0);
    is.contacts.clear();
    for (const std::uint32_t s : is.candidates) {
        for_each_touching(s, now, [&](std::uint32_t j, Vec3 normal) {
            if (j == kFixed || balls.asleep(j)) {
                is.contacts.push_back({s, kFixed, normal});
            } else if (is.parent[j] == kFixed) {
                if (rules.above(normal)) is.disturbed[s] = 1;  // on a moving ball (one on top is carried)
            } else if (j > s) {
                is.contacts.push_back({s, j, -normal});
                const std::uint32_t a = is.root(s), b = is.root(j);
                is.parent[std::max(a, b)] = std::min(a, b);
            }
        });
    }
    // Members and contacts grouped by cluster (its root), in slot and discovery order.
    for (const std::uint32_t s : is.candidates) {
        const std::uint32_t root = is.root(s);
        is.parent[s] = root;
        if (is.disturbed[s]) is.disturbed[root] = 1;
    }
    auto by_root = [&](std::uint32_t a, std::uint32_t b) {
        const std::uint32_t ra = is.parent[a], rb = is.parent[b];  // the roots, set above
        return ra != rb ? ra < rb : a < b;
    };
    std::sort(is.candidates.begin(), is.candidates.end(), by_root);
    is.sorted = is.contacts;
    std::stable_sort(is.sorted.begin(), is.sorted.end(),
                     [&](const IslandContact& x, const IslandContact& y) { return is.parent[x.a] < is.parent[y.a]; });
    is.local.resize(n);
    std::size_t c = 0;
    for (std::size_t first = 0; first < is.candidates.size();) {
        const std::uint32_t root = is.parent[is.candidates[first]];
        std::size_t last = first;
        while (last < is.candidates.size() && is.parent[is.candidates[last]] == root) {
            is.local[is.candidates[last]] = static_cast<std::uint32_t>(last - first);
            ++last;
        }
        const std::size_t begin = c;
        while (c < is.sorted.size() && is.parent[is.sorted[c].a] == root) ++c;
        const std::span<const std::uint32_t> members(is.candidates.data() + first, last - first);
        if (!is.disturbed[root] && is.balanced(members, std::span(is.sorted).subspan(begin, c - begin), balls.inv_mass, def.gravity)) {
            for (const std::uint32_t s : members) fall_asleep(s, now);
            if (events_valid)
                for (const std::uint32_t s : members) requeue(s, predictor.predict(s, now));
        }
        first = last;
    }
}

void World::Impl::note_quiet(std::uint32_t s, double approach, double now, bool same_instant) {
    if (!sleeping_enabled()) return;
    // Balls jammed at zero gaps between each other and the statics pass an impact around at one
    // instant, again and again: slow contacts are elastic, and pressed ones leave at rest_speed.
    // Past a budget of collisions at one instant a ball stops where it is jammed and sleeps.
    balls.instant[s] = same_instant ? balls.instant[s] + 1 : 0;
    if (balls.instant[s] > kInstantBudget) {
        balls.instant[s] = 0;
        fall_asleep(s, now);
        return;
    }
    const double v = length(balls.velocity(s));
    if (approach > def.sleep_speed || !(v <= def.sleep_speed)) {
        balls.quiet_since[s] = now;
        balls.quiet_events[s] = 0;
    } else if (balls.quiet_events[s] < def.sleep_events) {
        ++balls.quiet_events[s];
    }
}

bool World::Impl::may_sleep(std::uint32_t s, double now) const {
    return !balls.asleep(s) && rules.quiet(balls, s, now) && length(balls.velocity(s)) <= def.sleep_speed;
}

bool World::Impl::try_sleep(std::uint32_t s, double now) {
    if (!sleeping_enabled() || !may_sleep(s, now) || !can_stand(s, now)) return false;
    fall_asleep(s, now);
    return true;
}

void World::Impl::fall_asleep(std::uint32_t s, double now) {
    balls.advance(s, now);
    balls.set_velocity(s, {});
    balls.rest[s] = balls.rests.intern(balls.supports(s), true, {});
    ++balls.counter[s];
}

void World::Impl::wake(std::uint32_t s, double now) {
    balls.advance(s, now);
    Supports sup = balls.supports(s);
    balls.rest[s] = rest_for(sup);
    ++balls.counter[s];  // its quiet history stays: an impact that was not slow resets it
}

void World::Impl::wake_all() {
    Awakening awakening;
    prepare_awakening(awakening, def.gravity, statics.planes());
    commit_awakening(awakening);
}

World::Impl::Woken World::Impl::prepare_wake_touching(std::uint32_t s) {
    // An API call between steps, which rebuilds every event anyway: a scan is no extra order.
    const Vec3 p = balls.position_at(s, time);
    Woken woken;
    for (std::uint32_t j = 0; j < balls.size(); ++j) {
        if (j == s || !balls.asleep(j)) continue;
        const double gap = std::min(rules.touch_gap(balls.radius[s]), rules.touch_gap(balls.radius[j]));
        if (length(balls.position_at(j, time) - p) - balls.radius[s] - balls.radius[j] > gap) continue;
        Supports sup = balls.supports(j);
        woken.emplace_back(j, rest_for(sup));
    }
    return woken;
}

void World::Impl::commit_wake(const Woken& woken) noexcept {
    for (const auto& [j, rest] : woken) {
        balls.rest[j] = rest;  // every ball is at `time` between steps: nothing to advance
        ++balls.counter[j];
    }
}

void World::Impl::wake_resting(std::uint32_t s, std::uint32_t k, double now, detail::Outcome& out) {
    save(s, out);
    save(k, out);
    wake(k, now);
    out.queue(s, predictor.predict(s, now));
    out.queue(k, predictor.predict(k, now));
}

}  // namespace ballistic
