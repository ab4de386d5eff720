// Ballistic — clusters of touching quiet balls and whether they can stand (islands.hpp).
#include "sleep/islands.hpp"

#include <algorithm>
#include <limits>
#include <tuple>
#include <utility>

namespace ballistic::detail {
namespace {

// A cluster sleeps when contact forces >= 0 leave every ball an unbalanced force below this
// fraction of its weight, found within this many sweeps.
constexpr double kBalance = 1e-2;
constexpr int kBalanceSweeps = 200;
// A member whose unbalanced force stays above this fraction of its weight when the sweeps stall
// is clearly unbalanced: balanced() may give up on it early.
constexpr double kClearly = 0.1;
// balanced() speeds up the sweeps over this many contacts or more (fewer converge as fast alone).
constexpr std::size_t kAccelerated = 512;
// carry_down() sweeps over the contacts that take a member's load until they leave less than
// kCarried of it (squared), at most kCarrySweeps times.
constexpr int kCarrySweeps = 64;
constexpr double kCarried = 1e-12;
// holds(), and balanced() when told to give up, stop when kStallSweeps sweeps leave more than
// kStall of the squared residual.
constexpr int kStallSweeps = 8;
constexpr double kStall = 0.99;

}  // namespace

Vec3 within_cone(Vec3 f, Vec3 step, Vec3 n, double most) {
    f += step - n * dot(step, n);
    const double len = length(f);
    return len > most ? f * (most / len) : f;
}

void push_and_hold(Vec3& residual, Vec3 n, double& push, Vec3& hold, double friction) {
    const double next = std::max(0.0, push - dot(n, residual));
    residual += n * (next - push);
    push = next;
    // Pushing nothing, it holds nothing: what within_cone() with no room gives, but for signs of
    // zero (and a hold so small that its length underflows, which it kept).
    if (friction > 0.0 && push == 0.0) {
        residual -= hold;
        hold = {};
    } else if (friction > 0.0) {
        const Vec3 held = within_cone(hold, -residual, n, friction * push);
        residual += held - hold;
        hold = held;
    }
}

bool holds(Vec3 load, const Vec3* normals, std::size_t count, double friction) {
    constexpr std::size_t kMost = 32;
    count = std::min(count, kMost);
    const double tolerance = kBalance * kBalance * dot(load, load);
    // One contact alone: is -load in its cone (the usual case of a ball at rest on one support)?
    for (std::size_t k = 0; k < count; ++k) {
        const double push = -dot(load, normals[k]);
        const Vec3 along = load + normals[k] * push;  // the load's part in the tangent plane
        if (push > 0.0 && dot(along, along) <= friction * friction * push * push) return true;
    }
    double push[kMost] = {};
    Vec3 hold[kMost];
    Vec3 residual = load;
    // Projected Gauss–Seidel. The residual never grows; when a few sweeps leave it nearly where
    // it was, the contacts cannot cancel the load (or not soon): a no, which is safe (the ball
    // stays awake and is tried again at its next collision).
    double before = dot(load, load);
    for (int sweep = 1; sweep <= kBalanceSweeps; ++sweep) {
        for (std::size_t k = 0; k < count; ++k) push_and_hold(residual, normals[k], push[k], hold[k], friction);
        const double now = dot(residual, residual);
        if (now <= tolerance) return true;
        if (sweep % kStallSweeps == 0) {
            if (now > kStall * before) return false;
            before = now;
        }
    }
    return false;
}

double Islands::leave(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
                      std::span<const double> inv_mass, Vec3 gravity) {
    Islands& at = slots();
    // Weighted least squares: each member's residual force counts relative to its weight, so
    // that a light ball under a heavy one is held to the same standard.
    const double g = length(gravity);
    residual.resize(members.size());
    weight.resize(members.size());
    for (std::size_t k = 0; k < members.size(); ++k) {
        const double mass = 1.0 / inv_mass[members[k]];
        residual[k] = gravity * mass;
        // A still member takes what its contacts give (weight 0: as if immovable in the balance),
        // and its residual never counts (unbalanced()).
        weight[k] = !at.still.empty() && at.still[members[k]] ? 0.0 : 1.0 / ((mass * g) * (mass * g));
    }
    for (std::size_t k = 0; k < touching.size(); ++k) {
        const IslandContact& ct = touching[k];
        const Vec3 f = ct.n * force[k] + holding[k];
        if (ct.b == kFixed) {
            residual[at.local[ct.a]] += f;
        } else {
            residual[at.local[ct.a]] -= f;
            residual[at.local[ct.b]] += f;
        }
    }
    return unbalance(members.size());
}

double Islands::unbalance(std::size_t m) const {
    double sum = 0.0;
    for (std::size_t k = 0; k < m; ++k) sum += dot(residual[k], residual[k]) * weight[k];
    return sum;
}

void Islands::sweep_once(std::span<const IslandContact> touching, double friction) {
    Islands& at = slots();
    for (std::size_t k = 0; k < touching.size(); ++k) {
        const IslandContact& ct = touching[k];
        Vec3& ra = residual[at.local[ct.a]];
        double& lambda = force[k];
        Vec3& f = holding[k];
        if (ct.b == kFixed) {
            push_and_hold(ra, ct.n, lambda, f, friction);
        } else {  // pushes b along n and a the other way: weighted least squares of the two
            Vec3& rb = residual[at.local[ct.b]];
            const double wa = weight[at.local[ct.a]], wb = weight[at.local[ct.b]];
            if (!(wa + wb > 0.0)) continue;  // two still members: nothing to balance between them
            const double next = std::max(0.0, lambda + (wa * dot(ct.n, ra) - wb * dot(ct.n, rb)) / (wa + wb));
            ra -= ct.n * (next - lambda);
            rb += ct.n * (next - lambda);
            lambda = next;
            if (friction > 0.0) {
                const Vec3 held = within_cone(f, (ra * wa - rb * wb) / (wa + wb), ct.n, friction * lambda);
                ra -= held - f;
                rb += held - f;
                f = held;
            }
        }
    }
    ++sweeps;
}

double Islands::move_on(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
                        std::span<const double> inv_mass, Vec3 gravity, double friction, double stepped) {
    auto moved = [&](std::size_t k) {  // this sweep's step of contact k
        return std::pair{force[k] - last_force[k], holding[k] - last_holding[k]};
    };
    double step = 0.0;
    for (std::size_t k = 0; k < touching.size(); ++k) {
        const auto [dl, dh] = moved(k);
        step += dl * dl + dot(dh, dh);
    }
    const double beta = stepped > 0.0 ? step / stepped : 2.0;
    if (!(beta <= 1.0)) {
        for (std::size_t k = 0; k < touching.size(); ++k) std::tie(step_force[k], step_holding[k]) = moved(k);
        return step;
    }
    const double plain = unbalance(members.size());
    for (std::size_t k = 0; k < touching.size(); ++k) {
        const auto [dl, dh] = moved(k);
        last_force[k] = force[k];  // kept: the Gauss–Seidel forces
        last_holding[k] = holding[k];
        const double l = std::max(0.0, force[k] + beta * step_force[k]);
        holding[k] = within_cone(holding[k], step_holding[k] * beta, touching[k].n, friction * l);
        force[k] = l;
        step_force[k] = beta * step_force[k] + dl;
        step_holding[k] = step_holding[k] * beta + dh;
    }
    if (leave(members, touching, inv_mass, gravity) > plain) {  // worse: back, and start over
        force.swap(last_force);
        holding.swap(last_holding);
        leave(members, touching, inv_mass, gravity);
        return 0.0;
    }
    return step;
}

bool Islands::balanced(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
                       std::span<const double> inv_mass, Vec3 gravity, double friction, bool give_up) {
    Islands& is = *this;
    leave(members, touching, inv_mass, gravity);
    // Given up on (stand()'s solves) over kAccelerated contacts or more, the sweeps are sped up
    // as in the nonsmooth nonlinear conjugate gradient method (Silcowitz, Niebe and Erleben
    // 2010): after each sweep the forces move on by beta times the last steps' direction, beta
    // the ratio of the squared lengths of this sweep's step and the last one's (none when it
    // grew), and are projected back (pushes >= 0, holds within their cones); a move that leaves
    // more unbalanced than the sweep did is taken back, and the direction starts over. The
    // steps are measured unweighted (the balance weighs each ball's residual by its weight): in a
    // pile of mixed masses the heavy balls' contacts set beta. A 10⁴-ball pile loaded from a file
    // balanced in about 250 sweeps that way; plain Gauss–Seidel stalled with 200 balls unbalanced.
    // Only the balance found matters, not how: what stands is judged on forces within the cones.
    // Such a sweep costs about two plain ones, and counts as one in `sweeps`.
    const bool accelerate = give_up && touching.size() >= kAccelerated;
    if (accelerate) {
        is.step_force.assign(touching.size(), 0.0);
        is.step_holding.assign(touching.size(), Vec3{});
    }
    double stepped = 0.0;  // the squared length of the last sweep's step
    is.gave_up = false;
    double before = std::numeric_limits<double>::infinity();  // the weighted squared residual
    for (int sweep = 1; sweep <= kBalanceSweeps; ++sweep) {
        if (accelerate) {
            is.last_force = is.force;
            is.last_holding = is.holding;
        }
        sweep_once(touching, friction);
        bool settled = true;  // judged on the Gauss–Seidel forces, before any move on
        for (std::size_t k = 0; k < members.size() && settled; ++k) settled = !unbalanced(k);
        if (settled) return true;
        if (accelerate) stepped = move_on(members, touching, inv_mass, gravity, friction, stepped);
        if (give_up && sweep % kStallSweeps == 0) {
            const double now = is.unbalance(members.size());
            bool clearly = false;
            for (std::size_t k = 0; k < members.size() && !clearly; ++k) clearly = clearly_unbalanced(k);
            if (clearly && now > kStall * before) {
                is.gave_up = true;
                return false;
            }
            before = now;
        }
    }
    return false;
}

void Islands::carry_down(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
                         std::span<const double> inv_mass, Vec3 gravity) {
    Islands& at = slots();
    force.assign(touching.size(), 0.0);
    holding.assign(touching.size(), Vec3{});
    if (at.height.empty()) return;
    const std::size_t m = members.size();
    rows(m, first_contact, by_contact, [&](auto&& fn) {
        for (std::size_t c = 0; c < touching.size(); ++c) {
            fn(at.local[touching[c].a], static_cast<std::uint32_t>(c));
            if (touching[c].b != kFixed) fn(at.local[touching[c].b], static_cast<std::uint32_t>(c));
        }
    });
    residual.resize(m);
    for (std::size_t k = 0; k < m; ++k)  // a still member charges its weight to nobody
        residual[k] = !at.still.empty() && at.still[members[k]] ? Vec3{} : gravity / inv_mass[members[k]];
    for (const std::uint32_t slot : by_height) {
        const std::uint32_t k = at.local[slot];
        if (k >= m || members[k] != slot) continue;  // set aside: no longer a member
        // The push a contact gives member k: along n when k is its b (or its b is fixed), along
        // -n when k is its a and b is a member. The statics and sleeping balls it touches take
        // its load, and of the members only those that push it up (for the member on their other
        // side they push down); only k's pass sets them. Its share is solved to the end: a ball
        // pressed against a wall by a support at an obtuse angle to it keeps much of its load
        // after a few sweeps, and a chain of balls between two walls, whose lowest contacts carry
        // many weights, balances from no other guess (balanced() spreads a load one contact a
        // sweep).
        const auto begin = by_contact.begin() + first_contact[k], end = by_contact.begin() + first_contact[k + 1];
        auto push_on = [&](const IslandContact& ct) { return ct.b != kFixed && at.local[ct.a] == k ? -ct.n : ct.n; };
        auto lifts = [&](std::uint32_t c) { return dot(push_on(touching[c]), gravity) < 0.0; };
        auto takes = [&](std::uint32_t c) { return touching[c].b == kFixed || lifts(c); };
        Vec3 none{};
        const double enough = kCarried * dot(residual[k], residual[k]);
        for (int sweep = 0; sweep < kCarrySweeps && dot(residual[k], residual[k]) > enough; ++sweep)
            for (auto c = begin; c != end; ++c)
                if (takes(*c)) push_and_hold(residual[k], push_on(touching[*c]), force[*c], none, 0.0);
        // What it passed on loads the members under it.
        for (auto c = begin; c != end; ++c) {
            const IslandContact& ct = touching[*c];
            if (ct.b == kFixed || !lifts(*c)) continue;
            residual[at.local[ct.a] == k ? at.local[ct.b] : at.local[ct.a]] -= push_on(ct) * force[*c];
        }
    }
}

bool Islands::unbalanced(std::size_t k) const { return unbalanced_by(k, kBalance); }

bool Islands::clearly_unbalanced(std::size_t k) const { return unbalanced_by(k, kClearly); }

bool Islands::unbalanced_by(std::size_t k, double fraction) const {
    return !(dot(residual[k], residual[k]) * weight[k] <= fraction * fraction);
}

}  // namespace ballistic::detail
