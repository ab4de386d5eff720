// Resting and sleeping: frictionless equilibrium, waking with the true masses, bounded work.
#include <ballistic/scene/scene.hpp>
#include <ballistic/world.hpp>

#include "worlds.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

using namespace ballistic;

namespace {

constexpr double kG = 9.81;

using test_worlds::granular;

void add_floor(World& world) { world.add_plane({{0, 0, 0}, {0, 1, 0}}); }

BallId ball_at(World& world, Vec3 p, double r = 1.0, double m = 1.0) { return world.add_ball({p, {}, r, m}); }

// Steps of 1/60 until every ball sleeps or `limit` has passed; returns whether all sleep.
bool settle(World& world, double limit) {
    while (world.time() < limit) {
        world.step(1.0 / 60.0);
        if (world.sleeping_count() == world.ball_count()) return true;
    }
    return false;
}

// Steps of 1/240 until one has a ball–ball collision, for at most `limit` of world time: that
// step's ball–ball collisions (none when no step had one).
std::vector<CollisionEvent> first_ball_collisions(World& world, double limit) {
    std::vector<CollisionEvent> hits;
    for (const double end = world.time() + limit; hits.empty() && world.time() < end;) {
        world.step(1.0 / 240.0);
        for (const CollisionEvent& event : world.events())
            if (event.kind == EventKind::BallBall) hits.push_back(event);
    }
    return hits;
}

std::uint64_t events_so_far(const World& world) {
    const EventCounts c = world.event_counts();
    return c.collisions() + c.cell_crossings;
}


double distance(Vec3 a, Vec3 b) { return length(a - b); }

// Three balls of radius 1 touching each other on the floor around the y axis, each held from
// behind by a wall: a pocket whose supports cannot spread.
struct Pocket {
    static constexpr double kRho = 1.1547005383792515;      // 2/√3: centres from the axis
    static constexpr double kTopY = 2.6329931618554521;     // 1 + √(4 − 4/3): the ball resting in it
    std::vector<BallId> base;
    explicit Pocket(World& world) {
        add_floor(world);
        for (int k = 0; k < 3; ++k) {
            const double angle = M_PI / 2 + 2 * M_PI * k / 3;
            const Vec3 out{std::cos(angle), 0, std::sin(angle)};
            const Vec3 centre = Vec3{0, 1, 0} + out * kRho;
            world.add_plane({centre + out, -out});
            base.push_back(ball_at(world, centre));
        }
    }
};

}  // namespace

TEST(Sleep, StackAtRestSleepsAtOnceAndCostsNothing) {
    World world(granular());
    add_floor(world);
    std::vector<BallId> stack;
    for (int k = 0; k < 3; ++k) stack.push_back(ball_at(world, {0, 1.0 + 2.0 * k, 0}));
    ASSERT_TRUE(settle(world, 0.5));
    EXPECT_LE(events_so_far(world), 3u * 3u);  // a few events per ball
    const std::uint64_t before = events_so_far(world);
    for (int k = 0; k < 120; ++k) world.step(1.0 / 60.0);
    EXPECT_EQ(events_so_far(world), before);
    for (int k = 0; k < 3; ++k) {
        EXPECT_TRUE(world.sleeping(stack[static_cast<std::size_t>(k)]));
        EXPECT_NEAR(world.ball(stack[static_cast<std::size_t>(k)]).position.y, 1.0 + 2.0 * k, 1e-12);
    }
}

TEST(Sleep, ATallStackAtRestSleepsWholeBeforeItsFirstEvent) {
    // 24 balls stacked on a floor, touching, at rest: the balance carries every weight down to
    // the floor (from the top down, then Gauss–Seidel), so the whole column sleeps at the test
    // before the first event. Gauss–Seidel alone did not balance 12 in its 200 sweeps.
    World world(granular());
    add_floor(world);
    for (int k = 0; k < 24; ++k) ball_at(world, {0, 1.0 + 2.0 * k, 0});
    world.step(1.0 / 60.0);
    EXPECT_EQ(world.sleeping_count(), 24u);
    EXPECT_EQ(events_so_far(world), 0u);
}

TEST(Sleep, BallDroppedIntoAPocketOfThreeRestsThere) {
    World world(granular());
    const Pocket pocket(world);
    const BallId top = ball_at(world, {0, Pocket::kTopY + 0.5, 0});
    ASSERT_TRUE(settle(world, 5.0)) << world.sleeping_count() << " of 4 sleep";
    const Vec3 rest = world.ball(top).position;
    EXPECT_LT(distance(rest, {0, Pocket::kTopY, 0}), 0.01);  // 1 % of its radius
    const std::uint64_t before = events_so_far(world);
    for (int k = 0; k < 60; ++k) world.step(1.0 / 60.0);
    EXPECT_EQ(events_so_far(world), before);
    EXPECT_EQ(world.ball(top).position, rest);
    EXPECT_LT(world.max_overlap(), 1e-9);
}

TEST(Sleep, BallOffCentreOnASingleBallSlidesOff) {
    World world(granular());
    add_floor(world);
    const BallId below = ball_at(world, {0, 1, 0});
    const BallId top = ball_at(world, Vec3{0, 1, 0} + Vec3{std::sin(0.1), std::cos(0.1), 0} * 2.0);
    for (int k = 0; k < 180; ++k) {
        world.step(1.0 / 60.0);
        if (world.ball(top).position.y > 2.0) {
            EXPECT_FALSE(world.sleeping(top)) << "balanced at t = " << world.time();
        }
    }
    const BallState t = world.ball(top), b = world.ball(below);
    EXPECT_LT(t.position.y, 1.0 + 1e-6);  // on the floor
    EXPECT_GE(distance(t.position, b.position), 2.0 - 1e-9);
}

TEST(Sleep, ABallSlidesOffABallOrAPegWhateverTheRestSpeed) {
    // Pressed onto what it slides over, it hops off at rest_speed or fast enough to rise 10⁻⁶ of
    // its radius (collision_rules.hpp, pressed_leaving()): at most √(g / 8·10⁻⁶ r) ≈ 1100 times a
    // second. At 10⁻¹² hops it stood still to rounding, and the jam rule put it to sleep off
    // centre on the peg, frictionless.
    for (const double rest_speed : {0.05, 1e-12}) {
        for (const bool peg : {false, true}) {
            const std::string name = std::string(peg ? "peg" : "ball") + ", rest_speed " + std::to_string(rest_speed);
            WorldDef def = granular();
            def.rest_speed = rest_speed;
            def.step_event_budget = 100000;
            World world(def);
            add_floor(world);
            if (peg) world.add_capsule({{0, 1, 0}, {0, 1, 0}, 1.0});
            else ball_at(world, {0, 1, 0});
            const BallId top = ball_at(world, Vec3{0, 1, 0} + Vec3{std::sin(0.1), std::cos(0.1), 0} * 2.0);
            ASSERT_NO_THROW(settle(world, 3.0)) << name;
            const BallState t = world.ball(top);
            EXPECT_LT(t.position.y, 1.0 + 1e-6) << name;  // slid off, on the floor
            EXPECT_GT(t.position.x, 2.0) << name;
            EXPECT_LT(events_so_far(world), 5000u) << name;
            EXPECT_LT(world.max_overlap(), 1e-9) << name;
        }
    }
}

TEST(Sleep, WithStaticFrictionABallOffCentreWithinTheConeStays) {
    // Placed at rest 0.1 rad off the top of a ball on the floor (tan 0.1 < 0.5): the pair stands
    // and sleeps before its first event. At 0.6 rad (tan 0.6 = 0.68 > 0.5) it slides off.
    for (const double angle : {0.1, 0.6}) {
        WorldDef def = granular();
        def.sleep_friction = 0.5;
        World world(def);
        add_floor(world);
        ball_at(world, {0, 1, 0});
        const Vec3 start = Vec3{0, 1, 0} + Vec3{std::sin(angle), std::cos(angle), 0} * 2.0;
        const BallId top = ball_at(world, start);
        world.step(1.0 / 60.0);
        if (angle < 0.5) {
            EXPECT_EQ(world.sleeping_count(), 2u);
            EXPECT_EQ(events_so_far(world), 0u);
            EXPECT_EQ(world.ball(top).position, start);
        } else {
            for (int k = 0; k < 180; ++k) world.step(1.0 / 60.0);
            EXPECT_LT(world.ball(top).position.y, 1.0 + 1e-6);  // on the floor
        }
    }
}

TEST(Sleep, BallOnTwoFreeBallsPushesThemApartAndDrops) {
    World world(granular());
    add_floor(world);
    const BallId left = ball_at(world, {-1, 1, 0}), right = ball_at(world, {1, 1, 0});
    const BallId top = ball_at(world, {0, 1 + std::sqrt(3.0), 0});
    for (int k = 0; k < 180; ++k) {
        world.step(1.0 / 60.0);
        if (world.ball(top).position.y > 1.5) {
            EXPECT_FALSE(world.sleeping(left) || world.sleeping(right) || world.sleeping(top))
                << "balanced on supports that cannot carry it, t = " << world.time();
        }
    }
    EXPECT_LT(world.ball(top).position.y, 1.0 + 1e-6);  // on the floor, between them
    EXPECT_GE(world.ball(right).position.x - world.ball(left).position.x, 4.0 - 1e-9);
}

TEST(Sleep, HeavyBallWakesTheSettledPileWithTheTrueMasses) {
    const double e = 0.5, heavy_mass = 50.0, drop = 1.0;
    World world(granular(e));
    const Pocket pocket(world);
    const BallId top = ball_at(world, {0, Pocket::kTopY, 0});
    ASSERT_TRUE(settle(world, 1.0));
    const double top_y = world.ball(top).position.y;  // asleep: it stays there until hit
    const BallId heavy = world.add_ball({{0, top_y + 2.0 + drop, 0}, {}, 1.0, heavy_mass});
    const std::vector<CollisionEvent> hits = first_ball_collisions(world, 1.0);
    ASSERT_FALSE(hits.empty());
    const CollisionEvent& hit = hits.front();
    ASSERT_TRUE((hit.ball == heavy && hit.other == top) || (hit.ball == top && hit.other == heavy));
    // The closed form for two free balls, head-on: J = (1 + e) u m M / (m + M).
    const double u = std::sqrt(2.0 * kG * drop);
    const double expected = (1.0 + e) * u * heavy_mass / (1.0 + heavy_mass);
    EXPECT_NEAR(hit.impulse, expected, 1e-9 * expected);
    // The splash settles again, the heavy ball on top.
    ASSERT_TRUE(settle(world, world.time() + 10.0)) << world.sleeping_count() << " of 5 sleep";
    EXPECT_LT(world.max_overlap(), 1e-9);
    EXPECT_EQ(world.escaped_count(), 0u);
}

// A ball dropped onto the top of the settled pocket at 1 length/time (faster than sleep_speed)
// pushes the top ball into the three below it, and brings a tenth of the energy that lifting it
// by wake_lift of its radius takes: the pile carries it as an immovable ball (J = (1 + e) u m,
// and the top ball stays where it sleeps). With wake_lift 0 the same impact wakes it, and it
// takes the impact with its true mass (J = (1 + e) u m M / (m + M)).
TEST(Sleep, AnImpactIntoWhatCarriesASleepingBallLeavesItAsleep) {
    const double e = 0.5, u = 1.0;
    for (const double wake_lift : {WorldDef{}.wake_lift, 0.0}) {
        WorldDef def = granular(e);
        def.wake_lift = wake_lift;
        if (wake_lift > 0.0) {
            ASSERT_LT(0.5 * 0.5 * u * u, kG * wake_lift);  // ½ μ u² below m |g| wake_lift r
        }
        World world(def);
        const Pocket pocket(world);
        const BallId top = ball_at(world, {0, Pocket::kTopY, 0});
        ASSERT_TRUE(settle(world, 1.0));
        const Vec3 where = world.ball(top).position;
        const BallId falling = world.add_ball({where + Vec3{0, 2.0 + u * u / (2.0 * kG), 0}, {}, 1.0, 1.0});
        const std::vector<CollisionEvent> hits = first_ball_collisions(world, 1.0);
        ASSERT_FALSE(hits.empty());
        const CollisionEvent& hit = hits.front();
        ASSERT_TRUE((hit.ball == falling && hit.other == top) || (hit.ball == top && hit.other == falling));
        const double expected = wake_lift > 0.0 ? (1.0 + e) * u : (1.0 + e) * u * 0.5;
        EXPECT_NEAR(hit.impulse, expected, 1e-9 * expected) << "wake_lift " << wake_lift;
        if (wake_lift > 0.0) {
            EXPECT_TRUE(world.sleeping(top));
            EXPECT_EQ(world.ball(top).position, where);
            EXPECT_GT(world.ball(falling).velocity.y, 0.0);  // on its way back up
        } else {
            EXPECT_FALSE(world.sleeping(top));
        }
        ASSERT_TRUE(settle(world, world.time() + 10.0)) << world.sleeping_count() << " of 5 sleep";
        EXPECT_LT(world.max_overlap(), 1e-9);
    }
}

// Dropped onto the three carried balls of the pocket (without its top ball), a ball meets the
// three at one instant: it bounces straight up at e u, as from their simultaneous impact. Met one
// after the other, it bounced off them in turn and out of the pocket.
TEST(Sleep, ABallDroppedOntoACarriedPocketBouncesStraightUp) {
    const double e = 0.5, drop = 0.2;
    World world(granular(e));
    const Pocket pocket(world);
    ASSERT_TRUE(settle(world, 1.0));
    const BallId falling = ball_at(world, {0, Pocket::kTopY + drop, 0});
    const double u = std::sqrt(2.0 * kG * drop);
    const std::vector<CollisionEvent> hits = first_ball_collisions(world, 1.0);
    ASSERT_FALSE(hits.empty());
    const double hit = hits.back().time;
    const Vec3 v = world.ball(falling).velocity;  // at the step's end, under gravity since
    EXPECT_NEAR(v.x, 0.0, 1e-9);
    EXPECT_NEAR(v.z, 0.0, 1e-9);
    EXPECT_NEAR(v.y, e * u - kG * (world.time() - hit), 1e-9);
    for (const BallId b : pocket.base) EXPECT_TRUE(world.sleeping(b));
}

// A ball driven by the impact on a carried ball into a second contact it was leaving (a plane
// at 40° to the first normal) never comes off faster than it came: the restitution acts on the
// simultaneous impact as a whole (Poisson's), not on each contact's approach (Newton's, which
// sent it off along the groove at e / sin 40° = 1.24 times its speed).
TEST(Sleep, ACarriedImpactIntoTwoContactsNeverSpeedsTheBallUp) {
    const double e = 0.8, theta = 40.0 * M_PI / 180.0;
    World world(granular(e));
    add_floor(world);
    world.add_plane({{-1, 0, 0}, {1, 0, 0}});  // holds the sleeping ball against the push
    const BallId carried = ball_at(world, {0, 1, 0});
    world.step(1.0 / 60.0);
    ASSERT_TRUE(world.sleeping(carried));
    const Vec3 centre{2, 1, 0}, n2{-std::cos(theta), std::sin(theta), 0};
    world.add_plane({centre - n2, n2});
    const BallId driven = world.add_ball({centre, {-1, 0, 0}, 1.0, 1.0});
    world.step(1e-6);
    ASSERT_GE(world.event_counts().ball_ball, 1u);
    EXPECT_TRUE(world.sleeping(carried));
    EXPECT_LE(length(world.ball(driven).velocity), 1.0 + 1e-5);  // gravity for 10⁻⁶
    EXPECT_LT(world.max_overlap(), 1e-9);
}

// With friction the impulse of a glancing hit leans off the line of centres, and that impulse
// decides whether the sleeping ball's supports carry it. A ball asleep on the floor (friction 0.5:
// a cone of 26.6°) hit 10° off its top: the normal push alone would lean 10°. Sliding one way the
// friction leans the impulse back to 16.5° (held: it stays asleep), the other way out to 36.6°
// (not held: it wakes).
TEST(Sleep, AGlancingHitWithFrictionIsCarriedOnlyWhereItsImpulseIsHeld) {
    const double angle = 10.0 * M_PI / 180.0;
    const Vec3 n{std::sin(angle), std::cos(angle), 0}, t{std::cos(angle), -std::sin(angle), 0};
    for (const double drag : {1.0, -1.0}) {
        WorldDef def = granular(0.5);
        def.friction = 0.5;
        World world(def);
        add_floor(world);
        const BallId resting = ball_at(world, {0, 1, 0});
        world.step(1.0 / 60.0);
        ASSERT_TRUE(world.sleeping(resting));
        world.add_ball({Vec3{0, 1, 0} + n * 2.0, -n + t * (3.0 * drag), 1.0, 1.0});
        world.step(1e-6);
        ASSERT_GE(world.event_counts().ball_ball, 1u);
        EXPECT_EQ(world.sleeping(resting), drag > 0.0) << "drag " << drag;
        EXPECT_LT(world.max_overlap(), 1e-9);
    }
}

// The same speed sideways into a ball asleep alone on the floor pushes it along the floor, which
// cannot carry that: it wakes and takes the impact with its true mass, and moves off.
TEST(Sleep, AnImpactPushingASleepingBallOffItsSupportsWakesIt) {
    const double e = 0.5, u = 1.0;
    World world(granular(e));
    add_floor(world);
    const BallId resting = ball_at(world, {0, 1, 0});
    world.step(1.0 / 60.0);
    ASSERT_TRUE(world.sleeping(resting));
    const BallId sliding = world.add_ball({{-2.5, 1, 0}, {u, 0, 0}, 1.0, 1.0});
    const std::vector<CollisionEvent> hits = first_ball_collisions(world, 1.0);
    ASSERT_FALSE(hits.empty());
    for (const CollisionEvent& event : hits) {
        ASSERT_TRUE((event.ball == sliding && event.other == resting) ||
                    (event.ball == resting && event.other == sliding));
        EXPECT_NEAR(event.impulse, (1.0 + e) * u * 0.5, 1e-9);
    }
    EXPECT_FALSE(world.sleeping(resting));
    EXPECT_NEAR(world.ball(resting).velocity.x, (1.0 + e) * u * 0.5, 1e-9);
}

TEST(Sleep, PerfectlyInelasticStackInANarrowWellSettles) {
    World world(granular(0.0));
    add_floor(world);
    const double half = 0.5005;  // a well barely wider than the balls
    world.add_plane({{-half, 0, 0}, {1, 0, 0}});
    world.add_plane({{half, 0, 0}, {-1, 0, 0}});
    world.add_plane({{0, 0, -half}, {0, 0, 1}});
    world.add_plane({{0, 0, half}, {0, 0, -1}});
    for (int k = 0; k < 20; ++k) world.add_ball({{0, 0.5 + 1.5 * k, 0}, {}, 0.5, 1.0});
    ASSERT_TRUE(settle(world, 10.0)) << world.sleeping_count() << " of 20 sleep";
    EXPECT_LT(events_so_far(world), 20u * 4000u);  // no inelastic collapse
    EXPECT_LT(world.max_overlap(), 1e-9);
}

TEST(Sleep, ExtremeParametersSettleInBoundedWork) {
    // With e = 0.999 a bounce of 2 m/s takes about 2 u / (g (1 − e)) ≈ 450 s to die out: that
    // stack cannot settle in 20 s, but its work stays bounded.
    struct Case {
        const char* name;
        double e, rest_speed, mass_ratio;
        bool settles;
    };
    for (const Case c : {Case{"tiny rest speed", 0.5, 1e-12, 1.0, true}, Case{"e close to one", 0.999, 1e-3, 1.0, false},
                         Case{"mass ratio 1e24", 0.5, 1e-3, 1e24, true}, Case{"e = 0", 0.0, 1e-3, 1.0, true}}) {
        WorldDef def = granular(c.e);
        def.rest_speed = c.rest_speed;
        World world(def);
        add_floor(world);
        for (int k = 0; k < 5; ++k)
            world.add_ball({{0, 0.5 + 1.25 * k, 0}, {}, 0.5, k == 4 ? c.mass_ratio : 1.0});
        const double start = test_worlds::total_energy(world);
        const bool settled = settle(world, 20.0);
        if (c.settles) {
            EXPECT_TRUE(settled) << c.name << ": " << world.sleeping_count() << " of 5 sleep";
        }
        EXPECT_LE(test_worlds::total_energy(world), start * (1.0 + 1e-9)) << c.name;
        EXPECT_LT(events_so_far(world), 5u * 4000u) << c.name;
        EXPECT_EQ(world.escaped_count(), 0u) << c.name;
    }
}

TEST(Sleep, PourSameBitsForAnyThreadCountEnergyNeverGrows) {
    // One thread, and two with the serial loop, and two with regions.
    struct Run {
        int threads;
        std::size_t regions_from;
    };
    const Run runs[] = {{1, 0}, {2, 500000}, {2, 0}};
    for (const double friction : {0.0, 0.5}) {  // frictionless, and Coulomb friction at collisions
        std::uint64_t hash = 0;
        std::size_t sleeping = 0;
        for (const Run& run : runs) {
            WorldDef def = granular(0.5);
            def.friction = friction;
            def.threads = run.threads;
            test_worlds::regions_from(def, run.regions_from);
            World world = test_worlds::pour_into_well(def);
            const double slack = 24 * 0.5 * def.rest_speed * def.rest_speed;  // pressed contacts leave at rest_speed
            double highest = test_worlds::total_energy(world);
            std::uint64_t events = 0, in_regions = 0;
            for (int k = 0; k < 420; ++k) {  // 7 s: settled whole (the frictionless pour near 5.6 s)
                const StepResult step = world.step(1.0 / 60.0);
                events += step.events;
                in_regions += step.in_regions;
                const double now = test_worlds::total_energy(world);
                EXPECT_LE(now, highest + slack + 1e-9 * highest) << "t = " << world.time();
                highest = std::max(highest, now);
            }
            EXPECT_LT(world.max_overlap(), 1e-9);
            EXPECT_EQ(world.escaped_count(), 0u);
            if (run.threads == 1 || run.regions_from != 0) {
                EXPECT_EQ(in_regions, 0u);
            } else {
                EXPECT_GT(in_regions, 0u) << "friction " << friction;  // 24 balls: regions seldom pay
            }
            if (hash == 0) {
                hash = world.state_hash();
                sleeping = world.sleeping_count();
                EXPECT_EQ(sleeping, world.ball_count());
            } else {
                EXPECT_EQ(world.state_hash(), hash) << run.threads << " threads, regions from " << run.regions_from;
                EXPECT_EQ(world.sleeping_count(), sleeping);
            }
        }
    }
}

// balls() shows every ball where ball() says it is, at the world's time: the end of a step writes
// the view of each ball that moved or fell asleep since the last one, and keeps the views of the
// balls asleep since before; so do a stop at the event budget, a ball dropped on the settled pile
// (which wakes it), and a restore.
TEST(Sleep, BallsShowsEveryBallWhereItIsAsItSleepsAndWakes) {
    World world = test_worlds::pour_into_well(granular(0.5));
    auto expect_shown = [&](const World& w, const char* when) {
        const BallView view = w.balls();
        for (std::size_t s = 0; s < view.id.size(); ++s) {
            const BallState b = w.ball(view.id[s]);
            ASSERT_TRUE(view.x[s] == b.position.x && view.y[s] == b.position.y && view.z[s] == b.position.z &&
                        view.vx[s] == b.velocity.x && view.vy[s] == b.velocity.y && view.vz[s] == b.velocity.z)
                << when << ", slot " << s << " at t = " << w.time();
        }
    };
    for (int k = 0; k < 420; ++k) {
        world.step(1.0 / 60.0);
        expect_shown(world, "pouring");
    }
    ASSERT_EQ(world.sleeping_count(), world.ball_count());
    world.add_ball({{1.0, 8.0, 1.0}, {}, 0.5, 1.0});
    world.set_step_event_budget(10);
    int stops = 0;
    for (int k = 0; k < 120; ++k) {
        try {
            world.step(1.0 / 60.0);
        } catch (const BudgetExceeded&) {
            ++stops;
        }
        expect_shown(world, "woken");
    }
    EXPECT_GT(stops, 0);
    std::stringstream bytes;
    world.save(bytes);
    const World restored = World::restore(bytes);
    expect_shown(restored, "restored");
}

TEST(Sleep, RemovingASupportWakesWhatRestedOnIt) {
    World world(granular());
    add_floor(world);
    const BallId below = ball_at(world, {0, 1, 0}), top = ball_at(world, {0, 3, 0});
    ASSERT_TRUE(settle(world, 0.5));
    for (int k = 0; k < 120; ++k) world.step(1.0 / 60.0);  // asleep for 2 s more: woken, it starts there
    const Vec3 rested = world.ball(top).position;
    world.remove_ball(below);
    EXPECT_FALSE(world.sleeping(top));
    EXPECT_EQ(world.ball(top).position, rested);
    EXPECT_EQ(world.ball(top).velocity, Vec3{});
    EXPECT_EQ(world.balls().y[0], rested.y);  // the only ball left
    ASSERT_TRUE(settle(world, world.time() + 3.0));
    EXPECT_NEAR(world.ball(top).position.y, 1.0, 0.01);
    // A ball added beside a sleeping one leaves it asleep; one dropped on it wakes it.
    world.add_ball({{5, 1, 0}, {}, 1.0, 1.0});
    world.step(1.0 / 60.0);
    EXPECT_TRUE(world.sleeping(top));
    world.add_ball({{0, 6, 0}, {}, 1.0, 1.0});
    bool woke = false;
    for (int k = 0; k < 60 && !woke; ++k) {
        world.step(1.0 / 60.0);
        woke = !world.sleeping(top);
    }
    EXPECT_TRUE(woke);
}

// A sleeping ball wakes once what it rests on has moved away from it by the touching gap, not
// when that is struck: a support struck into the pile leaves its load asleep.
TEST(Sleep, ABallWakesWhenItsSupportHasMovedAwayByTheTouchingGap) {
    // The top ball asleep on the bottom one, asleep on the floor; a third slides into the bottom
    // one at 3 (e = 0.5, equal masses), which leaves along the floor at 2.25. The centres are
    // touch_gap farther apart than touching, √((2 + gap)² − 4) = 0.045 further on, 20 ms later.
    World world(granular());
    add_floor(world);
    const BallId below = ball_at(world, {0, 1, 0}), top = ball_at(world, {0, 3, 0});
    ASSERT_TRUE(settle(world, 0.5));
    const double start = world.time();
    world.add_ball({{-6, 1, 0}, {3, 0, 0}, 1.0, 1.0});
    const double impact = start + 4.0 / 3.0;
    const double gap = std::min(0.1 * 0.1 / (2 * kG), 1e-3);  // the touching gap at radius 1, sleep_speed 0.1
    const double woken = impact + std::sqrt((2 + gap) * (2 + gap) - 4) / 2.25;
    world.step(0.5 * (impact + woken) - start);
    EXPECT_FALSE(world.sleeping(below));
    EXPECT_NEAR(world.ball(below).velocity.x, 2.25, 1e-12);
    EXPECT_TRUE(world.sleeping(top));
    world.step(woken - 1e-6 - world.time());
    EXPECT_TRUE(world.sleeping(top));
    world.step(2e-6);
    EXPECT_FALSE(world.sleeping(top));
}

// A ball sliding slowly on the floor under a sleeping ball meets both at once: it stops moving
// into them at one collision and slides on along them. Met in turn, each collision undoes part
// of the other (10 collisions at that instant; 64 and a stop by the jam rule where rounding
// left the ball approaching by 10⁻³⁵).
TEST(Sleep, ASlowBallWedgedUnderASleepingOneStopsIntoBothAtOnce) {
    World world(granular());
    add_floor(world);
    const BallId high = ball_at(world, {0, 1, 0});
    ASSERT_TRUE(settle(world, 0.5));
    // Radius 0.5 on the floor: it touches the sleeping ball with its centre √2 from the axis, at
    // 1 s, approaching at 0.04 · √2 / 1.5 = 0.038 (below rest_speed) while sliding past at 0.12.
    const double start = world.time();
    const Vec3 v{0.04, 0, 0.12};
    const BallId low = world.add_ball({{-std::sqrt(2.0) - v.x, 0.5, -v.z}, v, 0.5, 1.0});
    world.step(1.0 - 1e-9);
    std::size_t collisions = 0;
    world.step(2e-9);
    for (const CollisionEvent& e : world.events()) collisions += e.kind == EventKind::BallBall;
    EXPECT_EQ(collisions, 1u);
    EXPECT_TRUE(world.sleeping(high));
    EXPECT_FALSE(world.sleeping(low));
    const BallState after = world.ball(low);
    EXPECT_LT(std::abs(after.velocity.x), 1e-9);  // leaving both at (at least) rounding speed
    EXPECT_EQ(after.velocity.y, 0.0);                 // still on the floor
    EXPECT_NEAR(after.velocity.z, v.z, 1e-12);
    EXPECT_NEAR(world.time(), start + 1.0 + 1e-9, 1e-12);
}

// The same against a wall: a ball sliding along a wall into a sleeping ball that leaves too
// narrow a gap to pass stops at one collision. Met in turn, the wall (slow contacts with a
// static are elastic) sends it back into the ball at the same instant (33 times each).
TEST(Sleep, ASlowBallStoppedBetweenAWallAndASleepingBallStopsAtOnce) {
    World world(granular());
    add_floor(world);
    world.add_plane({{0, 0, 0}, {1, 0, 0}});
    const BallId high = ball_at(world, {2.99, 1, 0});  // 1.99 from the wall: a ball of radius 1 cannot pass
    ASSERT_TRUE(settle(world, 0.5));
    // Along the wall at 0.2, touching the sleeping ball 1 s later with its centre √(4 − 1.99²)
    // = 0.19975 short of it along z: it approaches at 0.2 · 0.19975 / 2 = 0.02, below rest_speed.
    const double short_of = std::sqrt(4 - 1.99 * 1.99);
    const BallId low = world.add_ball({{1, 1, -short_of - 0.2}, {0, 0, 0.2}, 1.0, 1.0});
    world.step(1.0 - 1e-9);
    world.step(2e-9);
    std::size_t with_ball = 0, with_planes = 0;
    for (const CollisionEvent& e : world.events()) (e.kind == EventKind::BallBall ? with_ball : with_planes) += 1;
    EXPECT_EQ(with_ball, 1u);
    EXPECT_EQ(with_planes, 0u);
    EXPECT_TRUE(world.sleeping(high));
    EXPECT_LT(length(world.ball(low).velocity), 1e-9);
}

// A ball between two sleeping balls on one line, pressed by its weight into the lower one: no
// velocity leaves both, so each impact would send it into the other at the same instant, until
// the jam rule stopped it after 64 of them; wedged, it stops at once. Its first impact leaves the lower
// ball at rest_speed (pressed), and may meet the upper one at that speed, an impact of its own
// (rounding decides); the next finds it wedged.
TEST(Sleep, ASlowBallWedgedBetweenTwoSleepingBallsStopsAtOnce) {
    World world(granular());
    add_floor(world);
    world.add_plane({{0, 0, 0}, {1, 0, 0}});
    const BallId low = ball_at(world, {1, 1, 0});  // in the crease of the floor and the wall
    // Two pegs hold the upper ball, 2.4 up the line (0.6, 0.8) from the lower one.
    const Vec3 high_at{3.4, 4.2, 0};
    for (const double z : {-0.96, 0.96}) world.add_capsule({{3.4, 3.48, z}, {3.4, 3.48, z}, 0.2});
    const BallId high = ball_at(world, high_at);
    ASSERT_TRUE(settle(world, 0.5));
    const BallId wedged = ball_at(world, {2.2, 2.6, 0});  // touching both, on their line
    world.step(1e-3);
    std::size_t collisions = 0;
    for (const CollisionEvent& e : world.events()) collisions += e.kind == EventKind::BallBall;
    EXPECT_GE(collisions, 1u);
    EXPECT_LE(collisions, 3u);
    EXPECT_TRUE(world.sleeping(wedged));
    EXPECT_TRUE(world.sleeping(low));
    EXPECT_TRUE(world.sleeping(high));
    EXPECT_LT(distance(world.ball(wedged).position, {2.2, 2.6, 0}), 1e-12);
    EXPECT_EQ(world.ball(high).position, high_at);
}

// Sliding on the floor between two sleeping balls that touch it on either side: it cannot move
// towards either, but nothing presses it into them, so it slides on along the gap after one
// impact (with its own velocity kept it would bounce between them at one instant until the jam
// rule stopped it dead).
TEST(Sleep, ABallSlidingBetweenTwoSleepingBallsItTouchesSlidesOn) {
    // Along x: the velocity that moves into neither is exactly across. (Along a direction whose
    // components rounding cannot keep exact, rounding leaves it approaching one of them at 10⁻¹⁷
    // of its speed, and the jam rule stops it after 64 collisions.)
    World world(granular());
    add_floor(world);
    ball_at(world, {-2, 1, 0});
    ball_at(world, {2, 1, 0});
    ASSERT_TRUE(settle(world, 0.5));
    const double start = world.time();
    const BallId between = world.add_ball({{0, 1, 0}, {0.01, 0, 0.5}, 1.0, 1.0});
    world.step(1.0);
    EXPECT_EQ(world.event_counts().ball_ball, 1u);
    EXPECT_FALSE(world.sleeping(between));
    const BallState b = world.ball(between);
    EXPECT_EQ(b.velocity, (Vec3{0, 0, 0.5}));  // what moved into the balls is gone
    EXPECT_EQ(b.position.x, 0.0);
    EXPECT_NEAR(b.position.z, 0.5 * (world.time() - start), 1e-12);
}

TEST(Sleep, SavedSettledPileSleepsAgainBeforeItsFirstEvent) {
    World first(granular());
    const Pocket pocket(first);
    ball_at(first, {0, Pocket::kTopY + 0.3, 0});
    ASSERT_TRUE(settle(first, 5.0));
    // As `--state` writes it: positions, zero velocities.
    World again(granular());
    const Pocket same(again);
    for (const BallId id : first.balls().id) {
        const BallState b = first.ball(id);
        if (b.position.y > 2.0) again.add_ball({b.position, {}, b.radius, b.mass});
    }
    ASSERT_TRUE(settle(again, 1.0));
    EXPECT_EQ(events_so_far(again), 0u);  // in equilibrium: asleep before the first event
}

TEST(Sleep, APileAddedAsItsBallsSleptGoesOnAsleepUntilAnImpactWakesIt) {
    const double e = 0.5, heavy_mass = 50.0, drop = 1.0;
    World first(granular(e));
    const Pocket pocket(first);
    const BallId top = ball_at(first, {0, Pocket::kTopY + 0.3, 0});
    ASSERT_TRUE(settle(first, 5.0));
    // As `--state` writes the pile: the statics, then each ball where it is, marked asleep.
    World again(granular(e));
    for (std::uint32_t k = 0; k < first.plane_count(); ++k) again.add_plane(first.plane(k));
    std::vector<BallDef> defs;
    std::size_t top_index = 0;
    for (const BallId id : first.balls().id) {
        const BallState b = first.ball(id);
        if (id == top) top_index = defs.size();
        BallDef def{b.position, b.velocity, b.radius, b.mass};
        def.sleeping = b.sleeping;
        defs.push_back(def);
    }
    const std::vector<BallId> ids = again.add_balls(defs);
    EXPECT_EQ(again.sleeping_count(), 4u);
    again.step(1.0);
    EXPECT_EQ(events_so_far(again), 0u);
    for (std::size_t k = 0; k < ids.size(); ++k) EXPECT_EQ(again.ball(ids[k]).position, defs[k].position);
    // A heavy ball dropped onto the top one wakes it, which takes the impact with its true mass:
    // J = (1 + e) u m M / (m + M), as for two free balls head-on.
    const BallId heavy = again.add_ball({defs[top_index].position + Vec3{0, 2.0 + drop, 0}, {}, 1.0, heavy_mass});
    const std::vector<CollisionEvent> hits = first_ball_collisions(again, 1.0);
    ASSERT_FALSE(hits.empty());
    const CollisionEvent& hit = hits.front();
    const BallId hit_top = ids[top_index];
    ASSERT_TRUE((hit.ball == heavy && hit.other == hit_top) || (hit.ball == hit_top && hit.other == heavy));
    const double u = std::sqrt(2.0 * kG * drop);
    const double expected = (1.0 + e) * u * heavy_mass / (1.0 + heavy_mass);
    EXPECT_NEAR(hit.impulse, expected, 1e-9 * expected);
}

TEST(Sleep, ABallAddedAsleepOnAMovingBallWakesAsItLeaves) {
    // 20 balls asleep far apart on the floor and one sliding along it at 1: a ball added asleep
    // on top of the sliding one, between steps, wakes as its support moves away by the touching
    // gap and falls. (The count, 22, is no power of two and the cells stay: only the balls
    // touching the added one are predicted again.)
    World world(granular());
    add_floor(world);
    for (int k = 0; k < 20; ++k) ball_at(world, {20.0 + 3.0 * k, 1, 0});
    const BallId slider = world.add_ball({{0, 1, 0}, {1, 0, 0}, 1.0, 1.0});
    world.step(0.1);
    ASSERT_FALSE(world.sleeping(slider));
    BallDef load{world.ball(slider).position + Vec3{0, 2, 0}, {}, 1.0, 1.0};
    load.sleeping = true;
    const BallId top = world.add_ball(load);
    EXPECT_TRUE(world.sleeping(top));
    world.step(0.05);  // the touching gap opens after √((2 + gap)² − 4) ≈ 0.045 of travel: 45 ms
    EXPECT_FALSE(world.sleeping(top));
    world.step(3.0);
    EXPECT_LT(world.ball(top).position.y, 1.5);  // slid off it to the floor
}

TEST(Sleep, TheEmbedderPutsABallToSleepAndWakesIt) {
    World world(granular());
    add_floor(world);
    for (int k = 0; k < 20; ++k) ball_at(world, {20.0 + 3.0 * k, 1, 0});
    // A falling ball put to sleep hangs where it is, at no cost, until woken; then it falls
    // from rest: y = y0 − ½ g t².
    const BallId falling = ball_at(world, {0, 10, 0});
    world.step(0.25);
    const Vec3 at = world.ball(falling).position;
    world.set_sleeping(falling, true);
    EXPECT_TRUE(world.sleeping(falling));
    EXPECT_EQ(world.ball(falling).velocity, Vec3{});
    const std::uint64_t before = events_so_far(world);
    world.step(1.0);
    EXPECT_EQ(events_so_far(world), before);
    EXPECT_EQ(world.ball(falling).position, at);
    world.set_sleeping(falling, false);
    EXPECT_FALSE(world.sleeping(falling));
    world.step(0.5);
    EXPECT_NEAR(world.ball(falling).position.y, at.y - 0.5 * kG * 0.25, 1e-12);
    // A ball put to sleep just above a ball sliding along the floor at 1 (10⁻⁴ apart, within the
    // touching gap) wakes as its support moves away from under it, and slides off it to the
    // floor. The support's next event is a crossing of its cells, which searches only the cells
    // new to it: only its prediction when the load is put to sleep tells it to wake the load.
    const BallId slider = world.add_ball({{-20, 1, 0}, {1, 0, 0}, 1.0, 1.0});
    world.step(0.1);
    ASSERT_FALSE(world.sleeping(slider));
    const BallId load = world.add_ball({world.ball(slider).position + Vec3{0, 2 + 1e-4, 0}, {}, 1.0, 1.0});
    world.set_sleeping(load, true);
    world.step(0.1);
    EXPECT_FALSE(world.sleeping(load));
    world.step(3.0);
    EXPECT_LT(world.ball(load).position.y, 1.5);
    // Only where balls can sleep; a rejected call changes nothing.
    World elastic(granular(1.0));
    add_floor(elastic);
    const BallId ball = ball_at(elastic, {0, 1, 0});
    EXPECT_THROW(elastic.set_sleeping(ball, true), InvalidArgument);
    EXPECT_FALSE(elastic.sleeping(ball));
}

// A ball given asleep stays asleep only with something under it: a static, a ball, or a ball
// given asleep that has something under it, in any order within one call. With nothing under it
// (in mid-air, against a wall alone, or on such a ball) it is added awake, standing still, and
// falls.
TEST(Sleep, ABallGivenAsleepWithNothingUnderItFalls) {
    World world(granular());
    add_floor(world);
    world.add_plane({{-3, 0, 0}, {1, 0, 0}});  // a wall
    auto asleep = [](Vec3 p) {
        BallDef def{p, {}, 0.5, 1.0};
        def.sleeping = true;
        return def;
    };
    const std::vector<BallId> ids = world.add_balls(std::vector<BallDef>{
        asleep({0, 2.5, 0}), asleep({0, 1.5, 0}), asleep({0, 0.5, 0}),  // a stack on the floor, top first
        asleep({4, 6, 0}), asleep({4, 5, 0}),                           // one on another, in mid-air
        asleep({-2.5, 4, 0})});                                         // against the wall alone
    for (int k = 0; k < 3; ++k) EXPECT_TRUE(world.sleeping(ids[k])) << k;
    for (int k = 3; k < 6; ++k) EXPECT_FALSE(world.sleeping(ids[k])) << k;
    const BallId on_top = world.add_ball(asleep({0, 3.5, 0}));  // on a ball asleep before
    EXPECT_TRUE(world.sleeping(on_top));
    EXPECT_TRUE(settle(world, 5.0));
    EXPECT_LT(world.ball(ids[3]).position.y, 1.6);
    EXPECT_LT(world.ball(ids[4]).position.y, 1.6);
    EXPECT_NEAR(world.ball(ids[5]).position.y, 0.5, 1e-3);
    EXPECT_EQ(world.ball(on_top).position.y, 3.5);
}

TEST(Sleep, ABallIsAddedAsleepOnlyStandingStillInAWorldWhereBallsSleep) {
    World world(granular());
    add_floor(world);
    BallDef moving{{0, 1, 0}, {0.1, 0, 0}, 1.0, 1.0};
    moving.sleeping = true;
    try {
        world.add_ball(moving);
        ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "balls[0].sleeping");
        EXPECT_NE(std::string(error.what()).find("[0.1, 0, 0]"), std::string::npos) << error.what();
    }
    World elastic(granular(1.0));
    add_floor(elastic);
    BallDef still{{0, 1, 0}, {}, 1.0, 1.0};
    still.sleeping = true;
    try {
        elastic.add_balls(std::vector<BallDef>{BallDef{{5, 1, 0}, {}, 1.0, 1.0}, still});
        ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "balls[1].sleeping");
    }
    EXPECT_EQ(world.ball_count() + elastic.ball_count(), 0u);
    // −0 stands still too, and is kept as +0, the bits of a ball that fell asleep.
    BallDef negative_zero{{0, 1, 0}, {-0.0, 0, -0.0}, 1.0, 1.0};
    negative_zero.sleeping = true;
    world.add_ball(negative_zero);
    const BallView view = world.balls();
    EXPECT_FALSE(std::signbit(view.vx[0]) || std::signbit(view.vz[0]));
}

TEST(Sleep, ADeepPileLoadedAtRestSleepsAgainWithinAnEventPerBall) {
    // tests/data/settled_pile.json: 1500 balls of radius 0.3 that a pour into a box of 8.5 × 8.5
    // (friction 0.5) left asleep about ten layers deep, as positions and zero velocities, not
    // marked asleep (as a pile from elsewhere comes). Loaded, the whole pile is one cluster of
    // quiet balls, and its balance (sped up, and carried on from the forces reached when a few
    // balls are set aside: islands.hpp, stand()) finds nearly all of it standing at the first test. From a new guess
    // each round and plain Gauss–Seidel, the pile cost 0.35 M events in its first second.
    scene::Scene loaded = scene::load_scene_file(std::filesystem::path(BALLISTIC_TEST_DATA_DIR) / "settled_pile.json", 1);
    ASSERT_TRUE(settle(loaded.world, 1.0));
    EXPECT_LE(events_so_far(loaded.world), loaded.world.ball_count());
    EXPECT_LT(loaded.world.max_overlap(), 1e-9);
}

namespace {

// A scene of demos/scenes run on one thread (its emitters too) to each of `times`, as `--state`
// writes it there but without the "sleeping" marks: a pile at rest that comes from elsewhere
// (another program, a file written before the marks).
std::vector<std::string> unmarked_piles(const std::string& file, std::initializer_list<double> times) {
    scene::Scene poured = scene::load_scene_file(std::filesystem::path(BALLISTIC_SCENES_DIR) / file, 1);
    scene::RunControl control;
    control.step = [&](World&, double dt) { return scene::step(poured, dt); };
    std::vector<std::string> piles;
    for (const double time : times) {
        scene::advance(poured.world, time - poured.world.time(), control);
        std::string text = scene::state_json(poured.world, poured.balls);
        const std::string mark = ",\"sleeping\":true";
        for (std::size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at)) text.erase(at, mark.size());
        piles.push_back(std::move(text));
    }
    return piles;
}

// Loaded on `threads`: the pile sleeps within two collisions per ball in its first second, then
// costs under 0.2 events per ball per second for two seconds, and at most 8 balls, or one in 500,
// move more than 1 % of their radius from where they were loaded (below). Returns the state hash
// at the end.
std::uint64_t sleeps_at_once(const std::string& text, int threads, const std::string& name) {
    scene::Scene pile = scene::load_scene_text(text, threads);
    World& world = pile.world;
    const std::size_t n = world.ball_count();
    std::vector<BallState> loaded;
    for (const BallId id : pile.balls) loaded.push_back(world.ball(id));
    scene::advance(world, 1.0);
    EXPECT_LE(world.event_counts().collisions(), 2 * n) << name;
    const std::uint64_t before = world.events_processed();
    scene::advance(world, 2.0);
    EXPECT_LT(static_cast<double>(world.events_processed() - before) / (2.0 * static_cast<double>(n)), 0.2) << name;
    EXPECT_EQ(world.sleeping_count(), n) << name;
    std::size_t moved = 0;
    for (std::size_t k = 0; k < n; ++k)
        moved += distance(world.ball(pile.balls[k]).position, loaded[k].position) > 0.01 * loaded[k].radius;
    EXPECT_LE(moved, std::max<std::size_t>(8, n / 500)) << name;
    EXPECT_LT(world.max_overlap(), 1e-9) << name;
    return world.state_hash();
}

void expect_sleeps_at_once(const std::string& text, const std::string& name) {
    EXPECT_EQ(sleeps_at_once(text, 1, name), sleeps_at_once(text, 2, name + ", 2 threads")) << name;
}

}  // namespace

// A pile at rest loaded without its marks falls asleep at load, by the balance of its clusters
// with contacts as far apart as a slow ball rises or a still ball drifts (Sleep::sleep_clusters(),
// Within::StillDrift). The few balls that move further are balls the still and jam rules stopped
// where contact forces cannot hold them, which slide as they must, and what they push: in the
// pour, eight balls such as one on a ball 63° off its top (friction 0.5), 3–7 % of their radius;
// in the funnel, a ball on one ball 34° off its top (friction 0.3) slides onto two balls on the
// floor and pushes them and three more apart.
TEST(LoadedPile, ThePourAt6And15SecondsSleepsAtOnce) {
    const std::vector<std::string> piles = unmarked_piles("pour.json", {6.0, 15.0});
    expect_sleeps_at_once(piles[0], "pour.json at 6 s");
    expect_sleeps_at_once(piles[1], "pour.json at 15 s");
}

TEST(LoadedPile, ThePileAt10SecondsSleepsAtOnce) { expect_sleeps_at_once(unmarked_piles("pile.json", {10.0})[0], "pile.json"); }

TEST(LoadedPile, TheFunnelSleepsAtOnce) {
    // All 500 balls asleep by 60 s (at 10 s a few still bounce on the ledges).
    expect_sleeps_at_once(unmarked_piles("funnel.json", {60.0})[0], "funnel.json");
}

TEST(LoadedPile, TheGaltonBinsSleepAtOnce) {
    // Frictionless chains between the dividers, whose lowest contacts carry 160 weights: balanced
    // once the dividers take their share of each ball's load in the first guess
    // (Islands::carry_down()); their balls slept up to 1.1 % of the radius apart (a slow ball
    // rises 2 % there).
    expect_sleeps_at_once(unmarked_piles("galton.json", {320.0})[0], "galton.json");
}

TEST(LoadedPile, APileThatCannotStandFalls) {
    // Loaded at rest without marks, frictionless, each on what would hold it or 0.5 % of a radius
    // above it (within the still drift, beyond the touching gap): a ball in mid-air, a ball 0.3 rad
    // off the top of a ball, a ball wedged on two free balls. Every ball falls to the floor.
    const std::string world = R"("gravity": [0, -9.81, 0], "restitution": 0.5, "planes": [{"point": [0, 0, 0], "normal": [0, 1, 0]}])";
    auto ball = [](Vec3 p) {
        std::ostringstream out;
        out.precision(17);
        out << R"({"position": [)" << p.x << ", " << p.y << ", " << p.z << R"(], "velocity": [0, 0, 0], "radius": 1})";
        return out.str();
    };
    const double apart = 2.005, side = std::sin(0.3) * apart, high = std::cos(0.3) * apart;
    const std::vector<std::pair<std::string, std::vector<Vec3>>> piles = {
        {"in mid-air", {{0, 3, 0}}},
        {"off-centre", {{0, 1, 0}, {side, 1 + high, 0}}},
        {"off-centre, over the floor", {{0, 1.005, 0}, {side, 1.005 + high, 0}}},
        {"wedged", {{-1.05, 1, 0}, {1.05, 1, 0}, {0, 1 + std::sqrt(apart * apart - 1.05 * 1.05), 0}}},
    };
    for (const auto& [name, balls] : piles) {
        std::string text = "{" + world + R"(, "balls": [)";
        for (std::size_t k = 0; k < balls.size(); ++k) text += (k ? ", " : "") + ball(balls[k]);
        scene::Scene pile = scene::load_scene_text(text + "]}", 1);
        scene::advance(pile.world, 3.0);
        for (const BallId id : pile.balls) EXPECT_LT(pile.world.ball(id).position.y, 1.0 + 1e-6) << name;
        EXPECT_LT(pile.world.max_overlap(), 1e-9) << name;
    }
}

TEST(Sleep, ElasticFrictionlessWorldsNeverSleep) {
    World world(granular(1.0));
    add_floor(world);
    ball_at(world, {0, 1, 0});
    for (int k = 0; k < 60; ++k) world.step(1.0 / 60.0);
    EXPECT_EQ(world.sleeping_count(), 0u);
}

TEST(Sleep, AnElasticBallWithFrictionStopsWedgedInACorner) {
    // Gravity presses the ball into two walls and a block's edge. Elastic but frictional, it is
    // dissipative and may sleep; with sleeping off (sleep_speed 0) the jam rule still stops it.
    // When neither could, it passed its impacts around at one instant without end (fuzz_pile),
    // friction taking the hops that would free it.
    for (const double sleep_speed : {0.1, 0.0}) {
        WorldDef def = granular(1.0);
        def.gravity = {-4.905, -9.81, -4.905};
        def.friction = 1.0;
        def.rest_speed = 1e-3;
        def.sleep_speed = sleep_speed;
        def.step_event_budget = 100000;
        World world(def);
        add_floor(world);
        world.add_plane({{-2, 0, 0}, {1, 0, 0}});
        world.add_plane({{0, 0, -2}, {0, 0, 1}});
        world.add_block({{-1, 0, -1}, {0, 0.5, 0}});
        const BallId ball = world.add_ball({{-1.3, 1.2, -1.3}, {}, 0.6, 1.0});
        ASSERT_NO_THROW(settle(world, 3.0)) << "sleep_speed " << sleep_speed;
        EXPECT_EQ(world.ball(ball).velocity, (Vec3{})) << "sleep_speed " << sleep_speed;
        EXPECT_LT(events_so_far(world), 1000u) << "sleep_speed " << sleep_speed;
        EXPECT_EQ(world.escaped_count(), 0u);
        EXPECT_LT(world.max_overlap(), 1e-9);
    }
}

TEST(Sleep, ABallBouncingStraightUpAndDownIsNoJam) {
    // Back where it was a bounce later, it has not stood still: the jam rule reads the path it
    // can have taken. Reading where it was, it stopped an elastic bouncer after 64 bounces, and
    // this one (e = 0.99) on the floor at 3.7 length/time.
    World world(granular(0.99));
    add_floor(world);
    const BallId ball = ball_at(world, {0, 3, 0}, 0.5);
    world.step(100.0);  // about 120 bounces, each at 0.99 times the speed of the one before
    EXPECT_GT(world.event_counts().ball_plane, 100u);
    EXPECT_FALSE(world.sleeping(ball));
}

TEST(Sleep, GravityChangeWakesEveryBall) {
    World world(granular());
    const Pocket pocket(world);
    ball_at(world, {0, Pocket::kTopY, 0});
    ASSERT_TRUE(settle(world, 1.0));
    world.set_gravity({-kG, 0, 0});
    EXPECT_EQ(world.sleeping_count(), 0u);
}

// A ball that the jam rule put to sleep, jammed between sleeping balls, on an awake ball that was
// moving was woken by it at once, jammed again at the same instant and fell asleep again: one
// ball of pile.json collided 900 000 times in half a second, and where rounding left no time
// between the jams, time stopped. A support standing still wakes nothing, and a moving one wakes
// a ball the jam put to sleep only once it has slept wake_delay. In these pours no step needs
// more than about 8000 collisions of one ball (a ball caged by a wall and two balls at gaps of
// 10⁻⁶, rattling at a slow contact's e = 1 until it sleeps); the loop made more than 2²⁰ in one
// step.
TEST(Sleep, NoBallCollidesWithoutBoundInAStepOfAPour) {
    std::size_t worst = 0;
    for (const std::uint64_t seed : {1, 2, 3}) {
        WorldDef def = granular(0.8);
        def.friction = 0.5;
        def.step_event_budget = 10'000'000;  // where time stopped, a step fails here
        World world(def);
        const Vec3 lo{-4, 0, -4}, hi{4, 40, 4};
        for (const Vec3 n : {Vec3{1, 0, 0}, Vec3{0, 1, 0}, Vec3{0, 0, 1}}) world.add_plane({lo, n});
        for (const Vec3 n : {Vec3{1, 0, 0}, Vec3{0, 0, 1}}) world.add_plane({hi, -n});
        test_worlds::add_generated(world, 400, 0.4, {{-4, 2, -4}, hi}, 1.0, seed);
        std::unordered_map<std::uint64_t, std::size_t> per_ball;
        // Asleep by 3.8–4.1 s, but seed 3 leaves two balls creeping down the sleeping pile,
        // hopping at rest_speed on it, until 10.7 s.
        while (world.time() < 12.0 && world.sleeping_count() < world.ball_count()) {
            world.step(1.0 / 60.0);
            ASSERT_EQ(world.events_unrecorded(), 0u);
            per_ball.clear();
            for (const CollisionEvent& e : world.events()) {
                worst = std::max(worst, ++per_ball[e.ball.value]);
                if (e.kind == EventKind::BallBall) worst = std::max(worst, ++per_ball[e.other.value]);
            }
        }
        EXPECT_EQ(world.sleeping_count(), world.ball_count()) << "seed " << seed;
        EXPECT_LT(world.max_overlap(), 1e-9);
    }
    EXPECT_LT(worst, 20000u);
}

// The clusters are tested for sleeping within a step (at most every sleep_interval, once the
// events since the last test number half of the balls), whatever the caller's step: a pile
// settles in about the same events with steps of 1/15 s as with steps of 1/240 s.
// Tested at the ends of steps alone (sleep_interval 0), the long steps let it chatter for longer.
TEST(Sleep, APileSettlesInAboutTheSameEventsWhateverTheStep) {
    auto collisions_to_sleep = [](std::uint64_t seed, double dt, double interval) {
        WorldDef def = granular(0.8);
        def.friction = 0.5;
        def.sleep_interval = interval;
        World world(def);
        const Vec3 lo{-3, 0, -3}, hi{3, 20, 3};
        for (const Vec3 n : {Vec3{1, 0, 0}, Vec3{0, 1, 0}, Vec3{0, 0, 1}}) world.add_plane({lo, n});
        for (const Vec3 n : {Vec3{1, 0, 0}, Vec3{0, 0, 1}}) world.add_plane({hi, -n});
        test_worlds::add_generated(world, 120, 0.4, {{-3, 2, -3}, hi}, 1.0, seed);
        while (world.time() < 8.0 && world.sleeping_count() < world.ball_count()) world.step(dt);
        EXPECT_EQ(world.sleeping_count(), world.ball_count()) << "seed " << seed << ", step " << dt;
        EXPECT_LT(world.max_overlap(), 1e-9);
        return static_cast<double>(world.event_counts().collisions());
    };
    const double every = WorldDef{}.sleep_interval;
    for (const std::uint64_t seed : {1, 2}) {
        const double coarse = collisions_to_sleep(seed, 1.0 / 15, every);
        const double fine = collisions_to_sleep(seed, 1.0 / 240, every);
        const double at_step_ends = collisions_to_sleep(seed, 1.0 / 15, 0.0);
        EXPECT_LT(coarse, 1.5 * fine) << "seed " << seed;  // measured: 0.99–1.00 (seeds 1–6: 0.93–1.10)
        EXPECT_GT(at_step_ends, 1.25 * coarse) << "seed " << seed;  // measured: 1.48–1.53 (seeds 1–6: 1.48–1.74)
    }
}

// A test of sleeping within a step puts a slowly sliding ball to sleep after the step's budget
// is spent, and its new prediction (the ball chasing it meets it) lies before the step's end:
// the step stops there at its budget, never beyond it. Stepped on to the end, the world ends with
// the bits of the step never stopped.
TEST(Sleep, ATestWithinAStepKeepsTheStepsBudget) {
    WorldDef def = granular(0.5);
    def.gravity = {-0.1, -9.81, 0};  // a floor tilted by 0.58 degrees
    def.sleep_friction = 0.5;
    World world(def);
    add_floor(world);
    world.add_plane({{-21.2245, 0, 0}, {1, 0, 0}});
    world.add_ball({{0, 0.5, 0}, {0.1, 0, 0}, 0.5, 1});                // slows to 0.03 by 0.7
    world.add_ball({{-1.2403515625, 0.5, 0}, {0.4, 0, 0}, 0.5, 1});   // chases it
    world.add_ball({{-20, 0.5, 0}, {-1, 0, 0}, 0.5, 1});              // meets its wall at 0.7
    std::ostringstream bytes;
    world.save(bytes);
    auto restored = [&] {
        std::istringstream in(bytes.str());
        return World::restore(in);
    };
    constexpr double kDt = 0.797;
    World free = restored();
    const std::uint64_t events = free.step(kDt).events;
    ASSERT_GT(events, 4u);
    std::uint64_t continued = 0;
    for (std::uint64_t budget = 1; budget < events; ++budget) {
        World stopped = restored();
        stopped.set_step_event_budget(budget);
        EXPECT_THROW(stopped.step(kDt), BudgetExceeded) << "budget " << budget;
        EXPECT_EQ(stopped.events_processed(), budget);
        EXPECT_LT(stopped.time(), kDt);
        const double rest = kDt - stopped.time();
        if (stopped.time() + rest != kDt) continue;  // the sum must end the step at kDt exactly
        stopped.set_step_event_budget(0);
        stopped.step(rest);
        EXPECT_EQ(stopped.state_hash(), free.state_hash()) << "budget " << budget;
        EXPECT_EQ(stopped.sleeping_count(), free.sleeping_count()) << "budget " << budget;
        ++continued;
    }
    EXPECT_GT(continued, events / 2);
}

// A step stopped by its budget keeps its tests of sleeping: the step that goes on from there (in
// the same world, or in one restored from a snapshot taken at the stop) tests at the times and
// after the events the step never stopped would have, so a settling pile, tested a hundred times
// within the step, ends with that step's bits and sleepers wherever it was stopped.
TEST(Sleep, AStepStoppedAnywhereKeepsItsTestsOfSleeping) {
    WorldDef def = granular(0.8);
    def.friction = 0.5;
    World pour(def);
    const Vec3 lo{-3, 0, -3}, hi{3, 20, 3};
    for (const Vec3 n : {Vec3{1, 0, 0}, Vec3{0, 1, 0}, Vec3{0, 0, 1}}) pour.add_plane({lo, n});
    for (const Vec3 n : {Vec3{1, 0, 0}, Vec3{0, 0, 1}}) pour.add_plane({hi, -n});
    test_worlds::add_generated(pour, 120, 0.4, {{-3, 2, -3}, hi}, 1.0, 1);
    while (pour.time() < 2.5) pour.step(1.0 / 60.0);
    std::ostringstream bytes;
    pour.save(bytes);
    auto restored = [](const std::string& snapshot) {
        std::istringstream in(snapshot);
        return World::restore(in);
    };
    const double start = pour.time();
    constexpr double kDt = 0.5;
    const double end = start + kDt;
    World free = restored(bytes.str());
    const StepResult whole = free.step(kDt);
    ASSERT_GT(free.sleeping_count(), pour.sleeping_count());  // balls fell asleep within the step
    ASSERT_LT(free.sleeping_count(), free.ball_count());
    int continued = 0;
    for (int k = 1; k < 24; ++k) {
        const std::uint64_t budget = whole.events * k / 24;
        for (const bool through_snapshot : {false, true}) {
            World stopped = restored(bytes.str());
            stopped.set_step_event_budget(budget);
            EXPECT_THROW(stopped.step(kDt), BudgetExceeded) << "budget " << budget;
            if (stopped.time() + (end - stopped.time()) != end) continue;  // must end the step exactly
            std::ostringstream at_stop;
            stopped.save(at_stop);
            World goes_on = through_snapshot ? restored(at_stop.str()) : std::move(stopped);
            goes_on.set_step_event_budget(0);
            goes_on.step(end - goes_on.time());
            EXPECT_EQ(goes_on.state_hash(), free.state_hash()) << "budget " << budget << (through_snapshot ? ", restored" : "");
            EXPECT_EQ(goes_on.sleeping_count(), free.sleeping_count()) << "budget " << budget;
            EXPECT_EQ(goes_on.events_processed(), free.events_processed()) << "budget " << budget;
            ++continued;
        }
    }
    EXPECT_GT(continued, 30);

    // A change between the stop and the step that goes on drops the stopped step's tests: a
    // sleeping ball woken standing still in the pile is tested with the others, and sleeps again.
    World stopped = restored(bytes.str());
    stopped.set_step_event_budget(whole.events / 2);
    EXPECT_THROW(stopped.step(kDt), BudgetExceeded);
    const std::vector<std::uint8_t> asleep = stopped.sleeping_flags();
    const auto first = std::find(asleep.begin(), asleep.end(), 1);
    ASSERT_NE(first, asleep.end());
    const BallId woken = stopped.balls().id[static_cast<std::size_t>(first - asleep.begin())];
    stopped.set_sleeping(woken, false);
    ASSERT_FALSE(stopped.sleeping(woken));
    stopped.set_step_event_budget(0);
    stopped.step(end - stopped.time());
    EXPECT_TRUE(stopped.sleeping(woken));
}

// Capsules alone (no plane, no block) carry sleeping balls too, and a sleeping ball stands still
// for the balls that meet it: every ball's acceleration is not the world's gravity there.
TEST(Sleep, BallSleepingOnCapsulesAloneStandsStillForTheBallDroppedOnIt) {
    WorldDef def = granular();
    def.step_event_budget = 1'000'000;  // where a sleeper seemed to fall into its capsules, time stopped
    World world(def);
    for (const double x : {-0.6, 0.6}) world.add_capsule({{x, 0, -2}, {x, 0, 2}, 0.2});
    const BallId low = ball_at(world, {0, 1.5, 0}, 0.5);
    while (world.time() < 5.0 && !world.sleeping(low)) world.step(1.0 / 60.0);
    ASSERT_TRUE(world.sleeping(low));
    const Vec3 rest = world.ball(low).position;
    EXPECT_NEAR(rest.y, std::sqrt(0.7 * 0.7 - 0.6 * 0.6), 1e-3 * 0.5);  // on both capsules (touching gap)
    const BallId high = ball_at(world, {0, 3, 0}, 0.5);
    for (int k = 0; k < 120; ++k) world.step(1.0 / 60.0);
    EXPECT_LT(world.max_overlap(), 1e-9);
    EXPECT_GT(distance(world.ball(high).position, world.ball(low).position), 1.0 - 1e-9);
    EXPECT_GT(world.ball(high).position.y, world.ball(low).position.y);  // it met the ball where it was
}

TEST(Sleep, EventRecordIsBounded) {
    WorldDef def = granular(1.0);
    def.event_record_limit = 3;
    World world(def);
    add_floor(world);
    for (int k = 0; k < 10; ++k) world.add_ball({{3.0 * k, 1, 0}, {0, -5, 0}, 1.0, 1.0});
    world.step(0.5);
    EXPECT_EQ(world.events().size(), 3u);
    EXPECT_EQ(world.events_unrecorded(), world.event_counts().collisions() - 3u);
}

TEST(Sleep, SettingsAreValidated) {
    // Each setting that breaks the rules is refused with its field named.
    auto refused = [](const char* field, auto&& set) {
        WorldDef def = granular();
        set(def);
        try {
            World world(def);
            ADD_FAILURE() << "accepted: " << field;
        } catch (const InvalidArgument& error) {
            EXPECT_EQ(error.field(), field);
        }
    };
    refused("world.sleep_speed", [](WorldDef& d) { d.sleep_speed = -1.0; });
    refused("world.sleep_time", [](WorldDef& d) { d.sleep_time = std::nan(""); });
    refused("world.sleep_friction", [](WorldDef& d) { d.sleep_friction = -0.1; });
    refused("world.friction", [](WorldDef& d) { d.friction = std::numeric_limits<double>::infinity(); });
    refused("world.sleep_events", [](WorldDef& d) { d.sleep_events = 0; });
    for (const double interval : {-1.0, std::nan("")})
        refused("world.sleep_interval", [&](WorldDef& d) { d.sleep_interval = interval; });
    for (const double lift : {-0.5, std::nan(""), std::numeric_limits<double>::infinity()})
        refused("world.wake_lift", [&](WorldDef& d) { d.wake_lift = lift; });
}
