// What several test suites share: boxes, gases and generated balls, a hash of the events, a pour
// that settles, a barometric column, the total energy, and snapshots to and from bytes.
#pragma once

#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace ballistic::test_worlds {

// Worlds of `from` balls or more cut into regions on several threads, and run them whenever they
// can (not only while they measure faster), so that a test goes through them.
inline void regions_from(WorldDef& def, std::size_t from = 0) {
    def.parallel_events_min_balls = from;
    def.regions_when_faster = false;
}

// Gravity g down and restitution e.
inline WorldDef with_gravity(double g, double e = 1.0) {
    WorldDef def;
    def.gravity = {0, -g, 0};
    def.restitution = e;
    return def;
}

// A closed cube [0, side]³ of six inward planes.
inline void add_box(World& world, Vec3 low, Vec3 high) {
    world.add_plane({{low.x, 0, 0}, {1, 0, 0}});
    world.add_plane({{high.x, 0, 0}, {-1, 0, 0}});
    world.add_plane({{0, low.y, 0}, {0, 1, 0}});
    world.add_plane({{0, high.y, 0}, {0, -1, 0}});
    world.add_plane({{0, 0, low.z}, {0, 0, 1}});
    world.add_plane({{0, 0, high.z}, {0, 0, -1}});
}
inline void add_box(World& world, double side) { add_box(world, {0, 0, 0}, {side, side, side}); }

// `count` balls of radius 0.5 at `speed` in random directions inside that cube.
inline World boxed_balls(const WorldDef& def, double side, std::size_t count, double speed, std::uint64_t seed = 1) {
    World world(def);
    add_box(world, side);
    GenerateDef gen;
    gen.count = count;
    gen.radius = 0.5;
    gen.region = {{0, 0, 0}, {side, side, side}};
    gen.speed = speed;
    gen.seed = seed;
    world.add_balls(generate_balls(world, gen));
    return world;
}

// A periodic gas of n balls of radius 0.5 at this packing fraction and temperature, with zero
// momentum; small worlds take the parallel paths too.
// Not inlined: GCC folds std::cbrt of constants correctly rounded, and glibc's std::cbrt at run
// time may differ by an ulp, so two calls with the same arguments could build boxes an ulp apart.
[[gnu::noinline]] inline World periodic_gas(std::size_t n, double packing, double kT, int threads,
                                            std::uint64_t seed = 3) {
    const double r = 0.5;
    const double side = std::cbrt(double(n) * (4.0 / 3.0) * M_PI * r * r * r / packing);
    WorldDef def;
    def.periodic = Box{{0, 0, 0}, {side, side, side}};
    def.threads = threads;
    regions_from(def);  // small worlds take the parallel batches too
    World world(def);
    GenerateDef gen;
    gen.count = n;
    gen.radius = r;
    gen.region = *def.periodic;
    gen.velocity = GenerateDef::Velocity::Temperature;
    gen.temperature = kT;
    gen.zero_momentum = true;
    gen.seed = seed;
    const auto defs = generate_balls(world, gen);
    world.add_balls(defs);
    return world;
}

// |a − b| / |b|.
inline double relative(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-300); }

// Gravity 9.81 down, restitution e: a world where balls settle and sleep.
inline WorldDef granular(double e = 0.5, int threads = 1) {
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    def.restitution = e;
    def.threads = threads;
    return def;
}

// Adds `count` balls of `radius` and `mass` that generate_balls() places in `region`, at `speed`
// in random directions, from `seed`; their ids.
inline std::vector<BallId> add_generated(World& world, std::size_t count, double radius, const Box& region,
                                         double speed, std::uint64_t seed, double mass = 1.0) {
    GenerateDef gen;
    gen.count = count;
    gen.radius = radius;
    gen.mass = mass;
    gen.region = region;
    gen.speed = speed;
    gen.seed = seed;
    return world.add_balls(generate_balls(world, gen));
}

// FNV-1a over every field of every collision of the last step, on from `h`: the event stream
// itself must not depend on the thread count either.
inline std::uint64_t events_hash(const World& world, std::uint64_t h) {
    auto mix = [&](const void* data, std::size_t size) {
        const auto* bytes = static_cast<const unsigned char*>(data);
        for (std::size_t k = 0; k < size; ++k) h = (h ^ bytes[k]) * 0x100000001b3ull;
    };
    for (const CollisionEvent& e : world.events()) {
        const double numbers[] = {e.time, e.point.x, e.point.y, e.point.z, e.normal.x, e.normal.y, e.normal.z, e.impulse};
        mix(numbers, sizeof numbers);
        mix(&e.kind, sizeof e.kind);
        mix(&e.ball.value, sizeof e.ball.value);
        mix(&e.other.value, sizeof e.other.value);
        mix(&e.static_index, sizeof e.static_index);
    }
    return h;
}

// 24 balls of radius 0.5 poured into a well two balls wide (walls on four sides, a floor). The
// frictionless column packs against its walls and settles, and with e = 0.5 every ball sleeps
// within 5 s (on a wide floor frictionless balls keep sliding for a long time).
inline World pour_into_well(const WorldDef& def) {
    World world(def);
    const Vec3 lo{0, 0, 0}, hi{2.05, 30, 2.05};
    world.add_plane({lo, {1, 0, 0}});
    world.add_plane({hi, {-1, 0, 0}});
    world.add_plane({lo, {0, 1, 0}});
    world.add_plane({lo, {0, 0, 1}});
    world.add_plane({hi, {0, 0, -1}});
    add_generated(world, 24, 0.5, {{0, 2, 0}, hi}, 1.0, 5);
    return world;
}

// A barometric column: periodic along x and z (a 10 × 10 base), a floor at y = 0 and a ceiling
// at y = 40 along y, which does not wrap; 400 balls at kT = 1 under g = 1 (scale height kT/mg = 1).
// Two threads run the parallel phases; its events run serially (its cells have no dense block to
// cut into regions: StepResult::in_regions is 0).
inline World barometric_column(int threads) {
    WorldDef def;
    def.gravity = {0, -1, 0};
    def.periodic = Box{{0, 0, 0}, {10, 40, 10}};
    def.periodic_axes = {true, false, true};
    def.threads = threads;
    regions_from(def);
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    world.add_plane({{0, 40, 0}, {0, -1, 0}});
    GenerateDef gen;
    gen.count = 400;
    gen.radius = 0.25;
    gen.region = {{0, 0, 0}, {10, 6, 10}};
    gen.velocity = GenerateDef::Velocity::Temperature;
    gen.temperature = 1.0;
    gen.seed = 9;
    world.add_balls(generate_balls(world, gen));
    return world;
}

// Kinetic plus gravitational potential energy, −Σ m g·x (zero at the origin).
inline double total_energy(const World& world) {
    double energy = 0.0;
    for (const BallId id : world.balls().id) {
        const BallState b = world.ball(id);
        energy += b.mass * (0.5 * dot(b.velocity, b.velocity) - dot(world.def().gravity, b.position));
    }
    return energy;
}

inline std::string save(const World& world) {
    std::ostringstream out;
    world.save(out);
    return out.str();
}

inline World restore(const std::string& bytes, int threads = 1) {
    std::istringstream in(bytes);
    RestoreOptions options;
    options.threads = threads;
    options.regions_when_faster = false;  // regions whenever they can run, as the worlds above
    return World::restore(in, options);
}

}  // namespace ballistic::test_worlds
