// Ballistic — deterministic placement of many non-overlapping balls.
#pragma once

#include <ballistic/world.hpp>

#include <cstdint>
#include <vector>

namespace ballistic {

struct GenerateDef {
    std::size_t count = 0;
    double radius = 0.5;   // (unit: length; > 0)
    double mass = 1.0;     // (unit: mass; > 0)
    Box region;            // every generated ball lies fully inside (unit: length)
    enum class Velocity : std::uint8_t { Speed, Temperature };
    Velocity velocity = Velocity::Speed;
    double speed = 0.0;        // Speed: this speed in uniformly random directions (unit: length/time; >= 0)
    double temperature = 0.0;  // Temperature: Maxwell–Boltzmann at kT, k_B = 1 (unit: energy; >= 0)
    bool zero_momentum = false;  // subtract the mean velocity afterwards
    std::uint64_t seed = 1;
};

// Places `count` balls on a jittered cubic lattice (packing fractions up to ~0.5 without
// jamming) inside `region`, clear of every ball and static already in `world`. The same
// definition and world give the same positions on every platform, and the same velocities
// wherever the C library's log, sin and cos round alike. Throws InvalidArgument naming
// `field` (e.g. "generate[0].count") when the balls cannot be placed or a value is invalid.
std::vector<BallDef> generate_balls(const World& world, const GenerateDef& def,
                                    const std::string& field = "generate");

}  // namespace ballistic
