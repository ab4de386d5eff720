// World-level physics against closed forms and conservation laws.
#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

#include <gtest/gtest.h>

#include "worlds.hpp"

#include <cmath>
#include <limits>
#include <span>
#include <tuple>
#include <vector>

using namespace ballistic;

namespace {

constexpr Vec3 kUp{0, 1, 0};

WorldDef with_gravity(double g, double e = 1.0) {
    WorldDef def;
    def.gravity = {0, -g, 0};
    def.restitution = e;
    return def;
}

// A closed cube [0, side]³ of six inward planes.
void add_box(World& world, Vec3 low, Vec3 high) {
    world.add_plane({{low.x, 0, 0}, {1, 0, 0}});
    world.add_plane({{high.x, 0, 0}, {-1, 0, 0}});
    world.add_plane({{0, low.y, 0}, {0, 1, 0}});
    world.add_plane({{0, high.y, 0}, {0, -1, 0}});
    world.add_plane({{0, 0, low.z}, {0, 0, 1}});
    world.add_plane({{0, 0, high.z}, {0, 0, -1}});
}
void add_box(World& world, double side) { add_box(world, {0, 0, 0}, {side, side, side}); }

// `count` balls of radius 0.5 at `speed` in random directions inside that cube.
World boxed_balls(const WorldDef& def, double side, std::size_t count, double speed, std::uint64_t seed = 1) {
    World world(def);
    add_box(world, side);
    GenerateDef gen;
    gen.count = count;
    gen.radius = 0.5;
    gen.region = {{0, 0, 0}, {side, side, side}};
    gen.speed = speed;
    gen.seed = seed;
    world.add_balls(generate_balls(world, gen));
    return world;
}

World periodic_gas(std::size_t n, double packing, double kT, int threads, std::uint64_t seed = 3) {
    const double r = 0.5;
    const double side = std::cbrt(double(n) * (4.0 / 3.0) * M_PI * r * r * r / packing);
    WorldDef def;
    def.periodic = Box{{0, 0, 0}, {side, side, side}};
    def.threads = threads;
    def.parallel_events_min_balls = 0;  // small worlds take the parallel batches too
    World world(def);
    GenerateDef gen;
    gen.count = n;
    gen.radius = r;
    gen.region = *def.periodic;
    gen.velocity = GenerateDef::Velocity::Temperature;
    gen.temperature = kT;
    gen.zero_momentum = true;
    gen.seed = seed;
    const auto defs = generate_balls(world, gen);
    world.add_balls(defs);
    return world;
}

double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

}  // namespace

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
        def.parallel_events_min_balls = 0;
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
        def.parallel_events_min_balls = 0;
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

TEST(Floor, ThousandElasticBouncesKeepHeightAndPeriod) {
    const double g = 9.81, h = 2.0, r = 0.25;
    World world(with_gravity(g));
    world.add_plane({{0, 0, 0}, kUp});
    const BallId id = world.add_ball({{0, h + r, 0}, {}, r, 1.0});
    const double fall = std::sqrt(2 * h / g), period = 2 * fall;
    std::vector<double> times;
    while (times.size() < 1000) {
        world.step(0.25);
        for (const auto& e : world.events()) times.push_back(e.time);
    }
    for (std::size_t k = 0; k < 1000; ++k)
        ASSERT_NEAR(times[k], fall + double(k) * period, 1e-9 * (1 + times[k])) << "bounce " << k;
    // Energy (and so the apex height) is unchanged after 1000 bounces.
    const BallState s = world.ball(id);
    const double energy = 0.5 * dot(s.velocity, s.velocity) + g * (s.position.y - r);
    EXPECT_NEAR(energy, g * h, 1e-9 * g * h);
    EXPECT_EQ(world.escaped_count(), 0u);
    EXPECT_LT(world.max_overlap(), 1e-12);
}

TEST(Floor, InelasticBallComesToRestInBoundedWork) {
    const double g = 9.81, r = 0.5, e = 0.5;
    World world(with_gravity(g, e));
    world.add_plane({{0, 0, 0}, kUp});
    const BallId id = world.add_ball({{0, 5, 0}, {1, 0, 0}, r, 1.0});
    world.step(20.0);
    const BallState s = world.ball(id);
    EXPECT_NEAR(s.position.y, r, 1e-12);
    EXPECT_EQ(s.velocity.y, 0.0);
    EXPECT_DOUBLE_EQ(s.velocity.x, 1.0);           // frictionless: slides on
    EXPECT_NEAR(s.position.x, 20.0, 1e-9);
    // v halves each bounce until below rest_speed: about log2(v0 / 1e-3) bounces.
    EXPECT_LT(world.event_counts().ball_plane, 40u);
    world.step(100.0);
    EXPECT_LT(world.event_counts().ball_plane, 40u);  // resting costs no events
}

TEST(Floor, BallPlacedAtRestStaysAtRest) {
    World world(with_gravity(9.81));
    world.add_plane({{0, 0, 0}, kUp});
    const BallId id = world.add_ball({{0, 0.5, 0}, {}, 0.5, 1.0});
    world.step(10.0);
    EXPECT_EQ(world.ball(id).position.y, 0.5);
    EXPECT_LE(world.event_counts().ball_plane, 1u);
}

TEST(Floor, SlidesDownAnInclineAtGSinTheta) {
    const double g = 9.81, theta = 0.3;
    World world(with_gravity(g));
    const Vec3 n{-std::sin(theta), std::cos(theta), 0};
    world.add_plane({{0, 0, 0}, n});
    const Vec3 p0 = n * 0.5;  // resting on the incline, touching
    const BallId id = world.add_ball({p0, {}, 0.5, 1.0});
    world.step(2.0);
    const BallState s = world.ball(id);
    const Vec3 down_slope{-std::cos(theta), -std::sin(theta), 0};
    const double travelled = dot(s.position - p0, down_slope);
    EXPECT_NEAR(travelled, 0.5 * g * std::sin(theta) * 4.0, 1e-9);
    EXPECT_NEAR(dot(n, s.position), 0.5, 1e-9);  // on the surface, not through it
}

TEST(Floor, BallsSettleOnPlanesOfEveryOrientation) {
    // Gravity straight into a plane of random orientation; a ball released just above it (slower
    // than rest_speed on arrival) or dropped with e = 0 must settle on it, never sink.
    std::uint64_t state = 12345;
    auto uniform = [&] {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return double(state >> 11) * 0x1p-53 * 2.0 - 1.0;
    };
    for (int trial = 0; trial < 100; ++trial) {
        const Vec3 n = normalize(Vec3{uniform(), uniform(), uniform()});
        for (double height : {1e-8, 1.0}) {
            WorldDef def;
            def.gravity = n * -9.81;
            def.restitution = height < 1e-3 ? 1.0 : 0.0;
            World world(def);
            world.add_plane({{}, n});
            const BallId id = world.add_ball({n * (0.5 + height), {}, 0.5, 1.0});
            for (int k = 0; k < 60; ++k) world.step(0.01);  // the drop from 1 lands at 0.45
            const double gap = dot(world.ball(id).position, n) - 0.5;
            ASSERT_GT(gap, -1e-12) << "trial " << trial << " height " << height;
            ASSERT_LT(gap, 1e-7) << "trial " << trial << " height " << height;
        }
    }
}

TEST(Floor, ValleyOfTwoPlanesSettlesInTheCrease) {
    // Two planes tilted ±30° form a V; an inelastic ball dropped in ends at rest in the crease.
    // Awake it slides into the crease itself; with sleeping (the default) it may stop once it is
    // slow and touches both planes, within the touching gap of the second: there x is at most
    // that gap away from the crease (resting on one plane, x = −gap / (2 sin 30°)).
    const double g = 9.81;
    for (const double sleep_speed : {0.0, WorldDef{}.sleep_speed}) {
        WorldDef def = with_gravity(g, 0.5);
        def.sleep_speed = sleep_speed;
        World world(def);
        const double c = std::cos(M_PI / 6), s = std::sin(M_PI / 6);
        world.add_plane({{}, {s, c, 0}});
        world.add_plane({{}, {-s, c, 0}});
        const BallId id = world.add_ball({{0.3, 2.0, 0}, {}, 0.5, 1.0});
        for (int k = 0; k < 500; ++k) world.step(0.01);
        const BallState b = world.ball(id);
        const double touch_gap = std::min(sleep_speed * sleep_speed / (2.0 * g), 1e-3 * 0.5);  // SleepRules::touch_gap
        EXPECT_EQ(world.sleeping(id), sleep_speed > 0.0);
        EXPECT_GT(dot(b.position, Vec3{s, c, 0}) - 0.5, -1e-9);
        EXPECT_GT(dot(b.position, Vec3{-s, c, 0}) - 0.5, -1e-9);
        EXPECT_NEAR(b.position.x, 0.0, 1e-6 + touch_gap) << "sleep_speed " << sleep_speed;
        EXPECT_LT(length(b.velocity), 1e-3);
        EXPECT_LT(world.event_counts().ball_plane, 5000u);
    }
}

TEST(BallBall, HeadOnUnequalMassesMatchClosedForm) {
    for (double e : {1.0, 0.6, 0.0}) {
        WorldDef def;
        def.restitution = e;
        World world(def);
        const double m1 = 1.0, m2 = 3.0, u1 = 2.0, u2 = -1.0;
        const BallId a = world.add_ball({{0, 0, 0}, {u1, 0, 0}, 0.5, m1});
        const BallId b = world.add_ball({{6, 0, 0}, {u2, 0, 0}, 1.0, m2});
        world.step(3.0);
        ASSERT_EQ(world.events().size(), 1u);
        const auto& ev = world.events()[0];
        EXPECT_DOUBLE_EQ(ev.time, (6.0 - 1.5) / 3.0);
        const double v1 = (m1 * u1 + m2 * u2 - m2 * e * (u1 - u2)) / (m1 + m2);
        const double v2 = (m1 * u1 + m2 * u2 + m1 * e * (u1 - u2)) / (m1 + m2);
        EXPECT_NEAR(world.ball(a).velocity.x, v1, 1e-14);
        EXPECT_NEAR(world.ball(b).velocity.x, v2, 1e-14);
        EXPECT_NEAR(ev.impulse, m1 * (u1 - v1), 1e-14);
        EXPECT_NEAR(ev.point.x, ev.time * u1 + 0.5, 1e-14);
        EXPECT_EQ(ev.normal, (Vec3{1, 0, 0}));
    }
}

TEST(BallBall, ObliqueEqualMassesLeaveAtRightAngles) {
    World world;
    const BallId a = world.add_ball({{0, 0, 0}, {1, 0, 0}, 0.5, 1.0});
    const BallId b = world.add_ball({{5, 0.5, 0}, {}, 0.5, 1.0});
    world.step(10.0);
    ASSERT_EQ(world.event_counts().ball_ball, 1u);
    const Vec3 va = world.ball(a).velocity, vb = world.ball(b).velocity;
    EXPECT_NEAR(dot(va, vb), 0.0, 1e-15);
    EXPECT_NEAR(dot(va, va) + dot(vb, vb), 1.0, 1e-15);
}

TEST(BallBall, NewtonsCradleOneInOneOut) {
    World world;
    std::vector<BallId> ids;
    ids.push_back(world.add_ball({{-3, 0, 0}, {2, 0, 0}, 0.5, 1.0}));
    for (int k = 0; k < 5; ++k) ids.push_back(world.add_ball({{double(k), 0, 0}, {}, 0.5, 1.0}));
    world.step(3.0);
    for (int k = 0; k < 5; ++k) EXPECT_NEAR(world.ball(ids[std::size_t(k)]).velocity.x, 0.0, 1e-15) << k;
    EXPECT_DOUBLE_EQ(world.ball(ids[5]).velocity.x, 2.0);
    EXPECT_EQ(world.event_counts().ball_ball, 5u);
    EXPECT_LT(world.max_overlap(), 1e-12);
}

TEST(BallBall, SimultaneousSymmetricCollisions) {
    // Two balls hit a resting middle one at the same instant from both sides.
    World world;
    const BallId l = world.add_ball({{-3, 0, 0}, {1, 0, 0}, 0.5, 1.0});
    const BallId m = world.add_ball({{0, 0, 0}, {}, 0.5, 1.0});
    const BallId r = world.add_ball({{3, 0, 0}, {-1, 0, 0}, 0.5, 1.0});
    world.step(10.0);
    EXPECT_NEAR(world.ball(l).velocity.x + world.ball(r).velocity.x, 0.0, 1e-15);
    EXPECT_NEAR(world.ball(m).velocity.x, 0.0, 1e-15);
    EXPECT_LT(world.event_counts().ball_ball, 10u);
    EXPECT_NEAR(world.kinetic_energy(), 1.0, 1e-15);
}

TEST(Tunnelling, ExtremeSpeedBetweenWalls) {
    World world;
    world.add_plane({{0, 0, 0}, {1, 0, 0}});
    world.add_plane({{10, 0, 0}, {-1, 0, 0}});
    const BallId id = world.add_ball({{5, 0, 0}, {1e6, 0, 0}, 0.5, 1.0});
    world.step(1.0);
    EXPECT_EQ(world.escaped_count(), 0u);
    EXPECT_NEAR(double(world.event_counts().ball_plane), 1e6 / 9.0, 2.0);
    const BallState s = world.ball(id);
    EXPECT_GE(s.position.x, 0.5 - 1e-9);
    EXPECT_LE(s.position.x, 9.5 + 1e-9);
    EXPECT_EQ(std::abs(s.velocity.x), 1e6);
}

TEST(Tunnelling, FastBallsHitTinyBall) {
    World world;
    // 5·10⁵ cells of 2 mm crossed in 0.1 ms, then a head-on hit.
    const BallId a = world.add_ball({{-1000, 0, 0}, {1e7, 0, 0}, 1e-3, 1.0});
    const BallId b = world.add_ball({{0, 0, 0}, {}, 1e-3, 1.0});
    world.step(1.0001e-4);
    EXPECT_EQ(world.event_counts().ball_ball, 1u);
    EXPECT_NEAR(world.ball(a).velocity.x, 0.0, 1e-6);
    EXPECT_NEAR(world.ball(b).velocity.x, 1e7, 1e-6);
}

TEST(Cylinder, HorizontalColumnReflectsAboutTheRadialNormal) {
    const double g = 9.81;
    World world(with_gravity(g));
    world.add_cylinder({{0, 0, 0}, {0, 0, 1}, 1.0});
    const BallId id = world.add_ball({{0.9, 4, 3}, {}, 0.5, 1.0});
    world.step(0.8);
    ASSERT_EQ(world.event_counts().ball_cylinder, 1u);
    const auto& ev = world.events()[0];
    const double y = std::sqrt(2.25 - 0.81);
    const double t = std::sqrt(2 * (4 - y) / g);
    EXPECT_NEAR(ev.time, t, 1e-12);
    const Vec3 n{0.9 / 1.5, y / 1.5, 0};
    const Vec3 vin{0, -g * t, 0};
    const Vec3 vout = vin - n * (2 * dot(vin, n));
    const BallState s = world.ball(id);
    const double after = 0.8 - t;
    EXPECT_NEAR(s.velocity.x, vout.x, 1e-10);
    EXPECT_NEAR(s.velocity.y, vout.y - g * after, 1e-10);
    EXPECT_NEAR(ev.impulse, 2 * std::abs(dot(vin, n)), 1e-10);
}

// Coulomb friction at collisions (WorldDef::friction): the sliding of the surfaces past each other
// slows by at most friction × the normal change of velocity, and stops rather than reverses.
TEST(Friction, ObliqueBounceOffAFloorSlidesOnOrSticks) {
    // No gravity: a straight approach at u = 2 with tangential (3, 0, 4), |vt| = 5, e = 0.5. The
    // normal velocity changes by (1 + e) u = 3, the tangential speed by at most 3 friction.
    for (const double friction : {0.0, 0.5, 2.0}) {
        WorldDef def;
        def.restitution = 0.5;
        def.friction = friction;
        World world(def);
        world.add_plane({{0, 0, 0}, {0, 1, 0}});
        const BallId id = world.add_ball({{0, 3, 0}, {3, -2, 4}, 0.5, 2.0});
        world.step(2.0);
        ASSERT_EQ(world.event_counts().ball_plane, 1u);
        const CollisionEvent& ev = world.events()[0];
        EXPECT_DOUBLE_EQ(ev.time, 1.25);
        EXPECT_NEAR(ev.impulse, 2.0 * 3.0, 1e-14);  // the normal impulse
        const double slide = std::max(0.0, 5.0 - 3.0 * friction);  // 5, 3.5, and stuck at 2
        const BallState s = world.ball(id);
        EXPECT_NEAR(s.velocity.x, 0.6 * slide, 1e-14) << friction;
        EXPECT_NEAR(s.velocity.y, 1.0, 1e-14);
        EXPECT_NEAR(s.velocity.z, 0.8 * slide, 1e-14) << friction;
        EXPECT_NEAR(s.position.x, 3.0 * 1.25 + 0.6 * slide * 0.75, 1e-13);
    }
}

TEST(Friction, ObliqueBallBallImpactConservesMomentumAndLosesEnergy) {
    // Unequal masses, e = 0.8, an off-centre impact with sliding along the contact. The closed
    // form: normal impulse Jn = (1 + e) u m*, tangential impulse min(friction Jn, m* |vt|)
    // against the slide, m* = m1 m2 / (m1 + m2).
    const double m1 = 1.0, m2 = 3.0, e = 0.8, mstar = m1 * m2 / (m1 + m2);
    const Vec3 v1{2, 0, 0.5}, v2{-1, 0.2, 0};
    for (const double friction : {0.1, 0.4, 5.0}) {
        WorldDef def;
        def.restitution = e;
        def.friction = friction;
        World world(def);
        const BallId a = world.add_ball({{0, 0, 0}, v1, 0.5, m1});
        const BallId b = world.add_ball({{4, 0.6, 0.3}, v2, 0.5, m2});
        world.step(3.0);
        ASSERT_EQ(world.event_counts().ball_ball, 1u);
        const CollisionEvent& ev = world.events()[0];
        // Where they meet: |dp + dv t| = 1, the earlier root.
        const Vec3 dp0{4, 0.6, 0.3}, dv = v2 - v1;
        const double qa = dot(dv, dv), qb = dot(dp0, dv), qc = dot(dp0, dp0) - 1.0;
        const double t = (-qb - std::sqrt(qb * qb - qa * qc)) / qa;
        EXPECT_NEAR(ev.time, t, 1e-14);
        const Vec3 n = normalize(dp0 + dv * t);
        const double u = -dot(dv, n);
        const double jn = (1 + e) * u * mstar;
        const Vec3 slide = dv - n * dot(dv, n);
        const double jt = std::min(friction * jn, mstar * length(slide));
        const Vec3 impulse = n * jn - normalize(slide) * jt;  // on b; the opposite on a
        const BallState sa = world.ball(a), sb = world.ball(b);
        for (const auto& [got, want] : {std::pair{sa.velocity, v1 - impulse / m1}, std::pair{sb.velocity, v2 + impulse / m2}}) {
            EXPECT_NEAR(got.x, want.x, 1e-13) << friction;
            EXPECT_NEAR(got.y, want.y, 1e-13) << friction;
            EXPECT_NEAR(got.z, want.z, 1e-13) << friction;
        }
        const Vec3 momentum = sa.velocity * m1 + sb.velocity * m2, before = v1 * m1 + v2 * m2;
        EXPECT_NEAR(length(momentum - before), 0.0, 1e-14);
        const double energy = 0.5 * (m1 * dot(sa.velocity, sa.velocity) + m2 * dot(sb.velocity, sb.velocity));
        const double elastic = 0.5 * (m1 * dot(v1, v1) + m2 * dot(v2, v2)) - 0.5 * mstar * (1 - e * e) * u * u;
        EXPECT_LT(energy, elastic);  // friction loses energy beyond the restitution's loss
        // A large coefficient stops the sliding: the surfaces leave without relative slip.
        if (friction == 5.0) {
            EXPECT_NEAR(length(cross(sb.velocity - sa.velocity, n)), 0.0, 1e-13);
        }
    }
}

TEST(Friction, BallGrazingAColumnLosesSpeedAlongItsAxis) {
    // A vertical column of radius 1, no gravity; the ball approaches at 2 across the axis while
    // moving at 1.5 along it. Elastic (e = 1): it leaves at 2, and at 1.5 − 0.25 × 4 along.
    WorldDef def;
    def.friction = 0.25;
    World world(def);
    world.add_cylinder({{0, 0, 0}, {0, 1, 0}, 1.0});
    const BallId id = world.add_ball({{3, 0, 0}, {-2, 1.5, 0}, 0.5, 1.0});
    world.step(1.0);
    ASSERT_EQ(world.event_counts().ball_cylinder, 1u);
    EXPECT_DOUBLE_EQ(world.events()[0].time, 0.75);
    const BallState s = world.ball(id);
    EXPECT_NEAR(s.velocity.x, 2.0, 1e-14);
    EXPECT_NEAR(s.velocity.y, 0.5, 1e-14);
    EXPECT_NEAR(s.position.y, 1.5 * 0.75 + 0.5 * 0.25, 1e-14);
}

TEST(Periodic, BallsMeetAcrossTheBoundary) {
    WorldDef def;
    def.periodic = Box{{0, 0, 0}, {10, 10, 10}};
    World world(def);
    const BallId a = world.add_ball({{0.6, 5, 5}, {-1, 0, 0}, 0.5, 1.0});
    const BallId b = world.add_ball({{9.4, 5, 5}, {1, 0, 0}, 0.5, 1.0});
    world.step(0.5);
    EXPECT_EQ(world.event_counts().ball_ball, 1u);
    EXPECT_NEAR(world.events()[0].time, 0.1, 1e-14);
    EXPECT_NEAR(world.ball(a).velocity.x, 1.0, 1e-15);
    EXPECT_NEAR(world.ball(b).velocity.x, -1.0, 1e-15);
    // The free arc between them is 10 − 2σ = 8, closed at speed 2: a meeting every 4 s,
    // alternately across the boundary and in the middle.
    world.step(20.0);
    const double xa = world.ball(a).position.x;
    EXPECT_GE(xa, 0.0);
    EXPECT_LT(xa, 10.0);
    EXPECT_EQ(world.event_counts().ball_ball, 6u);
}

// Cell coordinates stop at ±2^29 cells (about 5.4e8 here): balls beyond share the outermost cells
// and still meet on time, also when one crosses into them; a periodic box wider than 2^29 cells per
// axis gets wider cells.
TEST(Cells, BallsBeyondTheLastCellMeetOnTime) {
    World world;
    const double edge = 536871440.0;  // about 9 cells below the last one
    world.add_ball({{1e9, 0, 0}, {1, 0, 0}, 0.5, 1.0});
    world.add_ball({{1e9 + 6, 0, 0}, {-1, 0, 0}, 0.5, 1.0});
    world.add_ball({{-1e9, 0, 0}, {1, 0, 0}, 0.5, 1.0});
    world.add_ball({{-1e9 + 8, 0, 0}, {-1, 0, 0}, 0.5, 1.0});
    world.add_ball({{edge, 0, 0}, {1, 0, 0}, 0.5, 1.0});
    world.add_ball({{edge + 20, 0, 0}, {-1, 0, 0}, 0.5, 1.0});
    world.step(10.0);
    ASSERT_EQ(world.events().size(), 3u);
    const double expected[3] = {2.5, 3.5, 9.5};  // (gap − 1) / 2
    for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(world.events()[static_cast<std::size_t>(k)].kind, EventKind::BallBall);
        EXPECT_NEAR(world.events()[static_cast<std::size_t>(k)].time, expected[k], 1e-6);
    }
    // A ray along a diagonal out there: the cell walk must not leave the outermost cells.
    const BallId far = world.add_ball({{1e9 + 100, 100, 0}, {}, 0.5, 1.0});
    const auto hit = world.ray_cast({{1e9, 0, 0}, {1, 1, 0}});
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->ball, far);
    EXPECT_NEAR(hit->distance, 100 - 0.5 / std::sqrt(2.0), 1e-5);  // in units of the direction

    WorldDef def;
    def.periodic = Box{{0, 0, 0}, {1e12, 1e12, 1e12}};
    World huge(def);
    huge.add_ball({{10, 10, 10}, {1, 0, 0}, 0.5, 1.0});
    huge.add_ball({{16, 10, 10}, {-1, 0, 0}, 0.5, 1.0});
    huge.step(3.0);
    ASSERT_EQ(huge.events().size(), 1u);
    EXPECT_DOUBLE_EQ(huge.events()[0].time, 2.5);
}

TEST(Conservation, MillionEventsElasticGas) {
    World world = periodic_gas(1000, 0.3, 1.0, 0);
    const double e0 = world.kinetic_energy();
    const Vec3 p0 = world.momentum();
    while (world.event_counts().ball_ball < 1000000) world.step(0.5);
    EXPECT_LT(relative(world.kinetic_energy(), e0), 1e-11);
    EXPECT_LT(length(world.momentum() - p0), 1e-9);
    EXPECT_LT(world.max_overlap(), 1e-10);
}

TEST(Conservation, ElasticBoxWithGravityConservesEnergy) {
    World world(with_gravity(9.81));
    add_box(world, 20);
    world.add_cylinder({{10, 0, 10}, {0, 1, 0}, 1.5});
    GenerateDef gen;
    gen.count = 200;
    gen.radius = 0.4;
    gen.region = {{0, 0, 0}, {20, 20, 20}};
    gen.speed = 5;
    world.add_balls(generate_balls(world, gen));
    auto energy = [&] {
        double potential = 0;
        for (std::size_t k = 0; k < world.ball_count(); ++k)
            potential += 9.81 * world.balls().y[k];  // masses are 1
        return world.kinetic_energy() + potential;
    };
    const double e0 = energy();
    world.step(5.0);
    EXPECT_GT(world.event_counts().collisions(), 1000u);
    EXPECT_LT(relative(energy(), e0), 1e-10);
    EXPECT_EQ(world.escaped_count(), 0u);
    EXPECT_LT(world.max_overlap(), 1e-10);
}

TEST(Robustness, InelasticPileUnderGravityFinishes) {
    World world = boxed_balls(with_gravity(9.81, 0.5), 6, 100, 2);
    for (int k = 0; k < 60; ++k) world.step(1.0 / 60.0);  // must return: bounded work
    EXPECT_EQ(world.escaped_count(), 0u);
    EXPECT_LT(world.max_overlap(), 1e-9);
    // Dissipation: the pile loses most of its energy.
    EXPECT_LT(world.kinetic_energy(), 0.5 * 100 * 4.0);
}

TEST(Robustness, InelasticGasCoolsWithoutCollapse) {
    WorldDef def;
    def.restitution = 0.3;
    def.periodic = Box{{0, 0, 0}, {12, 12, 12}};
    World world(def);
    GenerateDef gen;
    gen.count = 500;
    gen.region = *def.periodic;
    gen.velocity = GenerateDef::Velocity::Temperature;
    gen.temperature = 1.0;
    world.add_balls(generate_balls(world, gen));
    const double t0 = world.temperature();
    world.step(20.0);
    EXPECT_LT(world.temperature(), 0.1 * t0);
    EXPECT_LT(world.max_overlap(), 1e-9);
}

TEST(Measurements, CarnahanStarlingPressure) {
    // Hard spheres at packing 0.3: Z = P/(ρkT) = (1 + φ + φ² − φ³)/(1 − φ)³ = 3.974.
    World world = periodic_gas(2000, 0.3, 1.0, 0);
    world.step(2.0);  // equilibrate
    world.reset_measurements();
    for (int k = 0; k < 10; ++k) world.step(1.0);
    const double phi = 0.3;
    const double z_cs = (1 + phi + phi * phi - phi * phi * phi) / std::pow(1 - phi, 3);
    const Box box = *world.def().periodic;
    const double volume = (box.max.x - box.min.x) * (box.max.y - box.min.y) * (box.max.z - box.min.z);
    const double z = world.pressure() / (double(world.ball_count()) / volume * world.temperature());
    EXPECT_NEAR(z, z_cs, 0.03 * z_cs);
}

using test_worlds::total_energy;

TEST(MixedBoundaries, BarometricColumnCarriesItsWeightAndConservesEnergy) {
    World world = test_worlds::barometric_column(1);
    const double energy = total_energy(world);
    const Vec3 momentum = world.momentum();
    world.step(5.0);  // equilibrate
    world.reset_measurements();
    const double span = 40.0;
    for (int k = 0; k < 40; ++k) world.step(span / 40);
    // The floor carries the column's whole weight on average (the ceiling, 40 scale heights up,
    // next to nothing): impulse per unit time N m g = 400.
    EXPECT_NEAR(world.plane_counters()[0].impulse / span, 400.0, 0.03 * 400.0);
    EXPECT_LT(world.plane_counters()[1].impulse / span, 1.0);
    // Elastic: kinetic plus potential energy to rounding; momentum along the periodic axes exact
    // up to rounding too (no wall across them); nothing leaves, nothing overlaps.
    EXPECT_NEAR(total_energy(world), energy, 1e-9 * std::abs(energy));
    EXPECT_NEAR(world.momentum().x, momentum.x, 1e-9);
    EXPECT_NEAR(world.momentum().z, momentum.z, 1e-9);
    EXPECT_EQ(world.escaped_count(), 0u);
    EXPECT_LT(world.max_overlap(), 1e-9);
    const BallView v = world.balls();
    for (std::size_t s = 0; s < v.x.size(); ++s) {
        EXPECT_GE(v.x[s], 0.0);
        EXPECT_LT(v.x[s], 10.0);
        EXPECT_GT(v.y[s], 0.0);
        EXPECT_LT(v.y[s], 40.0);
    }
    EXPECT_TRUE(std::isnan(world.pressure()));  // no bulk pressure with walls
    // The same bits on two threads.
    World two = test_worlds::barometric_column(2);
    two.step(5.0);
    for (int k = 0; k < 40; ++k) two.step(span / 40);
    EXPECT_EQ(two.state_hash(), world.state_hash());
}

TEST(MixedBoundaries, BallsAboveAnOpenTopStayExact) {
    // Periodic along x and z over a floor, no ceiling: balls thrown far above the box (whose
    // top is then only where the cells end) come back down and collide; elastic, energy to
    // rounding, as in a column whose box reaches far higher.
    auto thrown = [](double top) {
        WorldDef def;
        def.gravity = {0, -1, 0};
        def.periodic = Box{{0, 0, 0}, {6, top, 6}};
        def.periodic_axes = {true, false, true};
        World world(def);
        world.add_plane({{0, 0, 0}, {0, 1, 0}});
        std::vector<BallDef> balls;
        for (int i = 0; i < 5; ++i)
            for (int k = 0; k < 5; ++k)
                balls.push_back({{0.6 + 1.2 * i, 0.5 + 0.1 * (i + k), 0.6 + 1.2 * k},
                                 {0.3 * (i - 2), 4.0 + 0.5 * ((i * 5 + k) % 3), 0.2 * (k - 2)}, 0.3, 1.0});
        world.add_balls(balls);
        return world;
    };
    World low = thrown(4.0), high = thrown(100.0);
    const double energy = total_energy(low);
    double highest = 0.0;
    for (int k = 0; k < 600; ++k) {
        low.step(1.0 / 60);
        high.step(1.0 / 60);
        for (const double y : low.balls().y) highest = std::max(highest, y);
    }
    EXPECT_GT(highest, 8.0);  // far above the box's top at 4
    EXPECT_NEAR(total_energy(low), energy, 1e-9 * std::abs(energy));
    EXPECT_EQ(low.escaped_count(), 0u);
    EXPECT_LT(low.max_overlap(), 1e-9);
    EXPECT_GT(low.event_counts().ball_ball, 0u);
    EXPECT_NEAR(total_energy(high), total_energy(low), 1e-9 * std::abs(energy));
}

TEST(MixedBoundaries, AColumnAlongTheOneAxisThatWraps) {
    // Periodic along y only, walls across x and z, a column along y in the middle: balls stream
    // along y for ever and bounce off the walls and the column; elastic, nothing escapes.
    WorldDef def;
    def.periodic = Box{{0, 0, 0}, {10, 10, 10}};
    def.periodic_axes = {false, true, false};
    World world(def);
    for (const PlaneDef& wall : {PlaneDef{{0, 0, 0}, {1, 0, 0}}, PlaneDef{{10, 0, 0}, {-1, 0, 0}},
                                 PlaneDef{{0, 0, 0}, {0, 0, 1}}, PlaneDef{{0, 0, 10}, {0, 0, -1}}})
        world.add_plane(wall);
    world.add_cylinder({{5, 0, 5}, {0, 1, 0}, 1.5});
    std::vector<BallDef> balls;
    for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 5; ++j)
            balls.push_back({{1.0 + 2.6 * i, 1.0 + 2.0 * j, i % 2 ? 1.2 : 8.8}, {0.7 - 0.3 * i, 2.0, 0.9 - 0.4 * j}, 0.4, 1.0});
    world.add_balls(balls);
    const double energy = world.kinetic_energy();
    world.step(30.0);
    EXPECT_GT(world.cylinder_counters()[0].hits, 0u);
    EXPECT_NEAR(world.kinetic_energy(), energy, 1e-9 * energy);
    EXPECT_EQ(world.escaped_count(), 0u);
    EXPECT_LT(world.max_overlap(), 1e-9);
    for (const double y : world.balls().y) {
        EXPECT_GE(y, 0.0);
        EXPECT_LT(y, 10.0);
    }
}

TEST(Measurements, WallImpulseGivesIdealGasPressure) {
    // One ball bouncing between two walls L apart at speed v: impulse per unit time 2mv · v/(2(L−2r)).
    World world;
    world.add_plane({{0, 0, 0}, {1, 0, 0}});
    world.add_plane({{10, 0, 0}, {-1, 0, 0}});
    world.add_ball({{5, 0, 0}, {3, 0, 0}, 0.5, 2.0});
    world.step(90.0);
    const auto c = world.plane_counters();
    EXPECT_EQ(c[0].hits + c[1].hits, 30u);
    EXPECT_NEAR(c[0].impulse + c[1].impulse, 30 * 2 * 2.0 * 3.0, 1e-9);
}

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

// The box scene: six walls, no gravity, speed 5, packing 0.1, 8000 balls (cells two
// diameters wide, 17 along an axis: two regions, also for more threads). The regions process
// nearly every event; the few that are not are a ball–ball event whose partner is more than a cell
// away and not stale, and those after it, serially (engine/README.md, "Regions").
TEST(Determinism, ClosedBoxSameForAnyThreadCount) {
    std::uint64_t reference = 0, collisions = 0;
    for (const int threads : {1, 2, 3}) {
        WorldDef def;
        def.threads = threads;
        def.parallel_events_min_balls = 0;
        World world = boxed_balls(def, 34.7, 8000, 5, 3);
        std::uint64_t in_regions = 0, events = 0;
        for (int k = 0; k < 240; ++k) {
            const StepResult step = world.step(1.0 / 60.0);
            in_regions += step.in_regions;
            events += step.events;
        }
        EXPECT_LT(world.max_overlap(), 1e-10) << threads << " threads";
        EXPECT_EQ(world.escaped_count(), 0u);
        if (threads == 1) {
            reference = world.state_hash();
            collisions = world.event_counts().collisions();
            EXPECT_GT(collisions, 50000u);
            EXPECT_EQ(in_regions, 0u);
        } else {
            EXPECT_GT(in_regions, events * 9 / 10) << threads << " threads";
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
        def.parallel_events_min_balls = 0;
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
            def.parallel_events_min_balls = 0;
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
        def.parallel_events_min_balls = 0;
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

TEST(Robustness, NoOverlapAtAnyFrame) {
    for (int threads : {1, 2}) {
        World world = periodic_gas(500, 0.2, 1.0, threads, 5);
        for (int k = 0; k < 60; ++k) {
            world.step(1.0 / 60.0);
            ASSERT_LT(world.max_overlap(), 1e-10) << "frame " << k;
        }
    }
}

TEST(Events, ComeInTimeOrderWithConsistentGeometry) {
    World world = periodic_gas(500, 0.3, 1.0, 1);
    world.step(0.5);
    ASSERT_GT(world.events().size(), 100u);
    double last = 0.0;
    for (const auto& e : world.events()) {
        EXPECT_GE(e.time, last);
        last = e.time;
        EXPECT_NEAR(length(e.normal), 1.0, 1e-12);
        EXPECT_GT(e.impulse, 0.0);
        EXPECT_TRUE(world.contains(e.ball));
        EXPECT_TRUE(world.contains(e.other));
    }
}

namespace {

// A plain O(N²) event-driven reference for equal-mass elastic balls in a cube of six walls: no
// cells, no queue, every pair and wall tested before every event.
struct ReferenceEvent {
    double time;
    std::size_t a, b;  // b == a: a wall
};

std::vector<ReferenceEvent> brute_force(std::vector<BallDef> balls, double side, double end) {
    const double inf = std::numeric_limits<double>::infinity();
    auto pair_time = [inf](const BallDef& p, const BallDef& q) {
        const Vec3 dp = q.position - p.position, dv = q.velocity - p.velocity;
        const double sigma = p.radius + q.radius;
        const double b = dot(dp, dv), c = dot(dp, dp) - sigma * sigma, a = dot(dv, dv);
        const double disc = b * b - a * c;
        if (b >= 0.0 || disc < 0.0) return inf;
        return std::max(0.0, c / (-b + std::sqrt(disc)));
    };
    auto wall_time = [&](const BallDef& p, int& axis) {
        double best = inf;
        for (int d = 0; d < 3; ++d) {
            const double x = d == 0 ? p.position.x : (d == 1 ? p.position.y : p.position.z);
            const double v = d == 0 ? p.velocity.x : (d == 1 ? p.velocity.y : p.velocity.z);
            const double t = v > 0.0 ? (side - p.radius - x) / v : (v < 0.0 ? (p.radius - x) / v : inf);
            if (t < best) { best = std::max(0.0, t); axis = d; }
        }
        return best;
    };
    std::vector<ReferenceEvent> events;
    double now = 0.0;
    for (;;) {
        double best = inf;
        std::size_t a = 0, b = 0;
        int axis = 0;
        for (std::size_t i = 0; i < balls.size(); ++i) {
            int d = 0;
            const double t = wall_time(balls[i], d);
            if (t < best) { best = t; a = b = i; axis = d; }
            for (std::size_t j = i + 1; j < balls.size(); ++j) {
                const double u = pair_time(balls[i], balls[j]);
                if (u < best) { best = u; a = i; b = j; }
            }
        }
        if (now + best > end) return events;
        now += best;
        for (BallDef& ball : balls) ball.position += ball.velocity * best;
        if (a == b) {
            Vec3& v = balls[a].velocity;
            (axis == 0 ? v.x : (axis == 1 ? v.y : v.z)) *= -1.0;
        } else {
            const Vec3 n = (balls[b].position - balls[a].position) / length(balls[b].position - balls[a].position);
            const double u = dot(balls[a].velocity - balls[b].velocity, n);
            balls[a].velocity -= n * u;
            balls[b].velocity += n * u;
        }
        events.push_back({now, a, b});
    }
}

}  // namespace

// Every collision, at its time, against the O(N²) reference: a dilute box where each ball
// crosses about three cells between collisions, so most predictions are made by crossings
// (which only search the cells that came into reach) and many contacts outlive several crossings.
TEST(Events, MatchABruteForceReference) {
    const double side = 12.0;
    WorldDef def;
    def.threads = 1;
    World world(def);
    add_box(world, side);
    GenerateDef gen;
    gen.count = 120;
    gen.radius = 0.5;
    gen.region = {{0, 0, 0}, {side, side, side}};
    gen.speed = 5.0;
    gen.seed = 11;
    const std::vector<BallDef> defs = generate_balls(world, gen);
    const std::vector<BallId> ids = world.add_balls(defs);
    const double end = 2.0;
    const std::vector<ReferenceEvent> expected = brute_force(defs, side, end);
    std::vector<CollisionEvent> got;
    while (world.time() < end - 1e-12) {
        world.step(std::min(1.0 / 60.0, end - world.time()));
        got.insert(got.end(), world.events().begin(), world.events().end());
    }
    ASSERT_GT(expected.size(), 300u);
    ASSERT_EQ(got.size(), expected.size());
    std::size_t ball_ball = 0;
    for (std::size_t k = 0; k < got.size(); ++k) {
        const ReferenceEvent& e = expected[k];
        EXPECT_NEAR(got[k].time, e.time, 1e-9) << "event " << k;
        if (e.a == e.b) {
            EXPECT_EQ(got[k].kind, EventKind::BallPlane) << "event " << k;
            EXPECT_EQ(got[k].ball, ids[e.a]) << "event " << k;
        } else {
            ++ball_ball;
            EXPECT_EQ(got[k].kind, EventKind::BallBall) << "event " << k;
            const bool same = (got[k].ball == ids[e.a] && got[k].other == ids[e.b]) ||
                              (got[k].ball == ids[e.b] && got[k].other == ids[e.a]);
            EXPECT_TRUE(same) << "event " << k;
        }
    }
    EXPECT_GT(ball_ball, 100u);
    EXPECT_GT(world.event_counts().cell_crossings, 2 * ball_ball);
}

TEST(Handles, SurviveRemovalAndDetectStaleIds) {
    World world;
    std::vector<BallId> ids;
    for (int k = 0; k < 10; ++k) ids.push_back(world.add_ball({{double(k) * 3, 0, 0}, {0, double(k), 0}, 0.5, 1.0}));
    world.remove_ball(ids[2]);
    EXPECT_FALSE(world.contains(ids[2]));
    EXPECT_THROW(world.ball(ids[2]), InvalidArgument);
    EXPECT_THROW(world.remove_ball(ids[2]), InvalidArgument);
    for (int k = 0; k < 10; ++k) {
        if (k == 2) continue;
        EXPECT_EQ(world.ball(ids[std::size_t(k)]).velocity.y, double(k));  // the moved ball kept its identity
    }
    const BallId again = world.add_ball({{6, 0, 0}, {}, 0.5, 1.0});
    EXPECT_EQ(again.index(), ids[2].index());
    EXPECT_NE(again, ids[2]);
    EXPECT_FALSE(world.contains(ids[2]));
    world.step(1.0);
    EXPECT_EQ(world.ball_count(), 10u);
}

TEST(RayCast, NearestBallPlaneAndCylinder) {
    World world;
    world.add_plane({{0, -5, 0}, kUp});
    world.add_cylinder({{20, 0, 0}, {0, 1, 0}, 1.0});
    const BallId near = world.add_ball({{5, 0, 0}, {}, 1.0, 1.0});
    world.add_ball({{10, 0, 0}, {}, 1.0, 1.0});
    auto hit = world.ray_cast({{0, 0, 0}, {1, 0, 0}});
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->target, RayHit::Target::Ball);
    EXPECT_EQ(hit->ball, near);
    EXPECT_DOUBLE_EQ(hit->distance, 4.0);
    EXPECT_EQ(hit->normal, (Vec3{-1, 0, 0}));
    // Off-axis ray: enters the sphere at the closed-form distance.
    hit = world.ray_cast({{0, 0.6, 0}, {1, 0, 0}});
    ASSERT_TRUE(hit);
    EXPECT_NEAR(hit->distance, 5 - std::sqrt(1 - 0.36), 1e-15);
    hit = world.ray_cast({{0, 0, 0}, {0, -2, 0}});
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->target, RayHit::Target::Plane);
    EXPECT_DOUBLE_EQ(hit->distance, 2.5);  // in units of |direction|
    hit = world.ray_cast({{30, 0, 0}, {-1, 0, 0}});
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->target, RayHit::Target::Cylinder);
    EXPECT_DOUBLE_EQ(hit->distance, 9.0);
    EXPECT_FALSE(world.ray_cast({{0, 0, 0}, {0, 1, 0}}));
    EXPECT_FALSE(world.ray_cast({{0, 0, 0}, {1, 0, 0}, 3.0}));  // beyond max_distance
}

TEST(RayCast, BallsBeyondMaxDistanceAreNotHit) {
    World world;
    world.add_ball({{0, 6, 0}, {}, 1.0, 1.0});
    EXPECT_FALSE(world.ray_cast({{0, 0, 0}, {0, 1, 0}, 4.5}));
    const auto hit = world.ray_cast({{0, 0, 0}, {0, 1, 0}, 5.0});
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->distance, 5.0);
}

TEST(Queries, DoNotChangeTheWorld) {
    // is_free() with a large radius and a rejected add_ball() must leave the simulation exactly
    // as it would have been.
    auto make = [] {
        World world;
        world.add_ball({{0, 0, 0}, {1, 0, 0}, 1.0, 1.0});
        world.add_ball({{6, 0.5, 0}, {-1, 0, 0}, 1.0, 1.0});
        world.step(0.5);
        return world;
    };
    World plain = make(), queried = make();
    EXPECT_FALSE(queried.is_free({0.5, 0, 0}, 2.5));
    EXPECT_TRUE(queried.is_free({100, 100, 100}, 2.5));
    EXPECT_THROW(queried.add_ball({{3, 0, 0}, {}, 2.5, 1.0}), InvalidArgument);
    for (int k = 0; k < 10; ++k) {
        plain.step(0.5);
        queried.step(0.5);
    }
    EXPECT_EQ(plain.event_counts().ball_ball, 1u);
    EXPECT_EQ(queried.state_hash(), plain.state_hash());
    EXPECT_EQ(queried.event_counts().ball_ball, 1u);
    EXPECT_LT(queried.max_overlap(), 1e-12);
}

TEST(RayCast, BatchMatchesSingleOnAGas) {
    World world = periodic_gas(3000, 0.2, 1.0, 0);
    world.step(0.2);
    std::vector<Ray> rays;
    for (int k = 0; k < 200; ++k)
        rays.push_back({{0.1, 0.2 + 0.05 * k, 0.3}, {1.0, 0.01 * (k % 7), 0.02 * (k % 5)}});
    std::vector<std::optional<RayHit>> hits(rays.size());
    world.ray_cast(rays, hits);
    const auto view = world.balls();
    for (std::size_t k = 0; k < rays.size(); ++k) {
        const auto single = world.ray_cast(rays[k]);
        ASSERT_EQ(bool(single), bool(hits[k]));
        if (!single) continue;
        EXPECT_EQ(single->ball, hits[k]->ball);
        // Brute force over every ball gives the same nearest distance.
        double best = INFINITY;
        for (std::size_t s = 0; s < view.x.size(); ++s) {
            const Vec3 oc = Vec3{view.x[s], view.y[s], view.z[s]} - rays[k].origin;
            const Vec3 d = rays[k].direction;
            const double a = dot(d, d), b = dot(oc, d), c = dot(oc, oc) - view.radius[s] * view.radius[s];
            const double disc = b * b - a * c;
            if (c <= 0) best = 0.0;  // starts inside the ball
            else if (b > 0 && disc >= 0) best = std::min(best, (b - std::sqrt(disc)) / a);
        }
        EXPECT_NEAR(single->distance, best, 1e-9);
    }
}
