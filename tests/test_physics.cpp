// World-level physics against closed forms and conservation laws: floors, ball–ball
// collisions, columns, friction, periodic boxes, cells, conservation, robustness, measurements.
#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

#include <gtest/gtest.h>

#include "worlds.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

using namespace ballistic;
using namespace ballistic::test_worlds;

namespace {
constexpr Vec3 kUp{0, 1, 0};
}  // namespace

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

TEST(Robustness, NoOverlapAtAnyFrame) {
    for (int threads : {1, 2}) {
        World world = periodic_gas(500, 0.2, 1.0, threads, 5);
        for (int k = 0; k < 60; ++k) {
            world.step(1.0 / 60.0);
            ASSERT_LT(world.max_overlap(), 1e-10) << "frame " << k;
        }
    }
}
