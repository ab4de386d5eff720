// Ballistic — cost of the scalar time-of-impact kernels (engine/src/toi.hpp).
//
// Each benchmark runs one kernel over 1024 random lanes per iteration; the inputs are drawn
// once, outside the timed loop, as a mix of hits and misses (the fraction that hits within the
// horizon is reported as `hit_frac`). Counters: tests/s, and ns/test (printed in seconds, e.g.
// "12.3n" is 12.3 ns).
#include "toi.hpp"

#include <benchmark/benchmark.h>

#include <ballistic/vec3.hpp>

#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

namespace {

using ballistic::Vec3;
namespace detail = ballistic::detail;

constexpr std::size_t kLanes = 1024;
constexpr double kHorizon = 1.0;
constexpr double kG = 9.81;

class Draw {
public:
    explicit Draw(std::uint64_t seed) : rng_(seed) {}
    double uniform(double lo, double hi) {
        return std::uniform_real_distribution<double>(lo, hi)(rng_);
    }
    Vec3 cube(double half) {
        return {uniform(-half, half), uniform(-half, half), uniform(-half, half)};
    }

private:
    std::mt19937_64 rng_;
};

double hit_fraction(const std::vector<double>& toi) {
    std::size_t hits = 0;
    for (double t : toi) hits += std::isfinite(t) ? 1 : 0;
    return static_cast<double>(hits) / static_cast<double>(toi.size());
}

void set_counters(benchmark::State& state, const std::vector<double>& toi) {
    const double tests = static_cast<double>(kLanes) * static_cast<double>(state.iterations());
    state.SetItemsProcessed(static_cast<std::int64_t>(tests));
    state.counters["tests/s"] = benchmark::Counter(tests, benchmark::Counter::kIsRate);
    state.counters["ns/test"] =
        benchmark::Counter(tests, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["hit_frac"] = hit_fraction(toi);
}

// Two balls under the same gravity: relative acceleration zero, the quadratic case. Pairs start
// apart (no overlap), up to ~4 radius sums apart, with a relative velocity that partly aims the
// pair at each other and partly is random, so about half of them meet inside the horizon.
void BM_ToiBallBallBatch(benchmark::State& state) {
    Draw draw(1);
    std::vector<double> dpx(kLanes), dpy(kLanes), dpz(kLanes), dvx(kLanes), dvy(kLanes),
        dvz(kLanes), zero(kLanes, 0.0), sigma(kLanes, 1.0), out(kLanes);
    for (std::size_t i = 0; i < kLanes; ++i) {
        Vec3 dp;
        do { dp = draw.cube(2.5); } while (ballistic::length(dp) <= sigma[i]);
        const Vec3 dv = dp * -draw.uniform(0.0, 2.0) + draw.cube(1.5);
        dpx[i] = dp.x; dpy[i] = dp.y; dpz[i] = dp.z;
        dvx[i] = dv.x; dvy[i] = dv.y; dvz[i] = dv.z;
    }
    const detail::PairLanes lanes{dpx, dpy, dpz, dvx, dvy, dvz, zero, zero, zero, sigma};
    for (auto _ : state) {
        detail::toi_ball_ball_batch(lanes, kHorizon, out);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    set_counters(state, out);
}
BENCHMARK(BM_ToiBallBallBatch);

// A ball above the floor y = 0; arg 0: straight-line motion (linear gap), arg 1: under gravity
// (quadratic gap).
void BM_ToiBallPlane(benchmark::State& state) {
    Draw draw(2);
    const Vec3 a = state.range(0) != 0 ? Vec3{0.0, -kG, 0.0} : Vec3{};
    std::vector<Vec3> p(kLanes), v(kLanes);
    for (std::size_t i = 0; i < kLanes; ++i) {
        p[i] = {draw.uniform(-5.0, 5.0), draw.uniform(0.5, 4.0), draw.uniform(-5.0, 5.0)};
        v[i] = draw.cube(4.0);
    }
    std::vector<double> out(kLanes);
    const Vec3 point{0.0, 0.0, 0.0};
    const Vec3 normal{0.0, 1.0, 0.0};
    for (auto _ : state) {
        for (std::size_t i = 0; i < kLanes; ++i) {
            out[i] = detail::toi_ball_plane(p[i], v[i], a, 0.5, point, normal, kHorizon);
        }
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    set_counters(state, out);
}
BENCHMARK(BM_ToiBallPlane)->ArgName("gravity")->Arg(0)->Arg(1);

// A ball outside a column of radius 1 through the origin, gravity −y. arg 0: column upright
// (axis y, gravity along the axis: quadratic); arg 1: column lying along z (gravity across the
// axis: quartic).
void BM_ToiBallCylinder(benchmark::State& state) {
    const bool across = state.range(0) != 0;
    Draw draw(3);
    const Vec3 axis = across ? Vec3{0.0, 0.0, 1.0} : Vec3{0.0, 1.0, 0.0};
    const Vec3 a{0.0, -kG, 0.0};
    constexpr double kBall = 0.5;
    constexpr double kColumn = 1.0;
    std::vector<Vec3> p(kLanes), v(kLanes);
    for (std::size_t i = 0; i < kLanes; ++i) {
        Vec3 q;
        double perp = 0.0;
        do {
            q = draw.cube(3.0);
            perp = ballistic::length(q - axis * ballistic::dot(q, axis));
        } while (perp <= kColumn + kBall);
        p[i] = q;
        v[i] = draw.cube(4.0);
    }
    std::vector<double> out(kLanes);
    const Vec3 point{0.0, 0.0, 0.0};
    for (auto _ : state) {
        for (std::size_t i = 0; i < kLanes; ++i) {
            out[i] =
                detail::toi_ball_cylinder(p[i], v[i], a, kBall, point, axis, kColumn, kHorizon);
        }
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    set_counters(state, out);
}
BENCHMARK(BM_ToiBallCylinder)->ArgName("across")->Arg(0)->Arg(1);

}  // namespace

BENCHMARK_MAIN();
