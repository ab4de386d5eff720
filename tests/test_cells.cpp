// The cells' bulk construction (Cells::assign, parallel over shares of the dense cells) against
// inserting the balls one at a time: the same lists, in the same order, for any thread count.
// The walk of the cells around one (Cells::for_each_near) against the cells one by one; the
// dense block's place and its outgrowing; the regions' cuts.
#include "space/cells.hpp"
#include "base/parallel.hpp"
#include "loop/regions.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <random>
#include <type_traits>
#include <vector>

using namespace ballistic;
using namespace ballistic::detail;

namespace {

// Every ball's cell, and the balls of that cell in list order, for each cell holding a ball.
std::vector<std::vector<std::uint32_t>> lists(const Cells& cells, std::size_t balls) {
    std::vector<std::vector<std::uint32_t>> out;
    for (std::uint32_t s = 0; s < balls; ++s) {
        out.emplace_back();
        cells.for_each_within(cells.key(s), 0, [&](std::uint32_t j) { out.back().push_back(j); });
    }
    return out;
}

// `count` keys: most in a block of `side` cells a side, every `outlier`-th far outside it.
std::vector<CellKey> keys_in(const Cells& cells, std::size_t count, double side, std::size_t outlier,
                             std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> inside(0.0, side), far(-1e6, 1e6);
    std::vector<CellKey> keys;
    for (std::size_t k = 0; k < count; ++k) {
        const bool out = outlier > 0 && k % outlier == 0;
        keys.push_back(cells.key_of(out ? Vec3{far(rng), far(rng), far(rng)} : Vec3{inside(rng), inside(rng), inside(rng)}));
    }
    return keys;
}

void expect_same_lists(const std::optional<Box>& periodic, double side, std::size_t outlier) {
    constexpr std::size_t kBalls = 150'000;
    Cells one_by_one;
    one_by_one.configure(1.0, periodic, {true, true, true}, kBalls);
    const std::vector<CellKey> keys = keys_in(one_by_one, kBalls, side, outlier, 7);
    const CellKey lo{0, 0, 0}, hi{static_cast<std::int32_t>(side) - 1, static_cast<std::int32_t>(side) - 1,
                                  static_cast<std::int32_t>(side) - 1};
    if (!periodic) {
        ASSERT_TRUE(one_by_one.fit_dense(lo, hi));
    }
    ASSERT_GE(one_by_one.dense_cells(0) * one_by_one.dense_cells(1) * one_by_one.dense_cells(2), 4 << 16)
        << "too few dense cells for four shares";
    for (std::uint32_t s = 0; s < kBalls; ++s) one_by_one.insert(s, keys[s]);
    const auto expected = lists(one_by_one, kBalls);

    for (const int threads : {1, 2, 4}) {
        Parallel parallel(threads);
        Cells bulk;
        bulk.configure(1.0, periodic, {true, true, true}, kBalls);
        if (!periodic) {
            ASSERT_TRUE(bulk.fit_dense(lo, hi));
        }
        bulk.assign(keys, parallel);
        for (std::uint32_t s = 0; s < kBalls; ++s) ASSERT_EQ(bulk.key(s), keys[s]) << s;
        EXPECT_EQ(lists(bulk, kBalls), expected) << threads << " threads";
    }
}

}  // namespace

TEST(Cells, AssignMakesTheListsOfInsertionInSlotOrderPeriodic) {
    expect_same_lists(Box{{0.0, 0.0, 0.0}, {70.0, 70.0, 70.0}}, 70.0, 0);
}

TEST(Cells, AssignMakesTheListsOfInsertionInSlotOrderWithHashedCells) {
    // Balls far outside the dense block land in hashed buckets shared by distant cells, enough
    // of them that the buckets are rehashed on the way.
    expect_same_lists(std::nullopt, 64.0, 97);
}

namespace {

// for_each_near() against for_each_within(): the balls of the 27 cells around every cell, and of
// each face's layer of 9, each once; in the dense block, at its faces, beyond it in hashed cells,
// and across the faces of a periodic box that wrap. A ball handed without a shift (NoShift) is no
// periodic image: its cell is next to the probed one without wrapping.
void expect_near_is_within(const Cells& cells, std::int32_t from, std::int32_t to) {
    auto within = [&](const CellKey& key, std::uint32_t layer) {
        std::vector<std::uint32_t> slots;
        for (std::uint32_t c = 0; c < 27; ++c) {
            if (!(layer & (1u << c))) continue;
            const auto [x, y, z] = Cells::kNear[c];
            const CellKey at{key.x + x - 1, key.y + y - 1, key.z + z - 1};
            cells.for_each_within(at, 0, [&](std::uint32_t j) { slots.push_back(j); });
        }
        std::sort(slots.begin(), slots.end());
        return slots;
    };
    for (std::int32_t x = from; x <= to; ++x)
        for (std::int32_t y = from; y <= to; ++y)
            for (std::int32_t z = from; z <= to; ++z) {
                const CellKey key{x, y, z};
                for (int face = -1; face < 6; ++face) {
                    const std::uint32_t layer = face < 0 ? Cells::kAllNear : Cells::layer_beyond(face);
                    std::vector<std::uint32_t> near;
                    bool images_plain = true;
                    cells.for_each_near(key, [&](std::uint32_t j, const auto& shift) {
                        near.push_back(j);
                        if constexpr (std::is_same_v<std::decay_t<decltype(shift)>, Cells::NoShift>)
                            for (int d = 0; d < 3; ++d)
                                images_plain = images_plain && std::abs(cells.key(j)[d] - key[d]) <= 1;
                    }, layer);
                    std::sort(near.begin(), near.end());
                    ASSERT_EQ(near, within(key, layer)) << x << ' ' << y << ' ' << z << ", face " << face;
                    ASSERT_TRUE(images_plain) << x << ' ' << y << ' ' << z << ", face " << face;
                }
            }
}

// Two balls in every cell of a cube `side` cells wide from the origin, and (outside a periodic
// box) a few far off.
void fill(Cells& cells, std::int32_t side) {
    std::uint32_t s = 0;
    for (std::int32_t x = 0; x < side; ++x)
        for (std::int32_t y = 0; y < side; ++y)
            for (std::int32_t z = 0; z < side; ++z)
                for (int k = 0; k < 2; ++k) cells.insert(s++, {x, y, z});
    if (!cells.periodic())
        for (const CellKey far : {CellKey{-40, 3, 3}, CellKey{3, 50, -60}, CellKey{side, side, side}})
            cells.insert(s++, far);
}

}  // namespace

TEST(Cells, NearCellsHoldTheBallsWithinOneCellInABlockAndBeyondIt) {
    Cells cells;
    cells.configure(1.0, std::nullopt, {}, 2 * 8 * 8 * 8 + 3);
    ASSERT_TRUE(cells.fit_dense({0, 0, 0}, {7, 7, 7}));
    fill(cells, 8);
    expect_near_is_within(cells, -4, 12);  // the block (with its margin of two cells) and beyond
}

TEST(Cells, NearCellsHoldTheBallsWithinOneCellAcrossPeriodicFaces) {
    for (const std::array<bool, 3> wraps : {std::array{true, true, true}, std::array{true, false, true}}) {
        Cells cells;
        cells.configure(1.0, Box{{0.0, 0.0, 0.0}, {6.0, 6.0, 6.0}}, wraps, 2 * 6 * 6 * 6);
        fill(cells, 6);
        expect_near_is_within(cells, 0, 5);
    }
}

// A pile 10 cells deep under a sparse cloud 300 cells tall: too many cells for a dense block
// around every ball, so the block is the slab that holds the most balls, the pile's layers.
TEST(Cells, ATallWorldGetsItsDenseCellsWhereMostBallsAre) {
    std::vector<CellKey> keys;
    std::mt19937 random(5);
    std::uniform_int_distribution<std::int32_t> across(0, 29), pile(0, 9), cloud(10, 299);
    for (int k = 0; k < 4000; ++k) keys.push_back({across(random), pile(random), across(random)});
    for (int k = 0; k < 1000; ++k) keys.push_back({across(random), cloud(random), across(random)});
    keys.push_back({0, 299, 0});  // the cloud's top and the room's corner, that the block spans
    keys.push_back({29, 0, 29});
    Cells cells;
    cells.configure(1.0, std::nullopt, {}, keys.size());
    const CellKey lo{0, 0, 0}, hi{29, 299, 29};
    ASSERT_FALSE(cells.fit_dense(lo, hi));  // 270 000 cells, more than 16 per ball
    ASSERT_TRUE(cells.fit_dense_slab(keys, lo, hi));
    EXPECT_EQ(cells.dense_cells(0), 34);  // the layer across, with margins of two cells
    EXPECT_EQ(cells.dense_cells(2), 34);
    EXPECT_LE(cells.dense_lo(1), 0);      // the whole pile, and a few layers of the cloud over it
    EXPECT_GE(cells.dense_lo(1) + cells.dense_cells(1), 10);
    EXPECT_LE(double(cells.dense_cells(0) * cells.dense_cells(1) * cells.dense_cells(2)), 16.0 * double(keys.size()));
    // A slab thinner than 8 cells is not worth it: a layer too wide for the balls.
    Cells wide;
    wide.configure(1.0, std::nullopt, {}, 100);
    const std::vector<CellKey> few(100, CellKey{0, 0, 0});
    EXPECT_FALSE(wide.fit_dense_slab(few, {0, 0, 0}, {999, 20, 999}));
    EXPECT_EQ(wide.dense_cells(0), 0);
}

// Balls that leave the dense block one by one (a pour falling below where it began): the cells say
// they are outgrown once more than an eighth of the balls has left (World::Impl::reorder() then
// fits new ones where the balls are).
TEST(Cells, OutgrownOnceAnEighthOfTheBallsHasLeftTheDenseBlock) {
    constexpr std::uint32_t kBalls = 800;
    Parallel parallel(1);
    Cells cells;
    cells.configure(1.0, std::nullopt, {}, kBalls);
    ASSERT_TRUE(cells.fit_dense({0, 10, 0}, {9, 19, 9}));
    std::vector<CellKey> keys;
    for (std::uint32_t s = 0; s < kBalls; ++s)
        keys.push_back({static_cast<std::int32_t>(s % 10), static_cast<std::int32_t>(10 + s / 10 % 10), static_cast<std::int32_t>(s / 100)});
    cells.assign(keys, parallel);
    EXPECT_FALSE(cells.outgrown(kBalls));
    for (std::uint32_t s = 0; s <= kBalls / 8; ++s) {
        EXPECT_FALSE(cells.outgrown(kBalls)) << s << " balls left";
        keys[s].y = 0;  // below the block and its margin
        cells.move(s, keys[s]);
        cells.move(s, keys[s]);  // a move between hashed cells leaves nothing
    }
    EXPECT_TRUE(cells.outgrown(kBalls));
}

// Eight regions of a cube of dense cells: three cuts when it holds at most 8 cells per ball, two
// axes at most beyond that, so that the stamps of RegionLoop stay at 8 per ball.
TEST(RegionPlan, ABlockOfMoreThanEightCellsPerBallIsCutAlongTwoAxesAtMost) {
    for (const std::size_t balls : {20'000, 80'000}) {  // 10.8 and 5.1 dense cells per ball
        Cells cells;
        cells.configure(1.0, std::nullopt, {}, balls);
        ASSERT_TRUE(cells.fit_dense({0, 0, 0}, {55, 55, 55}));  // 60 or 74 a side, with its margins
        std::mt19937 random(9);
        std::uniform_int_distribution<std::int32_t> along(0, 55);
        std::vector<CellKey> keys;
        for (std::size_t k = 0; k < balls; ++k) keys.push_back({along(random), along(random), along(random)});
        RegionPlan plan;
        plan.plan(cells, keys, keys.size(), Vec3{}, 8, 0);
        EXPECT_EQ(plan.count(), 8u) << balls;
        const int cut = int(plan.pieces(0) > 1) + int(plan.pieces(1) > 1) + int(plan.pieces(2) > 1);
        EXPECT_EQ(cut, balls == 20'000 ? 2 : 3) << balls << " balls";
    }
}

// Two regions of a row of dense cells 96 long, 100 balls in each cell: weights of 1 and 3 give the
// first a quarter of them, up to a cell; weights of a plan cut into other pieces leave halves.
TEST(RegionPlan, WeightsShareTheBallsAlongTheCut) {
    Cells cells;
    cells.configure(1.0, std::nullopt, {}, 9600);
    ASSERT_TRUE(cells.fit_dense({0, 0, 0}, {95, 9, 9}));
    std::vector<CellKey> keys;
    for (std::int32_t x = 0; x < 96; ++x)
        for (std::int32_t k = 0; k < 100; ++k) keys.push_back({x, k % 10, k / 10});
    auto first_share = [&](const RegionWeights& weights) {
        RegionPlan plan;
        plan.plan(cells, keys, keys.size(), Vec3{}, 2, 0, weights);
        EXPECT_EQ(plan.count(), 2u);
        EXPECT_EQ(plan.pieces(0), 2u);
        return std::count_if(keys.begin(), keys.end(), [&](const CellKey& key) { return plan.region_of(key) == 0; });
    };
    EXPECT_EQ(first_share({}), 4800);
    EXPECT_NEAR(double(first_share({{2, 1, 1}, {1.0, 3.0}})), 2400.0, 100.0);
    EXPECT_NEAR(double(first_share({{2, 1, 1}, {3.0, 1.0}})), 7200.0, 100.0);
    EXPECT_EQ(first_share({{1, 2, 1}, {1.0, 3.0}}), 4800);
    EXPECT_EQ(first_share({{2, 1, 1}, {1.0, 3.0, 1.0}}), 4800);
}
