// Regions of space with their own event loops (docs/architecture.md, "Parallel event processing:
// regions"): the same bits as one thread for any thread count and task system. On every example
// scene; in a gas, a closed box, a pour that sleeps and wakes, spouts that pause the steps, a
// snapshot restored at another count; and where regions meet: balls crossing a cut, a fast ball
// crossing several regions in one step, collisions across a cut, dense cells that grow as the balls
// spread, a pile asleep across a cut woken from the other side.
#include <ballistic/generate.hpp>
#include <ballistic/scene/builders.hpp>
#include <ballistic/scene/scene.hpp>
#include <ballistic/task_system.hpp>
#include <ballistic/world.hpp>

#include "worlds.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

using namespace ballistic;
using test_worlds::add_generated;

namespace {

// The serial task system, claiming `threads` threads: the regions are planned for that many and
// take turns on the calling thread (a region that waits for a neighbour gives up its turn).
class SerialClaiming final : public TaskSystem {
public:
    explicit SerialClaiming(int threads) : threads_(threads) {}
    int concurrency() const override { return threads_; }
    void run(std::size_t count, TaskFunction task) override { serial_->run(count, task); }

private:
    int threads_;
    std::shared_ptr<TaskSystem> serial_ = make_serial_task_system();
};

// How a world runs its parallel phases: a thread count, or a task system.
struct Runner {
    std::string name;
    int threads = 1;
    std::shared_ptr<TaskSystem> tasks;

    void apply(WorldDef& def) const {
        def.threads = threads;
        def.task_system = tasks;
        def.regions_when_faster = false;
    }
    RestoreOptions restore_options() const {
        RestoreOptions options;
        options.threads = threads;
        options.task_system = tasks;
        options.regions_when_faster = false;
        return options;
    }
};

Runner one_thread() { return {"1 thread", 1, nullptr}; }

// One thread first (the reference), then every other way to run.
std::vector<Runner> every_runner() {
    return {one_thread(),
            {"2 threads", 2, nullptr},
            {"3 threads", 3, nullptr},
            {"4 threads", 4, nullptr},
            {"8 threads", 8, nullptr},
            {"the serial task system", 0, make_serial_task_system()},
            {"4 threads on the serial task system", 4, make_serial_task_system()},
            {"the serial task system claiming 4 threads", 0, std::make_shared<SerialClaiming>(4)}};
}

// One thread first, then two and four threads, and four regions taking turns on one thread (the
// boundary tests).
std::vector<Runner> few_runners() {
    return {one_thread(),
            {"2 threads", 2, nullptr},
            {"4 threads", 4, nullptr},
            {"the serial task system claiming 4 threads", 0, std::make_shared<SerialClaiming>(4)}};
}

constexpr std::uint64_t kFnvBasis = 0xcbf29ce484222325ull;  // test_worlds::events_hash() starts here

// What a world showed after one step: its state, the collisions so far, the balls asleep.
struct Mark {
    std::uint64_t state = 0, events = 0;
    std::size_t sleeping = 0;
    friend bool operator==(const Mark&, const Mark&) = default;
};

// A run, step by step, and how the regions shared its events.
struct Trace {
    std::vector<Mark> marks;
    std::vector<std::uint64_t> step_in_regions;
    std::uint64_t events = 0, in_regions = 0, undone = 0;
    std::uint32_t regions = 1;  // the most any step planned
    int concurrency = 1;
    std::uint64_t collisions_hash = kFnvBasis;

    void take(const World& world, const StepResult& step) {
        events += step.events;
        in_regions += step.in_regions;
        step_in_regions.push_back(step.in_regions);
        undone += step.undone;
        regions = std::max(regions, step.regions);
        concurrency = world.concurrency();
        collisions_hash = test_worlds::events_hash(world, collisions_hash);
        marks.push_back({world.state_hash(), collisions_hash, world.sleeping_count()});
    }
};

std::string hex(std::uint64_t value) {
    char text[24];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
}

// Expects the marks of `want` after every step; a difference names the first step that shows it.
void expect_same(const Trace& got, const Trace& want, const std::string& what) {
    ASSERT_EQ(got.marks.size(), want.marks.size()) << what;
    for (std::size_t k = 0; k < want.marks.size(); ++k) {
        const Mark& a = got.marks[k];
        const Mark& b = want.marks[k];
        if (a == b) continue;
        ADD_FAILURE() << what << ": differs from one thread first after step " << k + 1 << " of " << want.marks.size()
                      << ": state hash " << hex(a.state) << " against " << hex(b.state) << ", collisions hash "
                      << hex(a.events) << " against " << hex(b.events) << ", " << a.sleeping << " balls asleep against "
                      << b.sleeping;
        return;
    }
}

// With more than one task at once the regions processed some of the events (of the steps from
// `from` on); with one, none.
void expect_regions(const Trace& trace, const std::string& what, std::size_t from = 0) {
    std::uint64_t in_regions = 0;
    for (std::size_t k = from; k < trace.step_in_regions.size(); ++k) in_regions += trace.step_in_regions[k];
    if (trace.concurrency > 1) {
        EXPECT_GT(in_regions, 0u) << what << ": the regions processed no event from step " << from + 1;
        EXPECT_GT(trace.regions, 1u) << what;
    } else {
        EXPECT_EQ(trace.in_regions, 0u) << what;
    }
}

// Steps `world` `steps` times by `dt`, `before(world, k)` called before step k.
using Before = std::function<void(World&, int)>;
Trace run(World& world, int steps, double dt, const Before& before = {}) {
    Trace trace;
    for (int k = 0; k < steps; ++k) {
        if (before) before(world, k);
        trace.take(world, world.step(dt));
    }
    return trace;
}

// Builds the world of `make` for every runner, runs it, and expects the marks of one thread after
// every step, and the regions at work (in the steps from `regions_from` on) wherever more than one
// task runs at once. Returns the reference run.
Trace expect_same_for_every_runner(const std::string& what, const std::function<World(const Runner&)>& make, int steps,
                                   double dt, const std::vector<Runner>& runners, const Before& before = {},
                                   std::size_t regions_from = 0) {
    Trace reference;
    for (const Runner& runner : runners) {
        World world = make(runner);
        const Trace trace = run(world, steps, dt, before);
        const std::string label = what + ", " + runner.name;
        expect_regions(trace, label, regions_from);
        EXPECT_LT(world.max_overlap(), 1e-9) << label;
        EXPECT_EQ(world.escaped_count(), 0u) << label;
        if (&runner == &runners.front()) {
            reference = trace;
        } else {
            expect_same(trace, reference, label);
        }
    }
    return reference;
}

// A world of `def` in the box [lo, hi], its six faces inward planes (no ceiling when `open`).
World boxed(const WorldDef& def, Vec3 lo, Vec3 hi, bool open = false) {
    World world(def);
    world.add_plane({lo, {1, 0, 0}});
    world.add_plane({hi, {-1, 0, 0}});
    world.add_plane({lo, {0, 1, 0}});
    if (!open) world.add_plane({hi, {0, -1, 0}});
    world.add_plane({lo, {0, 0, 1}});
    world.add_plane({hi, {0, 0, -1}});
    return world;
}


// ---------------------------------------------------------------------------------------------
// The example scenes

std::vector<std::filesystem::path> scene_files() {
    std::vector<std::filesystem::path> files;
    for (const auto& entry : std::filesystem::directory_iterator(BALLISTIC_SCENES_DIR))
        if (entry.path().extension() == ".json") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    return files;
}

// The scene of `path` for `runner`, loaded with its thread count. A scene file has no key for
// WorldDef::parallel_events_min_balls, and LoadOptions no task system: a scene with fewer balls
// than the default threshold, or run on a task system, is built again from what was loaded (its
// settings, statics, balls and spouts, in their order), the small ones with regions from any
// size, so that they cut into regions where they can. Every world here runs its regions whenever
// it can (Runner::apply()), so that the tests go through them.
scene::Scene load(const std::filesystem::path& path, const Runner& runner) {
    scene::LoadOptions options;
    options.threads = runner.tasks ? 1 : runner.threads;
    options.regions_when_faster = false;
    scene::Scene loaded = scene::load_scene_file(path, options);
    const World& from = loaded.world;
    const bool large = from.ball_count() >= from.def().parallel_events_min_balls;
    if (large && !runner.tasks) return loaded;
    WorldDef def = from.def();
    if (!large) def.parallel_events_min_balls = 0;
    runner.apply(def);
    World world(def);
    for (std::uint32_t k = 0; k < from.plane_count(); ++k) world.add_plane(from.plane(k));
    for (std::uint32_t k = 0; k < from.cylinder_count(); ++k) world.add_cylinder(from.cylinder(k));
    for (std::uint32_t k = 0; k < from.capsule_count(); ++k) world.add_capsule(from.capsule(k));
    for (std::uint32_t k = 0; k < from.block_count(); ++k) world.add_block(from.block(k));
    std::vector<BallDef> balls;
    for (const BallId id : loaded.balls) {
        const BallState b = from.ball(id);
        balls.push_back({b.position, b.velocity, b.radius, b.mass, b.user_data, b.sleeping});
    }
    std::vector<BallId> ids = world.add_balls(balls);
    return scene::Scene{std::move(world), std::move(ids), loaded.emitters, loaded.energy_emitted};
}

// Runs the scene of `path` with every runner for `steps` frames of `dt` (its spouts adding their
// balls at their times) and expects the marks of one thread after every frame.
void expect_scene_same(const std::filesystem::path& path, const std::vector<Runner>& runners, int steps, double dt) {
    const std::string name = path.filename().string();
    Trace reference;
    for (const Runner& runner : runners) {
        scene::Scene scene = load(path, runner);
        Trace trace;
        for (int k = 0; k < steps; ++k) trace.take(scene.world, scene::step(scene, dt));
        const std::string label = name + ", " + runner.name;
        // The scenes of a thousand balls or more but the gas (pile, the pours) cut into regions.
        // The others plan one region at every thread count in these frames, though they are
        // allowed regions from any size: their blocks of dense cells are too thin for two regions
        // of at least 12 cells (24 along an axis that wraps), or they have none (gas.json: 40 cells
        // a side, periodic; cradle.json: one cell for six balls; lesson.json, columns.json: a few
        // hundred balls far apart, in cells widened for them; barometric.json: periodic along two
        // axes only; funnel.json: 500 balls in a slab of dense cells; galton.json: one ball every
        // 0.1 s). Their bits are compared all the same.
        if (scene.world.ball_count() >= 1000 && name != "gas.json") expect_regions(trace, label);
        if (&runner == &runners.front()) {
            reference = trace;
        } else {
            expect_same(trace, reference, label);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Worlds

// Gravity, restitution 0.5, friction 0.5: a floor 30 × 15 with walls (no ceiling), 1200 balls of
// radius 0.3 dropped from up to 3 high. Cells 0.6 wide: 50 by 25 along the floor, cut across it
// into up to four regions (never by height: a pile is busy along its whole surface).
World pour(const Runner& runner) {
    WorldDef def = test_worlds::granular(0.5);
    def.friction = 0.5;
    def.parallel_events_min_balls = 0;
    runner.apply(def);
    World world = boxed(def, {0, 0, 0}, {30, 20, 15}, true);
    add_generated(world, 1200, 0.3, {{0, 0, 0}, {30, 3, 15}}, 1.0, 21);
    return world;
}

// Between steps of the pour: at `settled` (steps), a kick along the floor for the first sleeping
// ball past the middle (in storage order, the same for every thread count), and a heavy ball
// dropped onto the pile near the other end.
Before kick_and_drop(int settled) {
    return [settled](World& world, int k) {
        if (k != settled) return;
        for (const BallId id : world.balls().id) {
            const BallState b = world.ball(id);
            if (b.sleeping && b.position.x > 15) {
                world.set_velocity(id, {-6, 0.5, 1});
                break;
            }
        }
        world.add_ball({{6, 5, 7.5}, {0, -12, 0}, 0.5, 40.0});
    };
}

}  // namespace

// 1. Every example scene in demos/scenes, for a short time, gives the same state and the same
// collisions after every frame at 1, 2, 3, 4 and 8 threads and on the serial task system
// (alone, under a 4-thread world, and claiming four threads so that regions take turns). The
// scenes with a thousand balls or more must cut into regions; pour_million.json has its own
// test below.
TEST(RegionScenes, EveryExampleSceneSameBitsForAnyThreadCount) {
    for (const std::filesystem::path& path : scene_files()) {
        if (path.filename() == "pour_million.json") continue;
        SCOPED_TRACE(path.filename().string());
        // The large ones only a few frames: they cut into regions from their first events.
        const std::string name = path.filename().string();
        const int steps = name == "pour_big.json" ? 2 : (name == "gas.json" || name == "pour.json") ? 4 : 60;
        expect_scene_same(path, every_runner(), steps, scene::kFrame);
    }
}

// The million-ball pour, loaded as shipped (regions from 10 000 balls), a few thousand events at
// 1, 2 and 4 threads: its load and its first step take about a second each, so fewer runners.
TEST(RegionScenes, TheMillionBallPourSameBitsAtOneTwoAndFourThreads) {
    const std::filesystem::path path = std::filesystem::path(BALLISTIC_SCENES_DIR) / "pour_million.json";
    expect_scene_same(path, {one_thread(), {"2 threads", 2, nullptr}, {"4 threads", 4, nullptr}}, 4, 1.0 / 600.0);
}

// 2. Worlds the engine meets, for every runner.

// A periodic gas (the builder's), about 50 cells a side: two regions for two and three threads
// (a region along a wrapping axis takes 24 cells), eight for eight, across the faces that wrap.
TEST(RegionWorlds, PeriodicGasSameBitsForAnyThreadCount) {
    auto make = [](const Runner& runner) {
        scenes::Scene gas = scenes::periodic_gas(24000, 0.1, 1.0, 0.5, 5);
        gas.world.parallel_events_min_balls = 0;
        runner.apply(gas.world);
        return scenes::make_world(gas);
    };
    expect_same_for_every_runner("periodic gas", make, 6, 1.0 / 30.0, every_runner());
}

// A closed box (the builder's: six walls, no gravity, every ball at speed 5).
TEST(RegionWorlds, ClosedBoxSameBitsForAnyThreadCount) {
    auto make = [](const Runner& runner) {
        scenes::Scene box = scenes::closed_box(9000, 0.1, 5.0, 0.5, 7);
        box.world.parallel_events_min_balls = 0;
        runner.apply(box.world);
        return scenes::make_world(box);
    };
    expect_same_for_every_runner("closed box", make, 6, 1.0 / 30.0, every_runner());
}

// A world that plans its regions again by their measured speeds (WorldDef::regions_when_faster,
// RegionShares): a closed box whose left half is twenty times as hot as its right, so that the
// left region works longer and the shares move once its events add up. The same bits as one
// thread, whatever the plans.
TEST(RegionWorlds, RegionsPlannedAgainByTheirSpeedsSameBitsAsOneThread) {
    auto make = [](const Runner& runner) {
        WorldDef def;
        def.parallel_events_min_balls = 0;
        runner.apply(def);
        def.regions_when_faster = true;
        World world = boxed(def, {0, 0, 0}, {60, 20, 20});
        add_generated(world, 3000, 0.5, {{0, 0, 0}, {30, 20, 20}}, 20.0, 41);
        add_generated(world, 3000, 0.5, {{30, 0, 0}, {60, 20, 20}}, 1.0, 42);
        return world;
    };
    const Trace trace = expect_same_for_every_runner("hot and cold halves", make, 30, 1.0 / 30.0, few_runners());
    EXPECT_GT(trace.events, 4u << 15);  // four times RegionShares::kLeastEvents: room for new plans
}

// A pour with friction that settles and sleeps; then a sleeping ball is kicked along the floor
// and a heavy ball dropped onto the pile, which wakes part of it, and it settles again. The
// balls asleep after every step are the same too.
TEST(RegionWorlds, APourThatSleepsAndWakesSameBitsForAnyThreadCount) {
    constexpr int kSettled = 90;
    std::vector<BallId> asleep;  // at the kick, in the first run
    std::size_t woken = 0;
    int runs = 0;
    const Before kick = kick_and_drop(kSettled);
    auto before = [&](World& world, int k) {
        if (k == 0) ++runs;
        if (runs == 1 && k == kSettled)
            for (const BallId id : world.balls().id)
                if (world.sleeping(id)) asleep.push_back(id);
        if (runs == 1 && k == kSettled + 8)
            for (const BallId id : asleep) woken += !world.sleeping(id);
        kick(world, k);
    };
    const Trace reference =
        expect_same_for_every_runner("pour", pour, kSettled + 60, 1.0 / 60.0, every_runner(), before, kSettled);
    EXPECT_GT(asleep.size(), 900u) << "the pile should have settled before the kick";
    EXPECT_GE(woken, 10u) << "the kick and the drop should wake part of the pile";
    EXPECT_GT(reference.marks.back().sleeping, reference.marks[kSettled - 1].sleeping) << "and it should sleep again";
}

// Two spouts above the pour as it lands, each adding its balls at their own times within the
// steps (the step pauses there): one every 13 ms over the left part, one every 9 ms across the
// middle.
TEST(RegionWorlds, SpoutsThatPauseTheStepsSameBitsForAnyThreadCount) {
    Trace reference;
    std::uint64_t emitted = 0;
    const std::vector<Runner> runners = every_runner();
    for (const Runner& runner : runners) {
        scene::Emitter left;
        left.position = {7, 8, 7.5};
        left.velocity = {1, -10, 0};
        left.spread = {4, 0, 6};
        left.radius = 0.3;
        left.interval = 0.013;
        left.count = 50;
        left.seed = 3;
        scene::Emitter middle = left;
        middle.position = {15, 6, 7.5};
        middle.velocity = {-3, -8, 0.5};
        middle.spread = {2, 0, 6};
        middle.interval = 0.009;
        middle.next = 0.003;
        middle.count = 60;
        middle.seed = 4;
        scene::Scene scene{pour(runner), {}, {left, middle}};
        Trace trace;
        for (int k = 0; k < 60; ++k) trace.take(scene.world, scene::step(scene, 1.0 / 60.0));
        const std::string label = "spouts, " + runner.name;
        expect_regions(trace, label);
        const std::uint64_t now = scene.emitters[0].emitted + scene.emitters[1].emitted;
        if (&runner == &runners.front()) {
            reference = trace;
            emitted = now;
            EXPECT_EQ(now, 110u) << "every spout should have emptied";
        } else {
            expect_same(trace, reference, label);
            EXPECT_EQ(now, emitted) << label;
        }
    }
}

// A snapshot of a pour with balls asleep and awake, taken between steps of a run on two threads
// (regions at work), restored for every runner and continued (a kick and a drop ten steps on):
// each goes on as one thread does without a stop, step by step.
TEST(RegionWorlds, ASnapshotRestoredAtAnotherThreadCountGoesOnAsOneThread) {
    constexpr int kFirst = 75, kSecond = 45;
    World straight = pour(one_thread());
    const Trace first_of_straight = run(straight, kFirst, 1.0 / 60.0);
    const Trace rest_of_straight = run(straight, kSecond, 1.0 / 60.0, kick_and_drop(10));

    World split = pour({"2 threads", 2, nullptr});
    const Trace first = run(split, kFirst, 1.0 / 60.0);
    EXPECT_GT(first.in_regions, 0u);
    ASSERT_EQ(split.state_hash(), first_of_straight.marks.back().state);
    ASSERT_GT(split.sleeping_count(), 0u) << "the snapshot should hold balls asleep";
    ASSERT_LT(split.sleeping_count(), split.ball_count()) << "and awake";
    const std::string bytes = test_worlds::save(split);
    for (const Runner& runner : every_runner()) {
        std::istringstream in(bytes);
        World restored = World::restore(in, runner.restore_options());
        const std::string label = "restored on " + runner.name;
        EXPECT_EQ(restored.def().parallel_events_min_balls, 0u) << label;
        EXPECT_EQ(restored.state_hash(), split.state_hash()) << label;
        const Trace rest = run(restored, kSecond, 1.0 / 60.0, kick_and_drop(10));
        expect_regions(rest, label);
        expect_same(rest, rest_of_straight, label);
        EXPECT_EQ(restored.events_processed(), straight.events_processed()) << label;
        EXPECT_EQ(restored.event_counts().collisions(), straight.event_counts().collisions()) << label;
        EXPECT_EQ(restored.kinetic_energy(), straight.kinetic_energy()) << label;
    }
}

// 3. Where regions meet: regions from any size, two and four regions.

// A closed box 48 long, 12 wide and high, no gravity: cut across x only (12 cells are too few
// to cut y or z), at about x = 24 for two regions and 12, 24, 36 for four. Balls at speed 8
// cross them all the time.
TEST(RegionBoundaries, BallsCrossingTheCutsSameBitsAsOneThread) {
    auto make = [](const Runner& runner) {
        WorldDef def;
        def.parallel_events_min_balls = 0;
        runner.apply(def);
        World world = boxed(def, {0, 0, 0}, {48, 12, 12});
        add_generated(world, 2000, 0.5, {{0, 0, 0}, {48, 12, 12}}, 8.0, 31);
        return world;
    };
    // Between the steps of the first run, the balls that changed sides of the middle.
    std::unordered_map<std::uint64_t, bool> left;
    std::size_t crossed = 0;
    int runs = 0;
    auto count = [&](World& world, int k) {
        if (k == 0) ++runs;
        if (runs != 1) return;
        for (const BallId id : world.balls().id) {
            const bool now = world.ball(id).position.x < 24;
            const auto [at, added] = left.try_emplace(id.value, now);
            if (!added && at->second != now) ++crossed;
            at->second = now;
        }
    };
    expect_same_for_every_runner("crossings", make, 30, 1.0 / 30.0, few_runners(), count);
    EXPECT_GT(crossed, 50u) << "balls should cross the middle";
}

// A box 96 long with four regions along x (cut at about 24, 48 and 72), a gas of slow balls, and
// one heavy ball at speed 600 ploughing through it: in its first step it goes from x = 2 past
// x = 60, across two cuts, and then back across them off the far wall; the balls it hits fly off
// fast across the regions too. (2800 balls: every cell of the box is then in the block of dense
// cells the regions cut; with fewer the block is a slab of the box.)
TEST(RegionBoundaries, AFastBallCrossesSeveralRegionsWithinAStep) {
    constexpr double kDt = 1.0 / 8.0;
    BallId fast;
    auto make = [&fast](const Runner& runner) {
        WorldDef def;
        def.parallel_events_min_balls = 0;
        runner.apply(def);
        World world = boxed(def, {0, 0, 0}, {96, 12, 12});
        fast = world.add_ball({{2, 6, 6}, {600, 0, 0}, 0.5, 200.0});
        add_generated(world, 2800, 0.5, {{0, 0, 0}, {96, 12, 12}}, 0.5, 41);
        return world;
    };
    expect_same_for_every_runner("fast ball", make, 3, kDt, few_runners());
    World world = make(one_thread());
    world.step(kDt);
    EXPECT_GT(world.ball(fast).position.x, 60.0) << "the fast ball should cross two cuts in its first step";
}

// A dense slab of balls (packing 0.4) across the middle of a closed box 48 long, thin gas on
// either side: the cut of two regions lies in the slab (at the balls' median), and so does one of
// four's. Balls collide across it all the time.
TEST(RegionBoundaries, CollisionsAcrossTheCutSameBitsAsOneThread) {
    auto make = [](const Runner& runner) {
        WorldDef def;
        def.parallel_events_min_balls = 0;
        runner.apply(def);
        World world = boxed(def, {0, 0, 0}, {48, 12, 12});
        add_generated(world, 550, 0.5, {{21, 0, 0}, {27, 12, 12}}, 2.0, 51);
        add_generated(world, 1000, 0.5, {{0, 0, 0}, {21, 12, 12}}, 2.0, 52);
        add_generated(world, 1000, 0.5, {{27, 0, 0}, {48, 12, 12}}, 2.0, 53);
        return world;
    };
    expect_same_for_every_runner("slab", make, 20, 1.0 / 30.0, few_runners());
    World world = make(one_thread());
    std::size_t across = 0;
    for (int k = 0; k < 20; ++k) {
        world.step(1.0 / 30.0);
        for (const CollisionEvent& e : world.events())
            across += e.kind == EventKind::BallBall && std::abs(e.point.x - 24) < 1.0;
    }
    EXPECT_GT(across, 500u) << "balls should collide across the middle";
}

// A block of fast balls in the middle third of a closed box 96 long spreads along it. Each re-sort
// (every few collisions per ball, within the steps) fits the block of dense cells to where the
// balls are, larger each time: the regions' stamps and locks must follow it.
TEST(RegionBoundaries, TheDenseCellsGrowAsTheBallsSpread) {
    auto make = [](const Runner& runner) {
        WorldDef def;
        def.parallel_events_min_balls = 0;
        runner.apply(def);
        World world = boxed(def, {0, 0, 0}, {96, 12, 12});
        add_generated(world, 2000, 0.5, {{30, 0, 0}, {66, 12, 12}}, 8.0, 71);
        return world;
    };
    expect_same_for_every_runner("spreading", make, 40, 1.0 / 30.0, few_runners());
    World world = make(one_thread());
    for (int k = 0; k < 40; ++k) world.step(1.0 / 30.0);
    double lo = 96.0, hi = 0.0;
    for (const BallId id : world.balls().id) {
        lo = std::min(lo, world.ball(id).position.x);
        hi = std::max(hi, world.ball(id).position.x);
    }
    EXPECT_GT(hi - lo, 60.0) << "the balls should spread along the box";
}

// A cloud of 2000 balls dropped from 4 to 12 high onto a floor 15 × 10 lands in a jammed pile
// (restitution 0.5, friction 0.5). The dense cells fitted at the start lie above the floor; once an
// eighth of the balls has left them they are fitted again where the balls are. In the jams an
// event creates events at its own instant with earlier keys (a cascade), which its region
// processes next. So the regions keep processing the landing, with the bits of one thread.
TEST(RegionBoundaries, ALandingPileStaysInTheRegions) {
    constexpr int kLanding = 30, kLanded = 50, kSteps = 80;
    auto make = [](const Runner& runner) {
        WorldDef def = test_worlds::granular(0.5);
        def.friction = 0.5;
        def.parallel_events_min_balls = 0;
        runner.apply(def);
        World world = boxed(def, {0, 0, 0}, {15, 20, 10}, true);
        add_generated(world, 2000, 0.3, {{0, 4, 0}, {15, 12, 10}}, 1.0, 81);
        return world;
    };
    const Trace reference = expect_same_for_every_runner("landing", make, kSteps, 1.0 / 60.0, few_runners());
    World world = make({"2 threads", 2, nullptr});
    std::uint64_t events[2] = {}, in_regions[2] = {};  // landing, landed
    for (int k = 0; k < kSteps; ++k) {
        const StepResult step = world.step(1.0 / 60.0);
        if (k < kLanding) continue;
        events[k >= kLanded] += step.events;
        in_regions[k >= kLanded] += step.in_regions;
    }
    EXPECT_EQ(world.state_hash(), reference.marks.back().state);
    EXPECT_GT(in_regions[0], events[0] * 3 / 4) << "landing: " << in_regions[0] << " of " << events[0] << " events in regions";
    EXPECT_GT(in_regions[1], events[1] * 9 / 10) << "landed: " << in_regions[1] << " of " << events[1] << " events in regions";
}

// A floor 30 × 8 with walls, cells 0.6 wide (50 by 13: cut across x only). A layer of balls over
// it and a block of balls across the middle, placed at rest, settle and every ball sleeps. Two
// regions cut at the balls' median, x = 15 (the layout is symmetric about it); four at about
// x = 12, 19 and 26, two of them through the block. Then a heavy ball thrown down and to the left
// from x = 17.5, right of the middle, lands on the block and ploughs across its top: it wakes
// balls left of the middle. The balls asleep after every step are the same too.
TEST(RegionBoundaries, APileAsleepAcrossTheCutWokenFromTheOtherSide) {
    constexpr int kDrop = 60;
    auto make = [](const Runner& runner) {
        WorldDef def = test_worlds::granular(0.3);
        def.friction = 0.8;
        def.parallel_events_min_balls = 0;
        runner.apply(def);
        World world = boxed(def, {0, 0, 0}, {30, 20, 8}, true);
        add_generated(world, 600, 0.3, {{0, 0, 0}, {30, 1.2, 8}}, 0.0, 61);
        add_generated(world, 800, 0.3, {{11, 1.2, 0}, {19, 6, 8}}, 0.0, 62);
        return world;
    };
    // In the first run: every ball asleep at the drop and where it was; those that moved since.
    std::vector<std::pair<BallId, Vec3>> asleep;
    std::size_t moved_left = 0, moved = 0;
    int runs = 0;
    auto drop = [&](World& world, int k) {
        if (k == 0) ++runs;
        if (k == kDrop) {
            if (runs == 1)
                for (const BallId id : world.balls().id) asleep.emplace_back(id, world.ball(id).position);
            world.add_ball({{17.5, 6, 4}, {-10, -2, 0}, 0.6, 50.0});
        }
        if (k == kDrop + 40 && runs == 1)
            for (const auto& [id, was] : asleep) {
                const Vec3 now = world.ball(id).position;
                if (now.x == was.x && now.y == was.y && now.z == was.z) continue;  // asleep all along
                ++moved;
                moved_left += was.x < 14.4;  // a cell left of the middle, whatever the rounding of the cut
            }
    };
    const Trace reference =
        expect_same_for_every_runner("pile across the cut", make, kDrop + 60, 1.0 / 60.0, few_runners(), drop, kDrop);
    EXPECT_EQ(reference.marks[kDrop - 1].sleeping, 1400u) << "the pile should sleep whole before the drop";
    EXPECT_GT(moved, 0u) << "the drop should wake the pile";
    EXPECT_GT(moved_left, 0u) << "the drop should wake balls left of the middle";
}

// A budget that stops the regions after one of them ran its share of it while the other had not
// begun. Two clouds in a periodic box 60 × 20 × 20, one in each region: the first fast (speed
// 10), the second slow but for two balls 10⁻⁹ apart, approaching. Taking turns, the first region
// runs its half of the budget, all after the second's first event, and the stop undoes it all;
// the events then go serially (the same run again would undo the same). Each step stops at its
// budget at the same event for every runner, and the next one goes on from there.
TEST(RegionBoundaries, ABudgetStopAfterOneRegionRanAheadGoesOn) {
    auto make = [](const Runner& runner) {
        WorldDef def;
        def.periodic = Box{{0, 0, 0}, {60, 20, 20}};
        def.parallel_events_min_balls = 0;
        def.step_event_budget = 1000;
        runner.apply(def);
        World world(def);
        add_generated(world, 3000, 0.5, {{8, 0, 0}, {24, 20, 20}}, 10.0, 3);
        world.add_balls(std::vector<BallDef>{{{46.3, 10.1, 10.2}, {1, 0, 0}}, {{47.3 + 1e-9, 10.1, 10.2}, {-1, 0, 0}}});
        add_generated(world, 3000, 0.5, {{38, 0, 0}, {54, 20, 20}}, 0.1, 4);
        return world;
    };
    // After each step: whether it stopped at the budget, the time, the events so far, the state.
    using Stop = std::tuple<bool, double, std::uint64_t, std::uint64_t>;
    std::vector<Stop> reference;
    const std::vector<Runner> runners = {
        one_thread(),
        {"2 threads", 2, nullptr},
        {"the serial task system claiming 2 threads", 0, std::make_shared<SerialClaiming>(2)}};
    for (const Runner& runner : runners) {
        World world = make(runner);
        std::vector<Stop> stops;
        for (int k = 0; k < 6; ++k) {
            bool stopped = false;
            try {
                world.step(0.01);
            } catch (const BudgetExceeded&) {
                stopped = true;
            }
            stops.emplace_back(stopped, world.time(), world.events_processed(), world.state_hash());
        }
        EXPECT_LT(world.max_overlap(), 1e-9) << runner.name;
        if (reference.empty()) reference = stops;
        else EXPECT_EQ(stops, reference) << runner.name;
    }
    EXPECT_GE(std::count_if(reference.begin(), reference.end(), [](const Stop& s) { return std::get<0>(s); }), 4)
        << "most steps should stop at the budget";
}
