// Ballistic against the NeHe lesson's own algorithm (lesson_reference.hpp), same scene, same
// simulated time, one thread each.
//
// Scene: closed_box(N, packing fraction 0.1, speed 5), no gravity, N = 10, 30, 100, 300. One
// benchmark iteration simulates one second as 60 steps of 1/60, continuing from where the
// previous iteration left off; the time column is therefore "ms per simulated second".
// Counters (per simulated second unless said): coll, ball_ball, coll/s (per CPU second),
// dE/E (relative kinetic-energy change over the run), escaped (balls whose centre ended behind
// a wall), and for the lesson stalled (steps cut short by its livelock guard).
// After the run a summary prints, per N, both costs and their ratio, measured in this run
// (process CPU time of the timed loops).
#include "lesson_reference.hpp"
#include <ballistic/scene/builders.hpp>

#include <benchmark/benchmark.h>

#include <ballistic/world.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <span>
#include <string>

namespace {

using ballistic::World;
namespace scenes = ballistic::scenes;
using ballistic::lesson::LessonSimulator;

constexpr int kStepsPerSecond = 60;
constexpr double kDt = 1.0 / kStepsPerSecond;
constexpr double kPacking = 0.1;
constexpr double kSpeed = 5.0;

double process_cpu_seconds() {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// ms of process CPU per simulated second, by N; the last call of each benchmark wins, which is
// the call Google Benchmark reports.
struct Costs {
    double lesson_ms = -1.0;
    double ballistic_ms = -1.0;
    double lesson_collisions = 0.0;     // per simulated second
    double ballistic_collisions = 0.0;  // per simulated second
};
std::map<std::size_t, Costs>& costs() {
    static std::map<std::size_t, Costs> table;
    return table;
}

std::size_t behind_a_wall(const scenes::Scene& scene, std::span<const ballistic::Vec3> centres) {
    std::size_t count = 0;
    for (const ballistic::Vec3& c : centres) {
        for (const ballistic::PlaneDef& plane : scene.planes) {
            if (ballistic::dot(c - plane.point, plane.normal) < 0.0) {
                ++count;
                break;
            }
        }
    }
    return count;
}

void set_counters(benchmark::State& state, double collisions, double ball_ball,
                  double energy_before, double energy_after) {
    using benchmark::Counter;
    state.counters["coll"] = Counter(collisions, Counter::kAvgIterations);
    state.counters["ball_ball"] = Counter(ball_ball, Counter::kAvgIterations);
    state.counters["coll/s"] = Counter(collisions, Counter::kIsRate);
    state.counters["dE/E"] = (energy_after - energy_before) / energy_before;
}

void BM_Lesson(benchmark::State& state, std::size_t count) {
    const scenes::Scene scene = scenes::closed_box(count, kPacking, kSpeed);
    LessonSimulator sim(scene);
    const ballistic::lesson::LessonCounts before = sim.counts();
    const double energy_before = sim.kinetic_energy();
    const double cpu_start = process_cpu_seconds();
    for (auto _ : state) {
        for (int i = 0; i < kStepsPerSecond; ++i) sim.step(kDt);
    }
    const double cpu = process_cpu_seconds() - cpu_start;
    const ballistic::lesson::LessonCounts& after = sim.counts();
    const double collisions = static_cast<double>(after.collisions() - before.collisions());
    set_counters(state, collisions, static_cast<double>(after.ball_ball - before.ball_ball),
                 energy_before, sim.kinetic_energy());
    state.counters["stalled"] = static_cast<double>(after.stalled_steps - before.stalled_steps);
    state.counters["escaped"] = static_cast<double>(behind_a_wall(scene, sim.positions()));
    const auto iterations = static_cast<double>(state.iterations());
    costs()[count].lesson_ms = 1e3 * cpu / iterations;
    costs()[count].lesson_collisions = collisions / iterations;
}

void BM_Ballistic(benchmark::State& state, std::size_t count) {
    scenes::Scene scene = scenes::closed_box(count, kPacking, kSpeed);
    scene.world.threads = 1;
    World world = scenes::make_world(scene);
    const ballistic::EventCounts before = world.event_counts();
    const double energy_before = world.kinetic_energy();
    const double cpu_start = process_cpu_seconds();
    for (auto _ : state) {
        for (int i = 0; i < kStepsPerSecond; ++i) world.step(kDt);
    }
    const double cpu = process_cpu_seconds() - cpu_start;
    const ballistic::EventCounts after = world.event_counts();
    const double collisions = static_cast<double>(after.collisions() - before.collisions());
    set_counters(state, collisions, static_cast<double>(after.ball_ball - before.ball_ball),
                 energy_before, world.kinetic_energy());
    state.counters["escaped"] = static_cast<double>(world.escaped_count());
    const auto iterations = static_cast<double>(state.iterations());
    costs()[count].ballistic_ms = 1e3 * cpu / iterations;
    costs()[count].ballistic_collisions = collisions / iterations;
}

void print_summary(std::FILE* out) {
    bool header = false;
    for (const auto& [count, c] : costs()) {
        if (c.lesson_ms < 0.0 || c.ballistic_ms < 0.0) continue;
        if (!header) {
            std::fprintf(out, "\nSame scene, same simulated time, this run (process CPU):\n");
            std::fprintf(out, "%6s %18s %18s %9s %18s %18s\n", "N", "lesson ms/sim-s",
                         "ballistic ms/sim-s", "speed-up", "lesson coll/sim-s",
                         "ballistic coll/sim-s");
            header = true;
        }
        std::fprintf(out, "%6zu %18.3f %18.3f %8.1fx %18.0f %18.0f\n", count, c.lesson_ms,
                     c.ballistic_ms, c.lesson_ms / c.ballistic_ms, c.lesson_collisions,
                     c.ballistic_collisions);
    }
}

}  // namespace

int main(int argc, char** argv) {
    // Interleaved so each pair runs back to back.
    constexpr std::size_t kCounts[] = {10, 30, 100, 300};
    for (const std::size_t count : kCounts) {
        const std::string n = "/N:" + std::to_string(count);
        benchmark::RegisterBenchmark(("BM_Lesson" + n).c_str(), BM_Lesson, count)
            ->Unit(benchmark::kMillisecond)
            ->MeasureProcessCPUTime();
        benchmark::RegisterBenchmark(("BM_Ballistic" + n).c_str(), BM_Ballistic, count)
            ->Unit(benchmark::kMillisecond)
            ->MeasureProcessCPUTime();
    }
    // The summary goes to stdout with the console format, to stderr when stdout is JSON/CSV.
    bool console = true;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--benchmark_format=", 19) == 0 &&
            std::strcmp(argv[i] + 19, "console") != 0) {
            console = false;
        }
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    print_summary(console ? stdout : stderr);
    return 0;
}
