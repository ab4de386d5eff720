// The task system is injectable (WorldDef::task_system) and the results are the same bits for
// every one: oneTBB at any thread count, serial, tasks run backwards, and an embedder's own pool
// of std::threads.
#include "base/parallel.hpp"
#include "worlds.hpp"

#include <ballistic/generate.hpp>
#include <ballistic/task_system.hpp>
#include <ballistic/world.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

using namespace ballistic;

namespace {

// Claims four threads and runs every task on the caller, last index first; counts its runs.
class Backwards final : public TaskSystem {
public:
    int concurrency() const override { return 4; }
    void run(std::size_t count, TaskFunction task) override {
        ++runs;
        for (std::size_t k = count; k > 0; --k) task(k - 1);
    }
    std::atomic<std::size_t> runs{0};
};

// An embedder's job system: the caller and two std::threads take indices from a shared counter.
class ThreadPool final : public TaskSystem {
public:
    int concurrency() const override { return 3; }
    void run(std::size_t count, TaskFunction task) override {
        std::atomic<std::size_t> next{0};
        std::exception_ptr error;
        std::mutex error_lock;
        auto work = [&] {
            for (std::size_t k; (k = next.fetch_add(1)) < count;) {
                try {
                    task(k);
                } catch (...) {
                    const std::lock_guard lock(error_lock);
                    if (!error) error = std::current_exception();
                }
            }
        };
        std::vector<std::thread> helpers;
        for (int h = 0; h < concurrency() - 1; ++h) helpers.emplace_back(work);
        work();
        for (std::thread& helper : helpers) helper.join();
        if (error) std::rethrow_exception(error);
    }
};

std::vector<std::shared_ptr<TaskSystem>> task_systems() {
    return {make_tbb_task_system(1), make_tbb_task_system(2), make_tbb_task_system(0), make_serial_task_system(),
            std::make_shared<Backwards>(), std::make_shared<ThreadPool>()};
}

// Enough balls for several blocks of every parallel phase, and regions with their own event loops
// (parallel_events_min_balls lowered; 49 cells a side: a region along a wrapping axis takes 24,
// and 49 is one more than a multiple of the regions' 6-cell lock blocks, which must still hold
// every cell within two of an event across the wrap: ThreadSanitizer saw the race when not).
World gas(std::shared_ptr<TaskSystem> tasks, std::uint64_t step_event_budget = WorldDef{}.step_event_budget) {
    WorldDef def;
    def.periodic = Box{{0, 0, 0}, {50, 50, 50}};
    def.task_system = std::move(tasks);
    test_worlds::regions_from(def, 1000);
    def.step_event_budget = step_event_budget;
    World world(def);
    GenerateDef gen;
    gen.count = 24000;
    gen.radius = 0.5;
    gen.region = *def.periodic;
    gen.velocity = GenerateDef::Velocity::Temperature;
    gen.temperature = 1.0;
    world.add_balls(generate_balls(world, gen));
    return world;
}

// With more than one thread, the regions processed the steps' events.
void expect_regions(const World& world, std::uint64_t in_regions) {
    if (world.concurrency() > 1) {
        EXPECT_GT(in_regions, 0u) << world.concurrency();
    } else {
        EXPECT_EQ(in_regions, 0u) << world.concurrency();
    }
}

std::uint64_t gas_hash(std::shared_ptr<TaskSystem> tasks) {
    World world = gas(std::move(tasks));
    std::uint64_t in_regions = world.step(0.4).in_regions;
    in_regions += world.step(0.4).in_regions;
    expect_regions(world, in_regions);
    return world.state_hash();
}

std::uint64_t pour_hash(std::shared_ptr<TaskSystem> tasks) {
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    def.restitution = 0.6;
    def.task_system = std::move(tasks);
    test_worlds::regions_from(def, 1000);
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    world.add_plane({{-12, 0, 0}, {1, 0, 0}});
    world.add_plane({{12, 0, 0}, {-1, 0, 0}});
    world.add_plane({{0, 0, -12}, {0, 0, 1}});
    world.add_plane({{0, 0, 12}, {0, 0, -1}});
    GenerateDef gen;
    gen.count = 6000;  // enough for the cells around them to be a dense block, cut into regions
    gen.radius = 0.3;
    gen.region = {{-12, 0, -12}, {12, 12, 12}};
    gen.speed = 1.0;
    world.add_balls(generate_balls(world, gen));
    std::uint64_t in_regions = 0;
    for (int k = 0; k < 4; ++k) in_regions += world.step(0.25).in_regions;
    EXPECT_GT(world.event_counts().collisions(), 20000u);
    expect_regions(world, in_regions);
    return world.state_hash();
}

}  // namespace

TEST(TaskSystem, EveryTaskSystemGivesTheSameGas) {
    const std::uint64_t reference = gas_hash(nullptr);
    for (const auto& tasks : task_systems()) EXPECT_EQ(gas_hash(tasks), reference) << tasks->concurrency();
}

TEST(TaskSystem, EveryTaskSystemGivesTheSamePour) {
    const std::uint64_t reference = pour_hash(nullptr);
    for (const auto& tasks : task_systems()) EXPECT_EQ(pour_hash(tasks), reference) << tasks->concurrency();
}

TEST(TaskSystem, OneTaskSystemServesManyWorlds) {
    const auto pool = std::make_shared<ThreadPool>();
    const std::uint64_t first = gas_hash(pool), second = gas_hash(pool);
    EXPECT_EQ(first, second);
}

TEST(TaskSystem, ConcurrencyBelowOneIsRefused) {
    class Broken final : public TaskSystem {
    public:
        int concurrency() const override { return 0; }
        void run(std::size_t, TaskFunction) override {}
    };
    WorldDef def;
    def.task_system = std::make_shared<Broken>();
    try {
        World world(def);
        ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "world.task_system");
    }
}

TEST(TaskSystem, RunsEveryIndexOnceAndRethrows) {
    ThreadPool pool;
    std::vector<std::atomic<int>> seen(1000);
    pool.run(seen.size(), [&](std::size_t k) { ++seen[k]; });
    for (const auto& s : seen) EXPECT_EQ(s.load(), 1);
    auto tbb = make_tbb_task_system(2);
    std::vector<std::atomic<int>> seen_tbb(1000);
    tbb->run(seen_tbb.size(), [&](std::size_t k) { ++seen_tbb[k]; });
    for (const auto& s : seen_tbb) EXPECT_EQ(s.load(), 1);
    EXPECT_THROW(tbb->run(10, [](std::size_t k) {
        if (k == 7) throw std::runtime_error("task 7");
    }), std::runtime_error);
}

// Parallel::sort: sorted runs merged pairwise; the same order as std::sort for any concurrency.
TEST(TaskSystem, ParallelSortMatchesStdSort) {
    std::mt19937_64 random(7);
    for (std::size_t n : {std::size_t{0}, std::size_t{5}, std::size_t{4096 * 3 + 17}, std::size_t{100000}}) {
        std::vector<std::pair<std::uint64_t, std::uint32_t>> items(n);
        for (std::size_t k = 0; k < n; ++k) items[k] = {random() % 1000, static_cast<std::uint32_t>(k)};
        auto expected = items;
        std::sort(expected.begin(), expected.end());
        for (const auto& tasks : task_systems()) {
            auto sorted = items;
            detail::Parallel(tasks).sort(sorted);
            EXPECT_EQ(sorted, expected) << n << " items, concurrency " << tasks->concurrency();
        }
    }
}

// Parallel's reductions combine per-block sums in block order: reduce(), reduce_here() and
// reduce_light() (on the caller below kLightBlocks * kBlock items, in tasks from there) give the
// same bits for any task system, also for a floating-point sum that depends on its terms' order.
TEST(TaskSystem, EveryReductionGivesTheSameBits) {
    std::mt19937_64 random(11);
    std::uniform_real_distribution<double> spread(-1e6, 1e6);
    const std::size_t light = detail::Parallel::kLightBlocks * detail::Parallel::kBlock;
    for (std::size_t n : {std::size_t{1}, std::size_t{4096 * 3 + 17}, light - 1, light, std::size_t{100000}}) {
        std::vector<double> terms(n);
        for (double& t : terms) t = spread(random);
        auto block = [&](std::size_t begin, std::size_t end) {
            return std::accumulate(terms.begin() + static_cast<std::ptrdiff_t>(begin),
                                   terms.begin() + static_cast<std::ptrdiff_t>(end), 0.0);
        };
        const double here = detail::Parallel(1).reduce_here(n, 0.0, block, std::plus<>());
        for (const auto& tasks : task_systems()) {
            const detail::Parallel parallel(tasks);
            SCOPED_TRACE(testing::Message() << n << " terms, concurrency " << tasks->concurrency());
            EXPECT_EQ(parallel.reduce(n, 0.0, block, std::plus<>()), here);
            EXPECT_EQ(parallel.reduce_light(n, 0.0, block, std::plus<>()), here);
        }
    }
    // reduce_light() hands out tasks from kLightBlocks * kBlock items on, reduce() from two blocks.
    auto backwards = std::make_shared<Backwards>();
    const detail::Parallel parallel(backwards);
    auto count = [](std::size_t, std::size_t) { return 1.0; };
    EXPECT_EQ(parallel.reduce_light(light - 1, 0.0, count, std::plus<>()), 8.0);
    EXPECT_EQ(backwards->runs.load(), 0u);
    EXPECT_EQ(parallel.reduce_light(light, 0.0, count, std::plus<>()), 8.0);
    EXPECT_EQ(backwards->runs.load(), 1u);
    EXPECT_EQ(parallel.reduce(light - 1, 0.0, count, std::plus<>()), 8.0);
    EXPECT_EQ(backwards->runs.load(), 2u);
}

// Const queries never change the world, so threads may ask them together, also right after
// balls larger than every earlier one were added (no cache is rebuilt behind the caller's back).
TEST(TaskSystem, ConstQueriesFromManyThreads) {
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    GenerateDef small;
    small.count = 3000;
    small.radius = 0.2;
    small.region = {{0, 0, 0}, {30, 10, 30}};
    world.add_balls(generate_balls(world, small));
    GenerateDef large = small;
    large.count = 50;
    large.radius = 1.5;
    large.region = {{0, 12, 0}, {30, 20, 30}};
    world.add_balls(generate_balls(world, large));
    std::vector<Ray> rays;
    for (int k = 0; k < 200; ++k) rays.push_back({{0.15 * k, 30, 0.1 * k}, {0.01, -1, 0.02}});
    auto answers = [&] {
        std::vector<std::optional<RayHit>> hits(rays.size());
        world.ray_cast(rays, hits);
        std::vector<double> out;
        for (const auto& hit : hits) out.push_back(hit ? hit->distance : -1.0);
        out.push_back(world.max_overlap());
        out.push_back(world.is_free({15, 16, 15}, 1.0) ? 1.0 : 0.0);
        out.push_back(world.kinetic_energy());
        return out;
    };
    const std::uint64_t hash = world.state_hash();
    const std::vector<double> expected = answers();
    std::vector<std::vector<double>> got(4);
    std::vector<std::thread> readers;
    for (auto& g : got) readers.emplace_back([&] { g = answers(); });
    for (std::thread& reader : readers) reader.join();
    for (const auto& g : got) EXPECT_EQ(g, expected);
    EXPECT_EQ(world.state_hash(), hash);
    EXPECT_GT(std::count_if(expected.begin(), expected.begin() + 200, [](double d) { return d > 0.0; }), 100);
}

// A step that reaches its event budget stops after exactly that many events, at the same event
// for every task system (batches never run past the budget), with the world consistent there;
// the next step goes on from it.
TEST(TaskSystem, EventBudgetStopsEveryTaskSystemAtTheSameEvent) {
    std::vector<std::pair<double, std::uint64_t>> stops;
    for (const auto& tasks : task_systems()) {
        World world = gas(tasks, 25000);
        const std::uint64_t before = world.events_processed();
        EXPECT_THROW(world.step(5.0), BudgetExceeded);
        EXPECT_EQ(world.events_processed() - before, 25000u);
        EXPECT_GT(world.time(), 0.0);
        EXPECT_LT(world.time(), 5.0);
        EXPECT_LT(world.max_overlap(), 1e-9);
        stops.emplace_back(world.time(), world.state_hash());
        world.set_step_event_budget(0);
        world.step(0.1);
        EXPECT_LT(world.max_overlap(), 1e-9);
    }
    for (const auto& stop : stops) EXPECT_EQ(stop, stops.front());
}

// The interrupt flag stops a step at an event, for every task system (batches included): set
// before the step, the world stays where it was; set by another thread during a step that would
// take hours, the step stops within moments, consistent (no overlap, the energy of the elastic
// gas kept), and the next step goes on once the flag is down.
TEST(TaskSystem, InterruptFlagStopsAStepAtAnEvent) {
    for (const auto& tasks : task_systems()) {
        World world = gas(tasks);
        std::atomic<bool> stop{true};
        world.set_interrupt(&stop);
        const std::uint64_t hash = world.state_hash(), events = world.events_processed();
        EXPECT_THROW(world.step(1.0), StepInterrupted);
        EXPECT_EQ(world.time(), 0.0);
        EXPECT_EQ(world.events_processed(), events);
        EXPECT_EQ(world.state_hash(), hash);

        stop = false;
        const double energy = world.kinetic_energy();
        std::thread setter([&stop] {
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            stop = true;
        });
        EXPECT_THROW(world.step(1e6), StepInterrupted);
        setter.join();
        EXPECT_GT(world.events_processed(), events);
        EXPECT_GT(world.time(), 0.0);
        EXPECT_LT(world.time(), 1e6);
        EXPECT_LT(world.max_overlap(), 1e-9);
        EXPECT_NEAR(world.kinetic_energy(), energy, 1e-9 * energy);

        stop = false;
        const double reached = world.time();
        world.step(0.1);
        EXPECT_EQ(world.time(), reached + 0.1);
        world.set_interrupt(nullptr);
        stop = true;
        world.step(0.1);  // no flag any more
        EXPECT_LT(world.max_overlap(), 1e-9);
    }
}
