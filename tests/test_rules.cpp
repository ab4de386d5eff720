// The collision and sleep rules, pure functions: leaving speeds of slow, grazing and pressed
// contacts, leaving every immovable contact at once, and the quick test of distance.
#include "rules/collision_rules.hpp"
#include "rules/sleep_rules.hpp"
#include "space/balls.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

using namespace ballistic;
using namespace ballistic::detail;

TEST(SleepRules, TheQuickTestOfDistanceRejectsOnlyWhatDoesNotTouch) {
    // beyond() spares the square root for neighbours clearly too far: it must never reject a
    // pair that the rounded test (d − σ <= gap) finds touching, however close to the edge.
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> unit(-1.0, 1.0), scale(-12.0, 12.0), offset(-56.0, -30.0);
    int rejected = 0;
    for (int k = 0; k < 200000; ++k) {
        const double sigma = std::exp2(scale(rng));
        const double gap = k % 5 == 0 ? 0.0 : sigma * std::exp2(scale(rng) - 20.0);
        Vec3 dir{unit(rng), unit(rng), unit(rng)};
        if (!(length(dir) > 0.1)) continue;
        dir = dir / length(dir);
        const double edge = (k % 2 ? 1.0 : -1.0) * std::exp2(offset(rng));  // mostly a few ulps off
        const Vec3 dp = dir * ((sigma + gap) * (1.0 + edge));
        const bool touching = length(dp) - sigma <= gap;
        if (SleepRules::beyond(dp, sigma + gap)) {
            ++rejected;
            EXPECT_FALSE(touching) << "sigma " << sigma << " gap " << gap;
        }
        // Two radii apart, as Sleep's walks test a pair: (d − r) − r_j against r + r_j + gap.
        const double r = sigma * 0.25, rj = sigma - r;
        if (SleepRules::beyond(dp, r + rj + gap)) {
            EXPECT_FALSE(length(dp) - r - rj <= gap) << "r " << r << " gap " << gap;
        }
        EXPECT_TRUE(SleepRules::beyond(dir * ((sigma + gap) * 1.01), sigma + gap));
    }
    EXPECT_GT(rejected, 1000);  // some near the edge are rejected too
}

TEST(CollisionRules, ASlowContactWithASleepingBallLeavesItAtLeastAtRoundingSpeed) {
    // Perfectly inelastic, but an approach of 10⁻³⁵ beside a velocity of 10⁻¹⁹ would survive its
    // own removal: it leaves at 10⁻⁹ rest_speed, which rounding cannot undo.
    EXPECT_EQ(separation_speed(1e-35, 0.0, 0.5, 0.05, true, 1e-19), kLeastLeaving * 0.05);
    EXPECT_EQ(separation_speed(0.01, 0.0, 0.5, 0.05, true), kLeastLeaving * 0.05);
    EXPECT_EQ(separation_speed(0.01, 0.05, 0.5, 0.05, true), 0.05);   // pressed: rest_speed
    EXPECT_EQ(separation_speed(0.2, 0.0, 0.5, 0.05, true), 0.1);    // fast: e u
    EXPECT_EQ(separation_speed(1e-35, 0.0, 0.5, 0.05), 1e-35);      // between awake balls: elastic
}

TEST(CollisionRules, AGrazingContactLeavesFasterThanRoundingOfTheVelocities) {
    // Balls sliding at 0.3 and approaching at 10⁻¹⁸: leaving at that, their velocities' bits
    // would not change, and the contact would be met again at once.
    const double s = separation_speed(1e-18, 0.0, 0.5, 0.05, false, 0.3);
    EXPECT_EQ(s, kGrazing * 0.3);
    EXPECT_NE(0.3 + s, 0.3);
    EXPECT_EQ(separation_speed(0.0, 0.0, 0.5, 0.05, false, 0.3), 0.0);  // no approach: no contact
    EXPECT_EQ(separation_speed(2.0, 0.0, 0.0, 0.05, false, 2.0), 0.0);  // e = 0 at a real approach
}

TEST(CollisionRules, APressedContactLeavesAtRestSpeedOrHopsAMillionthOfTheRadius) {
    EXPECT_EQ(pressed_leaving(9.81, 0.3, 0.05), 0.05);  // the defaults: rest_speed is more
    EXPECT_EQ(pressed_leaving(0.0, 0.3, 0.05), 0.0);    // nothing presses them together
    EXPECT_EQ(pressed_leaving(-9.81, 0.3, 0.05), 0.0);
    // With rest_speed 10⁻¹²: the speed that rises 10⁻⁶ of the radius against the pressing, v² / 2a.
    const double v = pressed_leaving(1000.0, 0.3, 1e-12);
    EXPECT_DOUBLE_EQ(v * v / (2.0 * 1000.0), kLeastHop * 0.3);
    EXPECT_EQ(separation_speed(0.0, v, 0.0, 1e-12), v);
}

TEST(CollisionRules, LeavingEveryImmovableContactAtOnce) {
    const Vec3 up{0, 1, 0};
    const double none[5] = {0, 0, 0, 0, 0};
    // Already leaving: unchanged. One contact: the normal part into it removed.
    {
        const Vec3 n[1] = {up};
        EXPECT_EQ(leaving({1, 2, 3}, n, none, 1).v, (Vec3{1, 2, 3}));
        EXPECT_EQ(leaving({1, -2, 3}, n, none, 1).v, (Vec3{1, 0, 3}));
        EXPECT_FALSE(leaving({1, -2, 3}, n, none, 1).wedged);
    }
    // Sliding on the floor into a ball above its side (normal (−0.6, −0.8, 0) towards the ball):
    // stopping into the ball alone would push it into the floor; into both, only the part along
    // both (z) is left.
    {
        const Vec3 n[2] = {up, {-0.6, -0.8, 0}};
        const Vec3 w = leaving({0.04, 0, 0.12}, n, none, 2).v;
        EXPECT_NEAR(w.x, 0.0, 1e-16);
        EXPECT_NEAR(w.y, 0.0, 1e-16);
        EXPECT_EQ(w.z, 0.12);
    }
    // A corner of three walls, one of them hit and left at 0.05.
    {
        const Vec3 n[3] = {{1, 0, 0}, up, {0, 0, 1}};
        const double speed[3] = {0, 0.05, 0};
        const Vec3 w = leaving({-1, -2, -3}, n, speed, 3).v;
        EXPECT_NEAR(w.x, 0.0, 1e-15);
        EXPECT_NEAR(w.y, 0.05, 1e-15);
        EXPECT_NEAR(w.z, 0.0, 1e-15);
    }
    // Wedged between nearly opposite bodies, leaving one at 0.05 takes a speed of 5 along the
    // other, and between exactly opposite ones no speed leaves both: wedged, the ball keeps only
    // what moves into neither (never sped up).
    {
        const Vec3 n[2] = {up, normalize(Vec3{0.01, -1, 0})};
        const double speed[2] = {0.05, 0};
        const Leaving left = leaving({0.3, -0.05, 0.2}, n, speed, 2);
        EXPECT_TRUE(left.wedged);
        EXPECT_EQ(left.v, (Vec3{0.3, 0, 0.2}));  // it left the tilted one already
        const Vec3 opposite[2] = {up, -up};
        const double tiny[2] = {0.05, kLeastLeaving * 0.05};
        const Leaving stuck = leaving({0.1, 0.02, -0.1}, opposite, tiny, 2);
        EXPECT_TRUE(stuck.wedged);
        EXPECT_EQ(stuck.v, (Vec3{0.1, 0, -0.1}));
    }
    // Random contacts, speeds and velocities: the answer is the nearest velocity that leaves every
    // contact at its speed, as Dykstra's alternating projections find it after many rounds, and
    // no faster than v by more than the speeds; wedged, the nearest that moves into none of them,
    // never faster than v. On one side (a ball's supports) and all around it (wedges).
    std::mt19937_64 rng(7);
    std::normal_distribution<double> normal;
    std::uniform_real_distribution<double> uniform(0.0, 0.05);
    std::size_t wedged = 0;
    for (int trial = 0; trial < 1000; ++trial) {
        const std::size_t m = 1 + static_cast<std::size_t>(trial % 4);
        const bool around = trial >= 500;
        Vec3 n[4];
        double speed[4];
        // All around, no two nearly parallel and no three nearly coplanar: Dykstra's rounds
        // converge too slowly in the thin cones those leave.
        auto spread = [&](std::size_t count) {
            for (std::size_t a = 0; a < count; ++a) {
                for (std::size_t b = a + 1; b < count; ++b) {
                    if (std::abs(dot(n[a], n[b])) > 0.9) return false;
                    for (std::size_t c = b + 1; c < count; ++c)
                        if (std::abs(dot(n[a], cross(n[b], n[c]))) < 0.1) return false;
                }
            }
            return true;
        };
        for (std::size_t k = 0; k < m; ++k) {
            do n[k] = normalize(Vec3{normal(rng), normal(rng), normal(rng)});
            while (around ? !spread(k + 1) : n[k].y < 0.3);
            speed[k] = trial % 2 ? uniform(rng) : 0.0;
        }
        const Vec3 v{normal(rng), normal(rng), normal(rng)};
        const Leaving left = leaving(v, n, speed, m);
        const Vec3 w = left.v;
        wedged += left.wedged;
        const double zero[4] = {0, 0, 0, 0};
        const double* asked = left.wedged ? zero : speed;
        Vec3 x = v, fix[4] = {};
        for (int round = 0; round < 20000; ++round) {
            for (std::size_t k = 0; k < m; ++k) {
                const Vec3 y = x + fix[k];
                const double short_by = asked[k] - dot(y, n[k]);
                const Vec3 p = short_by > 0.0 ? y + n[k] * short_by : y;
                fix[k] = y - p;
                x = p;
            }
        }
        for (std::size_t k = 0; k < m; ++k) ASSERT_GE(dot(w, n[k]), asked[k] - 1e-12) << "trial " << trial;
        ASSERT_NEAR(length(w - v), length(x - v), 1e-9) << "trial " << trial;
        ASSERT_LE(length(w), length(v) + (left.wedged ? 1e-12 : 0.05 + 1e-12)) << "trial " << trial;
        if (!around) {
            ASSERT_FALSE(left.wedged) << "trial " << trial;
        }
    }
    EXPECT_GE(wedged, 10u);  // the wedged answer is exercised
}
