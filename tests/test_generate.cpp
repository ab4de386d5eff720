// generate_balls: placement, velocities, determinism and validation.
#include <ballistic/generate.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

namespace ballistic {
namespace {

constexpr double kBallVolumeFactor = 4.0 / 3.0 * std::numbers::pi;

GenerateDef cube(std::size_t count, double radius, double side) {
    GenerateDef def;
    def.count = count;
    def.radius = radius;
    def.region = {{0.0, 0.0, 0.0}, {side, side, side}};
    def.speed = 1.0;
    return def;
}

// Side of the cube in which `count` balls of `radius` fill the packing fraction `phi`.
double side_for(std::size_t count, double radius, double phi) {
    return std::cbrt(static_cast<double>(count) * kBallVolumeFactor * radius * radius * radius / phi);
}

double volume(const Box& box) {
    return (box.max.x - box.min.x) * (box.max.y - box.min.y) * (box.max.z - box.min.z);
}

// Every pair, so the check cannot miss what a cell search might.
double smallest_gap(const std::vector<BallDef>& balls) {
    double gap = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < balls.size(); ++i) {
        for (std::size_t j = i + 1; j < balls.size(); ++j) {
            const double d = length(balls[i].position - balls[j].position);
            gap = std::min(gap, d - balls[i].radius - balls[j].radius);
        }
    }
    return gap;
}

void expect_inside(const std::vector<BallDef>& balls, const Box& region) {
    for (const BallDef& b : balls) {
        EXPECT_GE(b.position.x - b.radius, region.min.x);
        EXPECT_GE(b.position.y - b.radius, region.min.y);
        EXPECT_GE(b.position.z - b.radius, region.min.z);
        EXPECT_LE(b.position.x + b.radius, region.max.x);
        EXPECT_LE(b.position.y + b.radius, region.max.y);
        EXPECT_LE(b.position.z + b.radius, region.max.z);
    }
}

bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }
bool same_bits(Vec3 a, Vec3 b) { return same_bits(a.x, b.x) && same_bits(a.y, b.y) && same_bits(a.z, b.z); }

Vec3 total_momentum(const std::vector<BallDef>& balls) {
    Vec3 p;
    for (const BallDef& b : balls) p += b.mass * b.velocity;
    return p;
}

double momentum_scale(const std::vector<BallDef>& balls) {
    double s = 0.0;
    for (const BallDef& b : balls) s += b.mass * length(b.velocity);
    return s;
}

// Runs generate_balls expecting a rejection; returns it for the caller's checks.
InvalidArgument rejection(const GenerateDef& def, const World& world = World{}) {
    try {
        (void)generate_balls(world, def, "generate[0]");
    } catch (const InvalidArgument& error) {
        return error;
    }
    ADD_FAILURE() << "generate_balls accepted the definition";
    return InvalidArgument("", "");
}

TEST(Generate, GivesTheCountWithRadiusAndMass) {
    GenerateDef def = cube(500, 0.5, 20.0);
    def.mass = 2.5;
    const std::vector<BallDef> balls = generate_balls(World{}, def);
    ASSERT_EQ(balls.size(), 500u);
    for (const BallDef& b : balls) {
        EXPECT_EQ(b.radius, 0.5);
        EXPECT_EQ(b.mass, 2.5);
    }
}

TEST(Generate, ZeroCountGivesNothing) {
    EXPECT_TRUE(generate_balls(World{}, cube(0, 0.5, 10.0)).empty());
}

TEST(Generate, BallsLieInsideAnOffsetRegion) {
    GenerateDef def = cube(800, 0.3, 0.0);
    def.region = {{-105.0, 7.0, 1e3}, {-95.0, 19.0, 1e3 + 8.0}};
    const std::vector<BallDef> balls = generate_balls(World{}, def);
    ASSERT_EQ(balls.size(), 800u);
    expect_inside(balls, def.region);
}

TEST(Generate, BallsDoNotOverlapEachOther) {
    const GenerateDef def = cube(1000, 0.5, side_for(1000, 0.5, 0.3));
    const std::vector<BallDef> balls = generate_balls(World{}, def);
    ASSERT_EQ(balls.size(), 1000u);
    EXPECT_GT(smallest_gap(balls), 0.0);
}

TEST(Generate, ReachesPackingFractionPointFourFive) {
    const std::size_t count = 2000;
    const double radius = 0.5;
    const GenerateDef def = cube(count, radius, side_for(count, radius, 0.45));
    const std::vector<BallDef> balls = generate_balls(World{}, def);
    ASSERT_EQ(balls.size(), count);
    const double phi = static_cast<double>(count) * kBallVolumeFactor * radius * radius * radius / volume(def.region);
    EXPECT_GE(phi, 0.45 * (1.0 - 1e-12));
    EXPECT_GT(smallest_gap(balls), 0.0);
    expect_inside(balls, def.region);
}

TEST(Generate, FewBallsSpreadOverTheWholeRegion) {
    // The largest lattice spacing that fits the count puts balls near every face, not in a corner.
    const GenerateDef def = cube(64, 0.5, 100.0);
    const std::vector<BallDef> balls = generate_balls(World{}, def);
    ASSERT_EQ(balls.size(), 64u);
    Vec3 lo{1e9, 1e9, 1e9};
    Vec3 hi{-1e9, -1e9, -1e9};
    for (const BallDef& b : balls) {
        lo = {std::min(lo.x, b.position.x), std::min(lo.y, b.position.y), std::min(lo.z, b.position.z)};
        hi = {std::max(hi.x, b.position.x), std::max(hi.y, b.position.y), std::max(hi.z, b.position.z)};
    }
    EXPECT_GT(hi.x - lo.x, 60.0);
    EXPECT_GT(hi.y - lo.y, 60.0);
    EXPECT_GT(hi.z - lo.z, 60.0);
}

TEST(Generate, OneBallInAHugeRegionStaysInside) {
    const GenerateDef def = cube(1, 1.0, 1e6);
    const std::vector<BallDef> balls = generate_balls(World{}, def);
    ASSERT_EQ(balls.size(), 1u);
    expect_inside(balls, def.region);
}

TEST(Generate, KeepsClearOfPlanesCylindersAndBalls) {
    World world;
    world.add_plane({{0.0, 3.0, 0.0}, {0.0, 1.0, 0.0}});         // floor cutting the region
    world.add_plane({{20.0, 0.0, 0.0}, {-1.0, -1.0, 0.0}});      // slanted wall cutting a corner
    world.add_cylinder({{5.0, 0.0, 5.0}, {0.0, 1.0, 0.0}, 2.0});  // column through the middle
    world.add_cylinder({{0.0, 6.0, 0.0}, {1.0, 0.0, 1.0}, 1.0});  // tilted column
    const BallId big = world.add_ball({{2.0, 7.0, 8.0}, {}, 1.5, 1.0});
    const std::vector<BallDef> balls = generate_balls(world, cube(300, 0.25, 12.0));
    ASSERT_EQ(balls.size(), 300u);
    const BallState obstacle = world.ball(big);
    for (const BallDef& b : balls) {
        EXPECT_TRUE(world.is_free(b.position, b.radius));
        EXPECT_GE(b.position.y - 3.0, b.radius);
        EXPECT_GE(dot(b.position - Vec3{20.0, 0.0, 0.0}, normalize({-1.0, -1.0, 0.0})), b.radius);
        EXPECT_GE(std::hypot(b.position.x - 5.0, b.position.z - 5.0), 2.0 + b.radius);
        const Vec3 d = b.position - Vec3{0.0, 6.0, 0.0};
        const Vec3 u = normalize({1.0, 0.0, 1.0});
        EXPECT_GE(length(d - dot(d, u) * u), 1.0 + b.radius);
        EXPECT_GE(length(b.position - obstacle.position), obstacle.radius + b.radius);
    }
    EXPECT_GT(smallest_gap(balls), 0.0);
}

TEST(Generate, SameSeedGivesSameBits) {
    GenerateDef def = cube(700, 0.4, 14.0);
    def.velocity = GenerateDef::Velocity::Temperature;
    def.temperature = 1.7;
    def.seed = 12345;
    const std::vector<BallDef> a = generate_balls(World{}, def);
    const std::vector<BallDef> b = generate_balls(World{}, def);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
        EXPECT_TRUE(same_bits(a[i].position, b[i].position)) << i;
        EXPECT_TRUE(same_bits(a[i].velocity, b[i].velocity)) << i;
    }
}

TEST(Generate, PinnedOutputForSeedOne) {
    // Placement is pure arithmetic on std::mt19937_64 output, velocities add std::sin/cos/log:
    // these bits must not change between releases (scenes name their balls by seed) nor between
    // platforms with the same math library. A deliberate change of the algorithm updates them.
    GenerateDef def = cube(10, 0.5, 10.0);
    const std::vector<BallDef> speed = generate_balls(World{}, def);
    ASSERT_EQ(speed.size(), 10u);
    EXPECT_TRUE(same_bits(speed[0].position, {0x1.65676b0c0d082p-1, 0x1.6af0c20da9238p-1, 0x1.3dee3a9179704p-1}));
    EXPECT_TRUE(same_bits(speed[0].velocity, {0x1.8f22aa0276bf4p-1, -0x1.3ef37453bc95ap-1, 0x1.09f48cd2b63p-4}));
    EXPECT_TRUE(same_bits(speed[9].position, {0x1.76c09d69a1bc4p+0, 0x1.20d0a07cbaff1p+3, 0x1.f19224e695525p+2}));
    EXPECT_TRUE(same_bits(speed[9].velocity, {-0x1.016b8e7552c6ap-1, 0x1.e40d8c4a15b32p-2, -0x1.728afd69d5c0ep-1}));
    def.velocity = GenerateDef::Velocity::Temperature;
    def.temperature = 1.0;
    const std::vector<BallDef> thermal = generate_balls(World{}, def);
    EXPECT_TRUE(same_bits(thermal[0].velocity, {0x1.ed3818b8f6a8fp-1, -0x1.8a223cd0c214bp-1, -0x1.fa3ab5d3dedf2p+0}));
}

TEST(Generate, DifferentSeedsGiveDifferentBalls) {
    GenerateDef def = cube(700, 0.4, 14.0);
    const std::vector<BallDef> a = generate_balls(World{}, def);
    def.seed = 2;
    const std::vector<BallDef> b = generate_balls(World{}, def);
    ASSERT_EQ(a.size(), b.size());
    std::size_t same_positions = 0;
    std::size_t same_velocities = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        same_positions += same_bits(a[i].position, b[i].position) ? 1 : 0;
        same_velocities += same_bits(a[i].velocity, b[i].velocity) ? 1 : 0;
    }
    EXPECT_LT(same_positions, a.size() / 10);
    EXPECT_EQ(same_velocities, 0u);
}

TEST(Generate, SpeedModeGivesExactSpeedsInAllDirections) {
    GenerateDef def = cube(2000, 0.5, 40.0);
    def.speed = 3.25;
    const std::vector<BallDef> balls = generate_balls(World{}, def);
    Vec3 mean_direction;
    for (const BallDef& b : balls) {
        EXPECT_NEAR(length(b.velocity), 3.25, 3.25 * 1e-14);
        mean_direction += b.velocity / 3.25;
    }
    // Isotropy: the mean of N unit vectors has standard deviation 1/sqrt(3N) per component.
    const double tolerance = 5.0 / std::sqrt(3.0 * static_cast<double>(balls.size()));
    mean_direction = mean_direction / static_cast<double>(balls.size());
    EXPECT_LT(std::abs(mean_direction.x), tolerance);
    EXPECT_LT(std::abs(mean_direction.y), tolerance);
    EXPECT_LT(std::abs(mean_direction.z), tolerance);
}

TEST(Generate, TemperatureModeGivesMaxwellBoltzmann) {
    const std::size_t count = 10000;
    GenerateDef def = cube(count, 0.5, side_for(count, 0.5, 0.2));
    def.velocity = GenerateDef::Velocity::Temperature;
    def.temperature = 2.0;
    def.mass = 3.0;
    const std::vector<BallDef> balls = generate_balls(World{}, def);
    ASSERT_EQ(balls.size(), count);
    double kinetic = 0.0;
    double vx2 = 0.0;
    for (const BallDef& b : balls) {
        kinetic += 0.5 * b.mass * dot(b.velocity, b.velocity);
        vx2 += b.velocity.x * b.velocity.x;
    }
    const double n = static_cast<double>(count);
    // Per ball, KE has mean 1.5 kT and standard deviation sqrt(1.5) kT; allow five standard errors.
    EXPECT_NEAR(kinetic / n, 1.5 * def.temperature, 5.0 * std::sqrt(1.5) * def.temperature / std::sqrt(n));
    // One component: <vx²> = kT/m with relative standard error sqrt(2/N).
    const double expected = def.temperature / def.mass;
    EXPECT_NEAR(vx2 / n, expected, 5.0 * std::sqrt(2.0 / n) * expected);
}

TEST(Generate, ZeroMomentumRemovesTheMeanVelocity) {
    for (const auto mode : {GenerateDef::Velocity::Speed, GenerateDef::Velocity::Temperature}) {
        GenerateDef def = cube(3000, 0.5, 40.0);
        def.velocity = mode;
        def.speed = 7.0;
        def.temperature = 7.0;
        def.zero_momentum = true;
        const std::vector<BallDef> balls = generate_balls(World{}, def);
        const Vec3 p = total_momentum(balls);
        EXPECT_LT(length(p), 1e-12 * momentum_scale(balls));
        // Without the option the same balls carry momentum of order sqrt(N) times one ball's.
        def.zero_momentum = false;
        const std::vector<BallDef> raw = generate_balls(World{}, def);
        EXPECT_GT(length(total_momentum(raw)), 1e-6 * momentum_scale(raw));
    }
}

TEST(Generate, ReportsHowManyFitWhenTheyDoNot) {
    // Centres may lie in [0.5, 9.5]³ (a little less, for clearance): 9 sites per axis at spacing 1.
    const InvalidArgument error = rejection(cube(730, 0.5, 10.0));
    EXPECT_EQ(error.field(), "generate[0].count");
    EXPECT_NE(std::string(error.what()).find("only 729 balls"), std::string::npos) << error.what();
    EXPECT_EQ(generate_balls(World{}, cube(729, 0.5, 10.0)).size(), 729u);
}

TEST(Generate, ReportsNoneFitInARegionThinnerThanABall) {
    GenerateDef def = cube(1, 0.5, 10.0);
    def.region.max.y = 0.9;
    const InvalidArgument error = rejection(def);
    EXPECT_EQ(error.field(), "generate[0].count");
    EXPECT_NE(std::string(error.what()).find("only 0 balls"), std::string::npos) << error.what();
}

TEST(Generate, RefusesARegionTooLargeToSearch) {
    // A floor at z = −10 and a region reaching 10²⁴ below it (fuzz/regressions/scene-generate-
    // region-below-the-walls.json): nearly every site is behind the floor. The search stops at its
    // budget of sites with an error instead of walking 10²⁴ of them.
    World world;
    world.add_plane({{0.0, 0.0, -10.0}, {0.0, 0.0, 1.0}});
    GenerateDef def = cube(100, 0.5, 10.0);
    def.region = {{-10.0, -10.0, -1e24}, {10.0, 10.0, 10.0}};
    const InvalidArgument error = rejection(def, world);
    EXPECT_EQ(error.field(), "generate[0].min");
    EXPECT_NE(std::string(error.what()).find("too large to search for 100 free places"), std::string::npos)
        << error.what();
}

TEST(Generate, CountsOnlyFreeSitesWhenObstaclesBlockTheRegion) {
    World world;
    world.add_plane({{0.0, 5.0, 0.0}, {0.0, 1.0, 0.0}});  // the lower half of the cube is behind it
    EXPECT_EQ(rejection(cube(729, 0.5, 10.0), world).field(), "generate[0].count");
    const std::vector<BallDef> balls = generate_balls(world, cube(300, 0.5, 10.0));
    ASSERT_EQ(balls.size(), 300u);
    for (const BallDef& b : balls) EXPECT_GE(b.position.y, 5.5);
}

TEST(Generate, RejectsInvalidValuesNamingTheField) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    struct Case {
        const char* name;
        void (*change)(GenerateDef&, double, double);
        const char* field;
    };
    const Case cases[] = {
        {"count too large", [](GenerateDef& d, double, double) { d.count = std::size_t{1} << 33; }, "generate[0].count"},
        {"radius zero", [](GenerateDef& d, double, double) { d.radius = 0.0; }, "generate[0].radius"},
        {"radius nan", [](GenerateDef& d, double n, double) { d.radius = n; }, "generate[0].radius"},
        {"radius inf", [](GenerateDef& d, double, double i) { d.radius = i; }, "generate[0].radius"},
        {"mass negative", [](GenerateDef& d, double, double) { d.mass = -2.0; }, "generate[0].mass"},
        {"mass nan", [](GenerateDef& d, double n, double) { d.mass = n; }, "generate[0].mass"},
        {"min nan", [](GenerateDef& d, double n, double) { d.region.min.y = n; }, "generate[0].min"},
        {"max inf", [](GenerateDef& d, double, double i) { d.region.max.z = i; }, "generate[0].max"},
        {"min equals max", [](GenerateDef& d, double, double) { d.region.max.x = d.region.min.x; }, "generate[0].max"},
        {"min above max", [](GenerateDef& d, double, double) { d.region.min.z = 50.0; }, "generate[0].max"},
        {"speed negative", [](GenerateDef& d, double, double) { d.speed = -1.0; }, "generate[0].speed"},
        {"speed inf", [](GenerateDef& d, double, double i) { d.speed = i; }, "generate[0].speed"},
        {"temperature negative",
         [](GenerateDef& d, double, double) {
             d.velocity = GenerateDef::Velocity::Temperature;
             d.temperature = -0.5;
         },
         "generate[0].temperature"},
        {"temperature nan", [](GenerateDef& d, double n, double) { d.temperature = n; }, "generate[0].temperature"},
    };
    for (const Case& c : cases) {
        GenerateDef def = cube(10, 0.5, 10.0);
        c.change(def, nan, inf);
        const InvalidArgument error = rejection(def);
        EXPECT_EQ(error.field(), c.field) << c.name;
        EXPECT_TRUE(std::string(error.what()).starts_with(std::string(c.field) + ": ")) << c.name << ": " << error.what();
    }
}

TEST(Generate, ValidationMessageNamesFieldAndValue) {
    GenerateDef def = cube(10, -1.0, 10.0);
    const InvalidArgument error = rejection(def);
    EXPECT_STREQ(error.what(), "generate[0].radius: must be > 0, got -1");
}

TEST(Generate, UsesTheGivenFieldName) {
    GenerateDef def = cube(10, 0.5, 10.0);
    def.mass = 0.0;
    try {
        (void)generate_balls(World{}, def, "crowd");
        FAIL() << "accepted mass 0";
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "crowd.mass");
    }
}

}  // namespace
}  // namespace ballistic
