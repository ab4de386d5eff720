// Ballistic — scenes shared by the benchmarks and the demos.
#include <ballistic/scene/builders.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace ballistic::scenes {
namespace {

// A world with the scene's statics only: the generator places balls clear of them.
World statics_world(const Scene& scene) {
    World world(scene.world);
    for (const PlaneDef& plane : scene.planes) world.add_plane(plane);
    for (const CylinderDef& cylinder : scene.cylinders) world.add_cylinder(cylinder);
    return world;
}

std::vector<PlaneDef> cube_walls(double side) {
    return {
        {{0.0, 0.0, 0.0}, {1.0, 0.0, 0.0}},  {{side, 0.0, 0.0}, {-1.0, 0.0, 0.0}},
        {{0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}},  {{0.0, side, 0.0}, {0.0, -1.0, 0.0}},
        {{0.0, 0.0, 0.0}, {0.0, 0.0, 1.0}},  {{0.0, 0.0, side}, {0.0, 0.0, -1.0}},
    };
}

}  // namespace

double cube_side(std::size_t count, double packing_fraction, double radius) {
    const double ball_volume = 4.0 / 3.0 * std::numbers::pi * radius * radius * radius;
    return std::cbrt(static_cast<double>(count) * ball_volume / packing_fraction);
}

Scene periodic_gas(std::size_t count, double packing_fraction, double kT, double radius,
                   std::uint64_t seed) {
    const double side = cube_side(count, packing_fraction, radius);
    Scene scene;
    scene.name = "periodic_gas";
    scene.world.periodic = Box{{0.0, 0.0, 0.0}, {side, side, side}};
    GenerateDef gen;
    gen.count = count;
    gen.radius = radius;
    gen.region = *scene.world.periodic;
    gen.velocity = GenerateDef::Velocity::Temperature;
    gen.temperature = kT;
    gen.zero_momentum = true;
    gen.seed = seed;
    scene.balls = generate_balls(statics_world(scene), gen, "periodic_gas");
    return scene;
}

Scene closed_box(std::size_t count, double packing_fraction, double speed, double radius,
                 std::uint64_t seed) {
    const double side = cube_side(count, packing_fraction, radius);
    Scene scene;
    scene.name = "closed_box";
    scene.planes = cube_walls(side);
    GenerateDef gen;
    gen.count = count;
    gen.radius = radius;
    gen.region = Box{{0.0, 0.0, 0.0}, {side, side, side}};
    gen.velocity = GenerateDef::Velocity::Speed;
    gen.speed = speed;
    gen.seed = seed;
    scene.balls = generate_balls(statics_world(scene), gen, "closed_box");
    return scene;
}

Scene lesson_scene() {
    constexpr double kWall = 320.0;        // the drawn room: walls at ±320, floor at −320
    constexpr double kBallRadius = 20.0;
    const Vec3 velocity{0.5, -0.1, 0.5};   // every ball starts with the lesson's `veloc`

    Scene scene;
    scene.name = "lesson";
    scene.world.gravity = {0.0, -0.05, 0.0};
    scene.dt = 0.6;
    scene.planes = {
        {{0.0, -kWall, 0.0}, {0.0, 1.0, 0.0}},   // floor
        {{kWall, 0.0, 0.0}, {-1.0, 0.0, 0.0}},
        {{-kWall, 0.0, 0.0}, {1.0, 0.0, 0.0}},
        {{0.0, 0.0, kWall}, {0.0, 0.0, -1.0}},
        {{0.0, 0.0, -kWall}, {0.0, 0.0, 1.0}},
    };
    scene.cylinders = {
        {{0.0, 0.0, 0.0}, {0.0, 1.0, 0.0}, 60.0},      // upright, through the middle
        {{200.0, -300.0, 0.0}, {0.0, 0.0, 1.0}, 60.0},  // lying along z near the floor
        {{-200.0, 0.0, 0.0}, {0.0, 1.0, 1.0}, 30.0},    // tilted 45° in the y–z plane
    };
    const Vec3 first[] = {{199.0, 180.0, 10.0}, {0.0, 150.0, 100.0}, {-100.0, 180.0, -100.0}};
    for (const Vec3& p : first) scene.balls.push_back({p, velocity, kBallRadius, 1.0});
    for (int i = 3; i < 10; ++i) {
        // The lesson's row; its first ball (z = −350) would start behind the back wall.
        const double z = std::max(-500.0 + 50.0 * i, -kWall + kBallRadius + 10.0);
        scene.balls.push_back({{-500.0 + 75.0 * i, 300.0, z}, velocity, kBallRadius, 1.0});
    }
    return scene;
}

World make_world(const Scene& scene) {
    World world = statics_world(scene);
    world.add_balls(scene.balls);
    return world;
}

}  // namespace ballistic::scenes
