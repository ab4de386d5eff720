// The same bits for any thread count, task system and way of stepping.
#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

#include <gtest/gtest.h>

#include "worlds.hpp"

#include <cstdint>
#include <span>
#include <tuple>
#include <vector>

using namespace ballistic;
using namespace ballistic::test_worlds;

TEST(Determinism, SameHashForAnyThreadCount) {
    std::uint64_t reference = 0;
    for (int threads : {1, 2, 3, 4, 8}) {
        World world = periodic_gas(5000, 0.2, 1.0, threads, 11);
        for (int k = 0; k < 5; ++k) world.step(0.1);
        if (threads == 1) reference = world.state_hash();
        EXPECT_EQ(world.state_hash(), reference) << threads << " threads";
    }
}

// add_balls() makes the cells of a new world from all its balls at once, and inserts the balls
// of later calls one at a time: the simulation is the same whichever way the world was built,
// down to the storage order and the order of the energy sum.
TEST(Determinism, WorldBuiltAtOnceOrBallByBallSameBits) {
    constexpr double kSide = 17.4;
    GenerateDef gen;
    gen.count = 1000;
    gen.radius = 0.5;
    gen.region = {{0, 0, 0}, {kSide, kSide, kSide}};
    gen.speed = 5;
    World probe;
    add_box(probe, kSide);
    const std::vector<BallDef> balls = generate_balls(probe, gen);
    auto run = [&](int threads, const std::vector<std::size_t>& batches) {
        WorldDef def;
        def.threads = threads;
        World world(def);
        add_box(world, kSide);
        std::size_t next = 0;
        for (const std::size_t count : batches) {
            world.add_balls(std::span(balls).subspan(next, count));
            next += count;
        }
        for (int k = 0; k < 60; ++k) world.step(1.0 / 60.0);
        const auto ids = world.balls().id;
        return std::tuple(world.state_hash(), world.kinetic_energy(), std::vector<BallId>(ids.begin(), ids.end()));
    };
    const auto at_once = run(2, {1000});
    EXPECT_EQ(run(1, std::vector<std::size_t>(1000, 1)), at_once);  // one at a time
    EXPECT_EQ(run(2, {10, 990}), at_once);                           // a few, then the rest at once
    EXPECT_EQ(run(3, {600, 400}), at_once);                          // the second batch inserted
}

// The box scene: six walls, no gravity, speed 5, packing 0.1, 8000 balls (cells a
// diameter wide, 34 along an axis: two regions on two threads, three on three). The regions
// process nearly every event; the few that are not are a ball–ball event whose partner is more
// than a cell away and not stale, and those after it, serially (docs/architecture.md, "Parallel
// event processing: regions").
TEST(Determinism, ClosedBoxSameForAnyThreadCount) {
    std::uint64_t reference = 0, collisions = 0;
    for (const int threads : {1, 2, 3}) {
        WorldDef def;
        def.threads = threads;
        test_worlds::regions_from(def);
        World world = boxed_balls(def, 34.7, 8000, 5, 3);
        std::uint64_t in_regions = 0, events = 0, near_cut = 0, span = 0, span_near_cut = 0;
        double region_seconds = 0.0, region_work = 0.0;
        for (int k = 0; k < 240; ++k) {
            const StepResult step = world.step(1.0 / 60.0);
            in_regions += step.in_regions;
            events += step.events;
            near_cut += step.region_interface;
            span += step.region_span;
            span_near_cut += step.region_span_interface;
            // The busiest region works within its run's time (no check of how long either took).
            EXPECT_GE(step.region_work_seconds, 0.0);
            EXPECT_LE(step.region_work_seconds, step.region_seconds + 1e-9);
            region_seconds += step.region_seconds;
            region_work += step.region_work_seconds;
        }
        EXPECT_LT(world.max_overlap(), 1e-10) << threads << " threads";
        EXPECT_EQ(world.escaped_count(), 0u);
        if (threads == 1) {
            reference = world.state_hash();
            collisions = world.event_counts().collisions();
            EXPECT_GT(collisions, 50000u);
            EXPECT_EQ(in_regions, 0u);
            EXPECT_EQ(near_cut, 0u);
            EXPECT_EQ(region_seconds, 0.0);
        } else {
            EXPECT_GT(in_regions, events * 9 / 10) << threads << " threads";
            EXPECT_LE(span_near_cut, std::min(span, near_cut)) << threads << " threads";
            EXPECT_GT(region_work, 0.0) << threads << " threads";
        }
        if (threads == 2) {
            // One cut: the events within three cells of it, on either side, are near the other
            // region; about 6 of the box's cells across.
            const double expected = 6.0 * world.cell_width() / 34.7;
            const double share = double(near_cut) / double(in_regions);
            EXPECT_GT(share, 0.5 * expected);
            EXPECT_LT(share, 1.5 * expected);
        }
        EXPECT_EQ(world.state_hash(), reference) << threads << " threads";
        EXPECT_EQ(world.event_counts().collisions(), collisions) << threads << " threads";
    }
}


// A long room with gravity, e < 1, balls of four sizes and masses, a column through the middle:
// wide enough for eight slabs, with balls settling and sliding on the floor (resting contact,
// supports) while others still fly.
TEST(Determinism, PolydisperseRoomUnderGravitySameForAnyThreadCount) {
    std::uint64_t reference_state = 0, reference_events = 0;
    for (int threads : {1, 2, 3, 4, 8}) {
        WorldDef def = with_gravity(9.81, 0.8);
        def.threads = threads;
        test_worlds::regions_from(def);
        World world(def);
        const double length = 96, width = 12, height = 24;
        world.add_plane({{0, 0, 0}, {1, 0, 0}});
        world.add_plane({{length, 0, 0}, {-1, 0, 0}});
        world.add_plane({{0, 0, 0}, {0, 1, 0}});
        world.add_plane({{0, height, 0}, {0, -1, 0}});
        world.add_plane({{0, 0, 0}, {0, 0, 1}});
        world.add_plane({{0, 0, width}, {0, 0, -1}});
        world.add_cylinder({{length / 2, 0, width / 2}, {0, 1, 0}, 1.5});
        for (int k = 0; k < 4; ++k) {
            GenerateDef gen;
            gen.count = 1200;
            gen.radius = 0.3 + 0.1 * k;
            gen.mass = 1.0 + k;
            gen.region = {{0, 6.0 * k, 0}, {length, 6.0 * k + 6.0, width}};
            gen.speed = 4;
            gen.seed = 40 + static_cast<std::uint64_t>(k);
            world.add_balls(generate_balls(world, gen));
        }
        std::uint64_t events = 0xcbf29ce484222325ull;
        for (int k = 0; k < 90; ++k) {
            world.step(1.0 / 60.0);
            events = test_worlds::events_hash(world, events);
        }
        EXPECT_LT(world.max_overlap(), 1e-9) << threads << " threads";
        EXPECT_EQ(world.escaped_count(), 0u) << threads << " threads";
        if (threads == 1) {
            reference_state = world.state_hash();
            reference_events = events;
            EXPECT_GT(world.event_counts().collisions(), 20000u);
        }
        EXPECT_EQ(world.state_hash(), reference_state) << threads << " threads";
        EXPECT_EQ(events, reference_events) << threads << " threads";
    }
}

// A step stopped by its event budget (or its interrupt flag: the same path) leaves every ball's
// state as it was and only shows the balls at the time reached: stepped on to the step's end, the
// world ends with the bits of the step never stopped, on one thread or in parallel batches.
TEST(Determinism, AStepStoppedByItsBudgetGoesOnWithTheSameBits) {
    for (const int threads : {1, 2}) {
        auto room = [&] {
            WorldDef def = with_gravity(9.81, 0.8);
            def.threads = threads;
            test_worlds::regions_from(def);
            World world(def);
            for (const auto& [point, normal] : std::initializer_list<std::pair<Vec3, Vec3>>{
                     {{0, 0, 0}, {1, 0, 0}}, {{24, 0, 0}, {-1, 0, 0}}, {{0, 0, 0}, {0, 1, 0}},
                     {{0, 0, 0}, {0, 0, 1}}, {{0, 0, 24}, {0, 0, -1}}})
                world.add_plane({point, normal});
            GenerateDef gen;
            gen.count = 2000;
            gen.radius = 0.3;
            gen.region = {{0, 0, 0}, {24, 12, 24}};
            gen.speed = 4;
            gen.seed = 7;
            world.add_balls(generate_balls(world, gen));
            return world;
        };
        constexpr double kDt = 0.25;
        World free = room();
        const std::uint64_t events = free.step(kDt).events;
        int continued = 0;
        for (const std::uint64_t budget : {events / 7, events / 3, events / 2, events - 5}) {
            World stopped = room();
            stopped.set_step_event_budget(budget);
            EXPECT_THROW(stopped.step(kDt), BudgetExceeded);
            const double rest = kDt - stopped.time();
            if (stopped.time() + rest != kDt) continue;  // the sum must end the step at kDt exactly
            stopped.set_step_event_budget(0);
            stopped.step(rest);
            EXPECT_EQ(stopped.state_hash(), free.state_hash()) << threads << " threads, budget " << budget;
            EXPECT_EQ(stopped.event_counts().collisions(), free.event_counts().collisions());
            ++continued;
        }
        EXPECT_GE(continued, 3) << threads << " threads";
    }
}

// No walls: a dense cloud expands into empty space, so balls leave the block of dense cells
// (their events are processed alone) until a re-sort fits the cells to the cloud again.
TEST(Determinism, ExpandingCloudSameForAnyThreadCount) {
    std::uint64_t reference = 0;
    for (int threads : {1, 2, 4}) {
        WorldDef def;
        def.threads = threads;
        test_worlds::regions_from(def);
        World world(def);
        GenerateDef gen;
        gen.count = 4000;
        gen.radius = 0.5;
        gen.region = {{0, 0, 0}, {40, 20, 20}};
        gen.velocity = GenerateDef::Velocity::Temperature;
        gen.temperature = 4;
        gen.seed = 9;
        world.add_balls(generate_balls(world, gen));
        for (int k = 0; k < 120; ++k) world.step(1.0 / 30.0);
        EXPECT_LT(world.max_overlap(), 1e-9) << threads << " threads";
        if (threads == 1) {
            reference = world.state_hash();
            EXPECT_GT(world.event_counts().collisions(), 10000u);
        }
        EXPECT_EQ(world.state_hash(), reference) << threads << " threads";
    }
}

TEST(Determinism, LockstepWorldsStayEqual) {
    World a = periodic_gas(800, 0.25, 1.0, 1, 5);
    World b = periodic_gas(800, 0.25, 1.0, 2, 5);
    for (int k = 0; k < 30; ++k) {
        a.step(1.0 / 60.0);
        b.step(1.0 / 60.0);
        ASSERT_EQ(a.state_hash(), b.state_hash()) << "step " << k;
        ASSERT_EQ(a.events().size(), b.events().size());
    }
}
