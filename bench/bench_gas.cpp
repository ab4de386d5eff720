// Ballistic — throughput of the event loop on hard-sphere gases, one thread.
//
// BM_PeriodicGas: periodic box, kT = 1, N = 10⁴ and 10⁵, packing fraction 0.1 and 0.3. The
// world is built and warmed up (stepped until about N collisions have happened) outside the
// timed loop; the collision rate seen during warm-up fixes the step so that a timed step holds
// about N/2 collisions (one per ball). Then whole steps are timed.
// BM_ClosedBox: six walls, no gravity, speed 5, packing fraction 0.1, steps of 1/60: time per
// step for N = 10³, 10⁴, 10⁵ after a warm-up of half a second of simulated time.
//
// BM_FarApart: the closed box with balls far apart, cells widened (below).
//
// BM_AddBalls and BM_Rebuild: setting up the closed box (N = 10⁵, 10⁶; one and two threads).
// BM_AddBalls times World::add_balls() of all balls into a world holding the six walls (every
// ball checked against the walls and the balls before it); BM_Rebuild what a world rebuilds when
// its events are invalidated (here by set_gravity() with the same gravity): the Morton re-sort of
// the storage, the cells, every ball's prediction and the event queue, timed as the next (tiny)
// step. Counter ns/ball.
// BM_ChangeEachStep: the closed box (N = 10⁴, 10⁵, one thread), a step of 1/60 with, before
// each, nothing (change 0), one ball added at a free place (1) or one ball's velocity set (2):
// what an embedder that spawns or kicks a ball every frame pays.
// BM_Spout: the same box and step, in which a spout adds 10 balls at free places, one every
// 1/600 of time, each at its exact time: within the step, at World::step's pauses (mode 1), or by
// splitting the step at each (mode 2: a step to each ball's time); mode 0 adds none. 120 steps.
// BM_RayCasts: World::ray_cast() of 4096 rays in one batch into the closed box (below).
// BM_PegBoard: 2000 elastic balls among 100 or 2500 pegs (capsules) on the same board: the time
// per event with many statics (below). BM_PegQueries: generating balls and casting rays on it.
// BM_Pour: demos/scenes/pile.json (2000 balls poured into a 20 × 40 × 20 box, e = 0.8,
// friction 0.5), one thread: the first 10 s of simulated time, timed once; then, untimed,
// to 12 s and 5 s more. Counters: events (the first 10 s), asleep at 10 s, and settled (events
// per ball per simulated second from 12 to 17 s: a settled pile should cost nothing).
// BM_SleepingBed: 10⁵ and 10⁶ balls asleep on a floor: the cost of a step without events.
// BM_LoneBalls: four fast balls far from a crowd at rest, in long steps (they roam in blocks of
// cells) and in short ones (they cross every cell).
//
// Counters: coll/s and ns/coll (from World::event_counts().collisions() across the timed steps;
// ns/coll is printed in seconds, "850n" is 850 ns), cells/coll (bookkeeping events per
// collision), events/s (collisions + cell crossings), coll/step, dE/E (relative kinetic-energy
// change across the timed steps: the gas is elastic, so this should be rounding-sized) and
// max_overlap (World::max_overlap() over the timed steps: an exact engine keeps it at rounding
// size). The label carries the step and the state hash after warm-up (`warm`, independent of the
// iteration count, so runs and machines can be compared) and after the timed steps (`end`).
#include <ballistic/scene/builders.hpp>
#include <ballistic/scene/scene.hpp>

#include <benchmark/benchmark.h>

#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

#include <bit>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace {

using ballistic::EventCounts;
using ballistic::World;
namespace scenes = ballistic::scenes;

std::string label(std::uint64_t warm_hash, const World& world, double dt) {
    char text[128];
    std::snprintf(text, sizeof text, "dt=%.4g warm=%016" PRIx64 " end=%016" PRIx64, dt, warm_hash,
                  world.state_hash());
    return text;
}

// Measures the timed steps of `world` and fills the counters.
template <typename StepFn>
void run_timed(benchmark::State& state, World& world, double dt, StepFn&& step) {
    const std::uint64_t warm_hash = world.state_hash();
    world.reset_measurements();   // max_overlap covers the timed steps only
    const EventCounts before = world.event_counts();
    const double energy_before = world.kinetic_energy();
    for (auto _ : state) step();
    const EventCounts after = world.event_counts();
    const double collisions = static_cast<double>(after.collisions() - before.collisions());
    const double cells = static_cast<double>(after.cell_crossings - before.cell_crossings);
    using benchmark::Counter;
    state.counters["coll/s"] = Counter(collisions, Counter::kIsRate);
    state.counters["ns/coll"] = Counter(collisions, Counter::kIsRate | Counter::kInvert);
    state.counters["events/s"] = Counter(collisions + cells, Counter::kIsRate);
    state.counters["cells/coll"] = collisions > 0 ? cells / collisions : 0.0;
    state.counters["coll/step"] = Counter(collisions, Counter::kAvgIterations);
    state.counters["dE/E"] = (world.kinetic_energy() - energy_before) / energy_before;
    state.counters["max_overlap"] = world.max_overlap();
    state.counters["bytes/ball"] = world.bytes_per_ball();
    state.SetLabel(label(warm_hash, world, dt));
}

void BM_PeriodicGas(benchmark::State& state) {
    const auto count = static_cast<std::size_t>(state.range(0));
    const double packing = static_cast<double>(state.range(1)) / 100.0;
    scenes::Scene scene = scenes::periodic_gas(count, packing, 1.0);
    scene.world.threads = 1;
    World world = scenes::make_world(scene);

    // Warm-up: about one collision per ball per warm-up step once the rate is known.
    constexpr double kWarmDt = 0.02;
    const double target = static_cast<double>(count);
    while (static_cast<double>(world.event_counts().collisions()) < target) world.step(kWarmDt);
    const double rate = static_cast<double>(world.event_counts().collisions()) / world.time();
    const double dt = 0.5 * static_cast<double>(count) / rate;

    run_timed(state, world, dt, [&] { world.step(dt); });
}
BENCHMARK(BM_PeriodicGas)
    ->ArgNames({"N", "phi%"})
    ->ArgsProduct({{10'000, 100'000, 1'000'000}, {10, 30, 45}})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

// The closed box of the box benchmarks: range(0) balls (packing fraction 0.1, speed 5) on
// range(1) threads.
std::pair<std::size_t, int> box_size(const benchmark::State& state) {
    return {static_cast<std::size_t>(state.range(0)), static_cast<int>(state.range(1))};
}
scenes::Scene box_scene(const benchmark::State& state) {
    const auto [count, threads] = box_size(state);
    scenes::Scene scene = scenes::closed_box(count, 0.1, 5.0);
    scene.world.threads = threads;
    return scene;
}

void BM_ClosedBox(benchmark::State& state) {
    const auto [count, threads] = box_size(state);
    scenes::Scene scene = box_scene(state);
    World world = scenes::make_world(scene);
    constexpr double kDt = 1.0 / 60.0;
    const int warm = count >= 1'000'000 ? 5 : 30;
    for (int i = 0; i < warm; ++i) world.step(kDt);
    state.counters["threads"] = threads;
    run_timed(state, world, kDt, [&] { world.step(kDt); });
}
// Wall time: with two threads, process CPU time would add both threads up.
BENCHMARK(BM_ClosedBox)
    ->ArgNames({"N", "threads"})
    ->ArgsProduct({{1'000, 10'000, 100'000, 1'000'000}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The closed box with balls far apart: 10⁴ balls at packing fraction range(0) parts per million
// (spacing about 17 and 80 diameters at 100 and 1 ppm), one thread, steps of 1/60 after 30 of
// warm-up. Cells as wide as a ball cost a crossing every diameter of flight; the widened cells
// make a step cost what its few collisions and wall hits do. Counter width/d: the cells' width in
// diameters.
void BM_FarApart(benchmark::State& state) {
    scenes::Scene scene = scenes::closed_box(10'000, static_cast<double>(state.range(0)) * 1e-6, 5.0);
    scene.world.threads = 1;
    World world = scenes::make_world(scene);
    constexpr double kDt = 1.0 / 60.0;
    for (int i = 0; i < 30; ++i) world.step(kDt);
    run_timed(state, world, kDt, [&] { world.step(kDt); });
    state.counters["width/d"] = world.cell_width() / (2.0 * world.ball(world.balls().id[0]).radius);
}
BENCHMARK(BM_FarApart)->ArgName("ppm")->Arg(100)->Arg(1)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

void set_per_ball(benchmark::State& state, std::size_t count, int threads) {
    state.counters["threads"] = threads;
    state.counters["ns/ball"] = benchmark::Counter(static_cast<double>(count) * static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_AddBalls(benchmark::State& state) {
    const auto [count, threads] = box_size(state);
    scenes::Scene scene = box_scene(state);
    scenes::Scene walls = scene;
    walls.balls.clear();
    std::optional<World> world;
    for (auto _ : state) {
        state.PauseTiming();  // the last world's destruction and the walls are not timed
        world.reset();
        world.emplace(scenes::make_world(walls));
        state.ResumeTiming();
        world->add_balls(scene.balls);
        benchmark::DoNotOptimize(world->ball_count());
    }
    set_per_ball(state, count, threads);
}
BENCHMARK(BM_AddBalls)
    ->ArgNames({"N", "threads"})
    ->ArgsProduct({{100'000, 1'000'000}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// The closed box of BM_ChangeEachStep and BM_Spout (packing fraction 0.1, speed 5, one thread,
// 30 steps of 1/60 in), with a fixed sequence of places and velocities (MMIX's LCG) for the
// balls they add and the velocities they set.
struct BusyBox {
    World world;
    double side;
    std::uint64_t random = 12345;
    explicit BusyBox(std::size_t count) : world(make(count)), side(scenes::cube_side(count, 0.1, 0.5)) {
        for (int i = 0; i < 30; ++i) world.step(1.0 / 60.0);
    }
    static World make(std::size_t count) {
        scenes::Scene scene = scenes::closed_box(count, 0.1, 5.0);
        scene.world.threads = 1;
        return scenes::make_world(scene);
    }
    double uniform(double lo, double hi) {
        random = random * 6364136223846793005ULL + 1442695040888963407ULL;
        return lo + (hi - lo) * static_cast<double>(random >> 11) * 0x1p-53;
    }
    ballistic::Vec3 velocity() { return {uniform(-5, 5), uniform(-5, 5), uniform(-5, 5)}; }
    // A ball at a free place, as an embedder finds one (World& w: the box's world, in a pause too).
    void add_ball(World& w) {
        for (int tries = 0; tries < 1000; ++tries) {
            const ballistic::Vec3 p{uniform(1, side - 1), uniform(1, side - 1), uniform(1, side - 1)};
            if (!w.is_free(p, 0.5)) continue;
            w.add_ball({p, velocity(), 0.5, 1.0});
            return;
        }
    }
};

void BM_ChangeEachStep(benchmark::State& state) {
    const auto change = state.range(1);
    BusyBox box(static_cast<std::size_t>(state.range(0)));
    World& world = box.world;
    constexpr double kDt = 1.0 / 60.0;
    std::size_t next = 0;
    run_timed(state, world, kDt, [&] {
        if (change == 1) box.add_ball(world);
        else if (change == 2) world.set_velocity(world.balls().id[next++ % world.ball_count()], box.velocity());
        world.step(kDt);
    });
}
BENCHMARK(BM_ChangeEachStep)
    ->ArgNames({"N", "change"})
    ->ArgsProduct({{10'000, 100'000}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

void BM_Spout(benchmark::State& state) {
    const auto mode = state.range(1);
    BusyBox box(static_cast<std::size_t>(state.range(0)));
    World& world = box.world;
    constexpr double kDt = 1.0 / 60.0, kEvery = kDt / 10;
    double due = world.time() + kEvery;
    auto spout = [&](World& w) {
        box.add_ball(w);
        return due += kEvery;
    };
    run_timed(state, world, kDt, [&] {
        if (mode == 0) {
            world.step(kDt);
        } else if (mode == 1) {
            world.step(kDt, due, spout);
        } else {
            const double end = world.time() + kDt;
            while (due <= end) {
                world.step(due - world.time());
                spout(world);
            }
            if (world.time() < end) world.step(end - world.time());
        }
    });
}
BENCHMARK(BM_Spout)
    ->ArgNames({"N", "mode"})
    ->ArgsProduct({{10'000, 100'000}, {0, 1, 2}})
    ->Iterations(120)  // the same 2 s for every mode: 1200 balls added
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

void BM_Rebuild(benchmark::State& state) {
    const auto [count, threads] = box_size(state);
    scenes::Scene scene = box_scene(state);
    World world = scenes::make_world(scene);
    constexpr double kTiny = 1e-9;  // no event happens in it
    world.step(kTiny);
    const std::uint64_t built_hash = world.state_hash();
    for (auto _ : state) {
        world.set_gravity(scene.world.gravity);
        world.step(kTiny);
    }
    set_per_ball(state, count, threads);
    state.SetLabel(label(built_hash, world, kTiny));
}
BENCHMARK(BM_Rebuild)
    ->ArgNames({"N", "threads"})
    ->ArgsProduct({{100'000, 1'000'000}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// 4096 rays from points drawn uniformly in the box lo–hi, each direction component uniform
// within ±spread (the same rays on every platform).
std::vector<ballistic::Ray> random_rays(ballistic::Vec3 lo, ballistic::Vec3 hi, ballistic::Vec3 spread) {
    std::uint64_t draw = 0x9e3779b97f4a7c15ULL;
    auto uniform = [&](double a, double b) {
        draw = draw * 6364136223846793005ULL + 1442695040888963407ULL;
        return a + (b - a) * static_cast<double>(draw >> 11) * 0x1p-53;
    };
    std::vector<ballistic::Ray> rays(4096);
    for (ballistic::Ray& ray : rays)
        ray = {{uniform(lo.x, hi.x), uniform(lo.y, hi.y), uniform(lo.z, hi.z)},
               {uniform(-spread.x, spread.x), uniform(-spread.y, spread.y), uniform(-spread.z, spread.z)}};
    return rays;
}
// The label "hits=…": a hash of every hit (what, which, how far), so that two builds can be
// compared for the same answers.
void label_hits(benchmark::State& state, const std::vector<std::optional<ballistic::RayHit>>& hits) {
    std::uint64_t hash = 1469598103934665603ULL;
    for (const auto& hit : hits) {
        const std::uint64_t word = hit ? (static_cast<std::uint64_t>(hit->target) << 56) ^ hit->ball.value ^
                                             hit->static_index ^ std::bit_cast<std::uint64_t>(hit->distance)
                                       : 0;
        hash = (hash ^ word) * 1099511628211ULL;
    }
    char text[48];
    std::snprintf(text, sizeof text, "hits=%016" PRIx64, hash);
    state.SetLabel(text);
}

// World::ray_cast() of a batch of 4096 rays from random points of the closed box (packing 0.1,
// after a warm-up) in random directions, with no distance limit: each ray walks the cells until
// it meets a ball or a wall. Counters ns/ray and hit_balls (the fraction that hit a ball); label:
// a hash of every hit.
void BM_RayCasts(benchmark::State& state) {
    const auto [count, threads] = box_size(state);
    scenes::Scene scene = box_scene(state);
    World world = scenes::make_world(scene);
    world.step(0.5);
    const double side = scenes::cube_side(count, 0.1, 0.5);
    const std::vector<ballistic::Ray> rays = random_rays({0, 0, 0}, {side, side, side}, {1, 1, 1});
    std::vector<std::optional<ballistic::RayHit>> hits(rays.size());
    for (auto _ : state) {
        world.ray_cast(rays, hits);
        benchmark::DoNotOptimize(hits.data());
    }
    std::size_t balls = 0;
    for (const auto& hit : hits) balls += hit && hit->target == ballistic::RayHit::Target::Ball;
    state.counters["threads"] = threads;
    state.counters["ns/ray"] = benchmark::Counter(static_cast<double>(rays.size() * state.iterations()),
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
    state.counters["hit_balls"] = static_cast<double>(balls) / static_cast<double>(rays.size());
    label_hits(state, hits);
}
BENCHMARK(BM_RayCasts)
    ->ArgNames({"N", "threads"})
    ->ArgsProduct({{10'000, 100'000}, {1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Elastic balls (2000, radius 0.25, speed 5, no gravity) among range(0)² pegs, capsules of radius
// 0.1 across a 50 × 50 × 2 board on a square lattice: 100 pegs 5 apart or 2500 pegs 1 apart. A
// prediction tests only the pegs listed in the ball's cell, so the time per event should hardly
// grow with the pegs far away.
constexpr double kBoardLength = 50.0, kBoardDepth = 2.0;
// The board: six walls around 50 × 50 × 2 and side² pegs across it.
World peg_board(int side) {
    ballistic::WorldDef def;
    def.threads = 1;
    World world(def);
    const double length = kBoardLength, depth = kBoardDepth;
    for (const auto& [point, normal] : {std::pair<ballistic::Vec3, ballistic::Vec3>{{0, 0, 0}, {1, 0, 0}},
                                        {{length, 0, 0}, {-1, 0, 0}}, {{0, 0, 0}, {0, 1, 0}},
                                        {{0, length, 0}, {0, -1, 0}}, {{0, 0, 0}, {0, 0, 1}},
                                        {{0, 0, depth}, {0, 0, -1}}})
        world.add_plane({point, normal});
    const double spacing = length / side;
    for (int i = 0; i < side; ++i)
        for (int j = 0; j < side; ++j) {
            const double x = (i + 0.5) * spacing, y = (j + 0.5) * spacing;
            world.add_capsule({{x, y, 0}, {x, y, depth}, 0.1});
        }
    return world;
}
// Its balls: 2000 of radius 0.25 at speed 5.
ballistic::GenerateDef board_balls() {
    ballistic::GenerateDef gen;
    gen.count = 2000;
    gen.radius = 0.25;
    gen.region = {{0, 0, 0}, {kBoardLength, kBoardLength, kBoardDepth}};
    gen.speed = 5.0;
    gen.seed = 3;
    return gen;
}

void BM_PegBoard(benchmark::State& state) {
    const int side = static_cast<int>(state.range(0));
    World world = peg_board(side);
    world.add_balls(ballistic::generate_balls(world, board_balls()));
    constexpr double kDt = 1.0 / 60.0;
    for (int i = 0; i < 30; ++i) world.step(kDt);
    state.counters["pegs"] = side * side;
    run_timed(state, world, kDt, [&] { world.step(kDt); });
}
BENCHMARK(BM_PegBoard)->ArgName("side")->Arg(10)->Arg(50)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();

// Questions about points on the same board, without balls: generating 2000 balls among the pegs
// (each lattice site asks whether a ball there overlaps a static; counter ns/ball) and 4096 rays
// across the board (counter ns/ray, label: a hash of every hit). Each tests the pegs listed near
// its point or along its ray, so the costs should hardly grow with the pegs.
void BM_PegQueries(benchmark::State& state) {
    const int side = static_cast<int>(state.range(0));
    World world = peg_board(side);
    const ballistic::GenerateDef gen = board_balls();
    const std::vector<ballistic::Ray> rays =
        random_rays({0, 0, 0}, {kBoardLength, kBoardLength, kBoardDepth}, {1, 1, 0.05});
    std::vector<std::optional<ballistic::RayHit>> hits(rays.size());
    double generating = 0.0, casting = 0.0;
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        benchmark::DoNotOptimize(ballistic::generate_balls(world, gen));
        const auto t1 = std::chrono::steady_clock::now();
        world.ray_cast(rays, hits);
        benchmark::DoNotOptimize(hits.data());
        const auto t2 = std::chrono::steady_clock::now();
        generating += std::chrono::duration<double>(t1 - t0).count();
        casting += std::chrono::duration<double>(t2 - t1).count();
    }
    const double iterations = static_cast<double>(state.iterations());
    state.counters["pegs"] = side * side;
    state.counters["ns/ball"] = 1e9 * generating / (iterations * static_cast<double>(gen.count));
    state.counters["ns/ray"] = 1e9 * casting / (iterations * static_cast<double>(rays.size()));
    label_hits(state, hits);
}
BENCHMARK(BM_PegQueries)->ArgName("side")->Arg(10)->Arg(50)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Pour(benchmark::State& state) {
    for (auto _ : state) {
        state.PauseTiming();
        ballistic::scene::Scene pile = ballistic::scene::load_scene_file(BALLISTIC_SCENES_DIR "/pile.json", 1);
        World& world = pile.world;
        state.ResumeTiming();
        for (int k = 0; k < 600; ++k) world.step(1.0 / 60.0);
        state.PauseTiming();
        const std::uint64_t events = world.events_processed();
        state.counters["events"] = static_cast<double>(events);
        state.counters["asleep"] = static_cast<double>(world.sleeping_count());
        for (int k = 0; k < 120; ++k) world.step(1.0 / 60.0);
        const std::uint64_t settled = world.events_processed();
        for (int k = 0; k < 300; ++k) world.step(1.0 / 60.0);
        state.counters["settled"] =
            static_cast<double>(world.events_processed() - settled) / (5.0 * static_cast<double>(world.ball_count()));
        char text[32];
        std::snprintf(text, sizeof text, "end=%016" PRIx64, world.state_hash());
        state.SetLabel(text);
        state.ResumeTiming();
    }
}
BENCHMARK(BM_Pour)->Iterations(1)->Unit(benchmark::kSecond)->UseRealTime();

// A settled bed: side² balls of radius 0.5 touching in a square on a walled floor, under gravity,
// asleep from the first step (a loaded pile at rest sleeps before its first event). A step has
// no event; what it costs is the end of the step's passes over the balls. One thread.
void BM_SleepingBed(benchmark::State& state) {
    const auto side = static_cast<int>(state.range(0));
    ballistic::WorldDef def;
    def.gravity = {0, -9.81, 0};
    def.restitution = 0.5;
    def.threads = 1;
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    world.add_plane({{-0.5, 0, 0}, {1, 0, 0}});
    world.add_plane({{side - 0.5, 0, 0}, {-1, 0, 0}});
    world.add_plane({{0, 0, -0.5}, {0, 0, 1}});
    world.add_plane({{0, 0, side - 0.5}, {0, 0, -1}});
    std::vector<ballistic::BallDef> bed;
    for (int i = 0; i < side; ++i)
        for (int k = 0; k < side; ++k) bed.push_back({{double(i), 0.5, double(k)}, {}, 0.5, 1.0});
    world.add_balls(bed);
    constexpr double kDt = 1.0 / 60.0;
    for (int k = 0; k < 10; ++k) world.step(kDt);
    for (auto _ : state) world.step(kDt);
    state.counters["asleep"] = static_cast<double>(world.sleeping_count());
    state.counters["ns/ball"] = benchmark::Counter(static_cast<double>(bed.size()) * static_cast<double>(state.iterations()),
                                                   benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SleepingBed)->ArgName("side")->Arg(316)->Arg(1000)->Unit(benchmark::kMillisecond)->UseRealTime();

// A crowd of 10⁴ balls at rest on the floor of a room 10⁴ wide keeps the cells a diameter wide;
// four balls fly across the room at speed 1000 and bounce off its walls and floor. One thread,
// 16 time units a repetition from a fresh room: in one step (mode 0), long enough that the lone
// balls roam in blocks of cells, or in 64 steps of 1/4 (mode 1), each expected to cross fewer
// than eight cells per ball (gravity counted for every ball, the crowd's too), too few to count
// the balls: the lone balls cross every cell. The same collisions either way. Counter
// crossings: per repetition.
void BM_LoneBalls(benchmark::State& state) {
    const bool short_steps = state.range(0) == 1;
    auto room = [] {
        ballistic::WorldDef def;
        def.gravity = {0, -10, 0};
        def.threads = 1;
        World world(def);
        for (const auto& [point, normal] : {std::pair<ballistic::Vec3, ballistic::Vec3>{{-5000, 0, 0}, {1, 0, 0}},
                                            {{5000, 0, 0}, {-1, 0, 0}}, {{0, 0, 0}, {0, 1, 0}},
                                            {{0, 5000, 0}, {0, -1, 0}}, {{0, 0, -5000}, {0, 0, 1}},
                                            {{0, 0, 5000}, {0, 0, -1}}})
            world.add_plane({point, normal});
        std::vector<ballistic::BallDef> balls;
        for (int i = 0; i < 100; ++i)
            for (int k = 0; k < 100; ++k) balls.push_back({{i * 0.7, 0.3, k * 0.7}, {}, 0.3, 1.0});
        for (int b = 0; b < 4; ++b)
            balls.push_back({{-3000.0 + 1500 * b, 200.0 + 100 * b, -2000.0 + 1000 * b},
                             {800.0, 0.0, b % 2 ? 600.0 : -600.0}, 0.3, 1.0});
        world.add_balls(balls);
        world.step(1.0 / 1024);  // the crowd settles on the floor
        return world;
    };
    // Each repetition from a fresh room (untimed): given long enough, a lone ball hits the crowd.
    constexpr double kTime = 16.0;
    double crossings = 0.0;
    for (auto _ : state) {
        state.PauseTiming();
        World world = room();
        const std::uint64_t before = world.event_counts().cell_crossings;
        state.ResumeTiming();
        if (short_steps)
            for (int k = 0; k < 64; ++k) world.step(kTime / 64);
        else
            world.step(kTime);
        crossings += static_cast<double>(world.event_counts().cell_crossings - before);
    }
    state.counters["crossings"] = crossings / static_cast<double>(state.iterations());
    state.SetLabel(short_steps ? "64 steps" : "one step");
}
BENCHMARK(BM_LoneBalls)->ArgName("short_steps")->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
