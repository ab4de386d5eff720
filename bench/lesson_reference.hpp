// Ballistic — the NeHe lesson's simulation loop, reimplemented as the baseline for benchmarks.
//
// This is the algorithm Ballistic replaces, kept as faithful as a benchmark baseline can be
// (see the seeds of the project: the lesson's `idle()` and `FindBallCol()`):
//   - once per step, gravity is added to every velocity (v += g·dt) and balls then move on
//     straight lines inside the step;
//   - each ball's nearest plane / cylinder hit is found by a ray test against surfaces offset
//     by its radius (ray–plane, and the Graphics Gems ray–cylinder test), the time from the
//     ratio of distances along the ray;
//   - ball–ball contacts are found by testing every pair, after a ray-distance rejection, at 150
//     time slices of the remaining step; the contact time is the slice before the first overlap;
//   - the earliest event wins, ALL balls are moved to it, the response is applied (reflection
//     R = 2(−I·N)N + I scaled back to the speed; the lesson's two-ball exchange along the line
//     of centres), and the search repeats for the rest of the step.
// Deviations (none of them makes it faster):
//   - any number of balls, planes and cylinders, radii and masses per ball (the lesson: ten
//     balls of one radius, unit masses, five planes and three columns in globals);
//   - FindBallCol records the pair that overlaps first (the lesson overwrites the pair numbers
//     with the last overlapping pair even when its time is later);
//   - a pair with no relative motion is skipped (the lesson would normalise a zero vector);
//   - a livelock guard: the lesson repeats a zero-time ball–ball event forever when a missed
//     contact has left two balls overlapping. After kMaxZeroTimeEvents such events in a row the
//     step is finished without further events and counted in `stalled_steps`.
#pragma once

#include <ballistic/scene/builders.hpp>

#include <ballistic/vec3.hpp>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ballistic::lesson {

struct LessonCounts {
    std::uint64_t ball_ball = 0;
    std::uint64_t ball_static = 0;     // planes and cylinders
    std::uint64_t stalled_steps = 0;   // steps cut short by the livelock guard
    std::uint64_t pair_tests = 0;      // pairs considered by the ball–ball search
    std::uint64_t slice_tests = 0;     // time slices evaluated by the ball–ball search
    std::uint64_t collisions() const { return ball_ball + ball_static; }
};

class LessonSimulator {
public:
    static constexpr int kSlices = 150;               // the lesson's time slices per search
    static constexpr double kZero = 1e-8;             // the lesson's ZERO (EPSILON)
    static constexpr int kMaxZeroTimeEvents = 100;    // livelock guard, see above

    // Throws std::invalid_argument for a periodic scene (the lesson has no periodic box).
    explicit LessonSimulator(const scenes::Scene& scene);

    void step(double dt);

    double time() const { return time_; }
    const LessonCounts& counts() const { return counts_; }
    std::span<const Vec3> positions() const { return position_; }
    std::span<const Vec3> velocities() const { return velocity_; }
    double kinetic_energy() const;

private:
    struct Plane {
        Vec3 point;    // on the real surface
        Vec3 normal;   // unit
    };
    struct Cylinder {
        Vec3 point;
        Vec3 axis;     // unit
        double radius; // of the real surface
    };
    struct StaticHit {
        double time;      // from the start of the remaining step
        std::size_t ball;
        Vec3 normal;
    };
    struct PairHit {
        double time;
        std::size_t first;
        std::size_t second;
    };

    bool find_ball_collision(double rest, PairHit& hit);
    void move_all(double t);   // position = old position + velocity · t, for every ball

    Vec3 gravity_;
    std::vector<Plane> planes_;
    std::vector<Cylinder> cylinders_;
    std::vector<Vec3> position_;
    std::vector<Vec3> old_position_;
    std::vector<Vec3> velocity_;
    std::vector<double> radius_;
    std::vector<double> mass_;
    double time_ = 0.0;
    LessonCounts counts_;
};

}  // namespace ballistic::lesson
