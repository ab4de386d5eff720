// What is where, on its own: handles, the statics' handles, the statics (their distances, the cells
// that list capsules and blocks, the questions about a point) against closed forms.
#include "base/byte_stream.hpp"
#include "base/columns.hpp"
#include "base/parallel.hpp"
#include "space/balls.hpp"
#include "space/cells.hpp"
#include "space/handles.hpp"
#include "space/static_handles.hpp"
#include "space/statics.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <numeric>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <vector>

using namespace ballistic;
using namespace ballistic::detail;

// A column of 1 MiB or more lies on huge pages at its own offset (its colour): two columns
// allocated one after the other put the same slot in different cache sets, one way of the
// second-level cache (128 KiB) apart at most. Growing keeps the values; a small column is
// allocated as any vector.
TEST(Columns, LargeColumnsStartAtTheirOwnOffsetsAndKeepTheirValues) {
    using Huge = HugePages<double>;
    const std::size_t n = Huge::kLeast / sizeof(double);
    auto offset = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % Huge::kPage; };
    Column<double> a(n), b(n), c(n);
    for (const Column<double>* column : {&a, &b, &c}) {
        EXPECT_EQ(offset(column->data()) % 64, 0u);
        EXPECT_GE(offset(column->data()), Huge::kColourStep);
    }
    constexpr std::uintptr_t kWay = 128 << 10;
    EXPECT_NE(offset(a.data()) % kWay, offset(b.data()) % kWay);
    EXPECT_NE(offset(b.data()) % kWay, offset(c.data()) % kWay);
    std::iota(a.begin(), a.end(), 0.0);
    a.resize(3 * n + 7, -1.0);
    for (std::size_t k = 0; k < n; ++k) ASSERT_EQ(a[k], static_cast<double>(k));
    EXPECT_EQ(a.back(), -1.0);
    EXPECT_GE(offset(a.data()), Huge::kColourStep);
    Column<double> small(16, 2.5);
    EXPECT_EQ(small[15], 2.5);
    a.clear();
    a.shrink_to_fit();
    EXPECT_EQ(a.capacity(), 0u);
}

// A column of 256 KiB up to 1 MiB shares 2 MiB pages with others, one after another, each at its
// own colour, and its values survive growth. Three rounds allocate and free them all (under the
// address sanitizer, every access stays within its column).
TEST(Columns, MidSizedColumnsSharePagesAtTheirOwnOffsets) {
    using Huge = HugePages<double>;
    const std::size_t n = Huge::kShared / sizeof(double);
    ASSERT_TRUE(Huge::shared(n));
    ASSERT_FALSE(Huge::shared(n - 1));
    ASSERT_FALSE(Huge::shared(Huge::kLeast / sizeof(double)));
    auto page = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) / Huge::kPage; };
    auto offset = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % Huge::kPage; };
    constexpr std::uintptr_t kWay = 128 << 10;
    for (int round = 0; round < 3; ++round) {
        std::vector<Column<double>> columns;
        for (int k = 0; k < 8; ++k) columns.emplace_back(n, static_cast<double>(k));
        int sharing = 0;
        for (std::size_t k = 0; k < columns.size(); ++k) {
            const double* data = columns[k].data();
            EXPECT_EQ(offset(data) % 64, 0u);
            EXPECT_GE(offset(data), 64 + Huge::kColourStep);  // after the page's header, at a colour
            if (k > 0 && page(data) == page(columns[k - 1].data())) {
                ++sharing;
                EXPECT_NE(offset(data) % kWay, offset(columns[k - 1].data()) % kWay);
                EXPECT_GE(offset(data), offset(columns[k - 1].data()) + n * sizeof(double));
            }
        }
        EXPECT_GE(sharing, 4);  // a page holds at least five such columns
        for (std::size_t k = 0; k < columns.size(); ++k) {
            ASSERT_EQ(columns[k].front(), static_cast<double>(k));
            ASSERT_EQ(columns[k].back(), static_cast<double>(k));
        }
        columns[3].resize(2 * n + 1, -1.0);  // 512 KiB: shared pages again
        EXPECT_EQ(columns[3][n - 1], 3.0);
        EXPECT_EQ(columns[3].back(), -1.0);
        columns[5].resize(Huge::kLeast / sizeof(double), -2.0);  // 1 MiB: pages of its own
        EXPECT_EQ(columns[5][n - 1], 5.0);
        EXPECT_EQ(columns[5].back(), -2.0);
    }
}

// A large column freed while another is in use leaves its pages for the next column of its size
// (a re-sort builds every column anew before it frees the old ones), at that column's own colour.
// The blocks kept never hold more bytes than those in use: freeing every column gives the memory
// back.
TEST(Columns, FreedPagesServeTheNextColumnOfTheirSizeAndGoBackWithTheLast) {
    using Huge = HugePages<double>;
    const std::size_t n = 3 * Huge::kLeast / sizeof(double);
    auto page = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) / Huge::kPage; };
    auto offset = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % Huge::kPage; };
    const std::size_t live = HugeBlocks::live_bytes(), kept = HugeBlocks::kept_bytes();
    auto held = std::make_unique<Column<double>>(n, 0.5);  // in use, as the new columns of a re-sort
    std::uintptr_t first_page = 0, first_offset = 0;
    {
        Column<double> a(n, 1.0);
        first_page = page(a.data());
        first_offset = offset(a.data());
    }
    EXPECT_GT(HugeBlocks::kept_bytes(), kept);  // a's pages
    EXPECT_LE(HugeBlocks::kept_bytes(), HugeBlocks::live_bytes());
    std::vector<Column<double>> others;
    for (int k = 0; k < 3; ++k) others.emplace_back(n, 2.0);  // the first of them takes a's pages
    EXPECT_EQ(page(others[0].data()), first_page);
    EXPECT_NE(offset(others[0].data()), first_offset);
    for (const Column<double>& c : others) EXPECT_EQ(c.back(), 2.0);
    EXPECT_EQ(held->back(), 0.5);
    others.clear();
    held.reset();
    EXPECT_EQ(HugeBlocks::live_bytes(), live);
    EXPECT_LE(HugeBlocks::kept_bytes(), live);
}

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

TEST(StaticHandles, IssuesDropsAndFindsPerKind) {
    StaticHandles statics;
    statics.reserve_one<PlaneId>();
    const PlaneId p0 = statics.issue<PlaneId>(0);
    statics.reserve_one<PlaneId>();
    const PlaneId p1 = statics.issue<PlaneId>(1);
    statics.reserve_one<BlockId>();
    const BlockId b0 = statics.issue<BlockId>(0);
    EXPECT_EQ(statics.index(p1, "plane"), 1u);
    EXPECT_EQ(statics.id<BlockId>(0, "block"), b0);
    EXPECT_FALSE(statics.contains(CylinderId{p0.value}));  // each kind its own table
    // The plane at index 0 removed: the last one takes its index.
    statics.of<PlaneId>().handles.reserve_release();
    statics.drop<PlaneId>(0);
    EXPECT_FALSE(statics.contains(p0));
    EXPECT_EQ(statics.index(p1, "plane"), 0u);
    EXPECT_EQ(statics.id<PlaneId>(0, "plane"), p1);
    try {
        statics.id<PlaneId>(1, "plane");
        ADD_FAILURE() << "an index past the last plane was accepted";
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "plane");
    }
}

TEST(StaticHandles, ASnapshotRestoresEveryKindAndRefusesTooFewIds) {
    StaticHandles statics;
    for (std::uint32_t k = 0; k < 3; ++k) {
        statics.reserve_one<CapsuleId>();
        statics.issue<CapsuleId>(k);
    }
    statics.of<CapsuleId>().handles.reserve_release();
    statics.drop<CapsuleId>(1);
    statics.reserve_one<PlaneId>();
    const PlaneId plane = statics.issue<PlaneId>(0);
    std::stringstream stream;
    SnapshotWriter out(stream);
    statics.save(out);

    StaticHandles back;
    SnapshotReader in(stream);
    back.restore(in, StaticCounts{1, 0, 2, 0});
    EXPECT_EQ(back.index(plane, "plane"), 0u);
    for (std::uint32_t k = 0; k < 2; ++k) {
        const CapsuleId id = statics.id<CapsuleId>(k, "capsule");
        EXPECT_EQ(back.id<CapsuleId>(k, "capsule"), id);
        EXPECT_EQ(back.index(id, "capsule"), k);
    }
    // Read for one capsule only, the table's two live handles do not match.
    stream.clear();
    stream.seekg(0);
    StaticHandles wrong;
    SnapshotReader again(stream);
    EXPECT_THROW(wrong.restore(again, StaticCounts{1, 0, 1, 0}), InvalidArgument);
}

TEST(Balls, TheStoreAndItsRestsComeBackFromASnapshotBitForBit) {
    Statics statics;
    statics.add(Statics::checked(PlaneDef{{0, 0, 0}, {0, 1, 0}}, "planes[0]"));
    Balls balls;
    balls.rests.reset({0, -9.81, 0});
    for (std::uint32_t k = 0; k < 5; ++k)
        balls.push(BallDef{{1.0 * k, 0.5, 0.1 * k}, {0.25, -1.0 / 3.0, 0}, 0.5, 1.0 + k}, 0.125, BallId{k + 7}, k);
    balls.rest[2] = balls.rests.intern({0, kNoSupport, kNoSupport}, true, {});
    balls.jam[3] = 4;
    balls.user[4] = 99;
    std::stringstream stream;
    SnapshotWriter out(stream);
    balls.rests.save(out);
    balls.save(out);

    Balls back;
    back.rests.reset({0, -9.81, 0});
    SnapshotReader in(stream);
    const std::size_t rests = back.rests.restore(in, statics.counts());
    back.restore(in, balls.size(), 0.5, rests, 64);
    ASSERT_EQ(back.size(), balls.size());
    for (std::size_t c = 0; c < balls.double_columns().size(); ++c)
        EXPECT_EQ(*back.double_columns()[c], *balls.double_columns()[c]);
    EXPECT_EQ(back.rest, balls.rest);
    EXPECT_TRUE(back.asleep(2));
    EXPECT_EQ(back.jam, balls.jam);
    EXPECT_EQ(back.id, balls.id);
    EXPECT_EQ(back.user, balls.user);

    // A radius beyond the largest the world knows is refused.
    stream.clear();
    stream.seekg(0);
    Balls refused;
    refused.rests.reset({0, -9.81, 0});
    SnapshotReader again(stream);
    const std::size_t n = refused.rests.restore(again, statics.counts());
    EXPECT_THROW(refused.restore(again, balls.size(), 0.25, n, 64), InvalidArgument);
}

TEST(Balls, TheSumOfTheViewsSpeedsIsKeptOnlyWhileNoViewOrSlotChanges) {
    Balls balls;
    balls.rests.reset({0, 0, 0});
    for (std::uint32_t k = 0; k < 4; ++k)
        balls.push(BallDef{{3.0 * k, 0, 0}, {1.0 + k, -2.0, 0.5 * k}, 0.5, 1.0}, 0.0, BallId{k}, 0);
    EXPECT_FALSE(balls.view_speeds);  // pushing drops it
    // |vx| + |vy| + |vz| of each ball in slot order: 3 + 4.5 + 6 + 7.5.
    EXPECT_EQ(balls.view_speeds_of(0, 4), 21.0);
    EXPECT_EQ(balls.view_speeds_of(2, 4, 1.0), 14.5);
    auto keep = [&] { balls.view_speeds = balls.view_speeds_of(0, balls.size()); };
    keep();
    balls.show(1);
    EXPECT_FALSE(balls.view_speeds) << "a view written";
    keep();
    balls.move(3, 0);
    EXPECT_FALSE(balls.view_speeds) << "a slot moved";
    keep();
    balls.pop();
    EXPECT_FALSE(balls.view_speeds) << "a slot removed";
    keep();
    EXPECT_EQ(*balls.view_speeds, 7.5 + 4.5 + 6.0);  // slots 0, 1, 2 hold balls 3, 1, 2
    Parallel parallel(1);
    std::vector<std::uint64_t> scratch(balls.size());
    balls.permute({2, 1, 0}, scratch, parallel);
    EXPECT_FALSE(balls.view_speeds) << "the slots permuted";
    EXPECT_EQ(balls.view_speeds_of(0, 3), 6.0 + 4.5 + 7.5);  // now balls 2, 1, 3
}
