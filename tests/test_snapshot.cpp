// Snapshots: a restored world continues bit-identically (elastic, dissipative with sleeping balls,
// any thread count, batches on), keeps handles and measurements, and a damaged or foreign file is
// refused with a clear error, never undefined behaviour.
#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>
#include <ballistic/scene/builders.hpp>

#include "worlds.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>
#include <string>

using namespace ballistic;

namespace {

using test_worlds::save;

World restore(const std::string& bytes, int threads = 1, std::size_t min_balls_for_batches = WorldDef{}.parallel_events_min_balls) {
    World world = test_worlds::restore(bytes, threads);
    EXPECT_EQ(world.def().parallel_events_min_balls, min_balls_for_batches);
    return world;
}

void run(World& world, int steps, double dt = 1.0 / 60.0) {
    for (int k = 0; k < steps; ++k) world.step(dt);
}

// A box with a column and gravity, restitution e: 400 balls poured, some removed and added
// again (the handle table then has free indices and new generations).
World box_world(double e, int threads, std::size_t batches_from = WorldDef{}.parallel_events_min_balls, double friction = 0.0) {
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    def.restitution = e;
    def.friction = friction;
    def.threads = threads;
    test_worlds::regions_from(def, batches_from);
    World world(def);
    const Vec3 lo{0, 0, 0}, hi{8, 30, 8};
    world.add_plane({lo, {1, 0, 0}});
    world.add_plane({hi, {-1, 0, 0}});
    world.add_plane({lo, {0, 1, 0}});
    world.add_plane({lo, {0, 0, 1}});
    world.add_plane({hi, {0, 0, -1}});
    world.add_cylinder({{4, 0, 4}, {0, 1, 0}, 1.0});
    GenerateDef gen;
    gen.count = 400;
    gen.radius = 0.4;
    gen.region = {{0, 2, 0}, hi};
    gen.speed = 2.0;
    gen.seed = 3;
    const std::vector<BallId> ids = world.add_balls(generate_balls(world, gen));
    for (std::size_t k = 0; k < ids.size(); k += 7) world.remove_ball(ids[k]);
    return world;
}

World well_world(int threads) {
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    def.restitution = 0.5;
    def.threads = threads;
    return test_worlds::pour_into_well(def);
}

// Splits a run of `first + second` steps at `first` through a snapshot restored with `threads`;
// expects the state hash of the uninterrupted run.
void expect_same_continuation(World straight, World split, int first, int second, int threads,
                              std::size_t batches_from = WorldDef{}.parallel_events_min_balls) {
    run(straight, first + second);
    run(split, first);
    const std::string bytes = save(split);
    World restored = restore(bytes, threads, batches_from);
    EXPECT_EQ(restored.state_hash(), split.state_hash());
    EXPECT_EQ(save(restored), bytes) << "restore then save gives other bytes";
    run(restored, second);
    EXPECT_EQ(restored.state_hash(), straight.state_hash()) << threads << " threads";
    EXPECT_EQ(restored.events_processed(), straight.events_processed());
    EXPECT_EQ(restored.event_counts().collisions(), straight.event_counts().collisions());
    EXPECT_EQ(restored.sleeping_count(), straight.sleeping_count());
    EXPECT_EQ(restored.kinetic_energy(), straight.kinetic_energy());
}

}  // namespace

TEST(Snapshot, ElasticGasContinuesBitIdentically) {
    for (const int threads : {1, 2}) {
        const auto gas = [] {
            return scenes::make_world(scenes::periodic_gas(3000, 0.3, 1.0, 0.5, 9));
        };
        expect_same_continuation(gas(), gas(), 60, 60, threads);  // reorders on both sides of the split
    }
}

TEST(Snapshot, DissipativePourWithSleepingBallsContinuesBitIdentically) {
    World straight = well_world(1);
    run(straight, 300);
    World split = well_world(1);
    run(split, 150);
    ASSERT_GT(split.sleeping_count(), 0u) << "the snapshot should hold sleeping balls";
    ASSERT_LT(split.sleeping_count(), split.ball_count()) << "and awake ones";
    const std::string bytes = save(split);
    for (const int threads : {1, 2}) {
        World restored = restore(bytes, threads);
        EXPECT_EQ(save(restored), bytes) << "restore then save gives other bytes";
        run(restored, 150);
        EXPECT_EQ(restored.state_hash(), straight.state_hash()) << threads << " threads";
        EXPECT_EQ(restored.events_processed(), straight.events_processed());
        EXPECT_EQ(restored.sleeping_count(), straight.sleeping_count());
    }
}

TEST(Snapshot, RegionsContinueBitIdentically) {
    expect_same_continuation(box_world(0.8, 2, 100), box_world(0.8, 2, 100), 30, 30, 2, 100);
}

TEST(Snapshot, FrictionIsSavedAndAFrictionalPourContinuesBitIdentically) {
    for (const int threads : {1, 2}) {
        const std::size_t from = WorldDef{}.parallel_events_min_balls;
        World split = box_world(0.7, 1, from, 0.5);
        expect_same_continuation(box_world(0.7, 1, from, 0.5), box_world(0.7, 1, from, 0.5), 60, 30, threads);
        run(split, 1);
        EXPECT_EQ(restore(save(split), threads).def().friction, 0.5);
    }
}

TEST(Snapshot, SleepingSettingsAreSaved) {
    WorldDef def;
    def.sleep_interval = 0.125;
    def.sleep_friction = 0.25;
    def.wake_lift = 0.375;
    const WorldDef again = restore(save(World(def)), 1).def();
    EXPECT_EQ(again.sleep_interval, 0.125);
    EXPECT_EQ(again.sleep_friction, 0.25);
    EXPECT_EQ(again.wake_lift, 0.375);
}

TEST(Snapshot, HandlesAndMeasurementsSurvive) {
    World world = box_world(0.7, 1);
    run(world, 30);
    const std::vector<BallId> ids(world.balls().id.begin(), world.balls().id.end());
    World restored = restore(save(world));
    EXPECT_EQ(restored.time(), world.time());
    EXPECT_EQ(restored.ball_count(), world.ball_count());
    for (const BallId id : ids) {
        ASSERT_TRUE(restored.contains(id));
        EXPECT_EQ(restored.ball(id).position, world.ball(id).position);
    }
    EXPECT_FALSE(restored.contains(BallId{(std::uint64_t{1} << 32) | 1u})) << "a removed ball's handle stays stale";
    EXPECT_EQ(restored.event_counts().ball_plane, world.event_counts().ball_plane);
    ASSERT_EQ(restored.plane_counters().size(), 5u);
    EXPECT_EQ(restored.plane_counters()[2].impulse, world.plane_counters()[2].impulse);
    EXPECT_EQ(restored.cylinder_counters()[0].hits, world.cylinder_counters()[0].hits);
    // A ball added to both gets the same handle (the free indices are kept, in order).
    const BallDef extra{{4, 28, 1.5}, {}, 0.4, 1.0};
    EXPECT_EQ(restored.add_ball(extra), world.add_ball(extra));
}

TEST(Snapshot, WorldsBetweenCallsAndEmptyWorldsRoundTrip) {
    World empty;
    World back = restore(save(empty));
    EXPECT_EQ(back.ball_count(), 0u);
    back.step(0.1);
    // Balls added and not yet stepped: the events are rebuilt at the next step, as they would be.
    World fresh = box_world(0.9, 1);
    World copy = restore(save(fresh));
    run(fresh, 10);
    run(copy, 10);
    EXPECT_EQ(copy.state_hash(), fresh.state_hash());
}

TEST(Snapshot, ForeignOrDamagedFilesAreRefusedClearly) {
    World world = box_world(0.7, 1);
    run(world, 20);
    const std::string good = save(world);
    auto refused = [](const std::string& bytes, const std::string& says) {
        try {
            restore(bytes);
            ADD_FAILURE() << "accepted; expected: " << says;
        } catch (const InvalidArgument& e) {
            EXPECT_EQ(e.field(), "snapshot");
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
        }
    };
    refused("", "ends early");
    refused("{\"balls\": []}", "not a Ballistic snapshot");
    std::string other = good;
    other[8] = 1;  // the format version
    refused(other, "format version 1; this build of Ballistic reads version 8 only");
    refused(good.substr(0, good.size() / 2), "ends early");
    refused(good.substr(0, good.size() - 1), "ends early");
    std::string flipped = good;
    flipped[good.size() / 3] ^= 0x40;
    refused(flipped, "");  // a checksum mismatch or a field found inconsistent first

    // More balls than the restorer's memory limit: refused before they are read.
    std::istringstream in(good);
    RestoreOptions small;
    small.memory_limit = 100 * kBytesPerBall;
    EXPECT_THROW(World::restore(in, small), InvalidArgument);
}

// Damage that keeps the checksum right (a file written by a broken or hostile program): every
// byte changed, one at a time, is either refused with InvalidArgument or gives a world that
// steps without crashing (run under the sanitizers in CI). The world is saved where its event
// budget stopped a step, so the file holds that step's tests of sleeping too.
TEST(Snapshot, ConsistentChecksumDoesNotHideInconsistentState) {
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    def.restitution = 0.5;
    def.threads = 1;
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    world.add_ball({{0, 1, 0}, {1, 0, 0}, 0.5, 1.0});
    world.add_ball({{1.5, 1, 0}, {-1, 0, 0}, 0.5, 2.0});
    run(world, 5);
    world.add_ball({{0, 4, 0}, {0.3, 0, 0}, 0.5, 1.0});  // dropped onto them
    world.set_step_event_budget(3);
    EXPECT_THROW(world.step(2.0), BudgetExceeded);  // saved with the stopped step's tests of sleeping
    const std::string good = save(world);
    auto resign = [](std::string& bytes) {
        std::uint64_t hash = 0xcbf29ce484222325ull;
        for (std::size_t k = 0; k + 8 < bytes.size(); ++k)
            hash = (hash ^ static_cast<unsigned char>(bytes[k])) * 0x100000001b3ull;
        std::memcpy(bytes.data() + bytes.size() - 8, &hash, 8);
    };
    std::string same = good;
    resign(same);
    ASSERT_TRUE(same == good) << "the test's checksum is not the format's";
    std::mt19937 random(4);
    std::size_t refused = 0, accepted = 0;
    for (std::size_t k = 16; k + 8 < good.size(); ++k) {
        for (const unsigned value : {0x00u, 0xffu, 0x7fu, static_cast<unsigned>(random() & 0xffu)}) {
            std::string bytes = good;
            bytes[k] = static_cast<char>(value);
            resign(bytes);
            try {
                World damaged = test_worlds::restore(bytes);
                damaged.set_step_event_budget(100000);
                try {
                    damaged.step(0.05);
                } catch (const BudgetExceeded&) {
                }
                ++accepted;
            } catch (const InvalidArgument&) {
                ++refused;
            }
        }
    }
    EXPECT_GT(refused, 0u);
    EXPECT_GT(accepted, 0u);
}

TEST(Snapshot, MixedPeriodicColumnContinuesBitIdentically) {
    // Periodic along x and z over a floor: the periodic axes are saved (format version 3).
    const auto column = [] { return test_worlds::barometric_column(1); };
    for (const int threads : {1, 2}) expect_same_continuation(column(), column(), 120, 120, threads, 0);
    World world = column();
    EXPECT_EQ(restore(save(world), 1, 0).def().periodic_axes, (std::array<bool, 3>{true, false, true}));
}
