// Free flight against closed forms: exact paths, cells as wide as the balls are sparse, and
// lone fast balls that roam in blocks of cells.
#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

#include <gtest/gtest.h>

#include "worlds.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

using namespace ballistic;
using namespace ballistic::test_worlds;

TEST(FreeFlight, ExactBallisticPath) {
    // Alone, the ball is in the world's one cell and pays no crossing; among 20 far-apart balls
    // the cells are a diameter wide and it crosses many: the path is exact either way.
    for (const int others : {0, 19}) {
        World world(with_gravity(9.81));
        const Vec3 p0{1, 2, 3}, v0{4, 5, -6};
        const BallId id = world.add_ball({p0, v0, 0.5, 2.0});
        for (int k = 0; k < others; ++k) world.add_ball({{-100.0 - 3.0 * k, 0, 0}, {}, 0.5, 1.0});
        for (int k = 0; k < 60; ++k) world.step(1.0 / 60.0);
        const double t = world.time();
        const BallState s = world.ball(id);
        EXPECT_NEAR(s.position.x, p0.x + v0.x * t, 1e-12);
        EXPECT_NEAR(s.position.y, p0.y + v0.y * t - 0.5 * 9.81 * t * t, 1e-12);
        EXPECT_NEAR(s.position.z, p0.z + v0.z * t, 1e-12);
        EXPECT_NEAR(s.velocity.y, v0.y - 9.81 * t, 1e-12);
        if (others == 0) {
            EXPECT_EQ(world.event_counts().cell_crossings, 0u);
        } else {
            EXPECT_GT(world.event_counts().cell_crossings, 0u);
        }
        EXPECT_EQ(world.event_counts().collisions(), 0u);
    }
}

// A ball between two walls 1000 apart at speed 1/3 flies 180 000 steps of 1/60 between hits. The
// path its hits are predicted on is kept from one event to the next, whatever the steps: rounding
// the ball onto each step's end (as the end of a step once did) drifted it 10⁻⁹ off that path in
// one flight, and it then met the far wall short of touching it.
TEST(FreeFlight, LongFlightsKeepTheirPathWhateverTheSteps) {
    World world(WorldDef{});
    const double side = 1000.0, v = 1.0 / 3.0, x0 = 400.0;
    world.add_plane({{0, 0, 0}, {1, 0, 0}});
    world.add_plane({{side, 0, 0}, {-1, 0, 0}});
    const BallId id = world.add_ball({{x0, 0, 0}, {v, 0, 0}, 0.5, 1.0});
    // The centre's range is [0.5, side − 0.5]: a triangle wave along it.
    const double span = side - 1.0;
    auto closed_form = [&](double t) {
        const double phase = std::fmod(x0 - 0.5 + v * t, 2.0 * span);
        return 0.5 + (phase <= span ? phase : 2.0 * span - phase);
    };
    double worst = 0.0;
    for (int k = 0; k < 480'000; ++k) {  // 8000 time units: the far wall, the near one, the far one
        world.step(1.0 / 60.0);
        worst = std::max(worst, std::abs(world.ball(id).position.x - closed_form(world.time())));
    }
    EXPECT_EQ(world.event_counts().ball_plane, 3u);
    EXPECT_LT(worst, 1e-11);  // a few ulps of 1000 and of the time
}

// A ball in flight is kept at its last event, not at the end of each step: a change between steps
// (velocity, impulse, position, gravity) starts from where it is at the world's time, and its
// path from there is the closed form from that instant.
TEST(FreeFlight, ChangesBetweenStepsStartFromWhereTheBallIs) {
    World world(with_gravity(9.81));
    const BallId id = world.add_ball({{0, 100, 0}, {1, 0, 0}, 0.5, 2.0});
    auto fly = [&](int steps) {
        for (int k = 0; k < steps; ++k) world.step(1.0 / 60.0);
    };
    auto expect_path = [&](Vec3 p0, Vec3 v0, double g, double t0) {
        const double t = world.time() - t0;
        const BallState s = world.ball(id);
        EXPECT_NEAR(s.position.x, p0.x + v0.x * t, 1e-11);
        EXPECT_NEAR(s.position.y, p0.y + v0.y * t - 0.5 * g * t * t, 1e-11);
        EXPECT_NEAR(s.position.z, p0.z + v0.z * t, 1e-11);
        EXPECT_NEAR(s.velocity.y, v0.y - g * t, 1e-11);
    };
    fly(30);
    BallState before = world.ball(id);
    world.set_velocity(id, {0, 3, 1});
    EXPECT_EQ(world.ball(id).position, before.position);
    double t0 = world.time();
    fly(30);
    expect_path(before.position, {0, 3, 1}, 9.81, t0);

    before = world.ball(id);
    world.apply_impulse(id, {2, 0, 0});  // mass 2: +1 along x
    EXPECT_EQ(world.ball(id).position, before.position);
    t0 = world.time();
    fly(30);
    expect_path(before.position, before.velocity + Vec3{1, 0, 0}, 9.81, t0);

    before = world.ball(id);
    world.set_gravity({0, -1, 0});
    EXPECT_EQ(world.ball(id).position, before.position);
    t0 = world.time();
    fly(30);
    expect_path(before.position, before.velocity, 1.0, t0);

    before = world.ball(id);
    world.set_position(id, {5, 50, 5});
    EXPECT_EQ(world.ball(id).velocity, before.velocity);
    t0 = world.time();
    fly(30);
    expect_path({5, 50, 5}, before.velocity, 1.0, t0);
    EXPECT_EQ(world.balls().x[0], world.ball(id).position.x);
}

TEST(FreeFlight, AFewBallsPayOnlyTheirCollisions) {
    // A tiny fast ball in a large closed box (the example: it paid one event per cell it
    // crossed, 10^4 cells per flight): with a few balls the world is one cell, and every event is
    // a wall hit or a collision.
    WorldDef def;
    def.restitution = 1.0;
    World world(def);
    const double side = 1000.0;
    add_box(world, side);
    const Vec3 v{1000.0, 700.0, 300.0};
    const BallId fast = world.add_ball({{500, 500, 500}, v, 0.05, 1.0});
    world.add_ball({{100, 100, 100}, {}, 0.05, 1.0});
    world.step(10.0);
    // Wall hits along each axis: the flight |v_d| t over the side, within one either way.
    const double flights = (v.x + v.y + v.z) * 10.0 / side;
    const std::uint64_t events = world.events_processed();
    EXPECT_EQ(world.event_counts().cell_crossings, 0u);
    EXPECT_LE(static_cast<double>(events), flights + 3.0 + 2.0 * static_cast<double>(world.event_counts().ball_ball));
    EXPECT_GE(static_cast<double>(world.event_counts().ball_plane), flights - 3.0);
    EXPECT_NEAR(world.kinetic_energy(), 0.5 * dot(v, v), 1e-9 * dot(v, v));
    const BallState s = world.ball(fast);
    for (const double c : {s.position.x, s.position.y, s.position.z}) {
        EXPECT_GT(c, 0.0);
        EXPECT_LT(c, side);
    }
}

// 300 balls of radius 0.05 at speed 100 in a 1000-wide box, 150 apart on average: in cells a
// diameter wide each would cross about 1700 cells per unit of time. The cells widen until a ball
// has about two others in the 27 around it, and crossings follow the width.
TEST(FreeFlight, FarApartBallsCrossCellsAsWideAsTheirSpacing) {
    WorldDef def;
    def.restitution = 1.0;
    World world(def);
    add_box(world, 1000.0);
    test_worlds::add_generated(world, 300, 0.05, {{0, 0, 0}, {1000, 1000, 1000}}, 100.0, 3);
    const double energy = world.kinetic_energy();
    world.step(0.01);  // the first step reviews the cells' width
    const double width = world.cell_width();
    EXPECT_GT(width, 200 * 0.1);
    double path = 0.0;  // Σ |vx| + |vy| + |vz|: kept by wall hits, and there are no collisions
    for (const BallId id : world.balls().id) {
        const Vec3 v = world.ball(id).velocity;
        path += std::abs(v.x) + std::abs(v.y) + std::abs(v.z);
    }
    const EventCounts before = world.event_counts();
    world.step(10.0);
    const EventCounts after = world.event_counts();
    EXPECT_EQ(after.ball_ball, 0u);
    // Along each axis a ball crosses a face every `width` of its path, and once more per straight
    // piece (between wall hits).
    const double pieces = 3.0 * 300 + static_cast<double>(after.ball_plane - before.ball_plane);
    EXPECT_LE(static_cast<double>(after.cell_crossings - before.cell_crossings), path * 10.0 / width + pieces);
    EXPECT_EQ(world.cell_width(), width);
    EXPECT_NEAR(world.kinetic_energy(), energy, 1e-12 * energy);
    EXPECT_EQ(world.escaped_count(), 0u);
}

// 100 pairs of balls on parallel lines 100 apart, each pair closing head on from 900 apart: in
// widened cells every pair still meets at its closed-form time and swaps velocities.
TEST(FreeFlight, FarApartPairsMeetAtTheirClosedFormTimes) {
    WorldDef def;
    def.restitution = 1.0;
    World world(def);
    add_box(world, 1000.0);
    std::vector<BallDef> defs;
    for (int j = 0; j < 10; ++j)
        for (int k = 0; k < 10; ++k) {
            const double y = 50.0 + 100.0 * j, z = 50.0 + 100.0 * k;
            defs.push_back({{50, y, z}, {100, 0, 0}, 0.05, 1.0});
            defs.push_back({{950, y, z}, {-100, 0, 0}, 0.05, 1.0});
        }
    const std::vector<BallId> ids = world.add_balls(defs);
    for (int k = 0; k < 12; ++k) world.step(0.5);
    EXPECT_GT(world.cell_width(), 100 * 0.1);
    EXPECT_EQ(world.event_counts().ball_ball, 100u);
    EXPECT_EQ(world.event_counts().ball_plane, 0u);
    const double meet = (900.0 - 0.1) / 200.0, t = world.time();
    for (std::size_t b = 0; b < ids.size(); ++b) {
        const BallState s = world.ball(ids[b]);
        const double sign = b % 2 == 0 ? 1.0 : -1.0;  // +1: the left ball of its pair
        EXPECT_NEAR(s.position.x, defs[b].position.x + sign * (100.0 * meet - 100.0 * (t - meet)), 1e-9);
        EXPECT_EQ(s.velocity.x, -sign * 100.0);
        EXPECT_EQ(s.position.y, defs[b].position.y);
    }
}

// 1000 balls far apart in a tall well fall onto its floor and gather there: the cells widened
// for the fall narrow again at a review during a step, with the same bits on one thread and two,
// and from a snapshot taken before.
TEST(FreeFlight, CellsWidenedForFarApartBallsNarrowWhenTheyGather) {
    auto run = [](int threads, double snapshot_at, double& widest) {
        WorldDef def = test_worlds::granular(0.5, threads);
        def.gravity = {0, -1000, 0};
        test_worlds::regions_from(def);
        World world(def);
        world.add_plane({{0, 0, 0}, {1, 0, 0}});
        world.add_plane({{10, 0, 0}, {-1, 0, 0}});
        world.add_plane({{0, 0, 0}, {0, 1, 0}});
        world.add_plane({{0, 0, 0}, {0, 0, 1}});
        world.add_plane({{0, 0, 10}, {0, 0, -1}});
        test_worlds::add_generated(world, 1000, 0.05, {{0, 0, 0}, {10, 2000, 10}}, 1.0, 8);
        widest = 0.0;
        for (int k = 0; k < 30; ++k) {
            if (snapshot_at > 0.0 && world.time() >= snapshot_at) {
                world = test_worlds::restore(test_worlds::save(world), threads);
                snapshot_at = 0.0;
            }
            world.step(0.1);
            widest = std::max(widest, world.cell_width());
        }
        EXPECT_EQ(world.escaped_count(), 0u);
        EXPECT_LT(world.max_overlap(), 1e-9);
        return std::pair{world.state_hash(), world.cell_width()};
    };
    double widest = 0.0;
    const auto [hash, width] = run(1, 0.0, widest);
    EXPECT_GT(widest, 8 * 0.1);
    EXPECT_LT(width, widest);
    for (const auto& [threads, snapshot_at] : {std::pair{2, 0.0}, std::pair{1, 1.0}, std::pair{2, 1.0}}) {
        double other = 0.0;
        EXPECT_EQ(run(threads, snapshot_at, other).first, hash) << threads << " threads, snapshot at " << snapshot_at;
    }
}

// A crowd of 2025 balls at rest near the origin keeps the cells a diameter wide in a box 10⁴
// wide; `loners` balls fly far from it at speed 1000. A step expected to cross many cells lets a
// ball alone in the blocks of cells around it roam: it crosses blocks of up to 8⁶ cells, and the
// bits are those of short steps, which cross too few cells each to roam.
namespace {

// With `batches`, a world large enough for parallel batches: the counting ends once no ball
// roams; otherwise it goes on, and a ball may start to roam again.
World crowd_and_loners(int threads, std::span<const BallDef> loners, Vec3 gravity = {}, bool batches = false) {
    WorldDef def;
    def.threads = threads;
    if (batches) {
        test_worlds::regions_from(def);
    }
    def.gravity = gravity;
    World world(def);
    add_box(world, {-5000, gravity != Vec3{} ? 0.0 : -5000.0, -5000}, {5000, 5000, 5000});
    std::vector<BallDef> defs;  // one layer, on the floor under gravity
    for (int i = 0; i < 45; ++i)
        for (int k = 0; k < 45; ++k) defs.push_back({{i * 0.7, 0.3, k * 0.7}, {}, 0.3, 1.0});
    defs.insert(defs.end(), loners.begin(), loners.end());
    world.add_balls(defs);
    return world;
}

// The hash, collisions and crossings of `world` stepped `duration` in `steps` equal steps (a
// power of two: the same times).
struct Stepped {
    std::uint64_t hash, collisions, crossings;
};
Stepped stepped(World world, double duration, int steps) {
    for (int k = 0; k < steps; ++k) world.step(duration / steps);
    EXPECT_LT(world.max_overlap(), 1e-9);
    EXPECT_EQ(world.escaped_count(), 0u);
    return {world.state_hash(), world.event_counts().collisions(), world.event_counts().cell_crossings};
}

}  // namespace

TEST(FreeFlight, ALoneFastBallRoamsInBlocksOfCellsWithTheSameBits) {
    const BallDef loner{{-3000, 2000, 100}, {600, 800, 0}, 0.3, 1.0};
    const Stepped roaming = stepped(crowd_and_loners(1, std::span(&loner, 1)), 16.0, 1);
    const Stepped cells = stepped(crowd_and_loners(1, std::span(&loner, 1)), 16.0, 2048);
    EXPECT_EQ(roaming.hash, cells.hash);
    EXPECT_EQ(roaming.collisions, cells.collisions);
    EXPECT_EQ(roaming.collisions, 2u);  // two walls
    // 16 000 of flight through cells 0.6 wide: about 37 000 crossings; in blocks, a few dozen.
    EXPECT_GT(cells.crossings, 30000u);
    EXPECT_LT(roaming.crossings, 200u);
}

TEST(FreeFlight, ARoamerMeetsACrowdAsInTheCells) {
    // A ball flies into the crowd and stirs it; one thread and several (parallel batches once it
    // no longer roams).
    const BallDef loner{{3000, 0.5, 3.15}, {-1000, 0, 0}, 0.3, 1.0};
    const Stepped cells = stepped(crowd_and_loners(1, std::span(&loner, 1), {}, true), 16.0, 2048);
    EXPECT_GT(cells.collisions, 100u);
    for (const int threads : {1, 2, 3}) {
        const Stepped roaming = stepped(crowd_and_loners(threads, std::span(&loner, 1), {}, true), 16.0, 1);
        EXPECT_EQ(roaming.hash, cells.hash) << threads << " threads";
        EXPECT_EQ(roaming.collisions, cells.collisions) << threads << " threads";
        EXPECT_LT(roaming.crossings, cells.crossings) << threads << " threads";
    }
}

TEST(FreeFlight, TwoRoamersMeetHeadOnAtTheirClosedFormTime) {
    const BallDef loners[] = {{{-4000, 500, 500}, {1000, 0, 0}, 0.3, 1.0}, {{4000, 500, 500}, {-1000, 0, 0}, 0.3, 1.0}};
    World world = crowd_and_loners(1, loners);
    world.step(8.0);
    std::vector<CollisionEvent> meetings;
    for (const CollisionEvent& e : world.events())
        if (e.kind == EventKind::BallBall) meetings.push_back(e);
    ASSERT_EQ(meetings.size(), 1u);
    EXPECT_NEAR(meetings[0].time, (8000.0 - 0.6) / 2000.0, 1e-12);
    EXPECT_NEAR(meetings[0].point.x, 0.0, 1e-9);
    EXPECT_LT(world.event_counts().cell_crossings, 200u);
    EXPECT_EQ(stepped(crowd_and_loners(1, loners), 8.0, 1024).hash, world.state_hash());
}

TEST(FreeFlight, ARoamerUnderGravityBouncesAsInTheCells) {
    // The crowd rests on the floor; the loner flies its parabolas across the room and bounces.
    const BallDef loner{{-3000, 100, 100}, {1000, 0, 0}, 0.3, 1.0};
    const Vec3 g{0, -10, 0};
    const Stepped roaming = stepped(crowd_and_loners(1, std::span(&loner, 1), g), 16.0, 1);
    const Stepped cells = stepped(crowd_and_loners(1, std::span(&loner, 1), g), 16.0, 2048);
    EXPECT_EQ(roaming.hash, cells.hash);
    EXPECT_EQ(roaming.collisions, cells.collisions);
    EXPECT_GE(roaming.collisions, 2u);  // the floor, once or twice, and a wall
    EXPECT_LT(roaming.crossings * 20, cells.crossings);
}

TEST(FreeFlight, APauseAddingNothingChangesNoBitWhileBallsRoam) {
    // 20 pairs of balls 40 apart, 150 between pairs, each pair closing at 10 to 1000: they roam,
    // come down as they near and meet. A pause that adds nothing leaves them roaming.
    std::vector<BallDef> loners;
    for (int k = 0; k < 20; ++k) {
        const Vec3 centre{200.0 + 150 * (k % 5), 1000.0 + 150 * (k / 5), 0.0};
        const double speed = 5.0 + 26.0 * k;
        loners.push_back({centre - Vec3{20, 0, 0}, {speed, 0.01 * k, 0}, 0.3, 1.0});
        loners.push_back({centre + Vec3{20, 0.1, 0}, {-speed, 0, 0.02 * k}, 0.3, 1.0});
    }
    const auto forever = [](World&) { return std::numeric_limits<double>::infinity(); };
    World straight = crowd_and_loners(1, loners);
    straight.step(8.0);
    EXPECT_EQ(straight.event_counts().ball_ball, 20u);
    EXPECT_LT(straight.event_counts().cell_crossings * 4, stepped(crowd_and_loners(1, loners), 8.0, 1024).crossings);
    for (const int threads : {1, 2}) {
        World paused = crowd_and_loners(threads, loners);
        paused.step(8.0, 0.0625, forever);
        EXPECT_EQ(paused.state_hash(), straight.state_hash()) << threads << " threads";
    }
}

TEST(FreeFlight, APauseSeesRoamersWhereTheyAre) {
    // In a pause the roaming ball is where its flight has taken it, however far it is from the
    // cell it last crossed into: no room there, and a ball added in its way is hit.
    const BallDef loner{{-3000, 2000, 100}, {600, 800, 0}, 0.3, 1.0};
    World world = crowd_and_loners(1, std::span(&loner, 1));
    const BallId id = world.balls().id.back();
    Vec3 ahead;
    world.step(16.0, 8.0, [&](World& w) {
        const BallState s = w.ball(id);
        EXPECT_FALSE(w.is_free(s.position + Vec3{0.1, 0, 0}, 0.3));
        ahead = s.position + s.velocity * (50.0 / length(s.velocity));
        w.add_ball({ahead, {}, 0.3, 1.0});
        return std::numeric_limits<double>::infinity();
    });
    std::vector<CollisionEvent> meetings;
    for (const CollisionEvent& e : world.events())
        if (e.kind == EventKind::BallBall) meetings.push_back(e);
    ASSERT_EQ(meetings.size(), 1u);
    EXPECT_NEAR(meetings[0].time, 8.0 + (50.0 - 0.6) / 1000.0, 1e-12);
    EXPECT_LT(world.max_overlap(), 1e-9);
}
