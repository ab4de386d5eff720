// Ballistic — the collision rules, as pure functions: how fast a contact separates (restitution
// with the slow- and pressed-contact rules of docs/architecture.md, "Robustness"), resting on planes
// (which supports carry a ball, the acceleration they leave, the velocity they allow), and the
// nearest periodic image. The response (response.hpp) applies them to the balls of an event;
// sleeping and the world use them too.
#pragma once

#include "space/balls.hpp"
#include "space/statics.hpp"

#include <ballistic/types.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace ballistic::detail {

// The least speed at which a ball leaves an immovable sleeping ball, relative to rest_speed: the
// floor below which off_plane() counts a normal speed as rounding noise.
inline constexpr double kLeastLeaving = 1e-9;
// A pressed contact (below) rises at least this high off its body, relative to the ball's radius.
inline constexpr double kLeastHop = 1e-6;
// The least speed at which a contact that acceleration presses together leaves: rest_speed, or
// the speed that lifts the ball kLeastHop of its `radius` against `pressing` (the normal part of
// the relative acceleration) if more. A pressed contact then hops at most
// sqrt(pressing / (8 kLeastHop radius)) times a unit of time however small rest_speed is (2000
// times a second for a ball of radius 0.3 under 9.81): with rest_speed 10⁻¹² a ball sliding
// over a sleeping one under g = 1000 hopped every 10⁻¹⁰ time units, and a step never ended.
// 0 when nothing presses them together.
inline double pressed_leaving(double pressing, double radius, double rest_speed) {
    if (!(pressing > 0.0)) return 0.0;
    return std::max(rest_speed, std::sqrt(2.0 * kLeastHop * radius * pressing));
}
// Separation speed after a contact approached at normal speed u, restitution e (the robustness
// rules): slow contacts are elastic (no inelastic collapse), and a contact that acceleration keeps
// pressing together leaves at no less than `pressed` (pressed_leaving(); no endless zero-time
// events). A slow contact with an immovable sleeping ball is perfectly inelastic instead: a ball
// trapped at zero gaps between it and another obstacle would otherwise bounce between them for
// ever at one instant; this way its speed towards them dies out. It leaves such a ball at no
// less than kLeastLeaving rest_speed: an approach of 10⁻³⁵ beside a velocity of 10⁻¹⁹ survives
// its own removal by rounding, and the same contact was met again at the same instant until the
// jam budget stopped the ball. A contact approaching slower than rounding of the bodies'
// velocities resolves (kGrazing of `speed`, the faster body's) leaves at that at least: balls
// sliding along a wall at 0.3 and approaching at 10⁻¹⁸ kept their velocities' bits, and met
// again at the same instant without end where sleeping was off (fuzz_pile).
inline constexpr double kGrazing = 1e-12;
inline double separation_speed(double u, double pressed, double e, double rest_speed, bool immovable = false,
                               double speed = 0.0) {
    double s = (u < rest_speed ? (immovable ? 0.0 : 1.0) : e) * u;
    if (s < pressed) s = pressed;
    if (immovable) s = std::max(s, kLeastLeaving * rest_speed);
    if (u > 0.0 && u < kGrazing * speed) s = std::max(s, kGrazing * speed);
    return s;
}
// The velocity nearest v that leaves each of m immovable bodies a ball touches (unit normals n,
// towards the ball) at no less than speed[k] (>= 0; every speed 0 when `speed` is null): the
// simultaneous inelastic impact with all of them, for a ball of any mass. The nearest point of a
// convex polyhedral set is fixed by at most three of its constraints (in three dimensions), so
// every set of one, two and three is tried (O(m³): m is a handful). v itself when it already
// leaves them all. When the speeds cannot be met without speeding the ball up by more than the
// largest of them (a ball wedged between nearly opposite bodies, or exactly opposite ones: then
// no velocity meets them), the ball is `wedged` and gets the nearest velocity that moves into
// none of them (every speed 0, always met, never faster than v).
struct Leaving {
    Vec3 v;
    bool wedged = false;
};
Leaving leaving(Vec3 v, const Vec3* n, const double* speed, std::size_t m);
// The tangential velocity vt after a Coulomb friction impulse that can change it by at most
// `reach` (μ times the normal impulse over the effective mass): it slows, never reverses.
inline Vec3 after_friction(Vec3 vt, double reach) {
    if (!(reach > 0.0)) return vt;
    const double speed = length(vt);
    return speed <= reach ? Vec3{} : vt * (1.0 - reach / speed);
}
// What Coulomb friction takes off the sliding of two surfaces whose relative velocity dv has its
// part across the unit normal n, when it can change it by at most `reach`: that sliding less
// what after_friction() leaves of it.
inline Vec3 friction_change(Vec3 dv, Vec3 n, double reach) {
    const Vec3 slide = dv - n * dot(dv, n);
    return slide - after_friction(slide, reach);
}
// Does this normal velocity take a ball off the plane it rests on (more than rounding noise)? A
// ball keeps resting while its normal velocity is rounding noise: relative to its speed, with a
// floor tied to rest_speed so that a vanishing speed cannot make the test empty.
inline bool off_plane(double normal_speed, Vec3 v, double rest_speed) {
    return std::abs(normal_speed) > std::max(1e-12 * length(v), 1e-9 * rest_speed);
}
// The acceleration `gravity` leaves a ball resting on `supports` (planes and blocks' faces, whose
// planes `planes` gives); drops the supports it does not press into.
Vec3 acceleration_for(Supports& supports, Vec3 gravity, const SupportPlanes& planes);
// The entry of `rests` for a ball awake on these supports (added if new), with the acceleration
// acceleration_for() leaves; drops the supports it does not press into.
std::uint32_t rest_for(RestTable& rests, Supports& supports, Vec3 gravity, const SupportPlanes& planes);
// v without its components into the supports' normals.
Vec3 along_supports(const Supports& supports, Vec3 v, const SupportPlanes& planes);
// The nearest periodic image of the separation d, along the axes that wrap (d itself without a
// periodic box).
inline Vec3 min_image(const WorldDef& def, Vec3 d) {
    if (!def.periodic) return d;
    const Vec3 period = def.periodic->max - def.periodic->min;
    auto wrap = [&](double x, double L, int axis) {
        if (!def.periodic_axes[static_cast<std::size_t>(axis)]) return x;
        return x > 0.5 * L ? x - L : (x < -0.5 * L ? x + L : x);
    };
    return {wrap(d.x, period.x, 0), wrap(d.y, period.y, 1), wrap(d.z, period.z, 2)};
}

}  // namespace ballistic::detail
