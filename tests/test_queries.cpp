// What a world tells: its events, its handles, ray casts and questions about a point.
#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

#include <gtest/gtest.h>

#include "worlds.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

using namespace ballistic;
using namespace ballistic::test_worlds;

namespace {
constexpr Vec3 kUp{0, 1, 0};
}  // namespace

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
