// Ballistic — time-of-impact kernels (scalar reference versions).
//
// Every kernel answers one question: given the current gap between two bodies as a polynomial
// in the time τ from now, what is the first τ in [0, horizon] at which the gap closes? A gap
// that is already closed (touching or overlapping by rounding) closes "now" (τ = 0) when the
// bodies approach, and not at all while they separate (Bannerman et al. 2014). The answer is
// kNever when the gap does not close inside the horizon. No sampling, no time slicing: the
// quadratics are solved in closed form with the cancellation-free root formula, the quartics by
// isolating monotone intervals through the roots of the derivatives and bracketed refinement.
#pragma once

#include <ballistic/vec3.hpp>

#include <array>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>

namespace ballistic::detail {

inline constexpr double kNever = std::numeric_limits<double>::infinity();

// Gap g(τ) = c0 + c1 τ + c2 τ². First closing time in [0, horizon], or kNever.
double first_closing_quadratic(double c0, double c1, double c2, double horizon);

// Gap given by coefficients p[0] + p[1] τ + … + p[4] τ⁴ (any may be zero). First closing time in
// [0, horizon], or kNever; with an infinite horizon, in [0, Cauchy's root bound]. The time is
// where the gap is zero within the rounding error of evaluating it (docs/architecture.md), so a
// gap that only grazes zero within that error counts as closing there.
double first_closing_polynomial(const std::array<double, 5>& p, double horizon);

// Two spheres whose relative position, velocity and acceleration (other minus self) are
// dp, dv, da and whose radii sum to sigma. Quadratic when da is zero (both balls fall with the
// same g), quartic otherwise (one of them slides on a plane).
double toi_ball_ball(Vec3 dp, Vec3 dv, Vec3 da, double sigma, double horizon);

// The opening of a contact: two spheres whose centres are at most `reach` apart, their relative
// position, velocity and acceleration dp, dv, da (other minus self). The first τ in [0, horizon]
// at which the centres are `reach` apart and parting (already there and parting: 0), or kNever.
double toi_apart(Vec3 dp, Vec3 dv, Vec3 da, double reach, double horizon);

// A ball (centre p, velocity v, acceleration a, radius r) against a one-sided plane through
// `point` with unit normal n. Gap: n·(p − point) − r.
double toi_ball_plane(Vec3 p, Vec3 v, Vec3 a, double r, Vec3 point, Vec3 n, double horizon);

// A ball outside an infinite cylinder (axis through `point`, unit direction u, radius R).
// Gap: |perp(p(τ) − point)|² − (R + r)², a quartic when a has a component across the axis.
double toi_ball_cylinder(Vec3 p, Vec3 v, Vec3 a, double r, Vec3 point, Vec3 u, double R,
                         double horizon);

// A ball outside a capsule: every point within R of the segment from a to a + L u (u unit; L
// may be 0, a sphere), whose far end is b. The earliest of its two end spheres and of its body
// (the infinite cylinder's gap, while the ball's centre is level with the segment: 0 ≤ (p − a)·u
// ≤ L). A ball that comes level with the segment inside the cylinder is inside an end sphere,
// which it met first.
double toi_ball_capsule(Vec3 p, Vec3 v, Vec3 acc, double r, Vec3 a, Vec3 b, Vec3 u, double L, double R,
                        double horizon);

// A ball outside an axis-aligned block [lo, hi]: the earliest of its six faces (each plane while
// the centre lies over the face), its eight corners and the bodies of its twelve edges (as
// capsules of radius 0). The ball's centre stays outside the block grown by r, which these parts
// cover: entering the grown block anywhere means crossing one of them first.
double toi_ball_block(Vec3 p, Vec3 v, Vec3 acc, double r, Vec3 lo, Vec3 hi, double horizon);

// Entry distance of the ray o + s d into a sphere (the picking test of the ray–sphere article),
// free of cancellation; 0 when o is inside or on the sphere, −1 for a miss.
double ray_sphere(Vec3 o, Vec3 d, Vec3 centre, double r);

// Batch-shaped versions over structure-of-arrays lanes: one body (or pair) per lane, results
// in `out` (same length). These are the entry points the event loop uses; the SIMD versions
// keep the same signature.
struct PairLanes {
    std::span<const double> dpx, dpy, dpz;  // other − self positions
    std::span<const double> dvx, dvy, dvz;  // other − self velocities
    std::span<const double> dax, day, daz;  // other − self accelerations
    std::span<const double> sigma;          // radius sums
};
void toi_ball_ball_batch(const PairLanes& lanes, double horizon, std::span<double> out);

// One ball against its neighbours when every ball has the same acceleration `a`, so that no pair
// has a relative one: lane k is the ball in `slot[k]` of the balls' columns, brought to time `now`
// as Balls::position_at() and velocity_at() do, and seen through the periodic image shift of the
// lane. Per lane: toi_ball_ball() of the pair, its differences formed as the event loop forms
// them ((other − self) + shift). The SIMD version gathers the columns into lanes itself.
struct Mover {  // the ball predicted, at time `now`
    Vec3 p, v, a;
    double r, now;
};
struct NeighbourLanes {
    std::span<const double> x, y, z, vx, vy, vz, t, radius;  // every ball's state (Balls' columns)
    std::span<const std::uint32_t> slot;                     // one neighbour per lane
    std::span<const double> sx, sy, sz;                      // its image shift; all empty: none

    // Whether the lanes carry image shifts for `n` lanes (or none at all).
    bool shifted(std::size_t n) const {
        assert(sx.empty() ? sy.empty() && sz.empty() : sx.size() >= n && sy.size() >= n && sz.size() >= n);
        (void)n;
        return !sx.empty();
    }
};
void toi_neighbours_batch(const Mover& self, const NeighbourLanes& lanes, double horizon, std::span<double> out);

}  // namespace ballistic::detail
