// Every rejected input throws InvalidArgument naming the field and the value, and leaves the
// world unchanged.
#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace ballistic;

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Runs `call`, expects InvalidArgument whose field is `field` and whose message contains every
// fragment, and checks that the world's state did not change.
template <class Call>
void expect_rejected(World& world, Call call, const std::string& field, std::initializer_list<std::string> fragments) {
    const std::uint64_t hash = world.state_hash();
    const std::size_t balls = world.ball_count(), planes = world.plane_count(), cylinders = world.cylinder_count();
    try {
        call();
        ADD_FAILURE() << "no error for " << field;
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), field);
        const std::string message = error.what();
        EXPECT_EQ(message.rfind(field + ":", 0), 0u) << message;
        for (const auto& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << message << " lacks " << f;
    }
    EXPECT_EQ(world.state_hash(), hash);
    EXPECT_EQ(world.ball_count(), balls);
    EXPECT_EQ(world.plane_count(), planes);
    EXPECT_EQ(world.cylinder_count(), cylinders);
}
}  // namespace

TEST(Validation, WorldDefinition) {
    auto expect = [](WorldDef def, const std::string& field, const std::string& value) {
        try {
            World world(def);
            ADD_FAILURE() << field;
        } catch (const InvalidArgument& e) {
            EXPECT_EQ(e.field(), field);
            EXPECT_NE(std::string(e.what()).find(value), std::string::npos) << e.what();
        }
    };
    WorldDef def;
    def.gravity = {0, kNaN, 0};
    expect(def, "world.gravity", "nan");
    def = {};
    def.restitution = 1.5;
    expect(def, "world.restitution", "1.5");
    def.restitution = -0.1;
    expect(def, "world.restitution", "-0.1");
    def = {};
    def.rest_speed = 0;
    expect(def, "world.rest_speed", "0");
    def.rest_speed = 0.2;  // above sleep_speed (0.1): a pressed ball would never sleep
    expect(def, "world.rest_speed", "must be <= sleep_speed (0.1)");
    def.sleep_speed = 0;  // sleeping off: any speed
    EXPECT_NO_THROW(World{def});
    def = {};
    def.threads = -2;
    expect(def, "world.threads", "-2");
    def = {};
    def.periodic = Box{{0, 0, 0}, {1, -1, 1}};
    expect(def, "world.periodic", "-1");
    def.periodic = Box{{0, 0, 0}, {1, kInf, 1}};
    expect(def, "world.periodic.max", "inf");
}

TEST(Validation, Balls) {
    World world;
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    world.add_cylinder({{10, 0, 0}, {0, 1, 0}, 2.0});
    world.add_ball({{0, 5, 0}, {}, 1.0, 1.0});
    expect_rejected(world, [&] { world.add_ball({{kNaN, 5, 0}, {}, 1.0, 1.0}); }, "balls[0].position", {"nan"});
    expect_rejected(world, [&] { world.add_ball({{5, 5, 0}, {kInf, 0, 0}, 1.0, 1.0}); }, "balls[0].velocity", {"inf"});
    expect_rejected(world, [&] { world.add_ball({{5, 5, 0}, {}, 0.0, 1.0}); }, "balls[0].radius", {"> 0", "0"});
    expect_rejected(world, [&] { world.add_ball({{5, 5, 0}, {}, -1.0, 1.0}); }, "balls[0].radius", {"-1"});
    expect_rejected(world, [&] { world.add_ball({{5, 5, 0}, {}, 1.0, 0.0}); }, "balls[0].mass", {"0"});
    expect_rejected(world, [&] { world.add_ball({{5, 5, 0}, {}, 1.0, kNaN}); }, "balls[0].mass", {"nan"});
    expect_rejected(world, [&] { world.add_ball({{5, 5, 0}, {}, 1.0, 1e-310}); }, "balls[0].mass", {"out of range"});
    expect_rejected(world, [&] { world.add_ball({{5, 5, 0}, {}, 1e-200, 1.0}); }, "balls[0].radius", {"too small", "1.5e-154"});
    // A ball the doubles where it is cannot resolve: two of radius 0.5 at ±1e30 met fully
    // overlapped.
    expect_rejected(world, [&] { world.add_ball({{1e30, 0, 0}, {-1e30, 0, 0}, 0.5, 1.0}); }, "balls[0].radius",
                    {"smaller than the doubles there resolve", "2^-40"});
    const BallId far = world.add_ball({{0, 1e12, 0}, {}, 1.0, 1.0});
    expect_rejected(world, [&] { world.set_position(far, {0, 1e13, 0}); }, "ball.position", {"2^-40"});
    // Overlaps: another ball, the plane, the cylinder.
    expect_rejected(world, [&] { world.add_ball({{1.5, 5, 0}, {}, 1.0, 1.0}); }, "balls[0].position",
                    {"overlaps the ball", "0.5"});
    expect_rejected(world, [&] { world.add_ball({{5, 0.5, 0}, {}, 1.0, 1.0}); }, "balls[0].position",
                    {"overlaps planes[0]", "0.5"});
    expect_rejected(world, [&] { world.add_ball({{12.5, 5, 0}, {}, 1.0, 1.0}); }, "balls[0].position",
                    {"overlaps cylinders[0]", "0.5"});
    // A batch is all or nothing: the third ball overlaps the first of the same call.
    const std::vector<BallDef> batch{{{20, 5, 0}, {}, 1.0, 1.0}, {{30, 5, 0}, {}, 1.0, 1.0}, {{21, 5, 0}, {}, 1.0, 1.0}};
    expect_rejected(world, [&] { world.add_balls(batch); }, "balls[2].position", {"overlaps balls[0]"});
    // Touching exactly is allowed.
    EXPECT_NO_THROW(world.add_ball({{2, 5, 0}, {}, 1.0, 1.0}));
    EXPECT_NO_THROW(world.add_ball({{20, 1, 0}, {}, 1.0, 1.0}));
}

// A batch of many balls is checked in parallel blocks: the problem reported is still the first
// one in the batch, named as adding the balls one by one names it (of two earlier balls in one
// cell, the later: cell lists run from the newest ball), for any thread count; both when a new
// world makes its cells from all the balls at once and when a running world inserts them.
TEST(Validation, LargeBatchReportsItsFirstProblem) {
    constexpr int kSide = 30;  // 27 000 balls on a lattice of spacing 3: several blocks
    for (const int threads : {1, 2, 3}) {
        for (const bool running : {false, true}) {
            WorldDef def;
            def.threads = threads;
            World world(def);
            world.add_plane({{0, -10, 0}, {0, 1, 0}});
            BallId old;
            if (running) {
                old = world.add_ball({{-20, 0, 0}, {}, 1.0, 1.0});
                world.step(0.01);
            }
            std::vector<BallDef> batch;
            for (int i = 0; i < kSide; ++i)
                for (int j = 0; j < kSide; ++j)
                    for (int k = 0; k < kSide; ++k)
                        batch.push_back({{3.0 * i, 3.0 * j, 3.0 * k}, {1, 0, 0}, 1.0, 1.0});
            const std::string trace = std::to_string(threads) + " threads, running " + std::to_string(running);
            SCOPED_TRACE(trace);
            // Two touching balls in one cell (cells are 2.000002 wide), and one between them.
            const Vec3 a{100.2, 100.2, 100.2}, b = a + Vec3{1.155, 1.155, 1.155};
            batch[200].position = a;
            batch[201].position = b;
            batch[20'000].position = batch[100].position + Vec3{0.5, 0, 0};  // overlaps an earlier one
            batch[22'000].position = 0.5 * (a + b);                          // overlaps 200 and 201
            batch[23'000].position = {50, -10.5, 50};                        // overlaps the plane
            if (running) batch[26'000].position = {-19, 0, 0};               // overlaps the world's ball
            expect_rejected(world, [&] { world.add_balls(batch); }, "balls[20000].position", {"overlaps balls[100]", "1.5"});
            batch[20'000].position = {200, 0, 0};
            expect_rejected(world, [&] { world.add_balls(batch); }, "balls[22000].position", {"overlaps balls[201]"});
            batch[22'000].position = {200, 20, 0};
            expect_rejected(world, [&] { world.add_balls(batch); }, "balls[23000].position", {"overlaps planes[0]", "1.5"});
            batch[23'000].position = {200, 5, 0};
            if (running) {
                expect_rejected(world, [&] { world.add_balls(batch); }, "balls[26000].position",
                                {"overlaps the ball with handle " + std::to_string(old.value), "1"});
                batch[26'000].position = {200, 10, 0};
            }
            const std::vector<BallId> ids = world.add_balls(batch);
            EXPECT_EQ(ids.size(), batch.size());
            EXPECT_EQ(world.ball_count(), batch.size() + (running ? 1 : 0));
            EXPECT_NO_THROW(world.step(0.01));
        }
    }
}

// What follows a rejected batch is what would have followed without it: the same balls, and the
// same storage order after the next Morton re-sort (which sorts by the balls' cells), here with a
// batch of larger balls than the world's.
TEST(Validation, RejectedBatchChangesNothingThatFollows) {
    struct Outcome {
        std::uint64_t hash;
        double energy;
        std::vector<BallId> order;
        bool operator==(const Outcome&) const = default;
    };
    auto run = [](bool with_rejected_batch) {
        WorldDef def;
        def.threads = 2;
        World world(def);
        constexpr double kSide = 30;
        for (int d = 0; d < 3; ++d) {
            Vec3 n;
            (d == 0 ? n.x : (d == 1 ? n.y : n.z)) = 1;
            world.add_plane({{0, 0, 0}, n});
            world.add_plane({n * kSide, -1.0 * n});
        }
        GenerateDef gen;
        gen.count = 2000;
        gen.radius = 0.3;
        gen.region = {{0, 0, 0}, {kSide, kSide, kSide}};
        gen.speed = 3;
        world.add_balls(generate_balls(world, gen));
        if (with_rejected_batch) {
            gen.count = 3000;
            gen.radius = 0.5;
            gen.seed = 2;
            std::vector<BallDef> batch = generate_balls(world, gen);
            const BallView view = world.balls();
            batch.back().position = {view.x[0], view.y[0], view.z[0]};  // onto a ball of the world
            EXPECT_THROW(world.add_balls(batch), InvalidArgument);
        }
        for (int k = 0; k < 30; ++k) world.step(1.0 / 60.0);
        const auto ids = world.balls().id;
        return Outcome{world.state_hash(), world.kinetic_energy(), {ids.begin(), ids.end()}};
    };
    const Outcome plain = run(false);
    EXPECT_GT(plain.order.size(), 0u);
    EXPECT_TRUE(run(true) == plain);
}

TEST(Validation, Statics) {
    World world;
    world.add_ball({{0, 5, 0}, {}, 1.0, 1.0});
    expect_rejected(world, [&] { world.add_plane({{0, 0, 0}, {0, 0, 0}}); }, "planes[0].normal", {"zero"});
    expect_rejected(world, [&] { world.add_plane({{0, kNaN, 0}, {0, 1, 0}}); }, "planes[0].point", {"nan"});
    expect_rejected(world, [&] { world.add_plane({{0, 4.5, 0}, {0, 1, 0}}); }, "planes[0]", {"overlaps", "0.5"});
    expect_rejected(world, [&] { world.add_cylinder({{0, 0, 0}, {}, 1.0}); }, "cylinders[0].axis", {"zero"});
    expect_rejected(world, [&] { world.add_cylinder({{0, 0, 0}, {0, 0, 1}, -2.0}); }, "cylinders[0].radius", {"-2"});
    expect_rejected(world, [&] { world.add_cylinder({{0, 0, 0}, {0, 0, 1}, 4.5}); }, "cylinders[0]", {"overlaps", "0.5"});
}

TEST(Validation, PlanesAndCylindersAreAtMost4096Together) {
    // Every prediction tests each of them: a million planes made an event cost seconds.
    World world;
    for (int k = 0; k < 4000; ++k) world.add_plane({{0, -1.0 - k, 0}, {0, 1, 0}});
    for (int k = 0; k < 96; ++k) world.add_cylinder({{100.0 + 10 * k, 0, 0}, {0, 1, 0}, 1.0});
    expect_rejected(world, [&] { world.add_plane({{0, -5000, 0}, {0, 1, 0}}); }, "planes[4000]", {"4096", "planes and cylinders"});
    expect_rejected(world, [&] { world.add_cylinder({{-50, 0, 0}, {0, 1, 0}, 1.0}); }, "cylinders[96]", {"4096"});
}

TEST(Validation, PeriodicBox) {
    WorldDef def;
    def.periodic = Box{{0, 0, 0}, {10, 10, 10}};
    World world(def);
    expect_rejected(world, [&] { world.add_ball({{11, 5, 5}, {}, 0.5, 1.0}); }, "balls[0].position", {"outside"});
    expect_rejected(world, [&] { world.add_ball({{5, 5, 5}, {}, 2.0, 1.0}); }, "balls[0].radius", {"too large", "2"});
    expect_rejected(world, [&] { world.add_plane({{0, 0, 0}, {0, 1, 0}}); }, "planes[0].normal", {"periodic axis y"});
    expect_rejected(world, [&] { world.add_cylinder({{0, 0, 0}, {0, 1, 0}, 1.0}); }, "cylinders[0].axis",
                    {"periodic axis x"});
    // Periodic along x and z only: a floor is welcome, a wall across x is not.
    def.periodic_axes = {true, false, true};
    World column(def);
    EXPECT_EQ(column.plane_count(), 0u);
    column.add_plane({{0, 0, 0}, {0, 1, 0}});
    expect_rejected(column, [&] { column.add_plane({{0, 0, 0}, {1, 0, 0}}); }, "planes[1].normal", {"periodic axis x"});
    expect_rejected(column, [&] { column.add_plane({{0, 0, 0}, {0, 1, 1}}); }, "planes[1].normal", {"periodic axis z"});
    expect_rejected(column, [&] { column.add_cylinder({{5, 0, 5}, {0, 1, 0}, 1.0}); }, "cylinders[0].axis",
                    {"periodic axis x"});
    // Periodic along y only: a column along y (a pipe periodic along its length) is welcome.
    def.periodic_axes = {false, true, false};
    World pipe(def);
    pipe.add_cylinder({{5, 0, 5}, {0, 2, 0}, 1.0});
    expect_rejected(pipe, [&] { pipe.add_cylinder({{5, 0, 5}, {0, 1, 0.5}, 1.0}); }, "cylinders[1].axis",
                    {"periodic axis y"});
    // A ball as wide as the box along y, which does not wrap, is fine; along x it is not.
    def.periodic = Box{{0, 0, 0}, {10, 2, 10}};
    def.periodic_axes = {true, false, true};
    World slab(def);
    slab.add_ball({{5, 1, 5}, {}, 0.9, 1.0});
    def.periodic_axes = {};
    try {
        World none(def);
        ADD_FAILURE() << "a periodic box with no periodic axis";
    } catch (const InvalidArgument& e) {
        EXPECT_EQ(e.field(), "world.periodic.axes");
    }
}

TEST(Validation, StepRaysAndHandles) {
    World world;
    const BallId id = world.add_ball({{0, 0, 0}, {1, 0, 0}, 1.0, 1.0});
    expect_rejected(world, [&] { world.step(0.0); }, "dt", {"0"});
    expect_rejected(world, [&] { world.step(-1.0); }, "dt", {"-1"});
    expect_rejected(world, [&] { world.step(kNaN); }, "dt", {"nan"});
    expect_rejected(world, [&] { world.step(kInf); }, "dt", {"inf"});
    expect_rejected(world, [&] { world.ray_cast(Ray{{0, 0, 0}, {0, 0, 0}}); }, "ray.direction", {"zero"});
    expect_rejected(world, [&] { world.ray_cast(Ray{{0, 0, 0}, {1e200, 0, 0}}); }, "ray.direction", {"1e+200"});
    expect_rejected(world, [&] { world.ray_cast(Ray{{0, 0, 0}, {1e-170, 0, 0}}); }, "ray.direction", {"1e-170"});
    expect_rejected(world, [&] { world.set_restitution(2.0); }, "world.restitution", {"2"});
    expect_rejected(world, [&] { world.set_gravity({kNaN, 0, 0}); }, "world.gravity", {"nan"});
    expect_rejected(world, [&] { world.ball(BallId{}); }, "ball", {"no such ball"});
    world.remove_ball(id);
    expect_rejected(world, [&] { world.remove_ball(id); }, "ball", {"no such ball", std::to_string(id.value)});
}

// Magnitudes whose time-of-impact arithmetic could overflow are refused, naming the field; so
// are thread counts beyond kMaxThreads.
TEST(Validation, MagnitudesAndThreadsHaveLimits) {
    WorldDef def;
    def.gravity = {0, -1e31, 0};
    try {
        World world(def);
        ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& e) {
        EXPECT_EQ(e.field(), "world.gravity");
        EXPECT_NE(std::string(e.what()).find("at most 1e+30"), std::string::npos) << e.what();
    }
    def = {};
    def.threads = kMaxThreads + 1;
    EXPECT_THROW(World{def}, InvalidArgument);
    def.threads = 3;
    EXPECT_EQ(World(def).concurrency(), 3);
    World world;
    expect_rejected(world, [&] { world.add_ball({{0, 0, 0}, {1e31, 0, 0}, 1.0, 1.0}); }, "balls[0].velocity", {"1e+31"});
    expect_rejected(world, [&] { world.add_ball({{2e30, 0, 0}, {}, 1.0, 1.0}); }, "balls[0].position", {"2e+30"});
    expect_rejected(world, [&] { world.add_ball({{0, 0, 0}, {}, 1.0, 1e40}); }, "balls[0].mass", {"1e+40"});
    expect_rejected(world, [&] { world.add_plane({{0, -1e35, 0}, {0, 1, 0}}); }, "planes[0].point", {"1e+35"});
    world.add_ball({{0, 0, 0}, {1e30, 0, 0}, 1.0, 1e30});  // at the limit
    EXPECT_EQ(world.ball_count(), 1u);
}

// The memory limit is checked before anything is allocated, by add_balls and by generate_balls.
TEST(Validation, MemoryLimitRefusesBallsBeforeAllocating) {
    WorldDef def;
    def.threads = 1;
    def.memory_limit = 10 * kBytesPerBall;
    World world(def);
    EXPECT_EQ(world.max_balls(), 10u);
    std::vector<BallDef> eleven;
    for (int k = 0; k < 11; ++k) eleven.push_back({{3.0 * k, 0, 0}, {}, 1.0, 1.0});
    expect_rejected(world, [&] { world.add_balls(eleven); }, "balls", {"memory limit", "0 + 11 balls need about 4224 bytes", "3840 bytes"});
    eleven.pop_back();
    world.add_balls(eleven);
    GenerateDef gen;
    gen.count = 1;
    gen.region = {{100, 100, 100}, {110, 110, 110}};
    expect_rejected(world, [&] { world.add_balls(generate_balls(world, gen)); }, "generate.count",
                    {"asks for 1 balls", "at most 10"});
    WorldDef one;
    one.threads = 1;
    EXPECT_EQ(World(one).max_balls(), (std::size_t{16} << 30) / 384);  // 16 GiB at 384 bytes per ball
    // With more threads the regions' stamps count too.
    WorldDef two;
    two.threads = 2;
    EXPECT_EQ(World(two).max_balls(), (std::size_t{16} << 30) / (kBytesPerBall + kBytesPerBallInRegions));
    two.memory_limit = 10 * (kBytesPerBall + kBytesPerBallInRegions);
    EXPECT_EQ(World(two).max_balls(), 10u);
}

// Found by fuzz_world: stepping an empty world made cells of width zero, into which the next
// ball was filed at a NaN cell.
TEST(Validation, BallsAddedAfterAnEmptyWorldWasStepped) {
    WorldDef def;
    def.gravity = {0, -10, 0};
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    world.step(0.5);
    const BallId ball = world.add_ball({{0, 5, 0}, {}, 1.0, 1.0});
    world.add_ball({{10, 5, 0}, {}, 2.0, 1.0});
    EXPECT_FALSE(world.is_free({0, 5, 0}, 0.5));
    world.step(0.5);
    EXPECT_NEAR(world.ball(ball).position.y, 5.0 - 0.5 * 10 * 0.25, 1e-12);
    world.step(2.0);
    EXPECT_EQ(world.escaped_count(), 0u);
    EXPECT_LT(world.max_overlap(), 1e-9);
}
