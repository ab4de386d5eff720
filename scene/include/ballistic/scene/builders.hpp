// Ballistic — ready-made scenes (the gas, the closed box, the lesson room) built in code, shared
// by the benchmarks, the tests and the demos.
//
// A Scene is a plain description (world definition, statics, balls, suggested step) so that the
// same scene can be handed to Ballistic (make_world) and to other simulators (the lesson's
// reference loop in lesson_reference.hpp). Every builder is deterministic: same arguments, same
// bits.
#pragma once

#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ballistic::scenes {

struct Scene {
    std::string name;
    WorldDef world;
    std::vector<PlaneDef> planes;
    std::vector<CylinderDef> cylinders;
    std::vector<BallDef> balls;
    double dt = 1.0 / 60.0;   // suggested step (unit: time)
};

// Side of the cube that holds `count` balls of `radius` at `packing_fraction` (ball volume over
// box volume). (unit: length)
double cube_side(std::size_t count, double packing_fraction, double radius);

// Hard-sphere gas in a cubic periodic box [0, L]³ sized for the packing fraction; no gravity,
// e = 1, Maxwell–Boltzmann velocities at kT (k_B = 1, mass 1) with zero total momentum.
Scene periodic_gas(std::size_t count, double packing_fraction, double kT, double radius = 0.5,
                   std::uint64_t seed = 1);

// `count` balls in a closed cube [0, L]³ bounded by six planes, sized for the packing fraction;
// no gravity, e = 1, every ball at `speed` in a uniformly random direction.
Scene closed_box(std::size_t count, double packing_fraction, double speed, double radius = 0.5,
                 std::uint64_t seed = 1);

// The NeHe lesson's room: floor and four walls (no ceiling), three columns (one upright, one
// lying along z on the floor, one tilted 45°), gravity, and the lesson's ten balls of radius 20
// with its initial velocity. The lesson's numbers are kept: its units, its frame step of 0.6
// time units and its acceleration g = (0, −0.05, 0) length/time² (which the lesson adds to the
// velocity as g·dt once per frame). The lesson tests against surfaces offset by the ball
// radius; here the planes and columns are the drawn surfaces (walls at ±320, floor at −320,
// column radii 60, 60, 30) and the engine does the offsetting.
// One of the lesson's balls starts outside the back wall (z = −350); it is moved to z = −290.
Scene lesson_scene();

// A world holding the scene's statics and balls.
World make_world(const Scene& scene);

}  // namespace ballistic::scenes
