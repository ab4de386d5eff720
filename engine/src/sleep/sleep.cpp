// Ballistic — sleeping (sleep.hpp): when a ball may sleep, what a sleeping ball carries, and waking.
// docs/architecture.md, "Piles that settle", gives the rules and why they are these.
#include "sleep/sleep.hpp"

#include "rules/collision_rules.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace ballistic::detail {

namespace {

constexpr double kConeTolerance = 1e-9;  // relative: a direction counts as in a cone this close to it

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

template <class Fn>
void Sleep::for_each_touching(std::uint32_t s, double now, Fn&& fn, Within within) const {
    for_each_touching_static(s, now, fn, within);
    for_each_touching_ball(s, now, fn, within);
}

template <class Fn>
void Sleep::for_each_touching_static(std::uint32_t s, double now, Fn&& fn, Within within) const {
    const Vec3 p = balls_.position_at(s, now);
    const double r = balls_.radius[s];
    const double gap = reach(r, within);
    for (const PlaneDef& plane : statics_.planes())
        if (clearance(plane, p, r) <= gap) fn(kFixed, plane.normal);
    for (const CylinderDef& c : statics_.cylinders()) {
        const Vec3 w = from_axis(c, p);
        const double len = length(w);
        if (len - c.radius - r <= gap && len > 0.0) fn(kFixed, w / len);
    }
    statics_.finite_near(cells_.key(s), [&](const Finite& f) {
        const auto [w, radius] = statics_.nearest(f, p);
        const double len = length(w);
        if (len - radius - r <= gap && len > 0.0) fn(kFixed, w / len);
    });
}

template <class Fn>
void Sleep::for_each_touching_ball(std::uint32_t s, double now, Fn&& fn, Within within) const {
    const Vec3 p = balls_.position_at(s, now);
    const double r = balls_.radius[s];
    const double gap = reach(r, within);
    cells_.for_each_near(cells_.key(s), [&](std::uint32_t j, const auto& shift) {
        if (j == s) return;
        Vec3 dp = p - balls_.position_at(j, now);
        if constexpr (std::is_same_v<std::decay_t<decltype(shift)>, Vec3>) dp = dp - shift;
        const double most = std::min(gap, reach(balls_.radius[j], within));
        if (SleepRules::beyond(dp, r + balls_.radius[j] + most)) return;
        const double d = length(dp);
        if (d - r - balls_.radius[j] <= most && d > 0.0) fn(j, dp / d);
    }, Cells::kAllNear);
}

void Sleep::wake_unheld(std::uint32_t first, double now, std::vector<std::uint8_t>& held,
                        std::vector<std::uint32_t>& found) noexcept {
    const auto n = static_cast<std::uint32_t>(balls_.size());
    held.assign(n - first, 0);  // within the capacity the caller gave
    found.clear();
    // Held from below by a static, an awake ball or a ball asleep before.
    for (std::uint32_t s = first; s < n; ++s) {
        if (!balls_.asleep(s)) continue;
        bool under = false;  // n, towards the ball, points up
        for_each_touching(s, now, [&](std::uint32_t j, Vec3 normal) {
            under = under || (rules_.above(normal) && (j == kFixed || j < first || !balls_.asleep(j)));
        });
        if (under) {
            held[s - first] = 1;
            found.push_back(s);
        }
    }
    // Then the balls added asleep that rest on those, and on them in turn.
    while (!found.empty()) {
        const std::uint32_t s = found.back();
        found.pop_back();
        for_each_touching_ball(s, now, [&](std::uint32_t j, Vec3 normal) {
            if (j >= first && balls_.asleep(j) && !held[j - first] && rules_.above(-normal)) {
                held[j - first] = 1;
                found.push_back(j);
            }
        });
    }
    for (std::uint32_t s = first; s < n; ++s)
        if (balls_.asleep(s) && !held[s - first]) balls_.rest[s] = RestTable::kNone;
}

bool Sleep::is_carried(std::uint32_t s, double now) const {
    // The normals (towards the ball) of the statics and the sleeping balls it touches, and the
    // pushes of the balls resting on it. An awake ball under it means no: a ball falls asleep on
    // its own only on supports known to stand (whole clusters fall asleep in sleep_clusters()).
    Vec3 normals[kMaxContacts], loads[kMaxContacts];
    std::size_t m = 0, l = 0;
    auto add = [](Vec3* list, std::size_t& count, Vec3 n) {
        if (count < kMaxContacts) list[count++] = n;
    };
    bool awake_below = false;
    for_each_touching(s, now, [&](std::uint32_t j, Vec3 n) {
        if (j == kFixed || balls_.asleep(j)) add(normals, m, n);
        else if (rules_.above(n)) awake_below = true;
        if (j != kFixed && rules_.above(-n)) add(loads, l, -n);
    });
    if (awake_below || !can_give(normalize(-def_.gravity), normals, m)) return false;
    for (std::size_t k = 0; k < l; ++k)
        if (!can_give(loads[k], normals, m)) return false;
    return true;
}

bool Sleep::can_give(Vec3 u, const Vec3* normals, std::size_t m) const {
    return in_cone(u, normals, m) || (standing_friction() > 0.0 && holds(-u, normals, m, standing_friction()));
}

bool Sleep::carries(std::uint32_t s, std::uint32_t hitter, double now, Vec3 push, double u) const {
    const double mass = 1.0 / balls_.inv_mass[s];
    const double reduced = 1.0 / (balls_.inv_mass[s] + balls_.inv_mass[hitter]);
    const double lift = def_.wake_lift * balls_.radius[s] * length(def_.gravity);
    const double along = length(push);
    if (!(reduced * u * u < 2.0 * mass * lift) || !(along > 0.0)) return false;
    Vec3 normals[kMaxContacts];
    std::size_t m = 0;
    for_each_touching(s, now, [&](std::uint32_t j, Vec3 n) {
        if ((j == kFixed || balls_.asleep(j)) && m < kMaxContacts) normals[m++] = n;
    });
    return can_give(-(push / along), normals, m);
}

std::size_t Sleep::touching_immovables(std::uint32_t s, double now, std::uint32_t except, Vec3 v,
                                       double slower_than, bool need_ball, std::span<Immovable> out) const {
    std::size_t m = 0;
    if (!jams() || out.empty()) return 0;
    std::uint64_t statics = 0;  // the statics come first in `order`, in the order visited (theirs)
    auto add = [&](std::uint32_t j, Vec3 n) {
        if ((j != kFixed && (j == except || !balls_.asleep(j))) || !(-dot(v, n) < slower_than)) return;
        const Immovable touching{j == kFixed ? statics++ : (std::uint64_t{1} << 32) + j, n, j != kFixed};
        if (m < out.size()) {
            out[m++] = touching;
            return;
        }
        // Full: keep the first in order, whatever order the cells hand them in.
        auto last = std::max_element(out.begin(), out.end(),
                                     [](const Immovable& a, const Immovable& b) { return a.order < b.order; });
        if (touching.order < last->order) *last = touching;
    };
    for_each_touching_ball(s, now, add, Within::Rounding);
    if (need_ball && m == 0) return 0;
    for_each_touching_static(s, now, add, Within::Rounding);
    std::sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(m),
              [](const Immovable& a, const Immovable& b) { return a.order < b.order; });
    return m;
}

void Sleep::list_awake(std::vector<std::uint32_t>& awake) const {
    awake.clear();
    if (!enabled()) return;
    const auto n = static_cast<std::uint32_t>(balls_.size());
    for (std::uint32_t s = 0; s < n; ++s)
        if (!balls_.asleep(s)) awake.push_back(s);
}

bool Sleep::touched_from_below(std::uint32_t s, double now) const {
    bool under = false;
    for_each_touching(s, now, [&](std::uint32_t, Vec3 normal) { under = under || rules_.above(normal); });
    return under;
}

void Sleep::sleep_clusters(double now, const FellAsleep& fell_asleep, Within within) {
    list_awake(islands_.awake);
    sleep_clusters(now, islands_.awake, fell_asleep, within);
}

void Sleep::sleep_clusters(double now, std::span<const std::uint32_t> among, const FellAsleep& fell_asleep, Within within) {
    if (!enabled()) return;
    Islands& is = islands_;
    list_candidates(now, among);
    if (is.candidates.empty()) {
        restart_still(now, among);
        is.clean = true;
        return;
    }
    link_candidates(now, within);
    stand_clusters();
    // Only now, with every allocation behind (their entries in the table of rests too), do the
    // balls change: a failure leaves every ball as it was.
    is.rest_of.resize(is.asleep_now.size());
    for (std::size_t k = 0; k < is.asleep_now.size(); ++k) is.rest_of[k] = asleep_rest(is.asleep_now[k]);
    for (std::size_t k = 0; k < is.asleep_now.size(); ++k) sleep_on(is.asleep_now[k], now, is.rest_of[k]);
    restart_still(now, among);
    for (const std::uint32_t s : is.candidates) is.parent[s] = kFixed;
    is.clean = true;
    if (!is.asleep_now.empty()) fell_asleep(is.asleep_now);
}

void Sleep::list_candidates(double now, std::span<const std::uint32_t> among) {
    Islands& is = islands_;
    const auto n = static_cast<std::uint32_t>(balls_.size());
    // The per-slot scratch is set only for the candidates, and `parent` kept kFixed for every
    // other slot between calls, so that a settle costs what its candidates cost, not the world.
    if (is.parent.size() != n || !is.clean) is.parent.assign(n, kFixed);
    is.clean = false;
    is.still.resize(n);
    is.disturbed.resize(n);
    is.local.resize(n);
    is.height.resize(n);
    is.candidates.clear();
    for (const std::uint32_t s : among) {
        if (!may_sleep(s, now)) continue;
        is.parent[s] = s;
        is.height[s] = -dot(balls_.position_at(s, now), def_.gravity);
        is.still[s] = 0;
        is.disturbed[s] = 0;
        is.candidates.push_back(s);
    }
}

void Sleep::link_candidates(double now, Within within) {
    Islands& is = islands_;
    // The candidates' contacts in shares of about kCandidatesPerShare, one task each, each share
    // writing only its candidates' marks and its own list (the first share's the world's); then
    // the lists joined in candidate order, and the clusters joined along them in that order.
    const auto most = static_cast<std::size_t>(parallel_.concurrency());
    while (solvers_.size() + 1 < most) solvers_.emplace_back().owner = &is;
    auto link = [&](std::size_t share, std::size_t begin, std::size_t end) {
        std::vector<IslandContact>& contacts = share == 0 ? is.contacts : solvers_[share - 1].contacts;
        contacts.clear();
        for (std::size_t k = begin; k < end; ++k) {
            const std::uint32_t s = is.candidates[k];
            bool supported = false;  // something under it within the gap: only then can collisions hold it still
            for_each_touching(s, now, [&](std::uint32_t j, Vec3 normal) {
                supported = supported || rules_.above(normal);
                if (j == kFixed || balls_.asleep(j)) {
                    contacts.push_back({s, kFixed, normal});
                } else if (is.parent[j] == kFixed) {
                    if (rules_.above(normal)) {  // on a moving ball (one on top is carried)
                        contacts.push_back({s, kFixed, normal});
                        is.disturbed[s] = 1;
                    }
                } else if (j > s) {
                    contacts.push_back({s, j, -normal});
                }
            }, within);
            if (within != Within::TouchGap) supported = touched_from_below(s, now);
            is.still[s] = supported && still(s, now);
            // Held only from farther than the touching gap, it would fall onto what holds it: its
            // weight counts, but it and the balls resting on it stay awake.
            if (!supported && within != Within::TouchGap) is.disturbed[s] = 1;
        }
    };
    const std::size_t shares = parallel_.for_shares(is.candidates.size(), kCandidatesPerShare, link);
    for (std::size_t share = 1; share < shares; ++share)
        is.contacts.insert(is.contacts.end(), solvers_[share - 1].contacts.begin(), solvers_[share - 1].contacts.end());
    for (const IslandContact& c : is.contacts) {
        if (c.b == kFixed) continue;
        const std::uint32_t a = is.root(c.a), b = is.root(c.b);
        is.parent[std::max(a, b)] = std::min(a, b);
    }
}

void Sleep::stand_clusters() {
    Islands& is = islands_;
    // Members and contacts grouped by cluster (its root), in slot and discovery order.
    for (const std::uint32_t s : is.candidates) is.parent[s] = is.root(s);
    auto by_root = [&](std::uint32_t a, std::uint32_t b) {
        const std::uint32_t ra = is.parent[a], rb = is.parent[b];  // the roots, set above
        return ra != rb ? ra < rb : a < b;
    };
    std::sort(is.candidates.begin(), is.candidates.end(), by_root);
    is.sorted = is.contacts;
    std::stable_sort(is.sorted.begin(), is.sorted.end(),
                     [&](const IslandContact& x, const IslandContact& y) { return is.parent[x.a] < is.parent[y.a]; });
    is.asleep_now.clear();
    clusters_.clear();
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
        clusters_.push_back({first, last, begin, c});
        first = last;
    }
    // The clusters stand or fall each on its own: in shares of about as many members, one task
    // and solver each, the first share's the world's; the balls that stand, in cluster order.
    const std::size_t members = is.candidates.size();
    const std::size_t shares = std::min<std::size_t>(
        {static_cast<std::size_t>(parallel_.concurrency()), clusters_.size(), members / kMembersPerShare + 1});
    while (solvers_.size() + 1 < shares) solvers_.emplace_back().owner = &is;
    share_end_.assign(shares, clusters_.size());
    for (std::size_t k = 0, seen = 0, share = 0; k < clusters_.size() && share + 1 < shares; ++k) {
        seen += clusters_[k].last - clusters_[k].first;
        if (seen * shares >= (share + 1) * members) share_end_[share++] = k + 1;
    }
    parallel_.for_each(shares, [&](std::size_t share) {
        Islands& solver = share == 0 ? is : solvers_[share - 1];
        if (share > 0) solver.asleep_now.clear();
        for (std::size_t k = share == 0 ? 0 : share_end_[share - 1]; k < share_end_[share]; ++k) {
            const Cluster& cluster = clusters_[k];
            const std::span<const std::uint32_t> of(is.candidates.data() + cluster.first, cluster.last - cluster.first);
            const std::span<const IslandContact> touching =
                std::span(is.sorted).subspan(cluster.begin, cluster.end - cluster.begin);
            solver.stand(of, touching, balls_.inv_mass, def_.gravity, standing_friction(),
                         [&](Vec3 push) { return rules_.above(push); });
        }
    });
    for (std::size_t k = 1; k < shares; ++k)
        is.asleep_now.insert(is.asleep_now.end(), solvers_[k - 1].asleep_now.begin(), solvers_[k - 1].asleep_now.end());
}

bool Sleep::still(std::uint32_t s, double now) const {
    const double drift = length(balls_.position_at(s, now) - balls_.still_at(s));
    return drift <= kStillDrift * balls_.radius[s] && now - balls_.still_since[s] >= kStillTimes * def_.sleep_time;
}

void Sleep::restart_still(double now, std::span<const std::uint32_t> among) noexcept {
    // Every awake ball that is not quiet and slow, or has drifted, is still from here on.
    for (const std::uint32_t s : among) {
        if (balls_.asleep(s)) continue;
        const Vec3 p = balls_.position_at(s, now);
        if (islands_.parent[s] == kFixed || length(p - balls_.still_at(s)) > kStillDrift * balls_.radius[s])
            balls_.hold_still(s, p, now);
    }
}

void Sleep::note_quiet(std::uint32_t s, double approach, double now, bool jammed, bool wedged) {
    if (!jams()) return;
    // Balls jammed between each other and the statics pass an impact around again and again:
    // slow contacts are elastic, and pressed ones leave at rest_speed. At zero gaps that happens
    // at one instant; with gaps that rounding left, at instants apart by next to nothing. Past a
    // budget of collisions in a row in a jam a ball stops where it is jammed and sleeps.
    // The count stays past the budget while the ball sleeps: woken while still jammed (by a
    // moving ball under it), it stops again at its first collision in the jam, not 64 later.
    // A slow ball wedged among sleeping balls and statics, and pressed into one of them, would
    // spend that budget at this instant without moving: it stops at once.
    constexpr std::uint32_t budget = SleepRules::kJamBudget;
    const double v = length(balls_.velocity(s));
    if (wedged && v <= rules_.slow() && pressed_into_immovable(s, now)) balls_.jam[s] = budget + 1;
    else balls_.jam[s] = jammed ? std::min(balls_.jam[s] + 1, budget + 1) : 0;
    if (balls_.jam[s] > budget) {
        sleep_now(s, now);
        return;
    }
    if (!enabled()) return;
    if (approach > def_.sleep_speed || !(v <= def_.sleep_speed)) {
        balls_.restart_quiet(s, now);
    } else if (balls_.quiet_events[s] < def_.sleep_events) {
        ++balls_.quiet_events[s];
    }
}

bool Sleep::pressed_into_immovable(std::uint32_t s, double now) const {
    const Vec3 v = balls_.velocity(s), a = balls_.acceleration(s);
    // Not leaving it at the least leaving speed, and pressed into it by more than rounding (the
    // supports' normals are projected out of the acceleration, to rounding).
    const double least = kLeastLeaving * def_.rest_speed, pressing = 1e-9 * length(def_.gravity);
    bool pressed = false;
    for_each_touching(s, now, [&](std::uint32_t j, Vec3 n) {
        pressed = pressed || ((j == kFixed || balls_.asleep(j)) && dot(v, n) < least && dot(a, n) < -pressing);
    }, Within::Rounding);
    return pressed;
}

bool Sleep::may_sleep(std::uint32_t s, double now) const {
    return !balls_.asleep(s) && rules_.quiet(balls_, s, now) && length(balls_.velocity_at(s, now)) <= def_.sleep_speed;
}

bool Sleep::sleep_if_carried(std::uint32_t s, double now, std::uint32_t partner, Vec3 dp) {
    if (!enabled() || !may_sleep(s, now)) return false;
    const double r = balls_.radius[s];
    if (partner != kFixed && !balls_.asleep(partner) &&
        rules_.resting_on(dp, r + balls_.radius[partner],
                          std::min(rules_.touch_gap(r), rules_.touch_gap(balls_.radius[partner]))))
        return false;  // what is_carried() would find first
    if (!is_carried(s, now)) return false;
    sleep_now(s, now);
    return true;
}

void Sleep::sleep_now(std::uint32_t s, double now) { sleep_on(s, now, asleep_rest(s)); }

std::uint32_t Sleep::asleep_rest(std::uint32_t s) { return balls_.rests.intern(balls_.supports(s), true, {}); }

void Sleep::sleep_on(std::uint32_t s, double now, std::uint32_t rest) noexcept {
    balls_.advance(s, now);
    balls_.set_velocity(s, {});
    balls_.rest[s] = rest;
    balls_.bump(s);
}

void Sleep::wake(std::uint32_t s, double now) {
    balls_.advance(s, now);
    Supports sup = balls_.supports(s);
    balls_.rest[s] = rest_for(balls_.rests, sup, def_.gravity, statics_.supports());
    balls_.bump(s);
    // Its slow events stay: it may sleep again at once where it can stand.
}

Sleep::Woken Sleep::prepare_wake_touching(std::uint32_t s, double time) {
    Woken woken;
    for_each_touching_ball(s, time, [&](std::uint32_t j, Vec3) {
        if (!balls_.asleep(j)) return;
        Supports sup = balls_.supports(j);
        woken.emplace_back(j, rest_for(balls_.rests, sup, def_.gravity, statics_.supports()));
    });
    return woken;
}

void Sleep::awake_under(std::uint32_t s, double time, std::uint32_t first, std::vector<std::uint32_t>& out) const {
    const Vec3 p = balls_.position_at(s, time);
    const double r = balls_.radius[s];
    cells_.for_each_near(cells_.key(s), [&](std::uint32_t j, const auto& shift) {
        if (j == s || j >= first || balls_.asleep(j)) return;
        Vec3 dp = p - balls_.position_at(j, time);
        if constexpr (std::is_same_v<std::decay_t<decltype(shift)>, Vec3>) dp = dp - shift;
        // The test Predictor::predict_balls() puts a sleeping load to, for its Wake.
        const double sigma = r + balls_.radius[j];
        const double touching = std::min(rules_.touch_gap(r), rules_.touch_gap(balls_.radius[j]));
        if (rules_.resting_on(dp, sigma, touching + kJamTravel * sigma)) out.push_back(j);
    }, Cells::kAllNear);
}

void Sleep::commit_wake(const Woken& woken, double time) noexcept {
    for (const auto& [j, rest] : woken) {
        balls_.advance(j, time);  // it slept since its last event: there, still, at `time`
        balls_.rest[j] = rest;
        balls_.jam[j] = 0;  // what held it changed: a jam it slept in is over
        ++balls_.counter[j];
    }
}

}  // namespace ballistic::detail
