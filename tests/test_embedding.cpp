// The embedder's API: moving, pushing and tagging balls between steps, typed static handles and
// their removal, the step's result and its event record. Every call is checked against closed
// forms, and a rejected call must leave the world exactly as it was.
#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

#include <gtest/gtest.h>

#include "worlds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <vector>

using namespace ballistic;

namespace {

constexpr double kG = 9.81;

using test_worlds::granular;

}  // namespace

TEST(Embedding, SetPositionMovesTheBallWhichThenFallsFreely) {
    World world(granular());
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    const BallId ball = world.add_ball({{0, 1, 0}, {}, 0.5, 1.0});
    world.step(0.5);  // it has landed and bounces
    const double vy = world.ball(ball).velocity.y;
    world.set_position(ball, {3, 10, 0});  // it keeps its velocity
    EXPECT_FALSE(world.sleeping(ball));
    world.step(1.0);
    const BallState s = world.ball(ball);
    EXPECT_NEAR(s.position.y, 10 + vy - 0.5 * kG, 1e-12);
    EXPECT_NEAR(s.velocity.y, vy - kG, 1e-12);
    EXPECT_EQ(s.position.x, 3.0);
}

TEST(Embedding, RejectedCallsChangeNothing) {
    World world(granular());
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    const BallId a = world.add_ball({{0, 1, 0}, {}, 0.5, 1.0});
    const BallId b = world.add_ball({{3, 1, 0}, {}, 0.5, 1.0});
    world.step(0.1);
    std::uint64_t hash = world.state_hash();
    auto rejects = [&](auto call, const std::string& field) {
        try {
            call();
            ADD_FAILURE() << "accepted; expected an error on " << field;
        } catch (const InvalidArgument& e) {
            EXPECT_EQ(e.field(), field) << e.what();
        }
        EXPECT_EQ(world.state_hash(), hash);
    };
    rejects([&] { world.set_position(a, {3.2, 1, 0}); }, "ball.position");       // onto b
    rejects([&] { world.set_position(a, {0, -1, 0}); }, "ball.position");        // through the floor
    rejects([&] { world.set_position(a, {NAN, 1, 0}); }, "ball.position");
    rejects([&] { world.set_velocity(a, {0, 1e31, 0}); }, "ball.velocity");
    rejects([&] { world.apply_impulse(a, {0, INFINITY, 0}); }, "ball.impulse");
    world.remove_ball(b);
    hash = world.state_hash();
    rejects([&] { world.set_velocity(b, {1, 0, 0}); }, "ball");                  // stale handle
    rejects([&] { world.set_user_data(b, 7); }, "ball");
    world.set_position(a, {3, 1, 0});  // where b was: free now
    EXPECT_EQ(world.ball(a).position.x, 3.0);
}

TEST(Embedding, VelocityAndImpulseLaunchARestingBall) {
    World world(granular());
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    const BallId ball = world.add_ball({{0, 0.5, 0}, {}, 0.5, 2.0});
    for (int k = 0; k < 30; ++k) world.step(1.0 / 60.0);
    ASSERT_TRUE(world.sleeping(ball));
    // J = 8 on mass 2 gives 4 up: the apex of a throw from the floor at 4²/2g.
    world.apply_impulse(ball, {0, 8, 0});
    EXPECT_FALSE(world.sleeping(ball));
    EXPECT_EQ(world.ball(ball).velocity.y, 4.0);
    world.step(4.0 / kG);
    EXPECT_NEAR(world.ball(ball).position.y, 0.5 + 16.0 / (2 * kG), 1e-12);
    EXPECT_NEAR(world.ball(ball).velocity.y, 0.0, 1e-12);
    // Sideways along the floor: it slides at constant speed, still resting on the floor.
    World slide(granular());
    slide.add_plane({{0, 0, 0}, {0, 1, 0}});
    const BallId puck = slide.add_ball({{0, 0.5, 0}, {}, 0.5, 1.0});
    slide.step(0.1);  // asleep on the floor
    slide.set_velocity(puck, {2, 0, 0});
    const StepResult r = slide.step(1.0);
    EXPECT_LE(r.collisions, 1u) << "a ball sliding on its floor costs at most the contact that settles it";
    for (const CollisionEvent& e : slide.events()) EXPECT_EQ(e.impulse, 0.0);
    EXPECT_NEAR(slide.ball(puck).position.x, 2.0, 1e-12);
    EXPECT_NEAR(slide.ball(puck).position.y, 0.5, 1e-12);
}

TEST(Embedding, UserDataStaysWithItsBallThroughReorderingRemovalAndSnapshots) {
    WorldDef def;
    def.threads = 2;
    def.periodic = Box{{0, 0, 0}, {20, 20, 20}};
    World world(def);
    GenerateDef gen;
    gen.count = 2000;
    gen.radius = 0.4;
    gen.region = *def.periodic;
    gen.speed = 3.0;
    std::vector<BallDef> defs = generate_balls(world, gen);
    for (std::size_t k = 0; k < defs.size(); ++k) defs[k].user_data = 1000 + k;
    const std::vector<BallId> ids = world.add_balls(defs);
    for (std::size_t k = 0; k < ids.size(); k += 5) world.remove_ball(ids[k]);
    world.set_user_data(ids[1], 42);
    for (int k = 0; k < 30; ++k) world.step(1.0 / 60.0);  // storage is re-sorted on the way
    std::stringstream snapshot;
    world.save(snapshot);
    World restored = World::restore(snapshot);
    for (std::size_t k = 1; k < ids.size(); ++k) {
        if (k % 5 == 0) continue;
        const std::uint64_t expected = k == 1 ? 42 : 1000 + k;
        EXPECT_EQ(world.user_data(ids[k]), expected);
        EXPECT_EQ(world.ball(ids[k]).user_data, expected);
        EXPECT_EQ(restored.user_data(ids[k]), expected);
    }
}

TEST(Embedding, StaticHandlesSurviveRemovalsAndTheLastTakesTheIndex) {
    World world(granular());
    const PlaneId floor = world.add_plane({{0, 0, 0}, {0, 1, 0}});
    const PlaneId wall = world.add_plane({{-5, 0, 0}, {1, 0, 0}});
    const PlaneId ceiling = world.add_plane({{0, 20, 0}, {0, -1, 0}});
    const CylinderId column = world.add_cylinder({{5, 0, 0}, {0, 1, 0}, 1.0});
    EXPECT_NE(floor, wall);
    EXPECT_EQ(world.index(ceiling), 2u);
    EXPECT_EQ(world.plane_id(1), wall);
    const BallId ball = world.add_ball({{0, 0.5, 0}, {}, 0.5, 1.0});
    const BallId bouncer = world.add_ball({{-3, 5, 0}, {-4, 0, 0}, 0.5, 1.0});
    for (int k = 0; k < 60; ++k) world.step(1.0 / 60.0);
    ASSERT_TRUE(world.sleeping(ball));
    const StaticCounters wall_hits = world.plane_counters()[1];
    EXPECT_GT(wall_hits.hits, 0u);

    // The ceiling takes the floor's index, its counters come along; the ball resting on the
    // floor wakes and falls.
    const StaticCounters ceiling_counters = world.plane_counters()[2];
    world.remove_plane(floor);
    EXPECT_FALSE(world.contains(floor));
    try {
        world.index(floor);
        ADD_FAILURE() << "a removed plane's handle was accepted";
    } catch (const InvalidArgument& e) {
        EXPECT_EQ(e.field(), "plane");
        EXPECT_NE(std::string(e.what()).find("no such plane"), std::string::npos) << e.what();
    }
    EXPECT_THROW(world.remove_plane(floor), InvalidArgument);
    EXPECT_EQ(world.plane_count(), 2u);
    EXPECT_EQ(world.index(ceiling), 0u);
    EXPECT_EQ(world.plane_id(0), ceiling);
    EXPECT_EQ(world.plane(0).normal.y, -1.0);
    EXPECT_EQ(world.plane_counters()[0].hits, ceiling_counters.hits);
    EXPECT_EQ(world.plane_counters()[1].hits, wall_hits.hits);
    EXPECT_FALSE(world.sleeping(ball));
    const double y = world.ball(ball).position.y;
    world.step(1.0);
    EXPECT_NEAR(world.ball(ball).position.y, y - 0.5 * kG, 1e-9);
    EXPECT_TRUE(world.contains(bouncer));

    world.remove_cylinder(column);
    EXPECT_EQ(world.cylinder_count(), 0u);
    EXPECT_FALSE(world.contains(column));
    // A new static gets a fresh handle, never the removed one's.
    const PlaneId again = world.add_plane({{0, -100, 0}, {0, 1, 0}});
    EXPECT_NE(again, floor);
    EXPECT_EQ(world.index(again), 2u);
}

TEST(Embedding, StepResultAndTheEventRecord) {
    World world(granular());
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    for (int k = 0; k < 5; ++k) world.add_ball({{2.0 * k, 1.0 + k, 0}, {}, 0.5, 1.0});
    std::uint64_t events = 0;
    for (int k = 0; k < 240; ++k) {
        const EventCounts before = world.event_counts();
        const std::uint64_t processed = world.events_processed();
        const StepResult r = world.step(1.0 / 60.0);
        EXPECT_EQ(r.collisions, world.event_counts().collisions() - before.collisions());
        EXPECT_EQ(r.events, world.events_processed() - processed);
        EXPECT_EQ(r.sleeping, world.sleeping_count());
        EXPECT_EQ(r.sleeping + r.awake, world.ball_count());
        EXPECT_EQ(world.events().size(), r.collisions);
        events += r.collisions;
    }
    EXPECT_EQ(world.step(0.1).sleeping, 5u);
    // Switched off, the record keeps nothing and counts what it did not keep.
    world.set_event_record_limit(0);
    const BallId ball = world.balls().id[0];
    world.set_velocity(ball, {0, 3, 0});
    const StepResult r = world.step(1.0);
    EXPECT_GT(r.collisions, 0u);
    EXPECT_TRUE(world.events().empty());
    EXPECT_EQ(world.events_unrecorded(), r.collisions);
}

TEST(Embedding, StepResultCountsTheSleepingOfAPile) {
    // 24 balls settling in a well, clusters falling asleep at step ends: the step's count is the
    // world's, on one thread and in parallel batches.
    for (const int threads : {1, 2}) {
        WorldDef def = granular();
        def.threads = threads;
        test_worlds::regions_from(def);
        World world = test_worlds::pour_into_well(def);
        std::size_t most = 0;
        for (int k = 0; k < 300; ++k) {
            const StepResult r = world.step(1.0 / 60.0);
            EXPECT_EQ(r.sleeping, world.sleeping_count()) << "step " << k;
            most = std::max(most, r.sleeping);
        }
        EXPECT_GT(most, 10u);
    }
}

TEST(Embedding, CallsBetweenStepsGiveTheSameBitsForAnyThreadCount) {
    std::uint64_t hash = 0;
    for (const int threads : {1, 2}) {
        World world(granular(0.5, threads));
        const PlaneId floor = world.add_plane({{0, 0, 0}, {0, 1, 0}});
        world.add_plane({{0, -10, 0}, {0, 1, 0}});
        for (const double x : {-8.0, 8.0}) world.add_plane({{x, 0, 0}, {x < 0 ? 1.0 : -1.0, 0, 0}});
        for (const double z : {-8.0, 8.0}) world.add_plane({{0, 0, z}, {0, 0, z < 0 ? 1.0 : -1.0}});
        GenerateDef gen;
        gen.count = 300;
        gen.radius = 0.4;
        gen.region = {{-8, 0, -8}, {8, 12, 8}};
        gen.speed = 2.0;
        const std::vector<BallId> ids = world.add_balls(generate_balls(world, gen));
        for (int k = 0; k < 60; ++k) world.step(1.0 / 60.0);
        world.apply_impulse(ids[3], {0, 5, 0});
        world.set_velocity(ids[10], {1, 2, 3});
        if (world.is_free({0, 14, 0}, 0.4)) world.set_position(ids[20], {0, 14, 0});
        world.set_sleeping(ids[30], !world.sleeping(ids[30]));
        world.set_sleeping(ids[40], !world.sleeping(ids[40]));
        BallDef asleep{{0, 16, 0}, {}, 0.4, 1.0};
        asleep.sleeping = true;
        if (world.is_free(asleep.position, asleep.radius)) world.add_ball(asleep);
        for (int k = 0; k < 30; ++k) world.step(1.0 / 60.0);
        world.remove_plane(floor);  // the pile drops to the lower floor
        for (int k = 0; k < 60; ++k) world.step(1.0 / 60.0);
        EXPECT_EQ(world.escaped_count(), 0u);
        if (hash == 0) hash = world.state_hash();
        else EXPECT_EQ(world.state_hash(), hash);
    }
}

TEST(Embedding, AWorldStartsAtItsDefinitionsTime) {
    WorldDef def = granular();
    def.time = 5.0;
    World world(def);
    const BallId ball = world.add_ball({{0, 10, 0}, {1, 0, 0}, 0.5, 1.0});
    EXPECT_EQ(world.time(), 5.0);
    world.step(1.0);
    EXPECT_EQ(world.time(), 6.0);
    EXPECT_NEAR(world.ball(ball).position.y, 10 - 0.5 * kG, 1e-12);
    EXPECT_EQ(world.ball(ball).position.x, 1.0);
    WorldDef bad;
    bad.time = NAN;
    try {
        World broken(bad);
        ADD_FAILURE() << "a NaN time was accepted";
    } catch (const InvalidArgument& e) {
        EXPECT_EQ(e.field(), "world.time");
    }
}

namespace {

// 300 balls of radius 0.25 at rest on a lattice 2 apart in a closed box 40 wide, no gravity,
// elastic: a world with cells, whose balls keep their events between steps.
World lattice(int threads = 1) {
    WorldDef def;
    def.threads = threads;
    test_worlds::regions_from(def);
    World world(def);
    for (const Vec3 n : {Vec3{1, 0, 0}, Vec3{0, 1, 0}, Vec3{0, 0, 1}}) {
        world.add_plane({{0, 0, 0}, n});
        world.add_plane({{40, 40, 40}, -n});
    }
    std::vector<BallDef> balls;
    for (int k = 0; k < 300; ++k)
        balls.push_back({{3.0 + 2.0 * (k % 10), 3.0 + 2.0 * (k / 10 % 10), 3.0 + 2.0 * (k / 100)}, {}, 0.25, 1.0});
    world.add_balls(balls);
    world.step(1.0 / 60.0);
    return world;
}

// The lattice set moving: an elastic gas.
World lattice_gas(int threads) {
    World world = lattice(threads);
    for (std::size_t s = 0; s < world.ball_count(); ++s) {
        const double a = 2.399963 * static_cast<double>(s);
        world.set_velocity(world.balls().id[s], {5 * std::cos(a), 5 * std::sin(a), 3 * std::cos(3 * a)});
    }
    return world;
}

// Adds the k-th ball fed to the lattice gas (near its top, in rows of 60) if its place is free;
// returns the kinetic energy it brought (0 when it was not added).
double feed(World& world, int k, double radius = 0.25) {
    const Vec3 p{1 + 0.6 * (k % 60), 37, 37.0 - 3.0 * (k / 60)};
    if (!world.is_free(p, radius)) return 0.0;
    world.add_ball({p, {0.1 * k, 1, -2}, radius, 1.0});
    return 0.5 * (0.01 * k * k + 5);
}

// The ball at `position`, exactly.
BallId ball_at(const World& world, Vec3 position) {
    const BallView view = world.balls();
    for (std::size_t s = 0; s < view.id.size(); ++s)
        if (Vec3{view.x[s], view.y[s], view.z[s]} == position) return view.id[s];
    return {};
}

}  // namespace

TEST(Embedding, BallsAddedOrPushedBetweenStepsMeetOthersAtTheClosedFormTimes) {
    // A ball added between steps, and a resting ball set moving, each meet a resting ball head on
    // (elastic, equal masses: they swap velocities) at the time the gap closes, while the other
    // balls keep the events they had.
    World world = lattice();
    const double t0 = world.time();
    // A ball rests at (3, 3, 3): one added 2 to its left at speed 4 closes the gap 1.5 in 0.375.
    const BallId target = ball_at(world, {3, 3, 3});
    const BallId added = world.add_ball({{1, 3, 3}, {4, 0, 0}, 0.25, 1.0});
    // The ball at (13, 5, 3) pushed at speed 3 towards its neighbour at (15, 5, 3) closes the
    // gap 1.5 in 0.5.
    const BallId pushed = ball_at(world, {13, 5, 3}), still = ball_at(world, {15, 5, 3});
    ASSERT_TRUE(world.contains(target) && world.contains(pushed) && world.contains(still));
    world.set_velocity(pushed, {3, 0, 0});
    std::vector<CollisionEvent> seen;
    while (world.time() < t0 + 0.6) {
        world.step(1.0 / 60.0);
        for (const CollisionEvent& e : world.events())
            if (e.kind == EventKind::BallBall) seen.push_back(e);
    }
    ASSERT_EQ(seen.size(), 2u);
    auto meets = [&](BallId a, BallId b, double time) {
        const auto hit = std::find_if(seen.begin(), seen.end(), [&](const CollisionEvent& e) {
            return (e.ball == a && e.other == b) || (e.ball == b && e.other == a);
        });
        ASSERT_NE(hit, seen.end());
        EXPECT_NEAR(hit->time, time, 1e-12);
    };
    meets(added, target, t0 + 0.375);
    meets(pushed, still, t0 + 0.5);
    EXPECT_NEAR(world.ball(target).velocity.x, 4.0, 1e-12);
    EXPECT_NEAR(world.ball(added).velocity.x, 0.0, 1e-12);
    EXPECT_NEAR(world.ball(still).velocity.x, 3.0, 1e-12);
    EXPECT_NEAR(world.ball(pushed).velocity.x, 0.0, 1e-12);
}

TEST(Embedding, AddingABallPredictsOnlyItUntilTheCountReachesAPowerOfTwo) {
    // The balls added keep the others' events and their storage order (a rebuild of the events
    // re-sorts the storage along the Morton curve); the ball that makes the count 512 rebuilds.
    World world = lattice();
    // Scatter the lattice: after a second at speed 2 the storage order is far from sorted.
    for (std::size_t s = 0; s < world.ball_count(); ++s) {
        const double a = 2.399963 * static_cast<double>(s);  // golden-angle directions
        world.set_velocity(world.balls().id[s], {2 * std::cos(a), 2 * std::sin(a), std::cos(3 * a)});
    }
    world.step(1.0 / 60.0);  // the set_velocity calls predicted 300 balls: the events stay valid
    for (int k = 0; k < 60; ++k) world.step(1.0 / 60.0);
    auto order = [&] {
        const auto ids = world.balls().id;
        return std::vector<BallId>(ids.begin(), ids.end());
    };
    std::vector<BallId> before = order();
    for (int k = 0; k < 20; ++k) {  // 300 → 320 balls
        Vec3 p{1.0 + 1.9 * k, 39, 39};
        ASSERT_TRUE(world.is_free(p, 0.25));
        before.push_back(world.add_ball({p, {0, -1, -1}, 0.25, 1.0}));
        world.step(1.0 / 60.0);
        EXPECT_EQ(order(), before) << "after adding ball " << k;
    }
    // 320 → 512: the last one added rebuilds the events, and the storage is sorted again.
    std::vector<BallDef> more;
    for (int k = 0; more.size() < 191; ++k) {
        const Vec3 p{1.0 + 1.3 * (k % 29), 1.0 + 1.3 * (k / 29 % 29), 36.5 + 1.3 * (k / 841)};
        if (world.is_free(p, 0.25)) more.push_back({p, {}, 0.25, 1.0});
    }
    world.add_balls(more);
    world.step(1.0 / 60.0);
    const std::vector<BallId> grown = order();
    world.add_ball({{20, 20, 39}, {}, 0.25, 1.0});
    ASSERT_EQ(world.ball_count(), 512u);
    world.step(1.0 / 60.0);
    std::vector<BallId> after = order();
    EXPECT_NE(std::vector<BallId>(after.begin(), after.begin() + 511), grown);
}

TEST(Embedding, BallsAddedEachStepGiveTheSameBitsForAnyThreadCountAndThroughASnapshot) {
    // An elastic gas fed one ball a step: the same bits on one and two threads (two slabs), and
    // when the world is saved half-way and restored; kinetic energy is what the balls brought.
    auto run = [](int threads, bool through_snapshot) {
        World world = lattice_gas(threads);
        double brought = world.kinetic_energy();
        for (int k = 0; k < 120; ++k) {
            if (through_snapshot && k == 60) world = test_worlds::restore(test_worlds::save(world), threads);
            brought += feed(world, k);
            world.step(1.0 / 60.0);
            EXPECT_LT(world.max_overlap(), 1e-9);
        }
        EXPECT_GT(world.ball_count(), 330u);
        EXPECT_NEAR(world.kinetic_energy(), brought, 1e-10 * brought);
        EXPECT_EQ(world.escaped_count(), 0u);
        return world.state_hash();
    };
    const std::uint64_t hash = run(1, false);
    EXPECT_EQ(run(2, false), hash);
    EXPECT_EQ(run(1, true), hash);
    EXPECT_EQ(run(2, true), hash);
}

// ------------------------------------------------------------------------------------------------
// Pauses within a step: the caller adds balls at exact times (a spout).

TEST(Embedding, PausesWithinAStepAddBallsAtTheirTimes) {
    World world(test_worlds::granular());
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    std::vector<double> paused;
    std::vector<BallId> added;
    const StepResult result = world.step(1.0, 0.25, [&](World& w) {
        paused.push_back(w.time());
        // Every event before the pause is done: the balls added earlier are where they fell to.
        for (std::size_t k = 0; k < added.size(); ++k) {
            const double t = w.time() - paused[k];
            EXPECT_NEAR(w.ball(added[k]).position.y, 10 - 0.5 * kG * t * t, 1e-12);
        }
        added.push_back(w.add_ball({{0, 10, 2.0 * static_cast<double>(paused.size())}, {}, 0.5, 1.0}));
        return w.time() + 0.25;  // the step's end, 1.0, is the last pause
    });
    EXPECT_EQ(paused, (std::vector<double>{0.25, 0.5, 0.75, 1.0}));
    EXPECT_EQ(world.time(), 1.0);
    EXPECT_EQ(result.awake, 4u);
    for (std::size_t k = 0; k < added.size(); ++k) {
        const double t = 1.0 - paused[k];
        const BallState ball = world.ball(added[k]);
        EXPECT_NEAR(ball.position.y, 10 - 0.5 * kG * t * t, 1e-12) << k;
        EXPECT_NEAR(ball.velocity.y, -kG * t, 1e-12) << k;
    }
}

TEST(Embedding, PausesThatAddNothingChangeNoBit) {
    // A pour that settles and sleeps, stepped at 60 Hz for 7 s, with and without a pause every
    // millisecond: the same bits, on one and two threads.
    auto run = [](int threads, bool pauses) {
        WorldDef def = test_worlds::granular(0.5, threads);
        test_worlds::regions_from(def);  // two threads: parallel batches
        World world = test_worlds::pour_into_well(def);
        std::uint64_t count = 0;
        for (int frame = 0; frame < 420; ++frame) {
            if (!pauses) {
                world.step(1.0 / 60.0);
                continue;
            }
            const double first = std::ceil(world.time() * 1000 + 1e-9) / 1000;
            world.step(1.0 / 60.0, first, [&](World& w) {
                ++count;
                return w.time() + 0.001;
            });
        }
        EXPECT_EQ(count > 0, pauses);
        EXPECT_EQ(world.sleeping_count(), world.ball_count());
        return world.state_hash();
    };
    const std::uint64_t hash = run(1, false);
    EXPECT_EQ(run(1, true), hash);
    EXPECT_EQ(run(2, false), hash);
    EXPECT_EQ(run(2, true), hash);
}

TEST(Embedding, BallsAddedInPausesGiveTheSameBitsForAnyThreadCount) {
    // The elastic lattice gas fed a ball every 1/120 of time at exact times within steps of 1/15,
    // 360 tries in all (the count passes 512, and one larger ball comes too: the events are predicted
    // afresh within a step): the same bits on one and two threads, energy what the balls brought,
    // no overlap.
    auto run = [](int threads) {
        World world = lattice_gas(threads);
        double brought = world.kinetic_energy();
        int k = 0;
        double next = world.time() + 1.0 / 240.0;
        for (int frame = 0; frame < 45; ++frame) {
            world.step(1.0 / 15.0, next, [&](World& w) {
                brought += feed(w, k, k == 100 ? 0.5 : 0.25);
                ++k;
                return next = w.time() + 1.0 / 120.0;
            });
            EXPECT_LT(world.max_overlap(), 1e-9);
        }
        EXPECT_EQ(k, 360);
        EXPECT_GT(world.ball_count(), 512u);
        EXPECT_NEAR(world.kinetic_energy(), brought, 1e-10 * brought);
        EXPECT_EQ(world.escaped_count(), 0u);
        return world.state_hash();
    };
    EXPECT_EQ(run(2), run(1));
}

TEST(Embedding, APauseMayOnlyAddBalls) {
    World world(test_worlds::granular());
    const PlaneId floor = world.add_plane({{0, 0, 0}, {0, 1, 0}});
    const CylinderId column = world.add_cylinder({{9, 0, 9}, {0, 1, 0}, 1.0});
    const CapsuleId peg = world.add_capsule({{-9, 1, 0}, {-9, 1, 0}, 0.5});
    const BlockId ledge = world.add_block({{5, 0, -9}, {6, 1, -8}});
    const BallId ball = world.add_ball({{0, 5, 0}, {}, 0.5, 1.0});
    world.step(0.5, 0.25, [&](World& w) {
        EXPECT_THROW(w.remove_ball(ball), std::logic_error);
        EXPECT_THROW(w.set_position(ball, {1, 5, 0}), std::logic_error);
        EXPECT_THROW(w.set_velocity(ball, {1, 0, 0}), std::logic_error);
        EXPECT_THROW(w.apply_impulse(ball, {1, 0, 0}), std::logic_error);
        EXPECT_THROW(w.set_gravity({0, 0, 0}), std::logic_error);
        EXPECT_THROW(w.set_restitution(1.0), std::logic_error);
        EXPECT_THROW(w.remove_plane(floor), std::logic_error);
        EXPECT_THROW(w.remove_cylinder(column), std::logic_error);
        EXPECT_THROW(w.remove_capsule(peg), std::logic_error);
        EXPECT_THROW(w.remove_block(ledge), std::logic_error);
        EXPECT_THROW(w.add_plane({{0, 9, 0}, {0, -1, 0}}), std::logic_error);
        EXPECT_THROW(w.add_cylinder({{-9, 0, -9}, {0, 1, 0}, 1.0}), std::logic_error);
        EXPECT_THROW(w.add_capsule({{9, 1, -9}, {9, 2, -9}, 0.5}), std::logic_error);
        EXPECT_THROW(w.add_block({{-6, 0, 8}, {-5, 1, 9}}), std::logic_error);
        EXPECT_THROW(w.reset_measurements(), std::logic_error);
        EXPECT_THROW(w.set_event_record_limit(0), std::logic_error);
        EXPECT_THROW(w.set_step_event_budget(10), std::logic_error);
        EXPECT_THROW(w.step(0.1), std::logic_error);
        EXPECT_THROW(World moved(std::move(w)), std::logic_error);
        EXPECT_THROW(w = World(), std::logic_error);
        std::ostringstream bytes;
        EXPECT_THROW(w.save(bytes), std::logic_error);
        EXPECT_EQ(w.ball(ball).position.y, 5 - 0.5 * kG * 0.25 * 0.25);
        return std::numeric_limits<double>::infinity();
    });
    EXPECT_EQ(world.time(), 0.5);
    EXPECT_NEAR(world.ball(ball).position.y, 5 - 0.5 * kG * 0.25, 1e-12);
    world.set_velocity(ball, {});  // between steps again
    World moved(std::move(world));
    EXPECT_EQ(moved.ball_count(), 1u);
}

TEST(Embedding, ABallRefusedAtTheSixteenthKeepsTheCellsAndEvents) {
    // 16 balls share one wide cell; a 17th splits it, and when it is refused (it overlaps one)
    // the world is as it was, to the byte, between steps and in a pause.
    auto sixteen = [] {
        World world(test_worlds::granular());
        world.add_plane({{0, 0, 0}, {0, 1, 0}});
        for (int k = 0; k < 16; ++k) world.add_ball({{2.0 * k, 3, 0}, {1, 0, 0}, 0.5, 1.0});
        world.step(0.1);
        return world;
    };
    World world = sixteen();
    const std::string before = test_worlds::save(world);
    EXPECT_THROW(world.add_ball({{0.3, 3, 0}, {}, 0.5, 1.0}), InvalidArgument);
    EXPECT_EQ(test_worlds::save(world), before);
    // In a pause: the same bits as a pause that tries nothing.
    auto stepped = [&](bool refused) {
        World w = sixteen();
        w.step(0.5, 0.3, [&](World& at) {
            if (refused) {
                EXPECT_THROW(at.add_ball({at.ball(at.balls().id[0]).position, {}, 0.5, 1.0}), InvalidArgument);
            }
            return std::numeric_limits<double>::infinity();
        });
        return w.state_hash();
    };
    EXPECT_EQ(stepped(true), stepped(false));
}

TEST(Embedding, AFailedPauseEndsTheStepThereConsistent) {
    auto falling = [] {
        World world(test_worlds::granular());
        world.add_plane({{0, 0, 0}, {0, 1, 0}});
        world.add_ball({{0, 5, 0}, {}, 0.5, 1.0});
        return world;
    };
    // A pause that throws: the step ends at it, with the ball it added.
    World world = falling();
    EXPECT_THROW(world.step(1.0, 0.5, [](World& w) -> double {
        w.add_ball({{3, 5, 0}, {}, 0.5, 1.0});
        throw std::runtime_error("the caller's");
    }), std::runtime_error);
    EXPECT_EQ(world.time(), 0.5);
    EXPECT_EQ(world.ball_count(), 2u);
    world.step(0.5);
    const BallView view = world.balls();
    EXPECT_NEAR(view.y[1], 5 - 0.5 * kG * 0.25, 1e-12);
    // A first pause not after the world's time is refused, changing nothing.
    World early = falling();
    try {
        early.step(1.0, 0.0, [](World& w) { return w.time() + 1; });
        ADD_FAILURE() << "a pause at the world's time was taken";
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "pause_at");
    }
    EXPECT_EQ(early.time(), 0.0);
    // A next pause not after this one is refused, naming what it returned; the world stands there.
    World again = falling();
    try {
        again.step(1.0, 0.5, [](World& w) { return w.time(); });
        ADD_FAILURE() << "a pause at the same time was taken";
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "pause");
        EXPECT_NE(std::string(error.what()).find("not after the pause at 0.5"), std::string::npos) << error.what();
    }
    EXPECT_EQ(again.time(), 0.5);
    EXPECT_NEAR(again.ball(again.balls().id[0]).position.y, 5 - 0.5 * kG * 0.25, 1e-12);
}
