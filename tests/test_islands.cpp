// Islands: the force balance that decides which quiet clusters stand (non-negative forces within
// the friction cone carrying the weight), against hand-built clusters.
#include "sleep/islands.hpp"

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

namespace {
// One island of `n` members (slots 0..n-1), unit masses.
bool balanced(std::size_t n, const std::vector<IslandContact>& contacts, double friction = 0.0) {
    Islands islands;
    islands.local.resize(n);
    std::vector<std::uint32_t> members(n);
    for (std::uint32_t k = 0; k < n; ++k) members[k] = islands.local[k] = k;
    const std::vector<double> inv_mass(n, 1.0);
    islands.carry_down(members, contacts, inv_mass, {0, -9.81, 0});  // no heights: no forces to start from
    return islands.balanced(members, contacts, inv_mass, {0, -9.81, 0}, friction);
}

// stand() over `n` unit masses, frictionless, at these heights (none: no first guess of the
// forces), with the members `disturbed` marks on a moving ball and those `still` marks held;
// the members that stand, and the sweeps it took.
std::pair<std::vector<std::uint32_t>, std::uint64_t> stand_all(std::size_t n, const std::vector<IslandContact>& contacts,
                                                               std::vector<double> heights = {},
                                                               std::vector<char> disturbed = {},
                                                               std::vector<char> still = {}) {
    Islands islands;
    islands.height = std::move(heights);
    islands.local.resize(n);
    islands.disturbed = disturbed.empty() ? std::vector<char>(n, 0) : std::move(disturbed);
    islands.still = std::move(still);
    std::vector<std::uint32_t> members(n);
    for (std::uint32_t k = 0; k < n; ++k) members[k] = islands.local[k] = k;
    islands.stand(members, contacts, std::vector<double>(n, 1.0), {0, -9.81, 0}, 0.0,
                  [](Vec3 push) { return push.y > 1e-6; });
    return {islands.asleep_now, islands.sweeps};
}
}  // namespace

TEST(Islands, BalancedOnlyWhenNonNegativeForcesHoldTheWeight) {
    const Vec3 up{0, 1, 0};
    EXPECT_TRUE(balanced(1, {{0, kFixed, up}}));  // on a floor
    // On one fixed ball, off centre: the normal cannot cancel gravity's tangential part.
    EXPECT_FALSE(balanced(1, {{0, kFixed, normalize(Vec3{0.3, 1, 0})}}));
    // In a pocket of three fixed balls (normals 35° off vertical, 120° apart).
    const double s = std::sin(0.6), c = std::cos(0.6);
    EXPECT_TRUE(balanced(1, {{0, kFixed, {s, c, 0}},
                             {0, kFixed, {-0.5 * s, c, 0.866025403784 * s}},
                             {0, kFixed, {-0.5 * s, c, -0.866025403784 * s}}}));
    // A stack of two on a floor: the contact between them pushes the upper one (b = 1) up.
    EXPECT_TRUE(balanced(2, {{0, kFixed, up}, {0, 1, up}}));
    // Two balls side by side on nothing: no force can hold them.
    EXPECT_FALSE(balanced(2, {{0, 1, Vec3{1, 0, 0}}}));
}

TEST(Islands, WhatStandsOfAClusterFallsAsleepWithoutWhatCannot) {
    // Four unit masses, frictionless: 0 and 1 side by side on a floor, 2 on 0 at 0.9 rad off its
    // top (it slides off, and pushes 0 along the floor), 3 on 2. The cluster does not balance; 1
    // stands on its own, and 0, 2 and 3 (resting on the unbalanced ones) stay awake.
    const Vec3 up{0, 1, 0}, tilted{std::sin(0.9), std::cos(0.9), 0};
    // 0 and 1 on the floor, 2 on 0, 3 on 2: a round starts from carry_down()'s guess (in which a
    // still member passes no weight down either) or the forces reached, whichever leaves less.
    auto standing = [](std::size_t n, const std::vector<IslandContact>& contacts, std::vector<char> disturbed = {},
                       std::vector<char> still = {}) {
        return stand_all(n, contacts, {0.0, 0.0, 1.0, 2.0}, std::move(disturbed), std::move(still)).first;
    };
    using Slots = std::vector<std::uint32_t>;
    EXPECT_EQ(standing(4, {{0, kFixed, up}, {1, kFixed, up}, {0, 1, Vec3{1, 0, 0}}, {0, 2, tilted}, {2, 3, up}}),
              Slots{1});
    // A cluster that balances stands whole: the same pair with a stack of two on 0.
    EXPECT_EQ(standing(4, {{0, kFixed, up}, {1, kFixed, up}, {0, 1, Vec3{1, 0, 0}}, {0, 2, up}, {2, 3, up}}),
              (Slots{0, 1, 2, 3}));
    // It balances, but 2 rests on a moving ball too: 2 and 3 on it stay awake.
    EXPECT_EQ(standing(4, {{0, kFixed, up}, {1, kFixed, up}, {0, 1, Vec3{1, 0, 0}}, {0, 2, up}, {2, 3, up}},
                       {0, 0, 1, 0}),
              (Slots{0, 1}));
    // A ball held still by its collisions (Sleep::still()) counts as balanced and charges its
    // weight to nobody: 2 still, the whole cluster stands. But not on a ball that is neither
    // balanced nor still: with 0 on a slope down and away from 1, 2 and 3 stay awake with it.
    const std::vector<IslandContact> sliding{{0, kFixed, up}, {1, kFixed, up}, {0, 1, Vec3{1, 0, 0}}, {0, 2, tilted}, {2, 3, up}};
    EXPECT_EQ(standing(4, sliding, {}, {0, 0, 1, 0}), (Slots{0, 1, 2, 3}));
    EXPECT_EQ(standing(4, {{0, kFixed, tilted}, {1, kFixed, up}, {0, 1, Vec3{-1, 0, 0}}, {0, 2, up}, {2, 3, up}}, {},
                       {0, 0, 1, 0}),
              Slots{1});
    // Nothing holds two balls side by side in the air: none stands, in bounded rounds.
    EXPECT_TRUE(standing(2, {{0, 1, Vec3{1, 0, 0}}}).empty());
}

TEST(Islands, AClusterAllOnAMovingBallIsNotSolved) {
    // A column of three on a floor, 0 at the bottom. Whatever rests, through the others, on a
    // moving ball stays awake, whatever the balance: with 0 on one, the whole column does, and no
    // sweep runs. With 1 on one, 0 under it still stands, and the balance is solved as before.
    const Vec3 up{0, 1, 0};
    const std::vector<IslandContact> column{{0, kFixed, up}, {0, 1, up}, {1, 2, up}};
    const std::vector<double> heights{0.0, 1.0, 2.0};
    const auto [none, no_sweeps] = stand_all(3, column, heights, {1, 0, 0});
    EXPECT_TRUE(none.empty());
    EXPECT_EQ(no_sweeps, 0u);
    const auto [bottom, sweeps] = stand_all(3, column, heights, {0, 1, 0});
    EXPECT_EQ(bottom, std::vector<std::uint32_t>{0});
    EXPECT_GT(sweeps, 0u);
    // Not solved is not balanced: the same column tilted off its floor, which no force holds,
    // stands in no part either way.
    const std::vector<IslandContact> sliding{{0, kFixed, normalize(Vec3{0.3, 1, 0})}, {0, 1, up}, {1, 2, up}};
    EXPECT_TRUE(stand_all(3, sliding, heights, {1, 0, 0}).first.empty());
    EXPECT_TRUE(stand_all(3, sliding, heights).first.empty());
}

TEST(Islands, ASpedUpSolveBalancesAWalledBedAndKeepsEveryForceInItsCone) {
    // A bed 20 balls wide and 20 rows high between two walls, each ball resting on two below
    // (normals 30° off vertical) and touching its neighbours in the row: 1200 contacts, from no
    // first guess (no heights). With friction 0.5, plain Gauss–Seidel does not balance it in its
    // 200 sweeps; a solve that may give up, over 512 contacts or more, moves the forces on along
    // their last steps (islands.cpp) and does, in 137 (without friction neither does: the
    // sped-up one leaves a tenth of the other's unbalance). Whatever it reaches, every push is >= 0,
    // every hold lies in its contact's tangent plane within friction times the push (none
    // without friction), and the residuals are what the forces leave.
    constexpr std::uint32_t wide = 20, high = 20, n = wide * high;
    const double c = std::cos(M_PI / 6), s = std::sin(M_PI / 6);
    auto at = [&](std::uint32_t i, std::uint32_t j) { return j * wide + i; };
    std::vector<IslandContact> contacts;
    for (std::uint32_t j = 0; j < high; ++j) {
        for (std::uint32_t i = 0; i < wide; ++i) {
            if (j == 0) {
                contacts.push_back({at(i, j), kFixed, {0, 1, 0}});
            } else {  // on (i, j-1) and (i+1, j-1) in odd rows, (i-1, j-1) and (i, j-1) in even ones
                const bool odd = j % 2 == 1;
                for (const int d : {odd ? 0 : -1, odd ? 1 : 0}) {
                    const int below = static_cast<int>(i) + d;
                    const Vec3 n_up{(d == (odd ? 0 : -1)) ? s : -s, c, 0};
                    if (below < 0 || below >= static_cast<int>(wide)) contacts.push_back({at(i, j), kFixed, n_up});
                    else contacts.push_back({at(static_cast<std::uint32_t>(below), j - 1), at(i, j), n_up});
                }
            }
            if (i + 1 < wide) contacts.push_back({at(i, j), at(i + 1, j), {1, 0, 0}});
        }
        contacts.push_back({at(0, j), kFixed, {1, 0, 0}});
        contacts.push_back({at(wide - 1, j), kFixed, {-1, 0, 0}});
    }
    ASSERT_GE(contacts.size(), 512u);
    const Vec3 gravity{0, -9.81, 0};
    for (const double friction : {0.0, 0.5}) {
        for (const bool sped_up : {false, true}) {
            Islands islands;
            islands.local.resize(n);
            std::vector<std::uint32_t> members(n);
            for (std::uint32_t k = 0; k < n; ++k) members[k] = islands.local[k] = k;
            const std::vector<double> inv_mass(n, 1.0);
            islands.carry_down(members, contacts, inv_mass, gravity);  // no heights: no forces
            const bool balanced = islands.balanced(members, contacts, inv_mass, gravity, friction, sped_up);
            if (friction > 0.0) {
                EXPECT_EQ(balanced, sped_up);
            }
            const std::vector<Vec3> left = islands.residual;
            islands.leave(members, contacts, inv_mass, gravity);
            for (std::uint32_t k = 0; k < n; ++k) ASSERT_LT(length(left[k] - islands.residual[k]), 1e-9);
            for (std::size_t k = 0; k < contacts.size(); ++k) {
                const double push = islands.force[k];
                const Vec3 hold = islands.holding[k];
                ASSERT_GE(push, 0.0);
                ASSERT_LE(std::abs(dot(hold, contacts[k].n)), 1e-12 * (1.0 + push));
                ASSERT_LE(length(hold), friction * push * (1.0 + 1e-12));
            }
        }
    }
}

TEST(Islands, AClearlyUnbalancedBallIsSetAsideWithoutRunningTheSweepsOut) {
    // A row of 40 balls side by side on a floor, and one more on the last, 0.9 rad off its top:
    // it slides off (78 % of its weight unbalanced). The solve stops once the sweeps stall,
    // sets it aside, and the row stands, from a new guess or the forces reached (whichever leaves
    // less unbalanced), in a few dozen sweeps (200 and more when every solve ran its sweeps out).
    const Vec3 up{0, 1, 0}, tilted{std::sin(0.9), std::cos(0.9), 0};
    std::vector<IslandContact> contacts;
    for (std::uint32_t k = 0; k < 40; ++k) {
        contacts.push_back({k, kFixed, up});
        if (k + 1 < 40) contacts.push_back({k, k + 1, Vec3{1, 0, 0}});
    }
    contacts.push_back({39, 40, tilted});
    std::vector<double> heights(41, 0.0);
    heights[40] = 1.0;
    const auto [asleep, sweeps] = stand_all(41, contacts, heights);
    std::vector<std::uint32_t> row(40);
    std::iota(row.begin(), row.end(), 0u);
    EXPECT_EQ(asleep, row);
    EXPECT_LT(sweeps, 64u);
}

TEST(Islands, ATallColumnThatConvergesSlowlyStandsWhole) {
    // 24 balls stacked on a floor, each pushing the next up. Gauss–Seidel alone moves a weight
    // down one contact a sweep and spreads it as it goes: 200 sweeps do not balance 12 balls.
    // Passing each ball's load down from the top first balances the column at once.
    const Vec3 up{0, 1, 0};
    std::vector<IslandContact> contacts{{0, kFixed, up}};
    std::vector<double> heights{0.0};
    for (std::uint32_t k = 0; k + 1 < 24; ++k) {
        contacts.push_back({k, k + 1, up});
        heights.push_back(k + 1.0);
    }
    std::vector<std::uint32_t> column(24);
    std::iota(column.begin(), column.end(), 0u);
    const auto [asleep, sweeps] = stand_all(24, contacts, heights);
    EXPECT_EQ(asleep, column);
    EXPECT_LE(sweeps, 2u);
    // A 25th ball on top, 0.9 rad off centre, slides off and pushes the top one sideways: both
    // are set aside, and the column under them, from a new guess without their load, stands at
    // once (from the forces found, which still carried that load, it ran every round out).
    contacts.push_back({23, 24, Vec3{std::sin(0.9), std::cos(0.9), 0}});
    heights.push_back(24.0);
    const auto [under, more] = stand_all(25, contacts, heights);
    column.pop_back();
    EXPECT_EQ(under, column);
    EXPECT_LT(more, 64u);
}

TEST(Islands, FrictionHoldsWithinItsCone) {
    // On one fixed contact tilted 0.3 rad: held by friction when tan 0.3 <= friction. Below, the
    // unbalanced force is W (sin 0.3 − friction cos 0.3): 3 % of the weight at 0.9 tan 0.3,
    // beyond the 1 % tolerance.
    const Vec3 tilted{std::sin(0.3), std::cos(0.3), 0};
    const double tan = std::tan(0.3);  // 0.309
    EXPECT_TRUE(balanced(1, {{0, kFixed, tilted}}, 1.02 * tan));
    EXPECT_FALSE(balanced(1, {{0, kFixed, tilted}}, 0.9 * tan));
    // A ball resting off-centre on another on a floor: the pair stands when both contacts
    // hold, and falls when they cannot.
    EXPECT_TRUE(balanced(2, {{0, kFixed, {0, 1, 0}}, {0, 1, tilted}}, 1.02 * tan));
    EXPECT_FALSE(balanced(2, {{0, kFixed, {0, 1, 0}}, {0, 1, tilted}}, 0.9 * tan));
    // Friction never pulls: two balls side by side on nothing still fall.
    EXPECT_FALSE(balanced(2, {{0, 1, Vec3{1, 0, 0}}}, 10.0));
    // One ball on fixed contacts alone, as a ball falling asleep by itself is tested.
    const Vec3 weight{0, -9.81, 0};
    EXPECT_TRUE(holds(weight, &tilted, 1, 1.02 * tan));
    EXPECT_FALSE(holds(weight, &tilted, 1, 0.9 * tan));
    EXPECT_FALSE(holds(weight, &tilted, 1, 0.0));
    const Vec3 crease[2] = {tilted, Vec3{-tilted.x, tilted.y, 0}};  // a valley: pushes alone hold
    EXPECT_TRUE(holds(weight, crease, 2, 0.0));
}

TEST(Islands, MembersOnAMovingBallAndAboveItAreLifted) {
    // A column of three members over a moving ball (slot 0 rests on it), and a fourth beside the
    // column on the floor: the column is lifted, the fourth is not.
    Islands islands;
    islands.local = {0, 1, 2, 3};
    islands.disturbed = {1, 0, 0, 0};
    const std::vector<std::uint32_t> members{0, 1, 2, 3};
    const Vec3 up{0, 1, 0};
    const std::vector<IslandContact> contacts{{0, kFixed, up}, {0, 1, up}, {2, 1, -up}, {3, kFixed, up},
                                              {3, 0, Vec3{1, 0, 0}}};
    islands.on_moving(members, contacts, [&](Vec3 push) { return dot(push, up) > 1e-6; });
    EXPECT_EQ(islands.lifted, (std::vector<char>{1, 1, 1, 0}));
}
