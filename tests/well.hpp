// A test world shared by the sleep and snapshot suites: 24 balls of radius 0.5 poured into a well
// two balls wide (walls on four sides, a floor). The frictionless column packs against its walls
// and settles, and with e = 0.5 every ball sleeps within 5 s (on a wide floor frictionless balls
// keep sliding for a long time).
#pragma once

#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

namespace ballistic::test_worlds {

inline World pour_into_well(const WorldDef& def) {
    World world(def);
    const Vec3 lo{0, 0, 0}, hi{2.05, 30, 2.05};
    world.add_plane({lo, {1, 0, 0}});
    world.add_plane({hi, {-1, 0, 0}});
    world.add_plane({lo, {0, 1, 0}});
    world.add_plane({lo, {0, 0, 1}});
    world.add_plane({hi, {0, 0, -1}});
    GenerateDef gen;
    gen.count = 24;
    gen.radius = 0.5;
    gen.region = {{0, 2, 0}, hi};
    gen.speed = 1.0;
    gen.seed = 5;
    world.add_balls(generate_balls(world, gen));
    return world;
}

}  // namespace ballistic::test_worlds
