// Ballistic — cost of the time-of-impact kernels: the scalar references (engine/src/kernels/toi.hpp)
// and their SIMD versions (engine/src/kernels/toi_simd.hpp) for every instruction set this CPU runs.
//
// Each benchmark runs one kernel over 1024 random lanes per iteration; the inputs are drawn
// once, outside the timed loop, as a mix of hits and misses (the fraction that hits within the
// horizon is reported as `hit_frac`). Counters: tests/s, and ns/test (printed in seconds, e.g.
// "12.3n" is 12.3 ns).
//
// BM_Lanes/<kernel>/<isa> runs the scalar reference (isa "scalar") and each SIMD version on the
// same lanes, so the ratios of their tests/s are the SIMD speed-ups.
#include "kernels/toi.hpp"
#include "kernels/toi_simd.hpp"
#include "space/balls.hpp"

#include <benchmark/benchmark.h>

#include <ballistic/vec3.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
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

void set_rate(benchmark::State& state, std::size_t lanes = kLanes) {
    const double tests = static_cast<double>(lanes) * static_cast<double>(state.iterations());
    state.SetItemsProcessed(static_cast<std::int64_t>(tests));
    state.counters["tests/s"] = benchmark::Counter(tests, benchmark::Counter::kIsRate);
    state.counters["ns/test"] =
        benchmark::Counter(tests, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void set_counters(benchmark::State& state, const std::vector<double>& toi) {
    set_rate(state);
    state.counters["hit_frac"] = hit_fraction(toi);
}

// Two balls under the same gravity: relative acceleration zero, the quadratic case. Pairs start
// apart (no overlap), up to ~4 radius sums apart, with a relative velocity that partly aims the
// pair at each other and partly is random, so about half of them meet inside the horizon.
// `falling`: the same pairs with one ball resting on a floor and the other falling (relative
// acceleration g, the quartic case).
struct PairData {
    std::vector<double> dpx, dpy, dpz, dvx, dvy, dvz, zero, day, sigma;
    explicit PairData(bool falling = false)
        : zero(kLanes, 0.0), day(kLanes, falling ? -kG : 0.0), sigma(kLanes, 1.0) {
        Draw draw(1);
        for (std::size_t i = 0; i < kLanes; ++i) {
            Vec3 dp;
            do { dp = draw.cube(2.5); } while (ballistic::length(dp) <= sigma[i]);
            const Vec3 dv = dp * -draw.uniform(0.0, 2.0) + draw.cube(1.5);
            dpx.push_back(dp.x); dpy.push_back(dp.y); dpz.push_back(dp.z);
            dvx.push_back(dv.x); dvy.push_back(dv.y); dvz.push_back(dv.z);
        }
    }
    detail::PairLanes lanes() const { return {dpx, dpy, dpz, dvx, dvy, dvz, zero, day, zero, sigma}; }
};

void BM_ToiBallBallBatch(benchmark::State& state) {
    const PairData data;
    const detail::PairLanes lanes = data.lanes();
    std::vector<double> out(kLanes);
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
struct PlaneData {
    static constexpr double kRadius = 0.5;
    Vec3 a, point{0.0, 0.0, 0.0}, normal{0.0, 1.0, 0.0};
    std::vector<Vec3> p, v;
    explicit PlaneData(bool gravity) : a(gravity ? Vec3{0.0, -kG, 0.0} : Vec3{}) {
        Draw draw(2);
        for (std::size_t i = 0; i < kLanes; ++i) {
            p.push_back({draw.uniform(-5.0, 5.0), draw.uniform(0.5, 4.0), draw.uniform(-5.0, 5.0)});
            v.push_back(draw.cube(4.0));
        }
    }
};

void BM_ToiBallPlane(benchmark::State& state) {
    const PlaneData data(state.range(0) != 0);
    std::vector<double> out(kLanes);
    for (auto _ : state) {
        for (std::size_t i = 0; i < kLanes; ++i) {
            out[i] = detail::toi_ball_plane(data.p[i], data.v[i], data.a, PlaneData::kRadius,
                                            data.point, data.normal, kHorizon);
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
struct CylinderData {
    static constexpr double kBall = 0.5;
    static constexpr double kColumn = 1.0;
    Vec3 axis, a{0.0, -kG, 0.0}, point{0.0, 0.0, 0.0};
    std::vector<Vec3> p, v;
    explicit CylinderData(bool across) : axis(across ? Vec3{0.0, 0.0, 1.0} : Vec3{0.0, 1.0, 0.0}) {
        Draw draw(3);
        for (std::size_t i = 0; i < kLanes; ++i) {
            Vec3 q;
            double perp = 0.0;
            do {
                q = draw.cube(3.0);
                perp = ballistic::length(q - axis * ballistic::dot(q, axis));
            } while (perp <= kColumn + kBall);
            p.push_back(q);
            v.push_back(draw.cube(4.0));
        }
    }
};

void BM_ToiBallCylinder(benchmark::State& state) {
    const CylinderData data(state.range(0) != 0);
    std::vector<double> out(kLanes);
    for (auto _ : state) {
        for (std::size_t i = 0; i < kLanes; ++i) {
            out[i] = detail::toi_ball_cylinder(data.p[i], data.v[i], data.a, CylinderData::kBall,
                                               data.point, data.axis, CylinderData::kColumn, kHorizon);
        }
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    set_counters(state, out);
}
BENCHMARK(BM_ToiBallCylinder)->ArgName("across")->Arg(0)->Arg(1);

// ---- scalar reference vs SIMD on the same lanes --------------------------------------------------
// `kernels` is null for the scalar reference. Lanes hold what the batch kernels take (relative
// state, gap coefficients), formed once outside the timed loop for both.

// `count` lanes: 1024, or 24 (about the neighbours one prediction tests; the per-call cost of
// the dispatch shows there), or 17 (a prediction in the gas at φ = 0.3: a partial last chunk).
void BM_LanesBallBall(benchmark::State& state, const detail::SimdKernels* kernels, std::size_t count,
                      bool falling) {
    const PairData data(falling);
    const detail::PairLanes lanes = data.lanes();
    std::vector<double> out(count);
    for (auto _ : state) {
        if (kernels) kernels->ball_ball(lanes, kHorizon, out);
        else detail::toi_ball_ball_batch(lanes, kHorizon, out);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    set_rate(state, count);
    state.counters["hit_frac"] = hit_fraction(out);
}

// One ball against neighbours gathered from the balls' columns (what a prediction runs when all
// balls share one acceleration): the PairData pairs as 1024 balls around a mover at rest at the
// origin, the lanes naming them in a shuffled order. The scalar reference gathers lane by lane.
void BM_LanesNeighbours(benchmark::State& state, const detail::SimdKernels* kernels, std::size_t count) {
    const PairData data;
    const double now = 0.5;
    const std::vector<double> t(kLanes, now), radius(kLanes, 0.5), no_shift(kLanes, 0.0);
    std::vector<std::uint32_t> slot(kLanes);
    for (std::size_t i = 0; i < kLanes; ++i) slot[i] = static_cast<std::uint32_t>(i);
    std::shuffle(slot.begin(), slot.end(), std::mt19937_64(6));
    const detail::NeighbourLanes lanes{data.dpx, data.dpy, data.dpz, data.dvx, data.dvy, data.dvz, t, radius,
                                       slot,     no_shift, no_shift, no_shift};
    const detail::Mover self{{}, {}, {0.0, -kG, 0.0}, 0.5, now};
    std::vector<double> out(count);
    for (auto _ : state) {
        if (kernels) kernels->neighbours(self, lanes, kHorizon, out);
        else detail::toi_neighbours_batch(self, lanes, kHorizon, out);
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    set_rate(state, count);
    state.counters["hit_frac"] = hit_fraction(out);
}

// One ray from the origin against 1024 balls of radius 0.1–1 in a 20-wide cube.
void BM_LanesRaySphere(benchmark::State& state, const detail::SimdKernels* kernels) {
    Draw draw(4);
    std::vector<double> cx, cy, cz, radius;
    for (std::size_t i = 0; i < kLanes; ++i) {
        const Vec3 c = draw.cube(10.0);
        cx.push_back(c.x);
        cy.push_back(c.y);
        cz.push_back(c.z);
        radius.push_back(draw.uniform(0.1, 1.0));
    }
    const Vec3 origin{0.0, 0.0, 0.0}, direction = ballistic::normalize(Vec3{1.0, 0.3, 0.2});
    const detail::SphereLanes lanes{cx, cy, cz, radius};
    std::vector<double> out(kLanes);
    for (auto _ : state) {
        if (kernels) {
            kernels->ray_sphere(origin, direction, lanes, out);
        } else {
            for (std::size_t i = 0; i < kLanes; ++i)
                out[i] = detail::ray_sphere(origin, direction, {cx[i], cy[i], cz[i]}, radius[i]);
        }
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
    }
    set_rate(state);
    std::size_t hits = 0;
    for (double t : out) hits += t > 0.0 ? 1 : 0;
    state.counters["hit_frac"] = static_cast<double>(hits) / static_cast<double>(kLanes);
}

// The end of a step: where 1024 balls under gravity are, each iteration one step of 1/60 further,
// written to columns of their own (position_at() and velocity_at() per slot for the scalar
// reference). tests/s here is balls per second.
void BM_LanesStateAt(benchmark::State& state, const detail::SimdKernels* kernels) {
    Draw draw(5);
    detail::Balls balls;
    for (auto* column : {&balls.x, &balls.y, &balls.z, &balls.vx, &balls.vy, &balls.vz})
        for (std::size_t i = 0; i < kLanes; ++i) column->push_back(draw.uniform(-1.0, 1.0));
    balls.rests.reset({0.0, -kG, 0.0});
    balls.rest.assign(kLanes, detail::RestTable::kNone);
    const std::vector<double> ax(kLanes, 0.0), ay(kLanes, -kG), az(kLanes, 0.0);
    balls.t.assign(kLanes, 0.0);
    std::vector<double> to[6];
    for (auto& column : to) column.resize(kLanes);
    double T = 0.0;
    for (auto _ : state) {
        T += 1.0 / 60.0;
        if (kernels) {
            kernels->state_at({balls.x, balls.y, balls.z, balls.vx, balls.vy, balls.vz, ax, ay, az, balls.t, to[0], to[1],
                               to[2], to[3], to[4], to[5]},
                              T, 0, kLanes);
        } else {
            for (std::size_t s = 0; s < kLanes; ++s) {
                const Vec3 p = balls.position_at(s, T), v = balls.velocity_at(s, T);
                to[0][s] = p.x; to[1][s] = p.y; to[2][s] = p.z;
                to[3][s] = v.x; to[4][s] = v.y; to[5][s] = v.z;
            }
        }
        benchmark::DoNotOptimize(to[0].data());
        benchmark::ClobberMemory();
    }
    set_rate(state);
}

// Registered at start-up: one set per instruction set this CPU runs, plus the scalar reference.
const bool kLanesRegistered = [] {
    std::vector<std::pair<std::string, const detail::SimdKernels*>> variants{{"scalar", nullptr}};
    for (const detail::SimdKernels& kernels : detail::simd_kernels_available()) {
        const std::string name(kernels.name());
        variants.emplace_back(name, detail::simd_kernels_for(name));
    }
    for (const auto& [name, kernels] : variants) {
        benchmark::RegisterBenchmark(("BM_Lanes/ball_ball/" + name).c_str(), BM_LanesBallBall, kernels, kLanes,
                                     false);
        benchmark::RegisterBenchmark(("BM_Lanes/ball_ball_24/" + name).c_str(), BM_LanesBallBall, kernels,
                                     std::size_t{24}, false);
        benchmark::RegisterBenchmark(("BM_Lanes/ball_ball_17/" + name).c_str(), BM_LanesBallBall, kernels,
                                     std::size_t{17}, false);
        benchmark::RegisterBenchmark(("BM_Lanes/ball_ball_falling/" + name).c_str(), BM_LanesBallBall, kernels,
                                     kLanes, true);
        benchmark::RegisterBenchmark(("BM_Lanes/neighbours/" + name).c_str(), BM_LanesNeighbours, kernels, kLanes);
        benchmark::RegisterBenchmark(("BM_Lanes/neighbours_24/" + name).c_str(), BM_LanesNeighbours, kernels,
                                     std::size_t{24});
        benchmark::RegisterBenchmark(("BM_Lanes/neighbours_17/" + name).c_str(), BM_LanesNeighbours, kernels,
                                     std::size_t{17});
        benchmark::RegisterBenchmark(("BM_Lanes/ray_sphere/" + name).c_str(), BM_LanesRaySphere, kernels);
        benchmark::RegisterBenchmark(("BM_Lanes/state_at/" + name).c_str(), BM_LanesStateAt, kernels);
    }
    return true;
}();

}  // namespace

BENCHMARK_MAIN();
