// The strong guarantee under allocation failure: this binary's operator new can be told to fail
// at its n-th allocation. Each call is tried with a failure at every allocation it makes, one
// after the other, until it succeeds; every failed attempt must leave the world exactly as it was
// (the same snapshot bytes) and able to go on. A failed step() stands at its last event (or the
// test of sleeping after it) instead, where a budget of as many events would have stopped it.
#include <ballistic/scene/scene.hpp>
#include <ballistic/world.hpp>

#include <gtest/gtest.h>

#include "space/balls.hpp"
#include "worlds.hpp"

#include <cmath>
#include <cstdlib>
#include <functional>
#include <limits>
#include <new>
#include <sstream>
#include <string>
#include <vector>

namespace {

long g_fail_at = -1;  // allocations left before one fails; negative: none fails

}  // namespace

// The whole unaligned family is replaced, so that every such allocation and release meets (the
// sanitizers check that they do); the aligned ones stay the library's, both ends.
void* operator new(std::size_t size) {
    if (g_fail_at >= 0 && g_fail_at-- == 0) throw std::bad_alloc();
    if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
    throw std::bad_alloc();
}
void* operator new[](std::size_t size) { return operator new(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return operator new(size);
    } catch (const std::bad_alloc&) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t& tag) noexcept { return operator new(size, tag); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }

using namespace ballistic;

namespace {

using test_worlds::restore;
using test_worlds::save;

// A pile in a well, some asleep, some awake, with a column, a spare plane, a capsule and a block
// ledge in the well that balls rest on (made once).
std::string make_pile() {
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    def.restitution = 0.5;
    def.threads = 1;
    World world = test_worlds::pour_into_well(def);
    world.add_plane({{0, -5, 0}, {0, 1, 0}});
    world.add_cylinder({{10, 0, 10}, {0, 1, 0}, 1.0});
    world.add_capsule({{20, 0, 20}, {20, 3, 20}, 0.5});
    for (int k = 0; k < 150; ++k) world.step(1.0 / 60.0);
    // A block ledge in the well above the pile, and a ball dropped onto it.
    world.add_block({{0, 14, 0}, {1.2, 14.5, 2.05}});
    world.add_ball({{0.6, 15.2, 1.0}, {0.3, 0, 0.1}, 0.5, 1.0});
    for (int k = 0; k < 60; ++k) world.step(1.0 / 60.0);
    EXPECT_GT(world.sleeping_count(), 0u);
    return save(world);
}

const std::string& pile() {
    static const std::string bytes = make_pile();
    return bytes;
}

// For n = 0, 1, ...: a world restored from `bytes` on `threads`, then `call(world)` with the
// n-th allocation failing, until a call runs through, and then `ran(world)`; after each failed
// call, `failed(world, n)`. Returns how many calls failed.
template <class Call, class Failed, class Ran>
int fail_each_allocation(const std::string& bytes, int threads, Call&& call, Failed&& failed, Ran&& ran) {
    for (int n = 0; n <= 100000; ++n) {
        World world = restore(bytes, threads);
        g_fail_at = n;
        try {
            call(world);
            g_fail_at = -1;
            ran(world);
            return n;
        } catch (const std::bad_alloc&) {
            g_fail_at = -1;
        }
        failed(world, n);
    }
    ADD_FAILURE() << "the call never ran through";
    return -1;
}

// Tries `call` on a world restored from `bytes` with the n-th allocation failing, n = 0, 1, ...
// until it succeeds; returns how many attempts failed. After each failure the world must be as it
// was: the same snapshot bytes (`exact`), or, where a failed call may leave unused entries in the
// table of rests, the same state and the same continuation as a world never touched.
int strong(const std::string& bytes, const std::function<void(World&)>& call, bool exact = true) {
    World untouched = restore(bytes);
    const std::uint64_t hash = untouched.state_hash();
    untouched.step(0.01);
    return fail_each_allocation(bytes, 1, call, [&](World& world, int n) {
        if (exact) {
            EXPECT_TRUE(save(world) == bytes) << "allocation " << n << " failed and left the world changed";
        } else {
            EXPECT_EQ(world.state_hash(), hash) << "allocation " << n << " failed and left the world changed";
        }
        world.step(0.01);  // and it goes on as if nothing had been asked
        EXPECT_EQ(world.state_hash(), untouched.state_hash()) << "after allocation " << n << " failed";
        EXPECT_EQ(restore(save(world)).state_hash(), world.state_hash()) << "after allocation " << n << " failed";
        EXPECT_EQ(world.events_processed(), untouched.events_processed()) << "after allocation " << n << " failed";
    }, [](World& world) { world.step(0.01); });
}

}  // namespace

TEST(StrongGuarantee, RemovingStaticsAndChangingGravityOrRestitution) {
    const std::string& bytes = pile();
    EXPECT_GT(strong(bytes, [](World& w) { w.remove_plane(w.plane_id(2)); }), 0);  // the floor
    EXPECT_GT(strong(bytes, [](World& w) { w.remove_plane(w.plane_id(5)); }), 0);  // the last plane
    EXPECT_GT(strong(bytes, [](World& w) { w.remove_cylinder(w.cylinder_id(0)); }), 0);
    EXPECT_GT(strong(bytes, [](World& w) { w.remove_capsule(w.capsule_id(0)); }), 0);
    EXPECT_GT(strong(bytes, [](World& w) { w.remove_block(w.block_id(0)); }), 0);
    EXPECT_GT(strong(bytes, [](World& w) { w.set_gravity({1, -9.81, 0}); }), 0);
    EXPECT_GT(strong(bytes, [](World& w) { w.set_restitution(1.0); }), 0);
}

TEST(StrongGuarantee, TheTableOfRestsGrowsAgainAfterAGrowthThatFailed) {
    detail::RestTable rests;
    rests.reset({0, -9.81, 0});
    auto on = [](int plane) { return detail::Supports{plane, detail::kNoSupport, detail::kNoSupport}; };
    for (int plane = 0; plane < 15; ++plane) (void)rests.intern(on(plane), false, {});
    ASSERT_EQ(rests.size(), 16u);  // the first segment is full: the next entry takes a new one
    g_fail_at = 0;
    EXPECT_THROW((void)rests.intern(on(15), false, {}), std::bad_alloc);
    g_fail_at = -1;
    EXPECT_EQ(rests.size(), 16u);
    EXPECT_EQ(rests.intern(on(15), false, {}), 16u);
    EXPECT_EQ(rests[16].supports, on(15));
    EXPECT_EQ(rests.intern(on(3), false, {}), 4u);  // after "on nothing" and planes 0, 1 and 2
    EXPECT_EQ(rests.size(), 17u);
}

TEST(StrongGuarantee, AddingStatics) {
    const std::string& bytes = pile();
    EXPECT_GT(strong(bytes, [](World& w) { w.add_plane({{0, 40, 0}, {0, -1, 0}}); }), 0);
    EXPECT_GT(strong(bytes, [](World& w) { w.add_cylinder({{-10, 0, 0}, {0, 1, 0}, 1.0}); }), 0);
    EXPECT_GT(strong(bytes, [](World& w) { w.add_capsule({{-10, 0, 0}, {-10, 2, 0}, 1.0}); }), 0);
    EXPECT_GT(strong(bytes, [](World& w) { w.add_block({{-10, 0, -10}, {-9, 1, -9}}); }), 0);
}

TEST(StrongGuarantee, BallCalls) {
    const std::string& bytes = pile();
    const World world = restore(bytes);
    const BallId sleeper = [&] {
        for (const BallId id : world.balls().id)
            if (world.sleeping(id)) return id;
        return BallId{};
    }();
    ASSERT_TRUE(sleeper);
    // Waking the balls that touch it may add unused entries to the table of rests.
    constexpr bool kSameState = false;
    EXPECT_GT(strong(bytes, [&](World& w) { w.set_velocity(sleeper, {0, 2, 0}); }, kSameState), 0);
    EXPECT_GT(strong(bytes, [&](World& w) { w.apply_impulse(sleeper, {1, 0, 0}); }, kSameState), 0);
    EXPECT_GT(strong(bytes, [&](World& w) { w.set_position(sleeper, {1, 25, 1}); }, kSameState), 0);
    EXPECT_GT(strong(bytes, [&](World& w) { w.remove_ball(sleeper); }, kSameState), 0);
    EXPECT_GT(strong(bytes, [&](World& w) { w.add_ball({{1, 28, 1}, {}, 0.5, 1.0}); }), 0);
    EXPECT_GT(strong(bytes, [&](World& w) { w.set_sleeping(sleeper, false); }, kSameState), 0);
    // Added asleep in the air above the pile, or an awake ball put to sleep: new entries of the
    // table of rests.
    BallDef asleep{{1, 28, 1}, {}, 0.5, 1.0};
    asleep.sleeping = true;
    EXPECT_GT(strong(bytes, [&](World& w) { w.add_ball(asleep); }, kSameState), 0);
    BallId awake;
    for (const BallId id : world.balls().id)
        if (!world.sleeping(id)) awake = id;
    ASSERT_TRUE(awake);
    EXPECT_GT(strong(bytes, [&](World& w) { w.set_sleeping(awake, true); }, kSameState), 0);
}

namespace {

// After a failed step: the world goes on with nothing lost; a snapshot of it restores, and it
// steps to `until` without an escape or an overlap.
void goes_on(World& world, int threads, double until, int n) {
    const World copy = restore(save(world), threads);
    EXPECT_EQ(copy.state_hash(), world.state_hash()) << "allocation " << n;
    world.step(until - world.time());
    EXPECT_EQ(world.escaped_count(), 0u) << "allocation " << n;
    EXPECT_LT(world.max_overlap(), 1e-9) << "allocation " << n;
}

// step(dt) on a world restored from `bytes` with the n-th allocation failing, n = 0, 1, ...
// until it succeeds. A failed step must leave the world consistent at the time of its last event,
// or of the test of sleeping after it (at the step's end once every event is done): where a
// budget of as many events would have stopped it (where it was, before the first event), up to
// the balls a test that failed would have put to sleep, and able to go on. Returns how many
// attempts failed.
int stands(const std::string& bytes, double dt, int threads) {
    World untouched = restore(bytes, threads);
    const double start = untouched.time(), end = start + dt;
    const std::uint64_t before = untouched.events_processed(), hash = untouched.state_hash();
    untouched.step(dt);
    auto step = [&](World& world) { world.step(dt); };
    auto same = [&](World& world) { EXPECT_EQ(world.state_hash(), untouched.state_hash()); };
    return fail_each_allocation(bytes, threads, step, [&](World& world, int n) {
        const std::uint64_t events = world.events_processed() - before;
        const double reached = world.time();
        // The same balls where `done` has them, but for the falling asleep of the test that failed.
        auto asleep_missing = [&](const World& done) {
            for (const BallId id : done.balls().id) {
                const BallState reference = done.ball(id), failed = world.ball(id);
                EXPECT_EQ(failed.position, reference.position) << "allocation " << n;
                if (!reference.sleeping) {
                    EXPECT_EQ(failed.velocity, reference.velocity) << "allocation " << n;
                }
                if (failed.sleeping) {
                    EXPECT_TRUE(reference.sleeping) << "allocation " << n;
                }
            }
        };
        if (reached == end) {
            // Every event done: only falling asleep at the end may be missing.
            EXPECT_EQ(events, untouched.events_processed() - before) << "allocation " << n;
            asleep_missing(untouched);
        } else if (events == 0) {
            EXPECT_EQ(reached, start) << "allocation " << n;
            EXPECT_EQ(world.state_hash(), hash) << "allocation " << n << " failed before the first event";
        } else {
            World stopped = restore(bytes, threads);
            stopped.set_step_event_budget(events);
            bool budget_stopped = false;
            try {
                stopped.step(dt);
            } catch (const BudgetExceeded&) {
                budget_stopped = true;
            }
            // The budget lets the step complete when the failure came in a test of sleeping after
            // the step's last event: a step that ends at the test's time ends with the same test
            // (every awake ball is tried in both). It also goes on to a test of sleeping when the
            // next event lies beyond it, which a failure after the last event's record (taking its
            // balls' next events into the queue, or looking for the next event) cannot see: the
            // world then stands at that event, and a step to there processes the same events.
            const bool tested_after = budget_stopped && stopped.time() > reached &&
                                      stopped.events_processed() - before == events;
            if (!budget_stopped || tested_after) {
                stopped = restore(bytes, threads);
                EXPECT_EQ(stopped.step(reached - start).events, events) << "allocation " << n;
            }
            EXPECT_EQ(reached, stopped.time()) << "allocation " << n;
            if (world.state_hash() != stopped.state_hash()) asleep_missing(stopped);  // failed in the test
        }
        goes_on(world, threads, end + dt, n);
    }, same);
}

// A periodic gas of 1728 balls on two threads, processed in parallel batches.
std::string gas() {
    WorldDef def;
    def.periodic = Box{{0, 0, 0}, {12, 12, 12}};
    test_worlds::regions_from(def);
    def.threads = 2;
    World world(def);
    std::vector<BallDef> balls;
    for (int i = 0; i < 12; ++i)
        for (int j = 0; j < 12; ++j)
            for (int k = 0; k < 12; ++k) {
                const double a = 0.37 * i + 1.71 * j + 2.93 * k;
                balls.push_back({{i + 0.5, j + 0.5, k + 0.5}, {std::sin(a), std::cos(1.3 * a), std::sin(2.1 * a)}, 0.3, 1.0});
            }
    world.add_balls(balls);
    world.step(0.1);
    return save(world);
}

// A crowd of 400 balls at rest and five fast balls far from it in a room 10⁴ wide: a step of
// 4 lets them roam in blocks of cells (their cells are where they last crossed into a block).
std::string roaming() {
    WorldDef def;
    def.gravity = {0, -10, 0};
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    world.add_plane({{-5000, 0, 0}, {1, 0, 0}});
    world.add_plane({{5000, 0, 0}, {-1, 0, 0}});
    std::vector<BallDef> balls;
    for (int i = 0; i < 20; ++i)
        for (int k = 0; k < 20; ++k) balls.push_back({{i * 0.7, 0.3, k * 0.7}, {}, 0.3, 1.0});
    for (int b = 0; b < 5; ++b)
        balls.push_back({{-2000.0 + 900 * b, 300.0 + 50 * b, 40.0 * b}, {1000.0 - 300 * b, 20.0 * b, 0}, 0.3, 1.0});
    world.add_balls(balls);
    world.step(1.0 / 64);
    return save(world);
}

}  // namespace

TEST(StrongGuarantee, AStepThatFailsStandsAtItsLastEvent) {
    EXPECT_GT(stands(pile(), 0.2, 1), 0);  // sleeping, waking and settling
}

TEST(StrongGuarantee, AStepOfParallelBatchesThatFailsStandsAtItsLastEvent) {
    EXPECT_GT(stands(gas(), 0.05, 2), 0);  // and the temperature integral
}

TEST(StrongGuarantee, AStepWithRoamingBallsThatFailsStandsAtItsLastEvent) {
    // The roamers are back in their cells after a failure: nothing overlaps them on the way on.
    EXPECT_GT(stands(roaming(), 4.0, 1), 0);
}

namespace {

// step(dt) with a pause at `paused` (after the world's time) that adds `ball(world)`, on a world
// restored from `bytes` with the n-th allocation failing, n = 0, 1, ... until it succeeds:
// wherever an allocation fails, the world stands consistent at a time of the step, with the
// ball from the pause's time on, and goes on. Returns how many attempts failed.
int fails_in_a_pause(const std::string& bytes, int threads, double dt, double paused,
                     const std::function<BallDef(const World&)>& ball) {
    const World untouched = restore(bytes, threads);
    const double start = untouched.time(), end = start + dt;
    auto step = [&](World& world) {
        world.step(dt, paused, [&](World& w) {
            w.add_ball(ball(w));
            return std::numeric_limits<double>::infinity();
        });
    };
    return fail_each_allocation(bytes, threads, step, [&](World& world, int n) {
        EXPECT_GE(world.time(), start) << "allocation " << n;
        EXPECT_LE(world.time(), end) << "allocation " << n;
        if (world.ball_count() > untouched.ball_count()) {
            EXPECT_GE(world.time(), paused) << "allocation " << n;
        }
        goes_on(world, threads, end + dt, n);
    }, [&](World& world) { EXPECT_EQ(world.ball_count(), untouched.ball_count() + 1); });
}

}  // namespace

TEST(StrongGuarantee, AStepThatFailsInAPauseStandsConsistent) {
    // A ball added in a pause, one like the others and one larger than all (the events are then
    // predicted afresh there), into the pile.
    const double start = restore(pile()).time();
    for (const double radius : {0.5, 0.9})
        EXPECT_GT(fails_in_a_pause(pile(), 1, 0.2, start + 0.1, [radius](const World&) {
            return BallDef{{1.025, 25, 1.025}, {0, -1, 0}, radius, 1.0};
        }), 0) << radius;
}

TEST(StrongGuarantee, AStepOfParallelBatchesThatFailsInAPauseStandsConsistent) {
    // A small ball added in a pause of the periodic gas on two threads, at the first free place of
    // a scan between the balls.
    const std::string bytes = gas();
    const double start = restore(bytes, 2).time();
    EXPECT_GT(fails_in_a_pause(bytes, 2, 0.05, start + 0.02, [](const World& w) {
        for (int k = 0; k < 1728; ++k) {
            const Vec3 p{1.0 + k % 12, 1.0 + k / 12 % 12, 1.0 + k / 144};
            if (w.is_free(p, 0.1)) return BallDef{p, {1, 0, 0}, 0.1, 1.0};
        }
        ADD_FAILURE() << "no free place";
        return BallDef{};
    }), 0);
}

TEST(StrongGuarantee, ARunThatRunsOutOfMemoryReportsWhereItStands) {
    // The program's run: a step that fails stops the run, and the statistics say so, for the time
    // the world stands at (an allocation of the run's own may fail too, and then throws).
    const std::string text = R"({"gravity": [0, -9.81, 0], "restitution": 0.5, "box": {"min": [0, 0, 0], "max": [4, 8, 4]},
        "generate": [{"count": 40, "radius": 0.4, "min": [0, 2, 0], "max": [4, 8, 4], "speed": 1, "seed": 3}]})";
    int stopped = 0;
    for (int n = 0;; ++n) {
        scene::Scene loaded = scene::load_scene_text(text, 1);
        g_fail_at = n;
        try {
            const scene::RunStats stats = scene::run_scene(loaded, 0.5);
            g_fail_at = -1;
            if (!stats.interrupted) break;
            EXPECT_EQ(stats.stop_reason, "out of memory");
            EXPECT_EQ(stats.time, loaded.world.time());
            EXPECT_LT(stats.time, 0.5 + 1e-12);
            EXPECT_EQ(stats.state_hash, loaded.world.state_hash());
            ++stopped;
        } catch (const std::bad_alloc&) {
            g_fail_at = -1;
        }
        ASSERT_LT(n, 100000) << "the run never completed";
    }
    EXPECT_GT(stopped, 0);
}
