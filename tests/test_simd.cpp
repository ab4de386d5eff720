// SIMD kernels (engine/src/kernels/toi_simd.hpp) against their scalar references, bit for bit, for every
// instruction set this CPU runs and for the portable table: random lanes plus the edge cases of each kernel (touching,
// grazing, overlapping while approaching or separating, parallel motion, zero relative velocity,
// the horizon cut, quartic lanes mixed in, lane counts that are not a multiple of the width).
#include "kernels/toi.hpp"
#include "kernels/toi_simd.hpp"
#include "space/balls.hpp"

#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace ballistic;
using namespace ballistic::detail;

namespace {

const std::size_t kCounts[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 257};
const double kHorizons[] = {kNever, 10.0, 1.0, 0.25, 0.0};

class Draw {
public:
    explicit Draw(std::uint64_t seed) : rng_(seed) {}
    double uniform(double lo, double hi) { return lo + (hi - lo) * double(rng_() >> 11) * 0x1p-53; }
    Vec3 cube(double half) { return {uniform(-half, half), uniform(-half, half), uniform(-half, half)}; }
    Vec3 unit() {
        Vec3 u;
        do { u = cube(1.0); } while (!(length(u) > 0.1));
        return normalize(u);
    }
    std::size_t below(std::size_t n) { return static_cast<std::size_t>(rng_() % n); }
    bool chance(double p) { return uniform(0.0, 1.0) < p; }

private:
    std::mt19937_64 rng_;
};

// Same bits in every lane (so +0 and −0 differ, and NaN would need the same payload).
::testing::AssertionResult same_bits(std::span<const double> simd, std::span<const double> scalar) {
    if (simd.size() != scalar.size()) return ::testing::AssertionFailure() << "sizes differ";
    std::ostringstream bad;
    bad.precision(17);
    int mismatches = 0;
    for (std::size_t k = 0; k < simd.size(); ++k) {
        if (std::bit_cast<std::uint64_t>(simd[k]) == std::bit_cast<std::uint64_t>(scalar[k])) continue;
        if (++mismatches <= 5)
            bad << " lane " << k << ": simd " << simd[k] << " scalar " << scalar[k] << ";";
    }
    if (mismatches == 0) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << mismatches << " of " << simd.size() << " lanes differ:" << bad.str();
}

// Outcome tallies, so that the random inputs are known to reach every branch.
struct Tally {
    int now = 0, later = 0, never = 0;
    void add(const std::vector<double>& out) {
        for (double t : out) (t == 0.0 ? now : (t == kNever ? never : later)) += 1;
    }
};

// ---- ball–ball lanes --------------------------------------------------------------------------

struct Pairs {
    std::vector<double> c[10];  // dpx dpy dpz dvx dvy dvz dax day daz sigma
    void push(Vec3 dp, Vec3 dv, Vec3 da, double sigma) {
        const double values[10] = {dp.x, dp.y, dp.z, dv.x, dv.y, dv.z, da.x, da.y, da.z, sigma};
        for (int d = 0; d < 10; ++d) c[d].push_back(values[d]);
    }
    std::size_t size() const { return c[0].size(); }
    PairLanes lanes() const { return {c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9]}; }
    std::vector<double> scalar(double horizon) const {
        std::vector<double> out(size());
        for (std::size_t k = 0; k < size(); ++k)
            out[k] = toi_ball_ball({c[0][k], c[1][k], c[2][k]}, {c[3][k], c[4][k], c[5][k]},
                                   {c[6][k], c[7][k], c[8][k]}, c[9][k], horizon);
        return out;
    }
};

// The special pairs, all quadratic (da = 0 or −0).
void push_pair_edges(Pairs& p) {
    const Vec3 zero{}, minus_zero{-0.0, -0.0, -0.0};
    p.push({10, 0, 0}, {-4, 0, 0}, zero, 2.0);        // head-on, t = 2
    p.push({10, 0, 0}, {4, 0, 0}, zero, 2.0);         // receding
    p.push({10, 2, 0}, {-1, 0, 0}, zero, 2.0);        // grazing: touches at closest approach
    p.push({10, 2.0001, 0}, {-1, 0, 0}, zero, 2.0);   // just misses
    p.push({2, 0, 0}, {-1, 0, 0}, zero, 2.0);         // touching, approaching: now
    p.push({2, 0, 0}, {1, 0, 0}, zero, 2.0);          // touching, separating: never
    p.push({2, 0, 0}, {0, 1, 0}, zero, 2.0);          // touching, sliding tangentially (c0 = c1 = 0)
    p.push({1.5, 0, 0}, {-1, 0.3, 0}, zero, 2.0);     // overlapping, approaching: now
    p.push({1.5, 0, 0}, {1, 0.3, 0}, zero, 2.0);      // overlapping, separating: never
    p.push({3, 0, 0}, {}, zero, 2.0);                 // zero relative velocity, apart
    p.push({2, 0, 0}, {}, zero, 2.0);                 // zero relative velocity, touching
    p.push({1, 0, 0}, {}, zero, 2.0);                 // zero relative velocity, overlapping
    p.push({0, 5, 0}, {1, 0, 0}, zero, 2.0);          // parallel motion, never closes
    p.push({0, 5, 0}, {1, 0, 0}, minus_zero, 2.0);    // −0 acceleration is still quadratic
    p.push({-0.0, 3, 0}, {-0.0, -1, 0}, zero, 1.0);   // −0 components
    p.push({1e-9, 0, 0}, {-1e9, 0, 0}, zero, 1e-9);   // tiny, fast
    p.push({1e6, 1, 0}, {-1e-3, 0, 0}, zero, 2.0);    // far, slow: beyond every finite horizon
    p.push({0.5, 0.5, 0.5}, {-0.25, -0.25, -0.25}, zero, 0.5);  // hits at the horizon cut region
    // Not a number in the acceleration: the scalar code takes it to the quartic (da ≠ 0), and
    // so must every instruction set (xsimd's != disagrees between them on NaN).
    const double nan = std::numeric_limits<double>::quiet_NaN();
    p.push({3, 1, 0}, {-1, 0, 0}, {0, 0, nan}, 2.0);
    p.push({3, 1, 0}, {-1, 0, 0}, {nan, 0, 0}, 2.0);
}

void push_pair_random(Pairs& p, Draw& draw, std::size_t n, double quartic_share) {
    for (std::size_t k = 0; k < n; ++k) {
        const double sigma = draw.uniform(0.2, 2.0);
        const Vec3 dp = draw.cube(2.5 * sigma);  // some overlapping, most apart
        const Vec3 dv = dp * -draw.uniform(-0.5, 2.0) + draw.cube(1.5);
        Vec3 da{};
        if (draw.chance(quartic_share)) da = draw.cube(10.0);
        p.push(dp, dv, da, sigma);
    }
}

// Grazing pairs: the closest approach of the straight relative path is σ within a few ulps
// (a near-double root of the gap, where the batch must fall back to the scalar root choice).
void push_pair_grazing(Pairs& p, Draw& draw, std::size_t n) {
    for (std::size_t k = 0; k < n; ++k) {
        const double sigma = draw.uniform(0.2, 2.0);
        const Vec3 along = draw.unit();
        Vec3 side = cross(along, draw.unit());
        side = normalize(side);
        double miss = sigma;
        for (std::size_t step = draw.below(4); step > 0; --step)
            miss = std::nextafter(miss, draw.chance(0.5) ? 0.0 : 10.0);
        const Vec3 dp = side * miss + along * draw.uniform(1.0, 5.0);
        const Vec3 dv = along * -draw.uniform(0.5, 3.0);
        p.push(dp, dv, {}, sigma);
    }
}

// ---- one ball against its neighbours ----------------------------------------------------------

// A moving ball and the balls around it (Balls' columns), with lanes naming some of them: slots
// repeated, out of order, seen through periodic image shifts.
struct Neighbourhood {
    Balls balls;
    Mover self{};
    std::vector<std::uint32_t> slot;
    std::vector<double> sx, sy, sz;

    void add_ball(Vec3 p, Vec3 v, double t, double radius) {
        balls.x.push_back(p.x), balls.y.push_back(p.y), balls.z.push_back(p.z);
        balls.vx.push_back(v.x), balls.vy.push_back(v.y), balls.vz.push_back(v.z);
        balls.t.push_back(t);
        balls.radius.push_back(radius);
    }
    void add_lane(std::size_t j, Vec3 shift) {
        slot.push_back(static_cast<std::uint32_t>(j));
        sx.push_back(shift.x), sy.push_back(shift.y), sz.push_back(shift.z);
    }
    NeighbourLanes lanes() const {
        return {balls.x, balls.y, balls.z, balls.vx, balls.vy, balls.vz, balls.t, balls.radius, slot, sx, sy, sz};
    }
    std::vector<double> scalar(double horizon) const {
        std::vector<double> out(slot.size());
        toi_neighbours_batch(self, lanes(), horizon, out);
        return out;
    }
    // What the event loop formed itself before the kernel gathered: the balls' own state at
    // `now`, the differences, toi_ball_ball().
    std::vector<double> engine(double horizon) const {
        std::vector<double> out(slot.size());
        for (std::size_t k = 0; k < out.size(); ++k) {
            const std::size_t j = slot[k];
            out[k] = toi_ball_ball((balls.position_at(j, self.now, self.a) - self.p) + Vec3{sx[k], sy[k], sz[k]},
                                   balls.velocity_at(j, self.now, self.a) - self.v, self.a - self.a,
                                   self.r + balls.radius[j], horizon);
        }
        return out;
    }
};

// n lanes over a population of about n / 2 balls around a mover at `origin`, under `gravity`; the
// first balls are the special cases (touching and approaching or separating, zero relative
// velocity, grazing, a ball last moved at `now` itself), exact when `origin` is zero.
void fill_neighbourhood(Neighbourhood& h, Draw& draw, std::size_t n, Vec3 gravity, Vec3 origin = {}) {
    const double now = 2.5;
    h.self = {origin, {1.0, -0.5, 0.0}, gravity, 0.5, now};
    // Special balls, given at time `now` (τ = 0 leaves their state exactly as written).
    h.add_ball(origin + Vec3{1.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, now, 0.5);    // touching, approaching: now
    h.add_ball(origin + Vec3{-1.0, 0.0, 0.0}, {0.0, 0.0, 0.0}, now, 0.5);   // touching, separating: never
    h.add_ball(origin + Vec3{3.0, 0.0, 0.0}, {1.0, -0.5, 0.0}, now, 0.5);   // zero relative velocity
    h.add_ball(origin + Vec3{3.0, 1.0, 0.0}, {0.0, -0.5, 0.0}, now, 0.5);   // grazing: a double root at τ = 3
    h.add_ball(origin + Vec3{0.0, 0.0, 4.0}, {1.0, -0.5, -2.0}, now, 1.5);  // head-on from above, t = 1
    const std::size_t special = h.balls.x.size();
    for (std::size_t k = special; k < std::max<std::size_t>(n / 2, special + 1); ++k) {
        const double t = draw.chance(0.2) ? now : draw.uniform(0.0, now);
        h.add_ball(origin + draw.cube(3.0), draw.cube(2.0), t, draw.uniform(0.2, 1.0));
    }
    const std::size_t balls = h.balls.x.size();
    for (std::size_t k = 0; k < n; ++k) {
        std::size_t j = k < special ? k : draw.below(balls);
        Vec3 shift{};
        if (k >= special && draw.chance(0.3)) {
            // A periodic image: a ball of its own a period away, whose image heads for the mover
            // from 2–4 away (most of these lanes hit later, where every bit of the difference
            // shows in the time).
            const double period = draw.chance(0.5) ? 8.0 : -8.0;
            (draw.chance(0.5) ? shift.x : (draw.chance(0.5) ? shift.y : shift.z)) = period;
            const Vec3 away = draw.unit() * draw.uniform(2.0, 4.0);
            const Vec3 v = h.self.v - away * draw.uniform(0.2, 1.0) + draw.cube(0.2);
            const double t = draw.uniform(0.0, now);
            j = h.balls.x.size();
            h.add_ball(origin + away - shift - v * (now - t), v, t, draw.uniform(0.2, 1.0));
        }
        h.add_lane(j, shift);
    }
}

// ---- quadratic gaps: the quadratic solver, through polynomial() with p3 = p4 = 0 -------------

struct Gaps {
    std::vector<double> c0, c1, c2, zero;
    void push(double a, double b, double c) {
        c0.push_back(a);
        c1.push_back(b);
        c2.push_back(c);
        zero.push_back(0.0);
    }
    PolynomialLanes lanes() const { return {c0, c1, c2, zero, zero}; }
    std::vector<double> scalar(double horizon) const {
        std::vector<double> out;
        for (std::size_t k = 0; k < c0.size(); ++k)
            out.push_back(first_closing_quadratic(c0[k], c1[k], c2[k], horizon));
        return out;
    }
};

// Coefficients drawn from a set rich in zeros, signed zeros and tiny values, so that every
// branch of first_closing_quadratic() (closed, linear, degenerate q, both root orders) is hit.
double special_coefficient(Draw& draw) {
    switch (draw.below(8)) {
        case 0: return 0.0;
        case 1: return -0.0;
        case 2: return draw.uniform(-1e-300, 1e-300);
        case 3: return draw.chance(0.5) ? 1.0 : -1.0;
        default: return draw.uniform(-5.0, 5.0);
    }
}

}  // namespace

// ---- dispatch ---------------------------------------------------------------------------------

TEST(SimdDispatch, BestAvailableFirstAndPortableLast) {
    const std::vector<SimdKernels> all = simd_kernels_available();
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all.front().name(), simd_kernels().name());
    EXPECT_EQ(all.back().name(), "portable");
    EXPECT_EQ(all.back().width(), 1u);
    for (std::size_t k = 0; k + 1 < all.size(); ++k) EXPECT_GT(all[k].width(), all[k + 1].width());
    for (const SimdKernels& kernels : all) {
        const SimdKernels* found = simd_kernels_for(kernels.name());
        ASSERT_NE(found, nullptr);
        EXPECT_EQ(found->name(), kernels.name());
    }
    EXPECT_EQ(simd_kernels_for("avx"), nullptr);  // never built: xsimd 8.1 misdetects it
    EXPECT_EQ(simd_kernels_for("neon"), nullptr);
}

#if BALLISTIC_SIMD_X86
TEST(SimdDispatch, PicksWhatTheCpuRuns) {
    __builtin_cpu_init();
    const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw") &&
                        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    EXPECT_EQ(simd_kernels_for("avx512bw") != nullptr, avx512);
    EXPECT_EQ(simd_kernels_for("fma3+avx2") != nullptr, avx2);
    EXPECT_NE(simd_kernels_for("sse2"), nullptr);
    EXPECT_EQ(simd_kernels().name(), avx512 ? "avx512bw" : (avx2 ? "fma3+avx2" : "sse2"));
    if (const SimdKernels* k = simd_kernels_for("avx512bw")) {
        EXPECT_EQ(k->width(), 8u);
    }
    if (const SimdKernels* k = simd_kernels_for("fma3+avx2")) {
        EXPECT_EQ(k->width(), 4u);
    }
    EXPECT_EQ(simd_kernels_for("sse2")->width(), 2u);
}
#else
TEST(SimdDispatch, PortableWithoutSimd) {
    EXPECT_EQ(simd_kernels().name(), "portable");
    EXPECT_EQ(simd_kernels_available().size(), 1u);
    EXPECT_EQ(simd_kernels_for("sse2"), nullptr);
}
#endif

// ---- polynomial gaps (the quartic) ------------------------------------------------------------

struct Polynomials {
    std::vector<double> c[5];
    void push(const std::array<double, 5>& p) {
        for (std::size_t k = 0; k < 5; ++k) c[k].push_back(p[k]);
    }
    std::size_t size() const { return c[0].size(); }
    PolynomialLanes lanes() const { return {c[0], c[1], c[2], c[3], c[4]}; }
    std::vector<double> scalar(double horizon) const {
        std::vector<double> out(size());
        for (std::size_t k = 0; k < size(); ++k)
            out[k] = first_closing_polynomial({c[0][k], c[1][k], c[2][k], c[3][k], c[4][k]}, horizon);
        return out;
    }
};

// s (τ − r0)(τ − r1)(τ − r2)(τ − r3), expanded exactly (small integers and halves): double and
// triple roots, roots at 0 and at the horizon, so that evaluations hit exact zeros.
std::array<double, 5> from_roots(double s, const std::array<double, 4>& roots) {
    std::array<double, 5> p{1, 0, 0, 0, 0};
    for (std::size_t n = 0; n < roots.size(); ++n) {
        for (std::size_t k = n + 1; k-- > 0;) {
            p[k + 1] += p[k];
            p[k] *= -roots[n];
        }
    }
    for (double& x : p) x *= s;
    return p;
}

// Random quartic gaps of every kind the solver distinguishes: generic, with exact multiple roots,
// small integer coefficients (many zeros: closing now, flat starts), magnitudes over 10^±160, and
// lanes with an infinity, a NaN, a zero or a subnormal leading coefficient (a cubic), ±0.
void push_polynomial_random(Polynomials& p, Draw& draw, std::size_t n) {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    for (std::size_t i = 0; i < n; ++i) {
        std::array<double, 5> c{};
        switch (draw.below(4)) {
            case 0:
                for (double& x : c) x = draw.uniform(-3.0, 3.0);
                c[0] = std::abs(c[0]);  // mostly open gaps
                break;
            case 1: {
                std::array<double, 4> roots{};
                for (double& r : roots) r = 0.5 * (static_cast<double>(draw.below(9)) - 4.0);
                c = from_roots(draw.chance(0.5) ? 1.0 : -1.0, roots);
                break;
            }
            case 2:
                for (double& x : c) x = static_cast<double>(draw.below(9)) - 4.0;
                if (c[4] == 0.0) c[4] = 1.0;
                break;
            default:
                for (double& x : c)
                    x = draw.uniform(-3.0, 3.0) * std::pow(10.0, 40.0 * (static_cast<double>(draw.below(9)) - 4.0));
                switch (draw.below(8)) {
                    case 0: c[draw.below(5)] = inf; break;
                    case 1: c[draw.below(5)] = -inf; break;
                    case 2: c[draw.below(5)] = nan; break;
                    case 3: c[4] = 0.0; break;  // a cubic (when c[3] ≠ 0)
                    case 4: c[draw.below(5)] = -0.0; break;
                    case 5: c[4] = 1e-310; break;
                    default: break;
                }
        }
        p.push(c);
    }
}

// ---- per instruction set ----------------------------------------------------------------------

class Simd : public ::testing::TestWithParam<const char*> {
protected:
    void SetUp() override {
        kernels_ = simd_kernels_for(GetParam());
        if (kernels_ == nullptr) GTEST_SKIP() << GetParam() << " is not available on this CPU";
    }
    const SimdKernels& k() const { return *kernels_; }

private:
    const SimdKernels* kernels_ = nullptr;
};

INSTANTIATE_TEST_SUITE_P(Arch, Simd, ::testing::Values("avx512bw", "fma3+avx2", "sse2", "portable"),
                         [](const ::testing::TestParamInfo<const char*>& arch) {
                             std::string name = arch.param;
                             for (char& ch : name)
                                 if (ch == '+') ch = '_';
                             return name;
                         });

TEST_P(Simd, BallBallEdgeCases) {
    Pairs pairs;
    push_pair_edges(pairs);
    for (double h : kHorizons) {
        std::vector<double> out(pairs.size());
        k().ball_ball(pairs.lanes(), h, out);
        EXPECT_TRUE(same_bits(out, pairs.scalar(h))) << "horizon " << h;
    }
    // The head-on pair: t = 2 exactly; cut by a horizon just below it.
    std::vector<double> out(pairs.size());
    k().ball_ball(pairs.lanes(), std::nextafter(2.0, 0.0), out);
    EXPECT_EQ(out[0], kNever);
    k().ball_ball(pairs.lanes(), 2.0, out);
    EXPECT_EQ(out[0], 2.0);
    EXPECT_EQ(out[4], 0.0);     // touching, approaching
    EXPECT_EQ(out[5], kNever);  // touching, separating
    EXPECT_EQ(out[6], kNever);  // touching, tangential
}

TEST_P(Simd, BallBallRandomAllLaneCounts) {
    Draw draw(11);
    Tally tally;
    for (std::size_t n : kCounts) {
        for (double share : {0.0, 0.3, 1.0}) {
            Pairs pairs;
            push_pair_random(pairs, draw, n, share);
            for (double h : kHorizons) {
                std::vector<double> out(n, -7.0);
                k().ball_ball(pairs.lanes(), h, out);
                EXPECT_TRUE(same_bits(out, pairs.scalar(h))) << "n " << n << " quartic share " << share
                                                             << " horizon " << h;
                tally.add(out);
            }
        }
    }
    EXPECT_GT(tally.now, 100);
    EXPECT_GT(tally.later, 100);
    EXPECT_GT(tally.never, 100);
}

TEST_P(Simd, BallBallGrazing) {
    Draw draw(14);
    Pairs pairs;
    push_pair_grazing(pairs, draw, 600);
    Tally tally;
    for (double h : {kNever, 3.0}) {
        std::vector<double> out(pairs.size());
        k().ball_ball(pairs.lanes(), h, out);
        EXPECT_TRUE(same_bits(out, pairs.scalar(h))) << "horizon " << h;
        tally.add(out);
    }
    EXPECT_GT(tally.later, 50);
    EXPECT_GT(tally.never, 50);
}

TEST_P(Simd, BallBallQuarticLanesInTheTail) {
    // Quartic lanes at the start, in the middle and in the partial last batch.
    Draw draw(12);
    Pairs pairs;
    push_pair_random(pairs, draw, 2 * k().width() + 1, 0.0);
    const std::size_t quartic[] = {0, k().width() + 1, 2 * k().width()};
    for (std::size_t lane : quartic) {
        // A ball dropped onto one at rest below (gap 5 − ½ g τ² = 1): only the quartic sees it.
        const double values[10] = {0, 5, 0, 0, 0, 0, 0, -9.81, 0, 1.0};
        for (int d = 0; d < 10; ++d) pairs.c[d][lane] = values[d];
    }
    std::vector<double> out(pairs.size());
    k().ball_ball(pairs.lanes(), 3.0, out);
    EXPECT_TRUE(same_bits(out, pairs.scalar(3.0)));
    for (std::size_t lane : quartic) EXPECT_NEAR(out[lane], std::sqrt(8.0 / 9.81), 1e-12) << lane;
}

TEST_P(Simd, BallBallWritesOnlyItsOutput) {
    Draw draw(13);
    Pairs pairs;
    push_pair_random(pairs, draw, 40, 0.2);
    std::vector<double> out(43, -7.0);
    k().ball_ball(pairs.lanes(), 5.0, std::span<double>(out).first(37));
    const std::vector<double> expected = pairs.scalar(5.0);
    for (std::size_t i = 0; i < 37; ++i) EXPECT_EQ(out[i], expected[i]) << i;
    for (std::size_t i = 37; i < 43; ++i) EXPECT_EQ(out[i], -7.0) << i;
}

TEST_P(Simd, NeighboursMatchTheScalarGatherAllLaneCounts) {
    Draw draw(15);
    Tally tally;
    for (const Vec3 gravity : {Vec3{0.0, -9.81, 0.0}, Vec3{}, Vec3{0.3, -0.0, 2.0}}) {
        for (std::size_t n : kCounts) {
            // Off the origin, so that the mover's position and the order of the difference and
            // the image shift show in the bits.
            Neighbourhood h;
            fill_neighbourhood(h, draw, n, gravity, draw.cube(5.0));
            for (double horizon : kHorizons) {
                std::vector<double> out(n, -7.0);
                k().neighbours(h.self, h.lanes(), horizon, out);
                const std::vector<double> scalar = h.scalar(horizon);
                EXPECT_TRUE(same_bits(out, scalar)) << "n " << n << " horizon " << horizon;
                EXPECT_TRUE(same_bits(scalar, h.engine(horizon))) << "n " << n << " horizon " << horizon;
                tally.add(out);
            }
        }
    }
    EXPECT_GT(tally.now, 100);
    EXPECT_GT(tally.later, 100);
    EXPECT_GT(tally.never, 100);
}

// Lanes without image shifts (empty shift spans: what a prediction hands when no cell of its walk
// is a periodic image) give the bits of zero shifts, in the scalar reference and the kernel.
TEST_P(Simd, NeighboursWithoutShiftsAsZeroShifts) {
    Draw draw(18);
    for (const Vec3 gravity : {Vec3{}, Vec3{0.0, -9.81, 0.0}}) {
        for (std::size_t n : kCounts) {
            Neighbourhood h;
            fill_neighbourhood(h, draw, n, gravity, n % 2 ? draw.cube(5.0) : Vec3{});
            std::fill(h.sx.begin(), h.sx.end(), 0.0);
            std::fill(h.sy.begin(), h.sy.end(), 0.0);
            std::fill(h.sz.begin(), h.sz.end(), 0.0);
            NeighbourLanes none = h.lanes();
            none.sx = none.sy = none.sz = {};
            for (double horizon : kHorizons) {
                std::vector<double> out(n, -7.0), scalar(n, -7.0);
                k().neighbours(h.self, none, horizon, out);
                toi_neighbours_batch(h.self, none, horizon, scalar);
                const std::vector<double> zero_shifts = h.scalar(horizon);
                EXPECT_TRUE(same_bits(out, zero_shifts)) << "n " << n << " horizon " << horizon;
                EXPECT_TRUE(same_bits(scalar, zero_shifts)) << "n " << n << " horizon " << horizon;
            }
        }
    }
}

TEST_P(Simd, NeighboursSpecialCases) {
    Draw draw(16);
    Neighbourhood h;
    fill_neighbourhood(h, draw, 5, {});
    std::vector<double> out(5);
    k().neighbours(h.self, h.lanes(), kNever, out);
    EXPECT_EQ(out[0], 0.0);     // touching, approaching
    EXPECT_EQ(out[1], kNever);  // touching, separating
    EXPECT_EQ(out[2], kNever);  // zero relative velocity
    EXPECT_EQ(out[3], 3.0);     // grazing
    EXPECT_EQ(out[4], 1.0);     // head-on: gap 4 − 2 closing at 2
    EXPECT_TRUE(same_bits(out, h.scalar(kNever)));
    k().neighbours(h.self, h.lanes(), std::nextafter(1.0, 0.0), out);
    EXPECT_EQ(out[4], kNever);  // cut by the horizon
}

TEST_P(Simd, NeighboursWritesOnlyItsOutput) {
    Draw draw(17);
    Neighbourhood h;
    fill_neighbourhood(h, draw, 40, {0.0, -9.81, 0.0}, {0.3, -1.7, 2.9});
    std::vector<double> out(43, -7.0);
    k().neighbours(h.self, h.lanes(), 5.0, std::span<double>(out).first(37));
    const std::vector<double> expected = h.scalar(5.0);
    for (std::size_t i = 0; i < 37; ++i) EXPECT_EQ(std::bit_cast<std::uint64_t>(out[i]),
                                                   std::bit_cast<std::uint64_t>(expected[i])) << i;
    for (std::size_t i = 37; i < 43; ++i) EXPECT_EQ(out[i], -7.0) << i;
}

TEST_P(Simd, QuadraticGapsAllBranches) {
    Draw draw(21);
    Tally tally;
    for (std::size_t n : kCounts) {
        Gaps gaps;
        for (std::size_t i = 0; i < n; ++i)
            gaps.push(special_coefficient(draw), special_coefficient(draw), special_coefficient(draw));
        for (double h : {kNever, 1.0, 0.0, -1.0}) {
            std::vector<double> out(n);
            k().polynomial(gaps.lanes(), h, out);
            EXPECT_TRUE(same_bits(out, gaps.scalar(h))) << "n " << n << " horizon " << h;
            tally.add(out);
        }
    }
    EXPECT_GT(tally.now, 50);
    EXPECT_GT(tally.later, 50);
    EXPECT_GT(tally.never, 50);
}

// Near-double roots: c0 ≈ c1² / (4 c2), nudged by a few ulps or by a relative 2⁻⁵⁴…2⁻³⁶, so the
// computed discriminant lands below zero, at zero, inside the band where the batch cannot prove
// which root the scalar code keeps, and just above it.
TEST_P(Simd, QuadraticGapsNearDoubleRoots) {
    Draw draw(23);
    Gaps gaps;
    int negative = 0, unsure = 0, sure = 0;
    for (int i = 0; i < 4000; ++i) {
        const double c1 = draw.uniform(-5.0, 5.0);
        double c2 = draw.uniform(0.1, 5.0);
        if (draw.chance(0.5)) c2 = -c2;
        double c0 = c1 * c1 / (4.0 * c2);
        if (draw.chance(0.5)) {
            for (std::size_t step = draw.below(6); step > 0; --step)
                c0 = std::nextafter(c0, draw.chance(0.5) ? -10.0 : 10.0);
        } else {
            c0 *= 1.0 + std::ldexp(draw.chance(0.5) ? 1.0 : -1.0, -36 - static_cast<int>(draw.below(19)));
        }
        if (draw.chance(0.2)) c0 = -c0;  // closed gaps with a double root nearby
        gaps.push(c0, c1, c2);
        const double disc = c1 * c1 - 4.0 * c2 * c0;
        const double band = 0x1p-50 * (c1 * c1 + std::abs(4.0 * c2 * c0));
        (disc < 0.0 ? negative : (disc <= band ? unsure : sure)) += 1;
    }
    EXPECT_GT(negative, 100);
    EXPECT_GT(unsure, 100);
    EXPECT_GT(sure, 100);
    Tally tally;
    for (double h : {kNever, 1.0}) {
        std::vector<double> out(gaps.c0.size());
        k().polynomial(gaps.lanes(), h, out);
        EXPECT_TRUE(same_bits(out, gaps.scalar(h))) << "horizon " << h;
        tally.add(out);
    }
    EXPECT_GT(tally.later, 100);
    EXPECT_GT(tally.never, 100);
}

TEST_P(Simd, QuadraticGapsClosedForms) {
    Gaps gaps;
    gaps.push(2.0, -4.0, 0.0);           // linear, t = 0.5
    gaps.push(0.0, 0.0, -1.0);           // resting, pushed in: now
    gaps.push(0.0, 3.0, -4.5);           // leaves contact, pulled back: t = 2/3
    gaps.push(1.0, -3.0, 1.0);           // convex, closes at (3 − √5)/2
    gaps.push(1.0, -1.0, 1.0);           // vertex above zero: never
    gaps.push(1e-6, -1e6, 1.0);          // tiny root without cancellation: 1e-12
    gaps.push(-1e-16, 1.0, 0.0);         // overlapping, separating: never
    std::vector<double> out(gaps.c0.size());
    k().polynomial(gaps.lanes(), kNever, out);
    EXPECT_TRUE(same_bits(out, gaps.scalar(kNever)));
    EXPECT_EQ(out[0], 0.5);
    EXPECT_EQ(out[1], 0.0);
    EXPECT_DOUBLE_EQ(out[2], 2.0 / 3.0);
    EXPECT_NEAR(out[3], (3.0 - std::sqrt(5.0)) / 2.0, 1e-15);
    EXPECT_EQ(out[4], kNever);
    EXPECT_NEAR(out[5], 1e-12, 1e-27);
    EXPECT_EQ(out[6], kNever);
}

TEST_P(Simd, PolynomialRandomAllLaneCounts) {
    Draw draw(61);
    Tally tally;
    for (int round = 0; round < 40; ++round) {
        for (std::size_t n : kCounts) {
            Polynomials polys;
            push_polynomial_random(polys, draw, n);
            for (double h : kHorizons) {
                std::vector<double> out(n);
                k().polynomial(polys.lanes(), h, out);
                EXPECT_TRUE(same_bits(out, polys.scalar(h))) << "n " << n << " horizon " << h << " round " << round;
                tally.add(out);
            }
        }
    }
    EXPECT_GT(tally.now, 500);
    EXPECT_GT(tally.later, 500);
    EXPECT_GT(tally.never, 500);
}

// Batches in which every gap is open and convex (c0 > 0, c2 > 0) take the kernels' short path;
// one uncertain lane (a double root, an infinity) sends the batch to the general path. Every
// batch here mixes lanes of this list: the short path's edges (a root that underflows to +0, one
// exactly at the horizon, c1 = ±0, an opening gap, no real root, a double root, NaN and infinite
// slopes, huge and tiny magnitudes) among generic closing gaps.
TEST_P(Simd, OpenConvexQuadraticsMatchTheScalarSolver) {
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    const std::array<double, 3> edges[] = {
        {1e-320, -1e10, 1.0},     // root c0 / q underflows to +0
        {0.75, -2.0, 1.0},        // roots 0.5 and 1.5: closes at 0.5 exactly
        {1.0, -0.0, 1.0},         // at its minimum now, never closes
        {1.0, 0.0, 1.0},
        {1.0, 3.0, 1.0},          // opening
        {1.0, -1.0, 1.0},         // no real root
        {1.0, -2.0, 1.0},         // (τ − 1)²: a double root, grazing at 1
        {1.0, nan, 1.0},
        {1.0, -inf, 1.0},
        {inf, -1.0, 1.0},
        {1.0, -1.0, inf},
        {1e300, -1e160, 1e-300},  // magnitudes near the limits
        {1e-300, -1e-150, 1e-300},
        {2.0, -4.0, 1.0 + 0x1p-52},
    };
    Draw draw(67);
    for (int round = 0; round < 30; ++round) {
        for (std::size_t n : kCounts) {
            Polynomials polys;
            for (std::size_t i = 0; i < n; ++i) {
                if (draw.chance(0.25)) {
                    const auto& e = edges[draw.below(std::size(edges))];
                    polys.push({e[0], e[1], e[2], 0.0, 0.0});
                } else if (draw.chance(0.3)) {  // a near-double root: the computed disc is noise
                    const double c1 = draw.uniform(-5.0, -0.1), c2 = draw.uniform(0.1, 5.0);
                    double c0 = c1 * c1 / (4.0 * c2);
                    for (std::size_t step = draw.below(6); step > 0; --step)
                        c0 = std::nextafter(c0, draw.chance(0.5) ? 0.0 : 10.0);
                    polys.push({c0, c1, c2, 0.0, 0.0});
                } else {  // closing: c1 < 0, mostly through a real root
                    polys.push({draw.uniform(0.01, 4.0), draw.uniform(-6.0, 0.5), draw.uniform(0.01, 4.0), 0.0, 0.0});
                }
            }
            for (double h : {kNever, 10.0, 1.0, 0.5, 0.0}) {
                std::vector<double> out(n);
                k().polynomial(polys.lanes(), h, out);
                EXPECT_TRUE(same_bits(out, polys.scalar(h))) << "n " << n << " horizon " << h << " round " << round;
            }
        }
    }
    // The edges alone, and the times they should give.
    Polynomials polys;
    for (const auto& e : edges) polys.push({e[0], e[1], e[2], 0.0, 0.0});
    std::vector<double> out(polys.size());
    k().polynomial(polys.lanes(), kNever, out);
    EXPECT_TRUE(same_bits(out, polys.scalar(kNever)));
    EXPECT_EQ(std::bit_cast<std::uint64_t>(out[0]), std::bit_cast<std::uint64_t>(0.0));
    EXPECT_EQ(out[1], 0.5);
    for (std::size_t i : {2, 3, 4, 5, 7}) EXPECT_EQ(out[i], kNever) << i;
    EXPECT_NEAR(out[6], 1.0, 1e-7);
}

TEST_P(Simd, PolynomialClosedForms) {
    Polynomials polys;
    polys.push(from_roots(1.0, {2.0, 2.0, -1.0, -3.0}));   // grazes zero at 2 (a double root): contact there
    polys.push(from_roots(1.0, {1.5, 2.5, -1.0, -3.0}));   // closes at 1.5
    polys.push(from_roots(1.0, {1.0, 1.0, 1.0, 4.0}));     // closes at 1 through a triple root
    polys.push(from_roots(1.0, {0.0, 0.5, 3.0, -2.0}));    // touching now and opening, closes at 0.5
    polys.push(from_roots(1.0, {0.0, -0.5, -3.0, -2.0}));  // touching now and opening for good
    polys.push({1.0, 0.0, 0.0, 0.0, 1.0});                 // 1 + τ⁴: never
    polys.push({0.0, 0.0, -1.0, 0.0, 1.0});                // touching, bending inwards: closing now
    polys.push({1.0, 0.0, 0.0, -1.0, 0.0});                // a cubic 1 − τ³: closes at 1
    polys.push({3.0, -2.0, -4.0, 2.0, 1.0});               // (τ − 1)² (τ + 1)(τ + 3): grazes at 1
    polys.push({1.0, -2.0, -1.0, 2.0, 1.0});               // (τ² + τ − 1)²: grazes at (√5 − 1)/2
    const std::vector<double> expected{2.0, 1.5, 1.0, 0.5, kNever, kNever, 0.0, 1.0, 1.0, (std::sqrt(5.0) - 1) / 2};
    std::vector<double> out(polys.size());
    k().polynomial(polys.lanes(), kNever, out);
    EXPECT_TRUE(same_bits(out, polys.scalar(kNever)));
    for (std::size_t i = 0; i < out.size(); ++i) {
        if (expected[i] == 0.0 || expected[i] == kNever) EXPECT_EQ(out[i], expected[i]) << i;
        else EXPECT_NEAR(out[i], expected[i], 1e-7) << i;  // double roots: to about √u
    }
    // A horizon cuts the later impacts.
    k().polynomial(polys.lanes(), 1.25, out);
    EXPECT_TRUE(same_bits(out, polys.scalar(1.25)));
    EXPECT_EQ(out[0], kNever);
    EXPECT_EQ(out[1], kNever);
    EXPECT_NEAR(out[2], 1.0, 1e-9);
}

TEST_P(Simd, RaySphereMatchesScalar) {
    Draw draw(41);
    int inside = 0, hits = 0, misses = 0;
    for (std::size_t n : kCounts) {
        const Vec3 o = draw.cube(3.0);
        const Vec3 d = draw.unit() * draw.uniform(0.5, 3.0);  // direction need not be unit
        std::vector<double> cx, cy, cz, radius, expected;
        for (std::size_t i = 0; i < n; ++i) {
            Vec3 c = draw.cube(6.0);
            double r = draw.uniform(0.1, 2.0);
            switch (i % 5) {
                case 0: c = o + d * draw.uniform(0.5, 4.0) + draw.cube(0.5); break;  // near the ray
                case 1: r = length(c - o); break;                                   // origin on the sphere
                case 2: c = o + draw.cube(0.3); r = 1.0; break;                       // origin inside
                default: break;
            }
            cx.push_back(c.x);
            cy.push_back(c.y);
            cz.push_back(c.z);
            radius.push_back(r);
            expected.push_back(ray_sphere(o, d, c, r));
        }
        std::vector<double> out(n);
        k().ray_sphere(o, d, {cx, cy, cz, radius}, out);
        EXPECT_TRUE(same_bits(out, expected)) << "n " << n;
        for (double t : out) (t == 0.0 ? inside : (t < 0.0 ? misses : hits)) += 1;
    }
    EXPECT_GT(inside, 20);
    EXPECT_GT(hits, 20);
    EXPECT_GT(misses, 20);
}

TEST_P(Simd, RaySphereClosedForms) {
    const std::vector<double> cx{5, 5, 0, -5, 0.5}, cy{0, 2, 0, 0, 0}, cz{0, 0, 0, 0, 0}, r{1, 1, 1, 1, 1};
    std::vector<double> out(5);
    k().ray_sphere({0, 0, 0}, {2, 0, 0}, {cx, cy, cz, r}, out);
    EXPECT_EQ(out[0], 2.0);   // entry at x = 4, direction of length 2
    EXPECT_EQ(out[1], -1.0);  // passes beside
    EXPECT_EQ(out[2], 0.0);   // starts inside
    EXPECT_EQ(out[3], -1.0);  // behind
    EXPECT_EQ(out[4], 0.0);   // starts inside, off centre
}

TEST_P(Simd, StateAtIsWhatBallsAdvanceStores) {
    const double T = 1.25;
    // The same random balls every call; their accelerations as the kernel's lanes.
    auto make = [&](std::size_t n, Balls& balls, std::vector<double> (&a)[3]) {
        Draw draw(51 + n);
        balls.rests.reset({0, -9.81, 0});
        for (auto* column : {&balls.x, &balls.y, &balls.z, &balls.vx, &balls.vy, &balls.vz})
            for (std::size_t i = 0; i < n; ++i) column->push_back(draw.uniform(-10.0, 10.0));
        for (std::size_t i = 0; i < n; ++i) {
            const bool resting = draw.chance(0.3);
            const Vec3 acceleration{resting ? 0.0 : draw.uniform(-1.0, 1.0), resting ? -0.0 : -9.81, 0.0};
            // One entry per ball: any acceleration, like a support set's.
            balls.rest.push_back(balls.rests.intern({static_cast<std::int32_t>(i), -1, -1}, false, acceleration));
            a[0].push_back(acceleration.x);
            a[1].push_back(acceleration.y);
            a[2].push_back(acceleration.z);
            balls.t.push_back(draw.uniform(0.0, 1.0));
        }
        // Balls already at T are shown as they are: −0 positions and velocities stay −0.
        for (std::size_t i = 0; i < n; i += 4) {
            balls.t[i] = T;
            balls.x[i] = -0.0;
            balls.vy[i] = -0.0;
        }
    };
    for (std::size_t n : kCounts) {
        Balls balls, expected;
        std::vector<double> a[3], unused[3];
        make(n, balls, a);
        make(n, expected, unused);
        const std::vector<double> x0(balls.x.begin(), balls.x.end()), vz0(balls.vz.begin(), balls.vz.end()),
            t0(balls.t.begin(), balls.t.end());
        const std::size_t begin = n / 5, end = n - n / 7;
        for (std::size_t s = begin; s < end; ++s) expected.advance(s, T);
        // Outside [begin, end) the `to` columns keep what they held: the balls' own state.
        std::vector<double> to[6];
        for (int d = 0; d < 6; ++d) {
            const auto& column = *balls.double_columns()[static_cast<std::size_t>(d)];  // x … vz
            to[d].assign(column.begin(), column.end());
        }
        k().state_at({balls.x, balls.y, balls.z, balls.vx, balls.vy, balls.vz, a[0], a[1], a[2], balls.t, to[0], to[1],
                      to[2], to[3], to[4], to[5]},
                     T, begin, end);
        EXPECT_TRUE(same_bits(to[0], expected.x)) << "n " << n;
        EXPECT_TRUE(same_bits(to[1], expected.y)) << "n " << n;
        EXPECT_TRUE(same_bits(to[2], expected.z)) << "n " << n;
        EXPECT_TRUE(same_bits(to[3], expected.vx)) << "n " << n;
        EXPECT_TRUE(same_bits(to[4], expected.vy)) << "n " << n;
        EXPECT_TRUE(same_bits(to[5], expected.vz)) << "n " << n;
        // The balls stay where they were.
        EXPECT_TRUE(same_bits(balls.x, x0) && same_bits(balls.vz, vz0) && same_bits(balls.t, t0))
            << "n " << n;
    }
}

// The dispatched entry points are the best arch's kernels.
TEST(SimdEntryPoints, SameAsTheChosenKernels) {
    Draw draw(61);
    Pairs pairs;
    push_pair_random(pairs, draw, 101, 0.2);
    std::vector<double> a(101), b(101);
    toi_ball_ball_batch_simd(pairs.lanes(), 4.0, a);
    toi_ball_ball_batch(pairs.lanes(), 4.0, b);
    EXPECT_TRUE(same_bits(a, b));
    Neighbourhood h;
    fill_neighbourhood(h, draw, 101, {0.0, -9.81, 0.0}, {-4.1, 0.7, 1.3});
    toi_neighbours_batch_simd(h.self, h.lanes(), 4.0, a);
    EXPECT_TRUE(same_bits(a, h.scalar(4.0)));
}
