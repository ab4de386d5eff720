// Finite statics. Capsules (a segment with a radius; a sphere when its ends coincide): exact
// impacts on the caps and the body under gravity against closed forms, misses past the ends.
// Blocks (axis-aligned boxes): faces, edges and corners under gravity against closed forms.
// For both: rays, a peg board's conservation laws and determinism, resting on them, snapshots,
// handles and validation.
#include <ballistic/world.hpp>

#include "worlds.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

using namespace ballistic;
using test_worlds::add_generated;

namespace {

constexpr double kG = 9.81;

WorldDef with_gravity(double e = 1.0, int threads = 1) {
    WorldDef def;
    def.gravity = {0, -kG, 0};
    def.restitution = e;
    def.threads = threads;
    return def;
}

// Twenty balls at rest on a floor far below: a world of more than WorldDef's few balls has
// cells, so the capsules are found through the cells that list them.
void add_crowd(World& world) {
    world.add_plane({{0, -100, 0}, {0, 1, 0}});
    for (int k = 0; k < 20; ++k) world.add_ball({{-50.0 + 2.0 * k, -99.5, -50}, {}, 0.5, 1.0});
}

// The first collision of this kind in `world` stepped until `end` (fails the test if there is none).
CollisionEvent first_hit(World& world, double end, EventKind kind = EventKind::BallCapsule) {
    while (world.time() < end - 1e-12) {
        world.step(std::min(1.0 / 64, end - world.time()));
        for (const CollisionEvent& e : world.events())
            if (e.kind == kind) return e;
    }
    ADD_FAILURE() << "no collision of kind " << int(kind) << " before " << end;
    return {};
}

// The field an InvalidArgument from adding this static names, or "accepted".
template <class Def>
std::string field_of(World& world, const Def& def) {
    try {
        if constexpr (std::is_same_v<Def, CapsuleDef>) world.add_capsule(def);
        else world.add_block(def);
    } catch (const InvalidArgument& error) {
        return error.field();
    }
    return "accepted";
}

class CapsuleImpact : public ::testing::TestWithParam<bool> {};  // with a crowd (cells) or alone

}  // namespace

// A ball dropped off-centre on a horizontal capsule along z from z = 0 to 4 (radius 1): over the
// body it meets the side as on a column; past the end it meets the end sphere.
TEST_P(CapsuleImpact, BodyAndCapUnderGravityMatchClosedForms) {
    struct Case {
        Vec3 start;
        Vec3 centre;  // of the contact circle: the axis point or the end
    };
    for (const Case& c : {Case{{0.9, 4, 2}, {0, 0, 2}}, Case{{0.9, 4, 4.6}, {0, 0, 4}}, Case{{0.9, 4, -0.6}, {0, 0, 0}}}) {
        World world(with_gravity());
        if (GetParam()) add_crowd(world);
        world.add_capsule({{0, 0, 0}, {0, 0, 4}, 1.0});
        const BallId id = world.add_ball({c.start, {}, 0.5, 2.0});
        const CollisionEvent hit = first_hit(world, 1.0);
        // Contact when |(0.9, y, dz)| = 1.5.
        const double dz = c.start.z - c.centre.z;
        const double y = std::sqrt(2.25 - 0.81 - dz * dz);
        const double t = std::sqrt(2 * (4 - y) / kG);
        EXPECT_NEAR(hit.time, t, 1e-12);
        EXPECT_EQ(hit.ball, id);
        EXPECT_EQ(hit.static_index, 0u);
        const Vec3 n{0.9 / 1.5, y / 1.5, dz / 1.5};
        EXPECT_NEAR(hit.normal.x, -n.x, 1e-12);
        EXPECT_NEAR(hit.normal.y, -n.y, 1e-12);
        EXPECT_NEAR(hit.normal.z, -n.z, 1e-12);
        const Vec3 vin{0, -kG * t, 0};
        EXPECT_NEAR(hit.impulse, 2.0 * 2 * std::abs(dot(vin, n)), 1e-10);  // m (1 + e) u
        // The point of contact lies on the capsule's surface.
        EXPECT_NEAR(length(hit.point - c.centre), 1.0, 1e-12);
        const Vec3 vout = vin - n * (2 * dot(vin, n));  // across gravity, kept to the step's end
        const BallState s = world.ball(id);
        EXPECT_NEAR(s.velocity.x, vout.x, 1e-10);
        EXPECT_NEAR(s.velocity.z, vout.z, 1e-10);
        EXPECT_EQ(world.capsule_counters()[0].hits, 1u);
    }
}

// Inside the infinite cylinder past an end, a ball that misses the end sphere touches nothing;
// one that leaves that region and comes back down over the body meets the body there.
TEST_P(CapsuleImpact, APathBesideTheEndMissesAndOneComingBackOverTheBodyHitsIt) {
    {
        World world(with_gravity());
        if (GetParam()) add_crowd(world);
        world.add_capsule({{0, 0, 0}, {0, 0, 4}, 1.0});
        world.add_ball({{0, 4, 6}, {}, 0.5, 1.0});  // straight down 2 past the end: |Δ| ≥ 2 > 1.5
        world.step(1.5);
        EXPECT_EQ(world.event_counts().ball_capsule, 0u);
    }
    World world(with_gravity());
    if (GetParam()) add_crowd(world);
    world.add_capsule({{0, 0, 0}, {10, 0, 0}, 1.0});
    // Starts level with the axis 5 before the end, inside the infinite cylinder (|y| < 1.5),
    // rises out of it and comes down over the body.
    const double vx = 4, vy = 10;
    world.add_ball({{-5, 0, 0}, {vx, vy, 0}, 0.5, 1.0});
    const CollisionEvent hit = first_hit(world, 3.0);
    const double t = (vy + std::sqrt(vy * vy - 2 * kG * 1.5)) / kG;
    EXPECT_NEAR(hit.time, t, 1e-12);
    EXPECT_NEAR(hit.normal.y, -1.0, 1e-12);
    EXPECT_NEAR(hit.point.x, -5 + vx * t, 1e-12);
    EXPECT_EQ(world.event_counts().ball_capsule, 1u);
}

// A sphere (a == b) is a fixed ball: a ball thrown at it head-on comes straight back.
TEST_P(CapsuleImpact, APegIsAFixedSphere) {
    World world{WorldDef{}};
    if (GetParam()) add_crowd(world);
    world.add_capsule({{3, 1, 0}, {3, 1, 0}, 0.25});
    const BallId id = world.add_ball({{0, 1, 0}, {2, 0, 0}, 0.5, 1.0});
    const CollisionEvent hit = first_hit(world, 2.0);
    EXPECT_NEAR(hit.time, (3 - 0.75) / 2, 1e-15);
    EXPECT_EQ(hit.normal, (Vec3{1, 0, 0}));
    world.step(0.5);
    EXPECT_EQ(world.ball(id).velocity, (Vec3{-2, 0, 0}));
}

// A ball dropped on the block [−1, 1] × [−1, 0] × [−1, 1] meets its top face, an edge of it or a
// corner of it, each where the closed form puts it; one dropped just beside an edge misses.
TEST_P(CapsuleImpact, BlockFaceEdgeAndCornerUnderGravityMatchClosedForms) {
    struct Case {
        Vec3 start;
        Vec3 touch;  // the block's point the ball touches
    };
    for (const Case& c : {Case{{0.3, 3, 0.2}, {0.3, 0, 0.2}}, Case{{1.3, 3, 0.4}, {1, 0, 0.4}},
                          Case{{1.3, 3, 1.2}, {1, 0, 1}}, Case{{-1.1, 3, -1.3}, {-1, 0, -1}}}) {
        World world(with_gravity());
        if (GetParam()) add_crowd(world);
        world.add_block({{-1, -1, -1}, {1, 0, 1}});
        const BallId id = world.add_ball({c.start, {}, 0.5, 1.0});
        const CollisionEvent hit = first_hit(world, 1.0, EventKind::BallBlock);
        // Contact when |start − touch| across y and the height above the touch make 0.5.
        const Vec3 off{c.start.x - c.touch.x, 0, c.start.z - c.touch.z};
        const double y = std::sqrt(0.25 - dot(off, off));
        const double t = std::sqrt(2 * (3 - y) / kG);
        EXPECT_NEAR(hit.time, t, 1e-12);
        EXPECT_EQ(hit.ball, id);
        const Vec3 n = Vec3{off.x, y, off.z} / 0.5;
        EXPECT_NEAR(length(hit.normal + n), 0.0, 1e-12);
        EXPECT_NEAR(length(hit.point - c.touch), 0.0, 1e-12);
        const Vec3 vin{0, -kG * t, 0};
        const Vec3 vout = vin - n * (2 * dot(vin, n));
        EXPECT_NEAR(world.ball(id).velocity.x, vout.x, 1e-10);
        EXPECT_NEAR(world.ball(id).velocity.z, vout.z, 1e-10);
        EXPECT_EQ(world.block_counters()[0].hits, 1u);
    }
    // Thrown fast at the −x face: straight in, and back.
    World world(with_gravity());
    if (GetParam()) add_crowd(world);
    world.add_block({{-1, -1, -1}, {1, 0, 1}});
    world.add_ball({{-5, -0.35, 0}, {20, 0, 0}, 0.5, 1.0});
    const CollisionEvent side = first_hit(world, 1.0, EventKind::BallBlock);
    EXPECT_NEAR(side.time, 3.5 / 20, 1e-14);
    EXPECT_EQ(side.normal, (Vec3{1, 0, 0}));
    // Dropped 0.6 beside an edge: |Δ| ≥ 0.6 > 0.5, never touches.
    World beside(with_gravity());
    if (GetParam()) add_crowd(beside);
    beside.add_block({{-1, -1, -1}, {1, 0, 1}});
    beside.add_ball({{1.6, 3, 0}, {}, 0.5, 1.0});
    beside.step(1.5);
    EXPECT_EQ(beside.event_counts().ball_block, 0u);
}

INSTANTIATE_TEST_SUITE_P(AloneAndInCells, CapsuleImpact, ::testing::Bool());

TEST(Block, RaysMeetItsFaces) {
    World world;
    world.add_block({{-1, -1, -1}, {1, 0, 1}});
    auto hit = world.ray_cast({{5, -0.5, 0.5}, {-2, 0, 0}});
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->target, RayHit::Target::Block);
    EXPECT_EQ(hit->static_index, 0u);
    EXPECT_DOUBLE_EQ(hit->distance, 2.0);  // in units of |direction|
    EXPECT_EQ(hit->normal, (Vec3{1, 0, 0}));
    hit = world.ray_cast({{0.5, 4, 0.5}, {0, -1, 0}});
    ASSERT_TRUE(hit);
    EXPECT_DOUBLE_EQ(hit->distance, 4.0);
    EXPECT_EQ(hit->normal, (Vec3{0, 1, 0}));
    EXPECT_FALSE(world.ray_cast({{5, 0.5, 0}, {-1, 0, 0}}));   // passes over it
    EXPECT_FALSE(world.ray_cast({{0, -0.5, 0}, {1, 0, 0}}));   // from inside
    EXPECT_FALSE(world.ray_cast({{5, -0.5, 0}, {-1, 0, 0}, 3.0}));  // beyond max_distance
}

// Dissipative: a ball dropped on a block's top face comes to rest on it and falls asleep; one
// whose centre is past the edge rolls off it.
TEST(Block, BallsRestOnATopFaceAndFallOffAnEdge) {
    World world(with_gravity(0.5));
    world.add_plane({{0, -3, 0}, {0, 1, 0}});
    world.add_block({{-1, -1, -1}, {1, 0, 1}});
    const BallId on_top = world.add_ball({{0.2, 1, 0}, {}, 0.4, 1.0});
    const BallId over_edge = world.add_ball({{1.1, 1, -0.5}, {}, 0.3, 1.0});
    for (int frame = 0; frame < 600; ++frame) world.step(1.0 / 60);
    EXPECT_TRUE(world.sleeping(on_top));
    EXPECT_NEAR(world.ball(on_top).position.y, 0.4, 1e-6);
    EXPECT_NEAR(world.ball(on_top).position.x, 0.2, 1e-9);  // straight down: no sideways push
    EXPECT_LT(world.ball(over_edge).position.y, -2.0);
    EXPECT_EQ(world.escaped_count(), 0u);
}

TEST(Capsule, RaysMeetTheBodyAndTheCaps) {
    World world;
    world.add_capsule({{0, 0, 0}, {0, 0, 4}, 1.0});
    auto hit = world.ray_cast({{5, 0, 2}, {-1, 0, 0}});
    ASSERT_TRUE(hit);
    EXPECT_EQ(hit->target, RayHit::Target::Capsule);
    EXPECT_EQ(hit->static_index, 0u);
    EXPECT_NEAR(hit->distance, 4.0, 1e-15);
    EXPECT_NEAR(hit->normal.x, 1.0, 1e-15);
    hit = world.ray_cast({{0, 0.6, 10}, {0, 0, -1}});  // along the axis: the end sphere
    ASSERT_TRUE(hit);
    EXPECT_NEAR(hit->distance, 6 - std::sqrt(1 - 0.36), 1e-14);
    EXPECT_FALSE(world.ray_cast({{0, 0, 10}, {0, 1, 0}}));
    EXPECT_FALSE(world.ray_cast({{5, 0, 2}, {1, 0, 0}}));
}

// Rays through a field of pegs, rods and blocks (a long rod and a block across the field among
// them) meet the statics listed in the cells they pass: the nearest hit is the nearest of those
// of each static alone, ties to the first capsule, then the first block.
TEST(Capsule, RaysAmongManyStaticsMeetTheNearestAsEachAloneWould) {
    std::mt19937_64 random(5);
    std::uniform_real_distribution<double> at(-20.0, 20.0), size(0.0, 3.0), dir(-1.0, 1.0);
    std::vector<CapsuleDef> capsules;
    std::vector<BlockDef> blocks;
    for (int k = 0; k < 150; ++k) {
        const Vec3 a{at(random), at(random), at(random)};
        const Vec3 b = k % 3 == 0 ? a : a + Vec3{size(random), size(random), -size(random)};
        capsules.push_back({a, b, 0.05 + 0.3 * size(random)});
        const Vec3 lo{at(random), at(random), at(random)};
        blocks.push_back({lo, lo + Vec3{0.1 + size(random), 0.1 + size(random), 0.3}});
    }
    capsules.push_back({{-300, 2, 1}, {300, 2, 1}, 0.5});
    blocks.push_back({{-40, -30, -40}, {40, -29, 40}});
    World world;
    for (const CapsuleDef& c : capsules) world.add_capsule(c);
    for (const BlockDef& b : blocks) world.add_block(b);
    std::vector<World> alone;
    for (const CapsuleDef& c : capsules) alone.emplace_back().add_capsule(c);
    for (const BlockDef& b : blocks) alone.emplace_back().add_block(b);
    std::size_t hits = 0;
    for (int n = 0; n < 400; ++n) {
        Ray ray{{at(random), at(random), at(random)}, {dir(random), dir(random), dir(random)}};
        if (n % 4 == 0) ray.max_distance = 10.0;
        if (n % 7 == 0) ray.direction = {0, 0, 1};  // along an axis
        std::optional<RayHit> expected;
        for (std::size_t k = 0; k < alone.size(); ++k) {
            const auto hit = alone[k].ray_cast(ray);
            if (!hit || (expected && hit->distance >= expected->distance)) continue;
            expected = hit;
            expected->static_index = static_cast<std::uint32_t>(k < capsules.size() ? k : k - capsules.size());
        }
        const auto hit = world.ray_cast(ray);
        ASSERT_EQ(hit.has_value(), expected.has_value()) << "ray " << n;
        if (!hit) continue;
        ++hits;
        EXPECT_EQ(hit->target, expected->target) << "ray " << n;
        EXPECT_EQ(hit->static_index, expected->static_index) << "ray " << n;
        EXPECT_EQ(hit->distance, expected->distance) << "ray " << n;
        EXPECT_EQ(hit->normal, expected->normal) << "ray " << n;
    }
    EXPECT_GT(hits, 100u);
}

// Balls rain through a board of pegs and between the long capsules of its bins, elastic: energy
// stays to rounding, no ball gets into a capsule, and the bits are the same for any thread count.
TEST(Capsule, PegBoardConservesEnergyKeepsBallsOutAndIsDeterministic) {
    auto build = [](int threads) {
        WorldDef def = with_gravity(1.0, threads);
        test_worlds::regions_from(def);  // batches allowed (its hashed cells give none)
        World world(def);
        world.add_plane({{0, 0, 0}, {0, 1, 0}});
        world.add_plane({{-8, 0, 0}, {1, 0, 0}});
        world.add_plane({{8, 0, 0}, {-1, 0, 0}});
        world.add_plane({{0, 0, -1}, {0, 0, 1}});
        world.add_plane({{0, 0, 1}, {0, 0, -1}});
        for (int row = 0; row < 8; ++row)
            for (int k = -7; k <= 7; ++k) {
                const double x = k + 0.5 * (row % 2), y = 6 + row;
                if (std::abs(x) < 7.5) world.add_capsule({{x, y, -1}, {x, y, 1}, 0.1});
            }
        for (int k = -7; k <= 7; k += 2) world.add_capsule({{double(k), 0, 0}, {double(k), 4, 0}, 0.05});
        for (int k = -6; k <= 6; k += 4) world.add_block({{k - 0.4, 14, -1}, {k + 0.4, 14.5, 1}});  // shelves
        world.add_capsule({{0, 20, 0}, {0, 20, 0}, 0.5});  // a sphere at the top
        add_generated(world, 200, 0.15, {{-7.5, 15, -0.8}, {7.5, 30, 0.8}}, 1.0, 5);
        return world;
    };
    auto energy = [](const World& world) {  // masses are 1
        double e = world.kinetic_energy();
        for (const double y : world.balls().y) e += kG * y;
        return e;
    };
    World one = build(1), two = build(2);
    const double start = energy(one);
    for (int frame = 0; frame < 120; ++frame) {
        one.step(1.0 / 60);
        two.step(1.0 / 60);
    }
    EXPECT_GT(one.event_counts().ball_capsule, 300u);
    EXPECT_GT(one.event_counts().ball_block, 10u);
    EXPECT_NEAR(energy(one), start, 1e-9 * std::abs(start));
    EXPECT_EQ(one.escaped_count(), 0u);
    EXPECT_LT(one.max_overlap(), 1e-9);
    EXPECT_EQ(one.state_hash(), two.state_hash());
    std::uint64_t hits = 0;
    for (const StaticCounters& c : one.capsule_counters()) hits += c.hits;
    EXPECT_EQ(hits, one.event_counts().ball_capsule);
    hits = 0;
    for (const StaticCounters& c : one.block_counters()) hits += c.hits;
    EXPECT_EQ(hits, one.event_counts().ball_block);
}

// Dissipative: a ball dropped into the groove between two touching parallel capsules settles in
// it and falls asleep there; one dropped on top of a single capsule's crest slides off.
TEST(Capsule, BallsRestInAGrooveAndSlideOffACrest) {
    World world(with_gravity(0.3));
    world.add_plane({{0, -3, 0}, {0, 1, 0}});
    world.add_capsule({{-0.5, 0, -3}, {-0.5, 0, 3}, 0.5});
    world.add_capsule({{0.5, 0, -3}, {0.5, 0, 3}, 0.5});
    const BallId in_groove = world.add_ball({{0.02, 0.85, 0}, {}, 0.4, 1.0});
    world.add_capsule({{20, 0, -3}, {20, 0, 3}, 0.5});
    const BallId on_crest = world.add_ball({{20.01, 2, 0}, {}, 0.4, 1.0});
    for (int frame = 0; frame < 600; ++frame) world.step(1.0 / 60);
    EXPECT_TRUE(world.sleeping(in_groove));
    const BallState rest = world.ball(in_groove);
    EXPECT_NEAR(rest.position.x, 0.0, 1e-3);
    // Touching both: |(±0.5, y)| = 0.9.
    EXPECT_NEAR(rest.position.y, std::sqrt(0.81 - 0.25), 1e-3);
    const BallState fell = world.ball(on_crest);
    EXPECT_LT(fell.position.y, -2.0);  // on the floor beside the capsule
    EXPECT_EQ(world.escaped_count(), 0u);
}

// A ball pressed onto a block's top face slower than rest_speed settles on it and slides as on a
// plane, frictionless: at constant velocity, without bouncing, until its centre passes the face's
// edge at the closed-form time; then it falls off.
TEST(Block, BallsSlideOnATopFaceAndLeaveItAtItsEdge) {
    World world(with_gravity(0.5));
    world.add_plane({{0, -5, 0}, {0, 1, 0}});
    world.add_block({{-2, -1, -1}, {2, 0, 1}});
    const double r = 0.25;
    const BallId id = world.add_ball({{-1.5, r, 0}, {0.5, 0, 0}, r, 1.0});  // touching the top face
    const double leave = (2.0 - -1.5) / 0.5;                               // 7 time units to the edge
    while (world.time() < leave - 0.01) world.step(std::min(1.0 / 60, leave - 0.01 - world.time()));
    EXPECT_EQ(world.ball(id).position.y, r);  // resting on the face all along
    EXPECT_NEAR(world.ball(id).position.x, -1.5 + 0.5 * world.time(), 1e-12);
    EXPECT_EQ(world.ball(id).velocity, (Vec3{0.5, 0, 0}));
    EXPECT_LE(world.event_counts().ball_block, 1u);  // the one that settled it: no chatter
    std::stringstream snapshot;  // resting on the face: a restored world leaves it at the same instant
    world.save(snapshot);
    World copy = World::restore(snapshot);
    for (int frame = 0; frame < 180; ++frame) {
        world.step(1.0 / 60);
        copy.step(1.0 / 60);
    }
    EXPECT_EQ(copy.state_hash(), world.state_hash());
    const BallState after = world.ball(id);
    EXPECT_LT(after.position.y, -4.0);  // off the edge, down to the floor
    EXPECT_GT(after.position.x, 2.0);
    EXPECT_EQ(world.escaped_count(), 0u);
    EXPECT_LT(world.max_overlap(), 1e-9);
}

// Balls poured into a room whose floor is a block's top face come to rest on it as on a plane
// floor and sleep: the same events and the same bits as with a plane there, no chatter.
TEST(Block, APourOnABlockSettlesLikeOneOnAFloor) {
    auto pour = [](bool block, int threads = 1) {
        WorldDef def = with_gravity(0.5, threads);
        def.friction = 0.5;                 // they stop sliding, and sleep
        test_worlds::regions_from(def);  // two threads take the parallel batches
        World world(def);
        world.add_plane({{-3, 0, 0}, {1, 0, 0}});
        world.add_plane({{3, 0, 0}, {-1, 0, 0}});
        world.add_plane({{0, 0, -3}, {0, 0, 1}});
        world.add_plane({{0, 0, 3}, {0, 0, -1}});
        if (block) world.add_block({{-3, -1, -3}, {3, 0, 3}});
        else world.add_plane({{0, 0, 0}, {0, 1, 0}});
        add_generated(world, 40, 0.25, {{-2.5, 1, -2.5}, {2.5, 3, 2.5}}, 0.0, 2);
        for (int frame = 0; frame < 600; ++frame) world.step(1.0 / 60);
        return world;
    };
    const World on_block = pour(true), on_floor = pour(false);
    EXPECT_EQ(on_block.sleeping_count(), 40u);
    EXPECT_GT(on_block.event_counts().ball_block, 40u);
    // A face is a plane while balls stay over it: the same events (the standing tests see the
    // contacts in another order, so balls may fall asleep at other instants: positions agree to
    // rounding, not to the bit).
    EXPECT_EQ(on_block.events_processed(), on_floor.events_processed());
    EXPECT_EQ(on_floor.sleeping_count(), 40u);
    EXPECT_EQ(pour(true, 2).state_hash(), on_block.state_hash());
    const BallView a = on_block.balls(), b = on_floor.balls();
    for (std::size_t k = 0; k < a.x.size(); ++k)
        EXPECT_LT(length(Vec3{a.x[k] - b.x[k], a.y[k] - b.y[k], a.z[k] - b.z[k]}), 1e-9) << k;
}

TEST(Capsule, SnapshotsKeepCapsulesAndContinueBitIdentically) {
    World world(with_gravity(0.8));
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    for (int k = 0; k < 10; ++k) world.add_capsule({{k - 4.5, 2.0 + 0.3 * k, -2}, {k - 4.5, 2.0, 2}, 0.2});
    world.add_capsule({{0, 6, 0}, {0, 6, 0}, 0.7});
    world.add_block({{-2, 4, -2}, {-1, 4.5, 2}});
    add_generated(world, 60, 0.2, {{-5, 3, -2}, {5, 10, 2}}, 2.0, 9);
    for (int frame = 0; frame < 30; ++frame) world.step(1.0 / 60);
    std::stringstream snapshot;
    world.save(snapshot);
    World copy = World::restore(snapshot);
    ASSERT_EQ(copy.capsule_count(), 11u);
    EXPECT_EQ(copy.capsule(10).radius, 0.7);
    EXPECT_EQ(copy.capsule_counters()[3].hits, world.capsule_counters()[3].hits);
    EXPECT_EQ(copy.event_counts().ball_capsule, world.event_counts().ball_capsule);
    ASSERT_EQ(copy.block_count(), 1u);
    EXPECT_EQ(copy.block(0).max, (Vec3{-1, 4.5, 2}));
    EXPECT_EQ(copy.event_counts().ball_block, world.event_counts().ball_block);
    for (int frame = 0; frame < 60; ++frame) {
        world.step(1.0 / 60);
        copy.step(1.0 / 60);
    }
    EXPECT_GT(world.event_counts().ball_capsule, 0u);
    EXPECT_EQ(copy.state_hash(), world.state_hash());
}

TEST(Capsule, HandlesAndRemovalWakeAndDropTheCapsule) {
    World world(with_gravity(0.5));
    world.add_plane({{0, -5, 0}, {0, 1, 0}});
    const CapsuleId first = world.add_capsule({{-2, 0, 0}, {-2, 0, 0}, 0.5});
    const CapsuleId shelf = world.add_capsule({{-3, 0, -1}, {3, 0, -1}, 0.5});
    const CapsuleId other = world.add_capsule({{-3, 0, 1}, {3, 0, 1}, 0.5});
    const BallId ball = world.add_ball({{0, 1.5, 0}, {}, 0.7, 1.0});  // falls into the groove of the two
    for (int frame = 0; frame < 300; ++frame) world.step(1.0 / 60);
    EXPECT_TRUE(world.sleeping(ball));
    EXPECT_EQ(world.index(other), 2u);
    world.remove_capsule(shelf);
    EXPECT_FALSE(world.contains(shelf));
    EXPECT_TRUE(world.contains(first));
    EXPECT_EQ(world.index(other), 1u);  // the last took the removed one's index
    EXPECT_EQ(world.capsule_id(1), other);
    EXPECT_FALSE(world.sleeping(ball));
    for (int frame = 0; frame < 120; ++frame) world.step(1.0 / 60);
    EXPECT_LT(world.ball(ball).position.y, -3.0);  // it fell past the one left
    EXPECT_THROW(world.remove_capsule(shelf), InvalidArgument);
}

TEST(Capsule, BadCapsulesAreRefusedNamingTheField) {
    World world;
    EXPECT_EQ(field_of(world, CapsuleDef{{0, 0, 0}, {1, 0, 0}, 0.0}), "capsules[0].radius");
    EXPECT_EQ(field_of(world, CapsuleDef{{0, 0, 0}, {1, 0, 0}, -1.0}), "capsules[0].radius");
    EXPECT_EQ(field_of(world, CapsuleDef{{0, NAN, 0}, {1, 0, 0}, 1.0}), "capsules[0].a");
    EXPECT_EQ(field_of(world, CapsuleDef{{0, 0, 0}, {1e31, 0, 0}, 1.0}), "capsules[0].b");
    world.add_ball({{0, 0, 0}, {}, 0.5, 1.0});
    EXPECT_EQ(field_of(world, CapsuleDef{{0.5, 0, 0}, {2, 0, 0}, 0.2}), "capsules[0]");  // overlaps the ball
    WorldDef periodic;
    periodic.periodic = Box{{0, 0, 0}, {10, 10, 10}};
    World gas(periodic);
    EXPECT_EQ(field_of(gas, CapsuleDef{{1, 1, 1}, {2, 1, 1}, 0.2}), "capsules[0]");
    EXPECT_EQ(world.capsule_count(), 0u);
}

TEST(Block, BallsSlidingOffATopFaceFallOffItsEdge) {
    // Balls on a block's top face, pushed off its edges by tilted gravity at 264 speeds and
    // places. On the face, the face's edge was predicted against it too, and grazed it within
    // rounding as its centre came to the edge: the ball left the face, met it again at once and
    // settled on it, at one instant, until the jam rule stopped it there (148 of the 264), or,
    // with sleeping off, for ever.
    for (const double sleep_speed : {0.1, 0.0}) {
        WorldDef def = with_gravity(0.0);
        def.gravity = {-4.905, -9.81, -4.905};
        def.sleep_speed = sleep_speed;
        def.step_event_budget = 10000;
        std::size_t balls = 0, events = 0;
        for (double z = -0.4; z < -0.1; z += 0.0137) {
            for (double vz = -3.0; vz < -1.0; vz += 0.173) {
                World world(def);
                world.add_plane({{0, 0, 0}, {0, 1, 0}});
                world.add_block({{-0.5, 0, -0.5}, {0, 0.25, 0}});
                const BallId id = world.add_ball({{-0.25, 0.35, z}, {-0.5, 0, vz}, 0.1, 1.0});
                for (int k = 0; k < 30; ++k) ASSERT_NO_THROW(world.step(1.0 / 60.0)) << z << " " << vz;
                EXPECT_LT(world.ball(id).position.y, 0.2) << "on the block: " << z << " " << vz;
                ++balls;
                events += world.events_processed();
            }
        }
        EXPECT_LT(events, 8 * balls) << "sleep_speed " << sleep_speed;
    }
}

TEST(Block, BadBlocksAreRefusedNamingTheField) {
    World world;
    EXPECT_EQ(field_of(world, BlockDef{{0, 0, 0}, {1, 0, 1}}), "blocks[0].max");  // flat
    EXPECT_EQ(field_of(world, BlockDef{{0, 0, 0}, {-1, 1, 1}}), "blocks[0].max");
    EXPECT_EQ(field_of(world, BlockDef{{0, INFINITY, 0}, {1, 1, 1}}), "blocks[0].min");
    world.add_ball({{0, 0, 0}, {}, 0.5, 1.0});
    EXPECT_EQ(field_of(world, BlockDef{{0.4, -1, -1}, {2, 1, 1}}), "blocks[0]");  // overlaps the ball
    const BlockId id = world.add_block({{0.5, -1, -1}, {2, 1, 1}});      // touching is allowed
    EXPECT_EQ(world.index(id), 0u);
    WorldDef periodic;
    periodic.periodic = Box{{0, 0, 0}, {10, 10, 10}};
    World gas(periodic);
    EXPECT_EQ(field_of(gas, BlockDef{{1, 1, 1}, {2, 2, 2}}), "blocks[0]");
    world.remove_block(id);
    EXPECT_FALSE(world.contains(id));
    EXPECT_THROW(world.block_id(0), InvalidArgument);
}

// As many blocks as a snapshot reads back, added one at a time in amortised constant time each;
// one more is refused, naming the limit.
TEST(Block, AWorldHoldsAtMostTwoToTheTwentyBlocks) {
    World world;
    constexpr std::size_t kMost = std::size_t{1} << 20;
    for (std::size_t k = 0; k < kMost; ++k) {
        const double x = 2.0 * static_cast<double>(k % 1024), y = 2.0 * static_cast<double>(k / 1024);
        world.add_block({{x, y, 0}, {x + 1, y + 1, 1}});
    }
    try {
        world.add_block({{-5, -5, -5}, {-4, -4, -4}});
        ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "blocks[1048576]");
        EXPECT_NE(std::string(error.what()).find("at most 1048576 blocks"), std::string::npos) << error.what();
    }
    EXPECT_EQ(world.block_count(), kMost);
}
