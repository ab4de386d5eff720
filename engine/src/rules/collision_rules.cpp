// Ballistic — the collision rules (collision_rules.hpp).
#include "rules/collision_rules.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

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

std::uint32_t rest_for(RestTable& rests, Supports& supports, Vec3 gravity, const SupportPlanes& planes) {
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

namespace {

// The nearest velocity to v that meets every speed (leaving(); none: every speed 0), if one of the
// candidates does.
std::optional<Vec3> nearest_leaving(Vec3 v, const Vec3* n, const double* speeds, std::size_t m) {
    auto speed = [speeds](std::size_t k) { return speeds ? speeds[k] : 0.0; };
    double most = 0.0, least = std::numeric_limits<double>::infinity();  // the speeds, and the least above 0
    for (std::size_t k = 0; k < m; ++k) {
        most = std::max(most, speed(k));
        if (speed(k) > 0.0) least = std::min(least, speed(k));
    }
    // The rounding of the dot products below, but never a speed's worth.
    const double slack = std::min(1e-12 * (length(v) + most), 0.5 * least);
    auto meets = [&](Vec3 w) {
        for (std::size_t k = 0; k < m; ++k)
            if (dot(w, n[k]) < speed(k) - slack) return false;
        return true;
    };
    if (meets(v)) return v;
    // Each candidate moves v by non-negative multiples of its normals onto their planes
    // w·n = speed (the conditions of a nearest point); the nearest one that meets every speed wins.
    std::optional<Vec3> best;
    double nearest = std::numeric_limits<double>::infinity();
    auto consider = [&](Vec3 w) {
        const double d = length(w - v);
        if (d < nearest && meets(w)) {
            nearest = d;
            best = w;
        }
    };
    for (std::size_t a = 0; a < m; ++a)
        if (const double push = speed(a) - dot(v, n[a]); push > 0.0) consider(v + n[a] * push);
    for (std::size_t a = 0; a < m; ++a) {
        for (std::size_t b = a + 1; b < m; ++b) {
            const double c = dot(n[a], n[b]), det = 1.0 - c * c;
            if (!(det > 1e-12)) continue;
            const double ra = speed(a) - dot(v, n[a]), rb = speed(b) - dot(v, n[b]);
            const double pa = (ra - c * rb) / det, pb = (rb - c * ra) / det;
            if (pa >= 0.0 && pb >= 0.0) consider(v + n[a] * pa + n[b] * pb);
        }
    }
    for (std::size_t a = 0; a < m; ++a) {
        for (std::size_t b = a + 1; b < m; ++b) {
            for (std::size_t c = b + 1; c < m; ++c) {
                const Vec3 bc = cross(n[b], n[c]), ca = cross(n[c], n[a]), ab = cross(n[a], n[b]);
                const double det = dot(n[a], bc);
                if (!(std::abs(det) > 1e-14)) continue;  // wild answers lose to nearer ones, or to the check below
                const Vec3 w = (bc * speed(a) + ca * speed(b) + ab * speed(c)) / det;
                const Vec3 d = w - v;  // = pa n[a] + pb n[b] + pc n[c]
                if (dot(d, bc) / det >= 0.0 && dot(d, ca) / det >= 0.0 && dot(d, ab) / det >= 0.0) consider(w);
            }
        }
    }
    // With every speed 0 the nearest point is never faster than v but by rounding, which must
    // not turn the answer away.
    if (speeds && best && length(*best) > length(v) + most) return std::nullopt;
    return best;
}

}  // namespace

Leaving leaving(Vec3 v, const Vec3* n, const double* speed, std::size_t m) {
    if (const std::optional<Vec3> w = nearest_leaving(v, n, speed, m)) return {*w};
    // Wedged: stopped moving into any of them. Zero speeds are met by the nearest point itself,
    // which a set of at most three independent normals fixes (Carathéodory); 0 when rounding
    // hides that set (nearly dependent normals), which meets them too.
    return {nearest_leaving(v, n, nullptr, m).value_or(Vec3{}), true};
}

}  // namespace ballistic::detail
