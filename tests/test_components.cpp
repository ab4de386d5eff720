// The engine's components on their own: handles, statics, measurements, the island
// equilibrium test, the predictor, the response, the event loop and sleeping, each against its invariants and
// closed forms.
#include "space/balls.hpp"
#include "rules/collision_rules.hpp"
#include "loop/event_loop.hpp"
#include "space/cells.hpp"
#include "space/handles.hpp"
#include "sleep/islands.hpp"
#include "events/measurements.hpp"
#include "events/predictor.hpp"
#include "events/response.hpp"
#include "sleep/sleep.hpp"
#include "rules/sleep_rules.hpp"
#include "space/statics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <optional>
#include <random>
#include <vector>

using namespace ballistic;
using namespace ballistic::detail;

TEST(Handles, IssueReleaseAndReuseWithANewGeneration) {
    Handles<BallId> handles;
    EXPECT_FALSE(handles.contains(BallId{}));
    const BallId a = handles.issue(0), b = handles.issue(1);
    EXPECT_NE(a.index(), 0u);  // index 0 is never handed out
    EXPECT_TRUE(a && b && a != b);
    EXPECT_EQ(handles.slot(b, "ball"), 1u);
    handles.moved(b, 0);
    EXPECT_EQ(handles.slot(b, "ball"), 0u);
    handles.release(a);
    EXPECT_FALSE(handles.contains(a));
    try {
        handles.slot(a, "ball");
        ADD_FAILURE() << "a stale handle was accepted";
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "ball");
    }
    const BallId c = handles.issue(5);  // reuses a's index, never a's id
    EXPECT_EQ(c.index(), a.index());
    EXPECT_NE(c, a);
    EXPECT_FALSE(handles.contains(a));
    EXPECT_EQ(handles.slot(c, "ball"), 5u);
    std::vector<std::uint32_t> live;
    handles.for_each_live([&](std::uint32_t slot) { live.push_back(slot); });
    EXPECT_EQ(live, (std::vector<std::uint32_t>{5, 0}));  // handle-index order
}

TEST(Statics, UnitDirectionsAndDistances) {
    Statics statics;
    const PlaneDef floor = Statics::checked(PlaneDef{{0, 1, 0}, {0, 5, 0}}, "planes[0]");
    EXPECT_DOUBLE_EQ(length(floor.normal), 1.0);
    statics.add(floor);
    const CylinderDef column = Statics::checked(CylinderDef{{10, 3, 0}, {0, 0, 3}, 2.0}, "cylinders[0]");
    EXPECT_DOUBLE_EQ(length(column.axis), 1.0);
    statics.add(column);
    EXPECT_DOUBLE_EQ(height(floor, {3, 4, 7}), 3.0);
    EXPECT_DOUBLE_EQ(clearance(floor, {3, 4, 7}, 0.5), 2.5);
    EXPECT_DOUBLE_EQ(clearance(column, {10, 8, -40}, 1.0), 2.0);  // 5 from the axis, radii 2 + 1
    EXPECT_FALSE(overlaps(floor, {0, 2, 0}, 1.0));                // exactly touching
    EXPECT_TRUE(overlaps(floor, {0, 1.5, 0}, 1.0));
    EXPECT_EQ(statics.overlapped({0, 2, 0}, 1.0), "");
    EXPECT_EQ(statics.overlapped({0, 1.5, 0}, 1.0), "overlaps planes[0] by 0.5");
    EXPECT_EQ(statics.overlapped({11, 3, 5}, 0.5), "overlaps cylinders[0] by 1.5");
    EXPECT_DOUBLE_EQ(statics.deepest_overlap({11, 3, 5}, 0.5), 1.5);
    EXPECT_DOUBLE_EQ(statics.deepest_overlap({0, 50, 0}, 0.5), 0.0);
    EXPECT_TRUE(statics.inside({0, 0.5, 0}));   // behind the floor
    EXPECT_TRUE(statics.inside({10.5, 3, 3}));  // inside the column
    EXPECT_FALSE(statics.inside({0, 3, 0}));
}

namespace {

// `count` random capsules (a third of them pegs) and blocks in a cube 40 wide, and a long capsule
// across it (listed for every cell).
struct RandomStatics {
    std::vector<Capsule> capsules;
    std::vector<BlockDef> blocks;
};
RandomStatics random_statics(std::uint64_t seed, int count) {
    std::mt19937_64 random(seed);
    std::uniform_real_distribution<double> at(-20.0, 20.0), size(0.0, 3.0);
    RandomStatics out;
    for (int k = 0; k < count; ++k) {
        const Vec3 a{at(random), at(random), at(random)};
        const Vec3 b = k % 3 == 0 ? a : a + Vec3{size(random), size(random), -size(random)};
        out.capsules.push_back(Statics::checked(CapsuleDef{a, b, 0.05 + 0.2 * size(random)}, "capsules"));
        const Vec3 lo{at(random), at(random), at(random)};
        out.blocks.push_back(Statics::checked(BlockDef{lo, lo + Vec3{0.1 + size(random), 0.1 + size(random), 0.1}}, "blocks"));
    }
    out.capsules.push_back(Statics::checked(CapsuleDef{{-500, 0, 0}, {500, 0, 0}, 0.5}, "capsules"));
    return out;
}

}  // namespace

TEST(Statics, CapsuleDistancesAndTheCellsThatListThem) {
    const Capsule rod = Statics::checked(CapsuleDef{{0, 0, 0}, {0, 0, 4}, 1.0}, "capsules[0]");
    EXPECT_EQ(rod.u, (Vec3{0, 0, 1}));
    EXPECT_EQ(rod.length, 4.0);
    EXPECT_DOUBLE_EQ(clearance(rod, {3, 0, 2}, 0.5), 1.5);   // beside the body
    EXPECT_DOUBLE_EQ(clearance(rod, {0, 0, 7}, 0.5), 1.5);   // beyond the end b
    EXPECT_DOUBLE_EQ(clearance(rod, {0, -3, -4}, 0.5), 3.5); // beyond the end a: 5 away
    const Capsule peg = Statics::checked(CapsuleDef{{1, 2, 3}, {1, 2, 3}, 0.5}, "capsules[1]");
    EXPECT_EQ(peg.length, 0.0);
    EXPECT_DOUBLE_EQ(clearance(peg, {1, 5, 3}, 0.5), 2.0);
    Statics statics;
    statics.add(rod);
    EXPECT_EQ(statics.overlapped({0, 1.25, 2}, 0.5), "overlaps capsules[0] by 0.25");
    EXPECT_TRUE(statics.inside({0, 0.9, 3.9}));
    EXPECT_FALSE(statics.inside({0, 0.9, 4.5}));

    // Random capsules and blocks, a long capsule among them (listed for every cell); every one
    // within reach of a point is listed in the point's cell.
    const auto [capsules, blocks] = random_statics(7, 200);
    std::mt19937_64 random(7);
    std::uniform_real_distribution<double> at(-20.0, 20.0);
    Cells cells;
    const double reach = 0.4;
    cells.configure(2 * reach, std::nullopt, {}, 0);
    FiniteCells lists;
    lists.build(capsules, blocks, cells, reach);
    std::size_t checked = 0;
    for (int n = 0; n < 100000; ++n) {
        const Vec3 p{at(random), at(random), at(random)};
        std::vector<bool> listed(capsules.size()), listed_block(blocks.size());
        lists.for_each(cells.key_of(p), true, [&](const Finite& f) { (f.block ? listed_block : listed)[f.index] = true; });
        for (std::size_t k = 0; k < capsules.size(); ++k) {
            if (clearance(capsules[k], p, reach) > 0.0) continue;
            ++checked;
            EXPECT_TRUE(listed[k]) << "capsule " << k << " at " << p.x << " " << p.y << " " << p.z;
        }
        for (std::size_t k = 0; k < blocks.size(); ++k) {
            if (clearance(blocks[k], p, reach) > 0.0) continue;
            ++checked;
            EXPECT_TRUE(listed_block[k]) << "block " << k << " at " << p.x << " " << p.y << " " << p.z;
        }
    }
    EXPECT_GT(checked, 1000u);
    // Each listed cell is near: a cell far from every static lists none but the long capsule.
    std::size_t far = 0;
    lists.for_each(cells.key_of({0, 100, 0}), true, [&](const Finite&) { ++far; });
    EXPECT_EQ(far, 1u);
    // Blocks: distances outside (faces, edges, corners) and inside (minus the depth).
    const BlockDef box{{0, 0, 0}, {2, 1, 1}};
    EXPECT_DOUBLE_EQ(clearance(box, {1, 3, 0.5}, 0.5), 1.5);                        // over a face
    EXPECT_DOUBLE_EQ(clearance(box, {3, 2, 0.5}, 0.0), std::sqrt(2.0));             // beside an edge
    EXPECT_DOUBLE_EQ(clearance(box, {-1, -1, -1}, 0.0), std::sqrt(3.0));            // off a corner
    EXPECT_DOUBLE_EQ(clearance(box, {1, 0.25, 0.5}, 0.5), -0.75);                   // inside
    EXPECT_EQ(Statics::checked(BlockDef{{0, 0, 0}, {1, 1, 1}}, "b").max, (Vec3{1, 1, 1}));
}

TEST(Statics, QuestionsAboutAPointTestTheStaticsNearItWithTheAnswersOfAllOfThem) {
    // Pegs, rods, blocks and a long rod (listed for every cell), among a floor and a column; the
    // answers read from the lists equal those of testing every static, for points and balls of
    // radii up to the lists' reach and beyond it (then every static is tested).
    Statics statics;
    statics.add(Statics::checked(PlaneDef{{0, -21, 0}, {0, 1, 0}}, "planes[0]"));
    statics.add(Statics::checked(CylinderDef{{30, 0, 0}, {0, 1, 0}, 2.0}, "cylinders[0]"));
    const RandomStatics field = random_statics(11, 300);
    for (const Capsule& c : field.capsules) statics.add(c);
    for (const BlockDef& b : field.blocks) statics.add(b);
    std::mt19937_64 random(11);
    std::uniform_real_distribution<double> at(-20.0, 20.0), unit(0.0, 1.0);
    const auto near = statics.finite_near_points(0.5);
    ASSERT_NE(near, nullptr);
    EXPECT_EQ(near->reach, 1.0);  // twice the radius asked
    EXPECT_EQ(statics.finite_near_points(0.8), near);  // within reach: the same lists
    std::size_t overlapping = 0;
    for (int n = 0; n < 50000; ++n) {
        const Vec3 p{at(random), at(random), at(random)};
        const double r = n % 10 == 0 ? 2.0 + 3.0 * unit(random) : unit(random);  // some beyond the reach
        const std::string found = statics.overlapped(p, r, near.get());
        EXPECT_EQ(found, statics.overlapped(p, r)) << p.x << " " << p.y << " " << p.z << " r " << r;
        EXPECT_EQ(statics.deepest_overlap(p, r, near.get()), statics.deepest_overlap(p, r));
        EXPECT_EQ(statics.inside(p, near.get()), statics.inside(p));
        overlapping += !found.empty();
    }
    EXPECT_GT(overlapping, 1000u);
    // A change of the capsules or blocks drops the lists; the next question builds new ones.
    statics.add(Statics::checked(BlockDef{{0, 0, 0}, {1, 1, 1}}, "blocks"));
    const auto after = statics.finite_near_points(0.5);
    EXPECT_NE(after, near);
    EXPECT_EQ(statics.overlapped({0.5, 0.5, 0.5}, 0.1, after.get()).rfind("overlaps blocks[300]", 0), 0u);  // the new one
    EXPECT_EQ(Statics{}.finite_near_points(1.0), nullptr);  // nothing finite: nothing to list
    // A ball larger than the engine accepts: no lists (cells that wide would overflow), every
    // static tested (fuzz_world found the overflow).
    EXPECT_EQ(statics.finite_near_points(1e300), nullptr);
    EXPECT_EQ(statics.overlapped({0, 0, 0}, 1e300).rfind("overlaps planes[0]", 0), 0u);
}

TEST(Statics, BadDefinitionsNameTheField) {
    try {
        Statics::checked(PlaneDef{{0, 0, 0}, {0, 0, 0}}, "planes[2]");
        ADD_FAILURE();
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "planes[2].normal");
    }
    try {
        Statics::checked(CylinderDef{{0, 0, 0}, {0, 1, 0}, -1.0}, "cylinders[1]");
        ADD_FAILURE();
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "cylinders[1].radius");
        EXPECT_STREQ(error.what(), "cylinders[1].radius: must be > 0, got -1");
    }
}

TEST(Measurements, CountsRecordsUpToTheLimitAndResets) {
    Measurements m;
    m.plane_counters.resize(2);
    m.cylinder_counters.resize(1);
    CollisionEvent ball_ball{1.0, EventKind::BallBall, {}, {}, 0, {}, {}, 2.0};
    CollisionEvent plane{1.5, EventKind::BallPlane, {}, {}, 1, {}, {}, 3.0};
    m.begin_step();
    m.room_for(3, 2);
    m.count(ball_ball, 0.25, 1e-12, 2);
    m.count(plane, 0.0, 0.0, 2);
    m.count(plane, 0.0, 2e-12, 2);
    m.count_crossing();
    EXPECT_EQ(m.counts.ball_ball, 1u);
    EXPECT_EQ(m.counts.ball_plane, 2u);
    EXPECT_EQ(m.counts.cell_crossings, 1u);
    EXPECT_EQ(m.plane_counters[1].hits, 2u);
    EXPECT_DOUBLE_EQ(m.plane_counters[1].impulse, 6.0);
    EXPECT_DOUBLE_EQ(m.virial, 0.25);
    EXPECT_DOUBLE_EQ(m.event_overlap, 2e-12);
    EXPECT_EQ(m.step_events.size(), 2u);  // the limit
    EXPECT_EQ(m.step_events_unrecorded, 1u);
    m.reset(7.0);
    EXPECT_EQ(m.counts.collisions(), 0u);
    EXPECT_EQ(m.lifetime_collisions(), 3u);
    EXPECT_EQ(m.plane_counters[1].hits, 0u);
    EXPECT_DOUBLE_EQ(m.window_start, 7.0);
    m.begin_step();
    EXPECT_TRUE(m.step_events.empty());
    EXPECT_EQ(m.step_events_unrecorded, 0u);
}

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

// A predictor, sleeping and a response over their own balls, cells (width 2, from the origin)
// and statics.
struct Predicting {
    WorldDef def;
    Balls balls;
    Cells cells;
    Statics statics;
    std::vector<Contact> contacts;
    SleepRules rules{def};
    Predictor predictor{def, balls, cells, statics, contacts, rules};
    Sleep sleep{def, balls, cells, statics, rules};
    Response response{def, balls, cells, statics, contacts, predictor, sleep};

    explicit Predicting(Vec3 gravity) {
        def.gravity = gravity;
        def.restitution = 0.5;
        balls.rests.reset(gravity);
        cells.configure(2.0, std::nullopt, {}, 8);
    }
    // A ball at rest is quiet at once (as World::add_balls() makes it).
    std::uint32_t add(Vec3 position, Vec3 velocity) {
        const auto slot = static_cast<std::uint32_t>(balls.size());
        const bool still = velocity == Vec3{};
        balls.push(BallDef{position, velocity, 0.5, 1.0}, 0.0, BallId{slot + 1}, still ? def.sleep_events : 0);
        cells.insert(slot, cells.key_of(position));
        contacts.resize(balls.size());
        return slot;
    }
};

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

TEST(Predictor, HeadOnPairMeetsAtTheClosedFormTime) {
    Predicting w({0, 0, 0});
    const std::uint32_t a = w.add({0.5, 1, 1}, {1, 0, 0}), b = w.add({3.5, 1, 1}, {-1, 0, 0});
    // Gap 3 − 1 closing at speed 2: t = 1, before a leaves its cell [0, 2) at x = 2 (t = 1.5).
    const Pending next = w.predictor.predict(a, 0.0);
    EXPECT_EQ(next.kind, Kind::BallBall);
    EXPECT_EQ(next.other, b);
    EXPECT_EQ(next.time, 1.0);
    EXPECT_EQ(w.contacts[a].event.time, 1.0);  // stored as the ball's contact, with b's counter
    EXPECT_EQ(w.contacts[a].other_counter, w.balls.counter[b]);
}

TEST(Predictor, FallingBallMeetsThePlaneOrLeavesItsCellFirst) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    const std::uint32_t low = w.add({1, 1.3, 1}, {0, 0, 0});
    // 0.8 above touching: 5 t² = 0.8, t = 0.4, inside its cell [0, 2).
    Pending next = w.predictor.predict(low, 0.0);
    EXPECT_EQ(next.kind, Kind::BallPlane);
    EXPECT_EQ(next.other, 0u);
    EXPECT_NEAR(next.time, 0.4, 1e-15);
    const std::uint32_t high = w.add({5, 7, 5}, {0, 0, 0});
    // Leaves cell [6, 8) through its lower face (face 2) when 5 t² = 1.
    next = w.predictor.predict(high, 0.0);
    EXPECT_EQ(next.kind, Kind::Crossing);
    EXPECT_EQ(next.other, 2u);
    EXPECT_NEAR(next.time, std::sqrt(0.2), 1e-15);
    EXPECT_EQ(w.contacts[high].event.kind, Kind::BallPlane);  // the contact has no horizon
}

TEST(Predictor, EnteringACellSeesTheLayerThatCameIntoReach) {
    Predicting w({0, 0, 0});
    const std::uint32_t a = w.add({1, 1, 1}, {1, 0, 0});
    const std::uint32_t far = w.add({5.5, 1, 1}, {0, 0, 0});  // cell 2 along x: out of a's reach
    Pending next = w.predictor.predict(a, 0.0);
    EXPECT_EQ(next.kind, Kind::Crossing);
    EXPECT_EQ(next.other, 1u);  // the upper x face, at x = 2
    EXPECT_EQ(next.time, 1.0);
    // Across it, cell 2 along x comes into reach, and with it the far ball: 1 + t = 5.5 − 1.
    const CellKey entered{1, 0, 0};
    w.cells.move(a, entered);
    next = w.predictor.predict_entering(a, 1.0, entered, 1);
    EXPECT_EQ(next.kind, Kind::Crossing);  // x = 4 at t = 3, before the impact at 3.5
    EXPECT_EQ(w.contacts[a].event.kind, Kind::BallBall);
    EXPECT_EQ(w.contacts[a].event.other, far);
    EXPECT_EQ(w.contacts[a].event.time, 3.5);
}

TEST(Response, HeadOnCollisionMatchesTheClosedFormAndUndoes) {
    Predicting w({0, 0, 0});
    const std::uint32_t a = w.add({0.5, 1, 1}, {1, 0, 0}), b = w.add({3.5, 1, 1}, {-1, 0, 0});
    const Pending event = w.predictor.predict(a, 0.0);
    w.predictor.predict(b, 0.0);
    Outcome out;
    w.response.compute(a, event, out);
    // Equal masses, e = 0.5, approach 2: each leaves at 0.5, the impulse (1 + e) u m / 2 = 1.5.
    ASSERT_TRUE(out.collided);
    EXPECT_EQ(w.balls.velocity(a), (Vec3{-0.5, 0, 0}));
    EXPECT_EQ(w.balls.velocity(b), (Vec3{0.5, 0, 0}));
    EXPECT_EQ(w.balls.t[a], 1.0);
    EXPECT_EQ(w.balls.position(a), (Vec3{1.5, 1, 1}));
    EXPECT_DOUBLE_EQ(out.event.impulse, 1.5);
    EXPECT_EQ(out.n_requeue, 2);  // both predicted afresh, for the commit to queue
    // Undone, both balls are as they were, bit for bit, counters and contacts included.
    w.response.undo(out);
    EXPECT_EQ(w.balls.velocity(a), (Vec3{1, 0, 0}));
    EXPECT_EQ(w.balls.velocity(b), (Vec3{-1, 0, 0}));
    EXPECT_EQ(w.balls.position(a), (Vec3{0.5, 1, 1}));
    EXPECT_EQ(w.balls.t[a], 0.0);
    EXPECT_EQ(w.balls.counter[a], 0u);
    EXPECT_EQ(w.contacts[a].event.time, 1.0);
}

TEST(Response, ASlowImpactOnTheFloorSettlesAndAFastOneBounces) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    // Falling 0.8 onto the floor: it arrives at 4 (the square root of 2 g h), bounces at e = 0.5.
    const std::uint32_t fast = w.add({1, 1.3, 1}, {});
    Outcome out;
    w.response.compute(fast, w.predictor.predict(fast, 0.0), out);
    ASSERT_TRUE(out.collided);
    EXPECT_NEAR(w.balls.velocity(fast).y, 2.0, 1e-12);
    EXPECT_NEAR(out.event.impulse, 6.0, 1e-12);  // m (1 + e) u
    EXPECT_EQ(w.balls.supports(fast)[0], kNoSupport);
    // Arriving slower than rest_speed, pressed by gravity: it rests on the floor and slides on.
    const double slow = 0.5 * w.def.rest_speed;
    const std::uint32_t resting = w.add({5, 0.5 + slow * slow / 20.0, 5}, {0.25, 0, 0});
    w.response.compute(resting, w.predictor.predict(resting, 0.0), out);
    ASSERT_TRUE(out.collided);
    EXPECT_EQ(w.balls.supports(resting)[0], 0);
    EXPECT_EQ(w.balls.acceleration(resting), (Vec3{0, 0, 0}));
    EXPECT_EQ(w.balls.velocity(resting), (Vec3{0.25, 0, 0}));
}

TEST(Response, AnImpactThatWouldLeaveTheFloorSlowerThanRestSpeedSettles) {
    // Bounced off at e u < rest_speed, a pressed ball met the floor again at once, at approaches
    // that rounding set (with e = 0 and rest_speed 10⁻¹² under g = 1000: every 10⁻⁸ time units).
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    // e = 0.5, arriving at 1.5 rest_speed: it would leave at 0.75 rest_speed.
    const double u = 1.5 * w.def.rest_speed;
    const std::uint32_t slow = w.add({1, 0.5 + u * u / 20.0, 1}, {0.25, 0, 0});
    Outcome out;
    w.response.compute(slow, w.predictor.predict(slow, 0.0), out);
    ASSERT_TRUE(out.collided);
    EXPECT_EQ(w.balls.supports(slow)[0], 0);
    EXPECT_EQ(w.balls.velocity(slow), (Vec3{0.25, 0, 0}));
    EXPECT_NEAR(out.event.impulse, u, 1e-12);  // m u: perfectly inelastic
    // e = 0: arriving at 4, it stops on the floor and rests there.
    w.def.restitution = 0.0;
    const std::uint32_t fast = w.add({5, 1.3, 5}, {});
    w.response.compute(fast, w.predictor.predict(fast, 0.0), out);
    ASSERT_TRUE(out.collided);
    EXPECT_EQ(w.balls.supports(fast)[0], 0);
    EXPECT_EQ(w.balls.velocity(fast), (Vec3{0, 0, 0}));
    EXPECT_NEAR(out.event.impulse, 4.0, 1e-12);
}

TEST(EventLoop, ProcessesInTimeOrderUpToTheEndTheBudgetOrTheFlag) {
    // Three balls falling onto a floor from different heights, elastic: each bounces for ever.
    Predicting w({0, -10, 0});
    w.def.restitution = 1.0;
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    for (const double h : {1.3, 0.9, 0.6}) w.add({1 + 4 * h, h, 1}, {});
    Measurements measurements;
    measurements.plane_counters.resize(1);
    Parallel parallel(make_serial_task_system());
    EventLoop loop(w.def, w.cells, w.response, measurements, parallel, 0.0);
    std::vector<Pending> events;
    for (std::uint32_t s = 0; s < w.balls.size(); ++s) events.push_back(w.predictor.predict(s, 0.0));
    loop.build(events, w.cells);
    // Up to t = 1: the first impacts come at sqrt(2 (h − 0.5) / g): 0.4, 0.283 and 0.141.
    measurements.begin_step();
    EXPECT_EQ(loop.run_until(1.0, 0), EventLoop::End::Reached);
    double last = 0.0;
    std::size_t impacts = 0;
    for (const CollisionEvent& e : measurements.step_events) {
        EXPECT_GE(e.time, last);
        last = e.time;
        ++impacts;
    }
    ASSERT_GE(impacts, 3u);
    EXPECT_NEAR(measurements.step_events[0].time, std::sqrt(0.02), 1e-12);
    EXPECT_EQ(loop.processed, impacts);  // no cell crossings: every ball stays in its cell
    EXPECT_LE(loop.last_processed, 1.0);
    // A budget of two events stops after two; the flag before the next.
    const std::uint64_t before = loop.processed;
    EXPECT_EQ(loop.run_until(100.0, 2), EventLoop::End::Budget);
    EXPECT_EQ(loop.processed, before + 2);
    std::atomic<bool> stop{true};
    loop.interrupt = &stop;
    EXPECT_EQ(loop.run_until(100.0, 0), EventLoop::End::Interrupted);
    EXPECT_EQ(loop.processed, before + 2);
}

TEST(Sleep, AStackFallsAsleepFromTheFloorUpAndWakes) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    ASSERT_TRUE(w.sleep.enabled());
    const std::uint32_t low = w.add({1, 0.5, 1}, {}), high = w.add({1, 1.5, 1}, {});
    // Alone, the upper ball cannot stand on an awake one; the lower one stands on the floor.
    EXPECT_TRUE(w.sleep.may_sleep(high, 0.0));
    EXPECT_FALSE(w.sleep.is_carried(high, 0.0));
    EXPECT_TRUE(w.sleep.is_carried(low, 0.0));
    const std::uint64_t counter = w.balls.counter[low];
    EXPECT_TRUE(w.sleep.sleep_if_carried(low, 0.0));
    EXPECT_TRUE(w.balls.asleep(low));
    EXPECT_EQ(w.balls.counter[low], counter + 1);  // predictions of it are stale
    EXPECT_TRUE(w.sleep.sleep_if_carried(high, 0.0));     // now on a sleeping ball
    // A ball off-centre on the sleeping pair cannot stand: it would slide off.
    const std::uint32_t tilted = w.add({1.6, 2.3, 1}, {});  // touching: 0.6² + 0.8² = 1
    EXPECT_FALSE(w.sleep.is_carried(tilted, 0.0));
    // Waking what touches a ball: the upper one, not the floor ball.
    const Sleep::Woken woken = w.sleep.prepare_wake_touching(tilted, 0.0);
    ASSERT_EQ(woken.size(), 1u);
    EXPECT_EQ(woken[0].first, high);
    w.sleep.commit_wake(woken, 0.0);
    EXPECT_FALSE(w.balls.asleep(high));
    EXPECT_TRUE(w.balls.asleep(low));
}

TEST(Sleep, ASupportLeavingABallTheJamPutToSleepWakesItOnceItHasSleptWakeDelay) {
    // A ball the jam put to sleep at 0 on a support that leaves downwards at speed 1 then: the
    // support's prediction holds a Wake of it at wake_delay, kept through a fresh prediction
    // after the support has left the touching gap, so the ball falls too instead of sleeping in
    // the air (the delay keeps a jam from waking and sleeping again at one instant).
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    const std::uint32_t support = w.add({1, 5, 1}, {0, -1, 0}), load = w.add({1, 6, 1}, {});
    w.sleep.sleep_now(load, 0.0);
    w.balls.jam[load] = SleepRules::kJamBudget + 1;
    const double delay = w.rules.wake_delay(0.5);
    ASSERT_GT(delay, 0.0);
    ASSERT_LT(delay, 0.1);  // the support leaves its cell [4, 6) at t + 5 t² = 1, t > 0.35
    Pending next = w.predictor.predict(support, 0.0);
    EXPECT_EQ(next.kind, Kind::Wake);
    EXPECT_EQ(next.other, load);
    EXPECT_EQ(next.time, delay);
    // Predicted afresh half-way (as after a stale event), the gap already open: the Wake stays.
    ASSERT_GT(0.5 * delay, 4 * w.rules.touch_gap(0.5));
    next = w.predictor.predict(support, 0.5 * delay);
    EXPECT_EQ(next.kind, Kind::Wake);
    EXPECT_EQ(next.time, delay);
    // So it does when every ball is predicted afresh within a step (a review of the cells'
    // width, a pause that adds balls): every other contact is forgotten, the Wake kept. Between
    // steps the Wake is forgotten too.
    w.contacts[load].event = {1.0, support, Kind::BallBall};
    w.predictor.forget_contacts(w.balls.size(), 0.5 * delay, true);
    EXPECT_EQ(w.contacts[load].event.kind, Kind::None);
    EXPECT_EQ(w.contacts[support].event.kind, Kind::Wake);
    next = w.predictor.predict(support, 0.5 * delay);
    EXPECT_EQ(next.kind, Kind::Wake);
    EXPECT_EQ(next.time, delay);
    const std::vector<Contact> held = w.contacts;
    w.predictor.forget_contacts(w.balls.size(), 0.5 * delay, false);
    EXPECT_NE(w.predictor.predict(support, 0.5 * delay).kind, Kind::Wake);  // asleep in the air
    w.contacts = held;
    Outcome out;
    w.response.compute(support, next, out);
    EXPECT_FALSE(w.balls.asleep(load));
    // Not jammed, a ball wakes once its support has moved away by the touching gap: here when
    // 1 τ + 5 τ² = touch_gap; jammed at a time beside which the delay rounds away, it still wakes
    // after the time it fell asleep.
    const std::uint32_t other = w.add({5, 5, 5}, {0, -1, 0}), on_other = w.add({5, 6, 5}, {});
    w.sleep.sleep_now(on_other, 0.0);
    const double opened = (std::sqrt(1.0 + 20.0 * w.rules.touch_gap(0.5)) - 1.0) / 10.0;
    next = w.predictor.predict(other, 0.0);
    EXPECT_EQ(next.kind, Kind::Wake);
    EXPECT_NEAR(next.time, opened, 1e-12 * opened + 1e-15);
    EXPECT_LT(next.time, delay);
    w.balls.t[on_other] = 1e20;
    w.balls.jam[on_other] = SleepRules::kJamBudget + 1;
    EXPECT_GT(w.rules.wake_time(w.balls, on_other, 1e20), 1e20);
}

TEST(Sleep, AJamIsACollisionAtTheSameInstantOrAfterATravelBelowRounding) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    const std::uint32_t s = w.add({1, 0.5, 1}, {1e-4, 0, 0});  // radius 0.5, on the floor, at 10⁻⁴
    EXPECT_TRUE(w.sleep.jammed(s, 0.0));     // the same instant
    EXPECT_TRUE(w.sleep.jammed(s, 1e-6));    // 10⁻¹⁰ travelled: below 10⁻⁹ r
    EXPECT_FALSE(w.sleep.jammed(s, 1e-3));   // 10⁻⁷ travelled
    w.sleep.sleep_now(s, 0.0);
    EXPECT_FALSE(w.sleep.jammed(s, 1e-6));   // a sleeping ball is hit at one instant only
    EXPECT_TRUE(w.sleep.jammed(s, 0.0));
}

TEST(Sleep, WithStaticFrictionABallAloneStandsOffCentre) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    const std::uint32_t low = w.add({1, 0.5, 1}, {});
    ASSERT_TRUE(w.sleep.sleep_if_carried(low, 0.0));
    // 0.2 rad off the top of the sleeping ball: tan 0.2 = 0.2.
    const std::uint32_t top = w.add(Vec3{1, 0.5, 1} + Vec3{std::sin(0.2), std::cos(0.2), 0}, {});
    EXPECT_FALSE(w.sleep.is_carried(top, 0.0));  // frictionless: it slides off
    w.def.sleep_friction = 0.25;
    EXPECT_TRUE(w.sleep.is_carried(top, 0.0));
    w.def.sleep_friction = 0.15;
    EXPECT_FALSE(w.sleep.is_carried(top, 0.0));
}

TEST(Sleep, AClusterInEquilibriumSettlesAtOnce) {
    Predicting w({0, -10, 0});
    w.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    const std::uint32_t low = w.add({1, 0.5, 1}, {}), high = w.add({1, 1.5, 1}, {});
    std::vector<std::uint32_t> fell;
    w.sleep.sleep_clusters(0.0, [&](std::span<const std::uint32_t> members) { fell.assign(members.begin(), members.end()); });
    EXPECT_EQ(fell, (std::vector<std::uint32_t>{low, high}));
    EXPECT_TRUE(w.balls.asleep(low) && w.balls.asleep(high));
    // A moving ball is never quiet: nothing settles.
    Predicting m({0, -10, 0});
    m.statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    m.add({1, 0.5, 1}, {0.5, 0, 0});
    m.sleep.sleep_clusters(0.0, [&](std::span<const std::uint32_t>) { ADD_FAILURE() << "a moving ball fell asleep"; });
}
