// Renderer benchmarks: CPU cost of filling the per-ball instance data from the engine's SoA
// state (per ball, at 1 and 2 threads), and frame time against ball count, headless through the
// system's Vulkan device (lavapipe on machines without a GPU) at 1280x720.
//
//   bench_render --benchmark_min_time=0.2
#include <ballistic/generate.hpp>
#include <ballistic/render/camera.hpp>
#include <ballistic/render/renderer.hpp>

#include <benchmark/benchmark.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <cstddef>
#include <memory>
#include <numbers>
#include <vector>

using namespace ballistic;
using namespace ballistic::render;

namespace {

// A periodic-box gas of `count` balls of radius 0.5 at packing fraction 0.1: the kind of scene
// the demos show, every ball in view when framed whole.
World gas(std::size_t count) {
    const double side = std::cbrt(double(count) * (4.0 / 3.0) * std::numbers::pi * 0.125 / 0.1);
    WorldDef def;
    def.periodic = Box{{0, 0, 0}, {side, side, side}};
    World world(def);
    GenerateDef gen;
    gen.count = count;
    gen.radius = 0.5;
    gen.region = *def.periodic;
    gen.speed = 2.0;
    world.add_balls(generate_balls(world, gen));
    return world;
}

// Args: ball count, threads. Reports ns per ball and ns per ball per thread (the target is
// <= 2 ns per ball per core).
void BM_FillInstances(benchmark::State& state) {
    const auto count = static_cast<std::size_t>(state.range(0));
    const int threads = static_cast<int>(state.range(1));
    World world = gas(count);
    std::vector<std::byte> out(count * kBallInstanceBytes);
    tbb::task_arena arena(threads);
    for (auto _ : state) {
        arena.execute([&] { benchmark::DoNotOptimize(fill_instances(world.balls(), false, out)); });
        benchmark::ClobberMemory();
    }
    // Inverted rates: seconds per ball, and seconds per ball times the threads used.
    const auto per = benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert;
    state.counters["per_ball"] = benchmark::Counter(double(count), per);
    state.counters["per_ball_core"] = benchmark::Counter(double(count) / threads, per);
}
BENCHMARK(BM_FillInstances)
    ->ArgNames({"N", "threads"})
    ->ArgsProduct({{10'000, 100'000, 1'000'000}, {1, 2}})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// One Vulkan device for every frame benchmark; null when there is none.
Gpu* gpu() {
    static std::unique_ptr<Gpu> device = [] {
        GpuOptions options;
        options.validation = false;   // timing, not checking: the tests run with validation
        auto created = Gpu::create(options);
        return created ? std::make_unique<Gpu>(std::move(created.value())) : std::unique_ptr<Gpu>();
    }();
    return device.get();
}

// Frame time: instance fill, recording, drawing; no read-back. Two frames in flight, as in the
// window: submit frame k, then wait for frame k − 1.
void BM_Frame(benchmark::State& state) {
    if (gpu() == nullptr) {
        state.SkipWithError("no Vulkan device");
        return;
    }
    const auto count = static_cast<std::size_t>(state.range(0));
    World world = gas(count);
    auto renderer = OffscreenRenderer::create(*gpu(), 1280, 720);
    if (!renderer) {
        state.SkipWithError(renderer.error().message().c_str());
        return;
    }
    const Framing framing = frame_world(world);
    const Camera camera = framing.orbit.camera(framing.near, framing.far);
    const FrameStyle style;
    for (auto _ : state) {
        if (!renderer->submit(world, camera, style, nullptr, false)) {
            state.SkipWithError("submit failed");
            break;
        }
        if (renderer->frames_in_flight() == 2 && !renderer->finish()) {
            state.SkipWithError("finish failed");
            break;
        }
    }
    while (renderer->frames_in_flight() > 0) (void)renderer->finish();
    state.counters["fps"] = benchmark::Counter(1.0, benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(gpu()->device_name());
}
BENCHMARK(BM_Frame)->ArgName("N")->Arg(1'000)->Arg(10'000)->Arg(100'000)->Arg(1'000'000)->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
