// Ballistic — the collision rules (collision_rules.hpp).
#include "collision_rules.hpp"

#include <algorithm>
#include <cmath>

namespace ballistic::detail {

Vec3 acceleration_for(Supports& supports, Vec3 gravity, const SupportPlanes& planes) {
    // Greedy active set: a support constrains the ball only while the acceleration left after
    // the constraints so far still presses it into the plane. Supports that never press are
    // dropped: the ball no longer rests on them.
    Vec3 basis[3];
    int active = 0;
    Vec3 a = gravity;
    bool pressing[3] = {false, false, false};
    for (bool changed = true; changed;) {
        changed = false;
        for (std::size_t k = 0; k < 3; ++k) {
            if (pressing[k] || supports[k] == kNoSupport) continue;
            const Vec3 n = planes[supports[k]].normal;
            if (!(dot(a, n) < 0.0)) continue;
            pressing[k] = true;
            Vec3 e = n;
            for (int b = 0; b < active; ++b) e -= basis[b] * dot(e, basis[b]);
            const double len = length(e);
            if (len < 1e-9) continue;  // already constrained by the others
            basis[active++] = e / len;
            a = gravity;
            for (int b = 0; b < active; ++b) a -= basis[b] * dot(a, basis[b]);
            changed = true;
        }
    }
    for (std::size_t k = 0; k < 3; ++k)
        if (!pressing[k]) supports[k] = kNoSupport;
    return a;
}

std::uint32_t rest_for(Rests& rests, Supports& supports, Vec3 gravity, const SupportPlanes& planes) {
    const Vec3 a = acceleration_for(supports, gravity, planes);
    return rests.intern(supports, false, a);
}

Vec3 along_supports(const Supports& supports, Vec3 v, const SupportPlanes& planes) {
    // Remove the components along the span of the support normals (Gram–Schmidt), so a ball
    // resting in a crease keeps no velocity into either plane.
    Vec3 basis[3];
    int active = 0;
    for (std::int32_t k : supports) {
        if (k == kNoSupport) continue;
        Vec3 e = planes[k].normal;
        for (int b = 0; b < active; ++b) e -= basis[b] * dot(e, basis[b]);
        const double len = length(e);
        if (len < 1e-9) continue;
        basis[active++] = e / len;
    }
    for (int b = 0; b < active; ++b) v -= basis[b] * dot(v, basis[b]);
    return v;
}

}  // namespace ballistic::detail
