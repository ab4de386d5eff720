// The strong guarantee under allocation failure: this binary's operator new can be told to fail
// at its n-th allocation. Each call is tried with a failure at every allocation it makes, one
// after the other, until it succeeds; every failed attempt must leave the world exactly as it was
// (the same snapshot bytes) and able to go on.
#include <ballistic/world.hpp>

#include <gtest/gtest.h>

#include "worlds.hpp"

#include <cstdlib>
#include <functional>
#include <new>
#include <sstream>
#include <string>

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

// A pile in a well, some asleep, some awake, with a column and a spare plane (made once).
std::string make_pile() {
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    def.restitution = 0.5;
    def.threads = 1;
    World world = test_worlds::pour_into_well(def);
    world.add_plane({{0, -5, 0}, {0, 1, 0}});
    world.add_cylinder({{10, 0, 10}, {0, 1, 0}, 1.0});
    for (int k = 0; k < 150; ++k) world.step(1.0 / 60.0);
    EXPECT_GT(world.sleeping_count(), 0u);
    return save(world);
}

const std::string& pile() {
    static const std::string bytes = make_pile();
    return bytes;
}

// Tries `call` on a world restored from `bytes` with the n-th allocation failing, n = 0, 1, ...
// until it succeeds; returns how many attempts failed. After each failure the world must be as it
// was: the same snapshot bytes (`exact`), or, where a failed call may leave unused entries in the
// table of rests, the same state and the same continuation as a world never touched.
int strong(const std::string& bytes, const std::function<void(World&)>& call, bool exact = true) {
    World untouched = restore(bytes);
    const std::uint64_t hash = untouched.state_hash();
    untouched.step(0.01);
    for (int n = 0;; ++n) {
        World world = restore(bytes);
        g_fail_at = n;
        try {
            call(world);
            g_fail_at = -1;
            world.step(0.01);
            return n;
        } catch (const std::bad_alloc&) {
            g_fail_at = -1;
            if (exact) {
                EXPECT_TRUE(save(world) == bytes) << "allocation " << n << " failed and left the world changed";
            } else {
                EXPECT_EQ(world.state_hash(), hash) << "allocation " << n << " failed and left the world changed";
            }
            world.step(0.01);  // and it goes on as if nothing had been asked
            EXPECT_EQ(world.state_hash(), untouched.state_hash()) << "after allocation " << n << " failed";
            EXPECT_EQ(world.events_processed(), untouched.events_processed()) << "after allocation " << n << " failed";
        }
        if (n > 100000) {
            ADD_FAILURE() << "the call never succeeded";
            return n;
        }
    }
}

}  // namespace

TEST(StrongGuarantee, RemovingStaticsAndChangingGravityOrRestitution) {
    const std::string& bytes = pile();
    EXPECT_GT(strong(bytes, [](World& w) { w.remove_plane(w.plane_id(2)); }), 0);  // the floor
    EXPECT_GT(strong(bytes, [](World& w) { w.remove_plane(w.plane_id(5)); }), 0);  // the last plane
    EXPECT_GT(strong(bytes, [](World& w) { w.remove_cylinder(w.cylinder_id(0)); }), 0);
    EXPECT_GT(strong(bytes, [](World& w) { w.set_gravity({1, -9.81, 0}); }), 0);
    EXPECT_GT(strong(bytes, [](World& w) { w.set_restitution(1.0); }), 0);
}

TEST(StrongGuarantee, AddingStatics) {
    const std::string& bytes = pile();
    EXPECT_GT(strong(bytes, [](World& w) { w.add_plane({{0, 40, 0}, {0, -1, 0}}); }), 0);
    EXPECT_GT(strong(bytes, [](World& w) { w.add_cylinder({{-10, 0, 0}, {0, 1, 0}, 1.0}); }), 0);
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
}
