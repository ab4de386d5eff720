// Time-of-impact kernels against closed forms and an independent quad-precision reference.
#include "kernels/toi.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

using namespace ballistic;
using namespace ballistic::detail;

namespace {
constexpr double kInf = kNever;
}

TEST(Quadratic, OpenGapClosingLinearly) {
    // gap 2, closing at speed 4: t = 0.5
    EXPECT_DOUBLE_EQ(first_closing_quadratic(2.0, -4.0, 0.0, kInf), 0.5);
    EXPECT_EQ(first_closing_quadratic(2.0, 4.0, 0.0, kInf), kNever);
    EXPECT_EQ(first_closing_quadratic(2.0, -4.0, 0.0, 0.4), kNever);  // beyond the horizon
}

TEST(Quadratic, ClosedGapRules) {
    EXPECT_EQ(first_closing_quadratic(0.0, -1.0, 0.0, kInf), 0.0);       // touching, approaching
    EXPECT_EQ(first_closing_quadratic(-1e-16, -1.0, 0.0, kInf), 0.0);    // overlapping, approaching
    EXPECT_EQ(first_closing_quadratic(-1e-16, 1.0, 0.0, kInf), kNever);  // overlapping, separating
    EXPECT_EQ(first_closing_quadratic(0.0, 0.0, 0.0, kInf), kNever);     // resting, nothing pushes
    EXPECT_EQ(first_closing_quadratic(0.0, 0.0, -1.0, kInf), 0.0);       // resting, pushed in
    // Separating from contact but pulled back: closes at the larger root, t = 2 v / g.
    EXPECT_DOUBLE_EQ(first_closing_quadratic(0.0, 3.0, -0.5 * 9.0, kInf), 2.0 * 3.0 / 9.0);
}

TEST(Quadratic, Ballistic) {
    // Dropped from gap h with gravity g: t = sqrt(2h/g).
    const double h = 7.5, g = 9.81;
    EXPECT_NEAR(first_closing_quadratic(h, 0.0, -0.5 * g, kInf), std::sqrt(2 * h / g), 1e-15);
    // Thrown upwards away from the floor at v: returns at t = (v + sqrt(v² + 2 g h)) / g.
    const double v = 4.0;
    EXPECT_NEAR(first_closing_quadratic(h, v, -0.5 * g, kInf), (v + std::sqrt(v * v + 2 * g * h)) / g, 1e-14);
    // Accelerating away forever never closes; convex gap closing then opening closes once.
    EXPECT_EQ(first_closing_quadratic(h, 1.0, 0.5, kInf), kNever);
    EXPECT_NEAR(first_closing_quadratic(1.0, -3.0, 1.0, kInf), (3.0 - std::sqrt(5.0)) / 2.0, 1e-15);
    EXPECT_EQ(first_closing_quadratic(1.0, -1.0, 1.0, kInf), kNever);  // vertex above zero
}

TEST(Quadratic, NoCancellationForTinyRoots) {
    // Root ≈ c/|b| = 1e-12 with b large: the naive formula loses every digit.
    const double t = first_closing_quadratic(1e-6, -1e6, 1.0, kInf);
    EXPECT_NEAR(t, 1e-12, 1e-27);
}

TEST(BallBall, HeadOn) {
    // Centres 10 apart, radii sum 2, closing speed 4: t = 2.
    EXPECT_DOUBLE_EQ(toi_ball_ball({10, 0, 0}, {-4, 0, 0}, {}, 2.0, kInf), 2.0);
    EXPECT_EQ(toi_ball_ball({10, 0, 0}, {4, 0, 0}, {}, 2.0, kInf), kNever);
}

TEST(BallBall, GrazingAndMiss) {
    // Offset b = 2 with sigma 2: touches exactly at the closest approach.
    const double t = toi_ball_ball({10, 2, 0}, {-1, 0, 0}, {}, 2.0, kInf);
    EXPECT_NEAR(t, 10.0, 1e-6);
    EXPECT_EQ(toi_ball_ball({10, 2.0001, 0}, {-1, 0, 0}, {}, 2.0, kInf), kNever);
    // Offset 1: |dp + dv t| = 2 → (10 − t)² + 1 = 4 → t = 10 − √3.
    EXPECT_NEAR(toi_ball_ball({10, 1, 0}, {-1, 0, 0}, {}, 2.0, kInf), 10 - std::sqrt(3.0), 1e-14);
}

TEST(BallBall, ZeroRelativeVelocityNeverCollides) {
    EXPECT_EQ(toi_ball_ball({3, 0, 0}, {}, {}, 2.0, kInf), kNever);
    EXPECT_EQ(toi_ball_ball({2, 0, 0}, {}, {}, 2.0, kInf), kNever);  // touching at rest
}

TEST(BallBall, RelativeAccelerationIsQuartic) {
    // A ball falling (g) onto a resting one below: gap closes when 5 − ½ g t² = 1.
    const double g = 9.81;
    const double t = toi_ball_ball({0, 5, 0}, {}, {0, -g, 0}, 1.0, kInf);
    EXPECT_NEAR(t, std::sqrt(2 * 4.0 / g), 1e-12);
}

TEST(Apart, ClosedForms) {
    // Touching (centres 2 apart), reach 2.01. Sideways at speed 3: √(4 + 9 τ²) = 2.01.
    const double reach = 2.01;
    auto near = [](double t, double expected) { EXPECT_NEAR(t, expected, 1e-12 * expected); };
    near(toi_apart({2, 0, 0}, {0, 0, 3}, {}, reach, kInf), std::sqrt(reach * reach - 4.0) / 3.0);
    // The load above a support that falls from rest: its centre draws away as ½ g τ².
    const double g = 9.81;
    near(toi_apart({0, 2, 0}, {}, {0, g, 0}, reach, kInf), std::sqrt(2 * 0.01 / g));
    // Thrown up at 1 into the load (the kernel does not know they would meet), the support opens
    // the gap only once it has come back down past it: 1 τ − ½ g τ² = −0.01.
    near(toi_apart({0, 2, 0}, {0, -1, 0}, {0, g, 0}, reach, kInf), (1.0 + std::sqrt(1.0 + 2 * g * 0.01)) / g);
    // Already at the reach: parting now. Coming closer: not within the horizon (it would pass
    // through and part on the far side at 4.01); standing: never.
    EXPECT_EQ(toi_apart({reach, 0, 0}, {1, 0, 0}, {}, reach, kInf), 0.0);
    EXPECT_EQ(toi_apart({2, 0, 0}, {-1, 0, 0}, {}, reach, 0.5), kNever);
    EXPECT_EQ(toi_apart({2, 0, 0}, {}, {}, reach, kInf), kNever);
    // Beyond the horizon: none.
    EXPECT_EQ(toi_apart({2, 0, 0}, {0, 0, 3}, {}, reach, 0.01), kNever);
}

TEST(BallPlane, GravityAndHorizon) {
    const double g = 10.0;
    // Centre at height 3, radius 1 over the floor y = 0: gap 2, t = sqrt(2·2/g).
    const double t = toi_ball_plane({0, 3, 0}, {5, 0, 0}, {0, -g, 0}, 1.0, {}, {0, 1, 0}, kInf);
    EXPECT_NEAR(t, std::sqrt(0.4), 1e-15);
    EXPECT_EQ(toi_ball_plane({0, 3, 0}, {5, 0, 0}, {0, -g, 0}, 1.0, {}, {0, 1, 0}, 0.5), kNever);
    // Parallel motion never hits; motion away without gravity never hits.
    EXPECT_EQ(toi_ball_plane({0, 3, 0}, {5, 0, 0}, {}, 1.0, {}, {0, 1, 0}, kInf), kNever);
    EXPECT_EQ(toi_ball_plane({0, 3, 0}, {0, 1, 0}, {}, 1.0, {}, {0, 1, 0}, kInf), kNever);
}

TEST(BallCylinder, StraightIntoColumn) {
    // Column along y through the origin, R = 2; ball r = 1 at x = 10 moving at −3: t = 7/3.
    EXPECT_NEAR(toi_ball_cylinder({10, 5, 0}, {-3, 7, 0}, {}, 1.0, {}, {0, 1, 0}, 2.0, kInf), 7.0 / 3.0, 1e-15);
    // Gravity along the axis does not change the radial motion.
    EXPECT_NEAR(toi_ball_cylinder({10, 5, 0}, {-3, 0, 0}, {0, -9.81, 0}, 1.0, {}, {0, 1, 0}, 2.0, kInf),
                7.0 / 3.0, 1e-15);
    // Moving parallel to the axis never hits.
    EXPECT_EQ(toi_ball_cylinder({10, 5, 0}, {0, 3, 0}, {}, 1.0, {}, {0, 1, 0}, 2.0, kInf), kNever);
}

TEST(BallCylinder, DroppedOntoHorizontalColumnOffCentre) {
    // Column along z, R = 1; ball r = 0.5 dropped from (0.9, 4) under g: contact when
    // x² + y² = 1.5², i.e. y = sqrt(2.25 − 0.81), t = sqrt(2 (4 − y) / g).
    const double g = 9.81;
    const double y = std::sqrt(2.25 - 0.81);
    const double t = toi_ball_cylinder({0.9, 4, 3}, {}, {0, -g, 0}, 0.5, {}, {0, 0, 1}, 1.0, 10.0);
    EXPECT_NEAR(t, std::sqrt(2 * (4 - y) / g), 1e-12);
}

// ---- independent reference: the squared clearance evaluated in quad precision from the
// positions themselves (not from polynomial coefficients), sampled densely and bisected.
namespace {
using quad = __float128;

quad clearance(const Vec3& p, const Vec3& v, const Vec3& a, double r, const Vec3& u, double R, quad t) {
    const quad px = quad(p.x) + quad(v.x) * t + quad(a.x) * t * t / 2;
    const quad py = quad(p.y) + quad(v.y) * t + quad(a.y) * t * t / 2;
    const quad pz = quad(p.z) + quad(v.z) * t + quad(a.z) * t * t / 2;
    const quad along = px * quad(u.x) + py * quad(u.y) + pz * quad(u.z);
    const quad wx = px - along * quad(u.x), wy = py - along * quad(u.y), wz = pz - along * quad(u.z);
    const quad rho = quad(R) + quad(r);
    return wx * wx + wy * wy + wz * wz - rho * rho;
}

// First τ in [0, H] where the clearance crosses from positive to negative, or -1.
double reference_toi(const Vec3& p, const Vec3& v, const Vec3& a, double r, const Vec3& u, double R, double H,
                     double& slope) {
    const int samples = 2000;
    quad prev_t = 0, prev = clearance(p, v, a, r, u, R, 0);
    for (int k = 1; k <= samples; ++k) {
        const quad t = quad(H) * k / samples;
        const quad f = clearance(p, v, a, r, u, R, t);
        if (prev > 0 && f <= 0) {
            quad lo = prev_t, hi = t;
            for (int it = 0; it < 120; ++it) {
                const quad mid = (lo + hi) / 2;
                (clearance(p, v, a, r, u, R, mid) > 0 ? lo : hi) = mid;
            }
            slope = double((f - prev) / (t - prev_t));
            return double(lo);
        }
        prev_t = t;
        prev = f;
    }
    return -1.0;
}
}  // namespace

TEST(BallCylinder, QuarticMatchesQuadPrecisionReference) {
    std::mt19937_64 rng(42);
    auto uniform = [&](double lo, double hi) { return lo + (hi - lo) * double(rng() >> 11) * 0x1p-53; };
    int hits = 0, misses = 0;
    for (int trial = 0; trial < 1500; ++trial) {
        Vec3 u = normalize(Vec3{uniform(-1, 1), uniform(-1, 1), uniform(-1, 1)});
        const double R = uniform(0.2, 2.0), r = uniform(0.1, 1.0);
        Vec3 p{uniform(-8, 8), uniform(-8, 8), uniform(-8, 8)};
        const Vec3 w = p - u * dot(p, u);
        if (length(w) < R + r + 0.1) continue;  // start clear of the column
        const Vec3 v{uniform(-5, 5), uniform(-5, 5), uniform(-5, 5)};
        const Vec3 g{uniform(-10, 10), uniform(-10, 10), uniform(-10, 10)};
        const double H = 3.0;
        double slope = 0.0;
        const double expected = reference_toi(p, v, g, r, u, R, H, slope);
        const double got = toi_ball_cylinder(p, v, g, r, {}, u, R, H);
        if (expected < 0) {
            // A miss by the reference must be a miss here, unless it is a grazing touch the
            // sampling stepped over (then the kernel's answer must be a real touch).
            if (got != kNever) {
                const double c = double(clearance(p, v, g, r, u, R, got));
                EXPECT_LT(std::abs(c), 1e-9) << "trial " << trial;
            }
            ++misses;
            continue;
        }
        if (std::abs(slope) < 1e-3) continue;  // grazing: the time itself is ill-conditioned
        ASSERT_NE(got, kNever) << "trial " << trial << " expected " << expected;
        EXPECT_NEAR(got, expected, 1e-10 * (1 + expected)) << "trial " << trial;
        ++hits;
    }
    EXPECT_GT(hits, 100);
    EXPECT_GT(misses, 100);
}

// A quartic's time of impact is where the gap is zero within the rounding error of evaluating
// it (Higham's bound for Horner's rule, 2·4·u Σ|p_k| t^k), or pinned by a sign change one ulp
// wide. Checked against the gap evaluated in quad precision from the same coefficients, so a
// solver that stopped early (a looser bound) or late would fail.
TEST(Quartic, ImpactIsAZeroWithinRoundingError) {
    std::mt19937_64 rng(11);
    auto uniform = [&](double lo, double hi) { return lo + (hi - lo) * double(rng() >> 11) * 0x1p-53; };
    auto exact_gap = [](const std::array<double, 5>& p, double t) {
        quad value = p[4];
        for (int k = 3; k >= 0; --k) value = value * quad(t) + quad(p[static_cast<std::size_t>(k)]);
        return value;
    };
    auto error_bound = [](const std::array<double, 5>& p, double t) {
        double sum = std::abs(p[4]);
        for (int k = 3; k >= 0; --k) sum = sum * std::abs(t) + std::abs(p[static_cast<std::size_t>(k)]);
        return 8.0 * 0x1p-53 * sum;
    };
    int impacts = 0, refined = 0;
    for (int trial = 0; trial < 20000; ++trial) {
        const std::array<double, 5> p{uniform(0.0, 3.0), uniform(-3, 3), uniform(-3, 3), uniform(-3, 3),
                                      uniform(0.1, 3.0)};
        const double t = first_closing_polynomial(p, 10.0);
        if (t == kNever || t == 0.0) continue;
        ++impacts;
        const double before = std::nextafter(t, 0.0), after = std::nextafter(t, kInf);
        const quad g = exact_gap(p, t);
        const bool zero = (g < 0 ? -g : g) <= 2 * error_bound(p, t);  // the bound, plus its own rounding
        const bool pinned = (exact_gap(p, before) > 0 && g <= 0) || (g > 0 && exact_gap(p, after) <= 0);
        EXPECT_TRUE(zero || pinned) << "trial " << trial << " t " << t << " gap " << double(g);
        refined += zero && !pinned;
        // The gap is open before it (to rounding): no earlier crossing was skipped.
        for (int k = 0; k < 256; ++k) {
            const double s = t * k / 256;
            EXPECT_GT(double(exact_gap(p, s)), -2 * error_bound(p, s)) << "trial " << trial << " s " << s;
        }
    }
    EXPECT_GT(impacts, 5000);
    EXPECT_GT(refined, 500);  // impacts that end on the error bound, not on a one-ulp bracket
}

// A gap that comes down to zero at a double root and opens again (a grazing contact) touches
// there, also where the computed critical point misses the double root by rounding error.
TEST(Quartic, GrazingDoubleRootsTouch) {
    // (τ − 1)² (τ + 1)(τ + 3), (τ − 2)² (τ + 1)(τ + 3), (τ² + τ − 1)² (double root at (√5 − 1)/2);
    // a double root is located to about √u, 10⁻⁸.
    EXPECT_NEAR(first_closing_polynomial({3, -2, -4, 2, 1}, 10.0), 1.0, 1e-7);
    EXPECT_NEAR(first_closing_polynomial({12, 4, -9, 0, 1}, 10.0), 2.0, 1e-7);
    EXPECT_NEAR(first_closing_polynomial({1, -2, -1, 2, 1}, 10.0), (std::sqrt(5.0) - 1) / 2, 1e-7);
    // Lifted clear of zero, they never close.
    EXPECT_EQ(first_closing_polynomial({3.001, -2, -4, 2, 1}, 10.0), kNever);
    EXPECT_EQ(first_closing_polynomial({1.001, -2, -1, 2, 1}, 10.0), kNever);
}

TEST(Batch, MatchesScalar) {
    std::mt19937_64 rng(7);
    auto uniform = [&](double lo, double hi) { return lo + (hi - lo) * double(rng() >> 11) * 0x1p-53; };
    const std::size_t n = 257;
    std::vector<double> c[10];
    for (auto& lane : c) lane.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
        for (int d = 0; d < 6; ++d) c[d][k] = uniform(-5, 5);
        for (int d = 6; d < 9; ++d) c[d][k] = (k % 3 == 0) ? uniform(-1, 1) : 0.0;
        c[9][k] = uniform(0.5, 2.0);
    }
    std::vector<double> out(n);
    toi_ball_ball_batch({c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]}, 10.0, out);
    for (std::size_t k = 0; k < n; ++k) {
        const double expected = toi_ball_ball({c[0][k], c[1][k], c[2][k]}, {c[3][k], c[4][k], c[5][k]},
                                              {c[6][k], c[7][k], c[8][k]}, c[9][k], 10.0);
        EXPECT_EQ(out[k], expected);
    }
}
