// The cells' bulk construction (Grid::assign, parallel over shares of the dense cells) against
// inserting the balls one at a time: the same lists, in the same order, for any thread count.
#include "grid.hpp"
#include "parallel.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

using namespace ballistic;
using namespace ballistic::detail;

namespace {

// Every ball's cell, and the balls of that cell in list order, for each cell holding a ball.
std::vector<std::vector<std::uint32_t>> lists(const Grid& grid, std::size_t balls) {
    std::vector<std::vector<std::uint32_t>> out;
    for (std::uint32_t s = 0; s < balls; ++s) {
        out.emplace_back();
        grid.for_each_within(grid.key(s), 0, [&](std::uint32_t j) { out.back().push_back(j); });
    }
    return out;
}

// `count` keys: most in a block of `side` cells a side, every `outlier`-th far outside it.
std::vector<CellKey> keys_in(const Grid& grid, std::size_t count, double side, std::size_t outlier,
                             std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> inside(0.0, side), far(-1e6, 1e6);
    std::vector<CellKey> keys;
    for (std::size_t k = 0; k < count; ++k) {
        const bool out = outlier > 0 && k % outlier == 0;
        keys.push_back(grid.key_of(out ? Vec3{far(rng), far(rng), far(rng)} : Vec3{inside(rng), inside(rng), inside(rng)}));
    }
    return keys;
}

void expect_same_lists(const std::optional<Box>& periodic, double side, std::size_t outlier) {
    constexpr std::size_t kBalls = 150'000;
    Grid one_by_one;
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
        Grid bulk;
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

TEST(Grid, AssignMakesTheListsOfInsertionInSlotOrderPeriodic) {
    expect_same_lists(Box{{0.0, 0.0, 0.0}, {70.0, 70.0, 70.0}}, 70.0, 0);
}

TEST(Grid, AssignMakesTheListsOfInsertionInSlotOrderWithHashedCells) {
    // Balls far outside the dense block land in hashed buckets shared by distant cells, enough
    // of them that the buckets are rehashed on the way.
    expect_same_lists(std::nullopt, 64.0, 97);
}
