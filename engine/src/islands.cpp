// Ballistic — clusters of touching quiet balls and whether they can stand (islands.hpp).
#include "islands.hpp"

#include <algorithm>

namespace ballistic::detail {
namespace {

// A cluster sleeps when contact forces >= 0 leave every ball an unbalanced force below this
// fraction of its weight, found within this many sweeps.
constexpr double kBalance = 1e-2;
constexpr int kBalanceSweeps = 200;

}  // namespace

bool Islands::balanced(std::span<const std::uint32_t> members, std::span<const IslandContact> touching,
                       const std::vector<double>& inv_mass, Vec3 gravity, double friction) {
    // Weighted least squares: each member's residual force counts relative to its weight, so
    // that a light ball under a heavy one is held to the same standard.
    Islands& is = *this;
    const double g = length(gravity);
    is.residual.resize(members.size());
    is.weight.resize(members.size());
    for (std::size_t k = 0; k < members.size(); ++k) {
        const double mass = 1.0 / inv_mass[members[k]];
        is.residual[k] = gravity * mass;
        is.weight[k] = 1.0 / ((mass * g) * (mass * g));
    }
    is.force.assign(touching.size(), 0.0);
    is.holding.assign(touching.size(), Vec3{});
    // The friction force of a contact, f + step without its part along n, within the cone
    // |f| <= friction λ.
    auto within_cone = [friction](Vec3 f, Vec3 step, Vec3 n, double lambda) {
        f += step - n * dot(step, n);
        const double most = friction * lambda, len = length(f);
        return len > most ? f * (most / len) : f;
    };
    for (int sweep = 0; sweep < kBalanceSweeps; ++sweep) {
        for (std::size_t k = 0; k < touching.size(); ++k) {
            const IslandContact& ct = touching[k];
            Vec3& ra = is.residual[is.local[ct.a]];
            double& lambda = is.force[k];
            Vec3& f = is.holding[k];
            if (ct.b == kFixed) {  // pushes a along n
                const double next = std::max(0.0, lambda - dot(ct.n, ra));
                ra += ct.n * (next - lambda);
                lambda = next;
                if (friction > 0.0) {
                    const Vec3 held = within_cone(f, -ra, ct.n, lambda);
                    ra += held - f;
                    f = held;
                }
            } else {  // pushes b along n and a the other way: weighted least squares of the two
                Vec3& rb = is.residual[is.local[ct.b]];
                const double wa = is.weight[is.local[ct.a]], wb = is.weight[is.local[ct.b]];
                const double next = std::max(0.0, lambda + (wa * dot(ct.n, ra) - wb * dot(ct.n, rb)) / (wa + wb));
                ra -= ct.n * (next - lambda);
                rb += ct.n * (next - lambda);
                lambda = next;
                if (friction > 0.0) {
                    const Vec3 held = within_cone(f, (ra * wa - rb * wb) / (wa + wb), ct.n, lambda);
                    ra -= held - f;
                    rb += held - f;
                    f = held;
                }
            }
        }
        bool settled = true;
        for (std::size_t k = 0; k < members.size() && settled; ++k)
            settled = dot(is.residual[k], is.residual[k]) * is.weight[k] <= kBalance * kBalance;
        if (settled) return true;
    }
    return false;
}

}  // namespace ballistic::detail
