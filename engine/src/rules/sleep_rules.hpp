// Ballistic — the sleeping rules that prediction and sleeping share (docs/architecture.md, "Piles
// that settle"): when bodies touch, which contacts carry weight, and when a ball is quiet. Pure
// functions of the world's settings (read when called, so a change of gravity counts at once)
// and of a ball's history.
#pragma once

#include <ballistic/types.hpp>

#include "space/balls.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace ballistic::detail {

inline constexpr double kJamTravel = 1e-9;  // relative to the radius: a travel below rounding

// Does the jam rule (SleepRules::kJamBudget) stop jammed balls, which then sleep? It takes
// dissipation (restitution below one, or friction), gravity and planes, capsules or blocks, and
// holds also where nothing else may sleep: with sleeping off, balls jammed between a wall, the
// floor and each other passed their impacts around at one instant without end (fuzz_pile). No
// ball sleeps in an elastic and frictionless world. Elastic but frictional, a ball wedged at zero
// gaps in a corner of two walls and a block's edge passed its impacts around at one instant
// without end, friction taking the hops that would have freed it.
inline bool jams_possible(const WorldDef& def, bool planes, bool finite_statics) {
    const bool dissipative = def.restitution < 1.0 || def.friction > 0.0;
    return dissipative && !(def.gravity == Vec3{}) && (planes || finite_statics);
}
// Can anything sleep? It takes a sleep_speed and what the jam rule takes.
inline bool sleeping_possible(const WorldDef& def, bool planes, bool finite_statics) {
    return def.sleep_speed > 0.0 && jams_possible(def, planes, finite_statics);
}

class SleepRules {
public:
    // Collisions of a ball in a row in a jam before it stops where it is and sleeps (a wedged ball
    // stops at once, Sleep::note_quiet()). The count stays past it while the ball sleeps: that
    // marks a ball the jam put to sleep, wedged ones included.
    static constexpr std::uint32_t kJamBudget = 64;

    explicit SleepRules(const WorldDef& def) : def_(def) {}

    // Did the jam rule (or a wedge) put this sleeping ball to sleep? Its count stays past the
    // budget while it sleeps.
    static bool jam_slept(const Balls& balls, std::uint32_t slot) { return balls.jam[slot] > kJamBudget; }

    // How far apart a ball of this radius and a body still touch, for sleeping (unit: length):
    // a ball slower than slow() (sleep_speed) rises at most slow()² / 2|g| above what it rests on.
    double touch_gap(double radius) const { return std::min(slow_rise(), 1e-3 * radius); }
    // How high a ball slower than slow() rises (unit: length).
    double slow_rise() const {
        const double speed = slow();
        return speed * speed / (2.0 * length(def_.gravity));
    }
    // How long a ball that the jam rule put to sleep must have slept before a moving ball under it
    // wakes it (unit: time): the time to open the touching gap at slow() (sleep_speed). Woken at
    // once, it jammed again and slept again, in a loop that time left by 10⁻¹³ a turn or not at
    // all.
    double wake_delay(double radius) const { return touch_gap(radius) / slow(); }
    // The earliest a moving ball under sleeping ball j wakes it (once it has moved away by the
    // touching gap, predictor.cpp): now, unless the jam put j to sleep, and then once j has slept
    // wake_delay (a sleeping ball keeps the time it fell asleep as its t). Always after the time
    // it fell asleep, however small the delay beside that time.
    double wake_time(const Balls& balls, std::uint32_t j, double now) const {
        if (!jam_slept(balls, j)) return now;
        const double slept = balls.t[j];
        return std::max({now, slept + wake_delay(balls.radius[j]), std::nextafter(slept, std::numeric_limits<double>::infinity())});
    }
    // Does a contact with unit normal n (towards the ball) carry some of its weight?
    bool above(Vec3 n) const { return dot(n, -def_.gravity) > 1e-6 * length(def_.gravity); }
    // Does a ball rest on a lower one? dp from the lower ball's centre to the upper's, sigma their
    // radii: they touch, and the lower one's normal force has an upward part (a contact side by
    // side carries no weight).
    bool resting_on(Vec3 dp, double sigma, double gap) const {
        if (beyond(dp, sigma + gap)) return false;
        const double d = length(dp);
        return d - sigma <= gap && above(dp / d);
    }
    // Are two centres dp apart surely farther apart than `reach` (d − σ > gap for reach σ + gap,
    // gap >= 0, whatever the rounding of d and of the difference)? Decided without a square
    // root: most neighbours a ball is tested against are this far.
    static bool beyond(Vec3 dp, double reach) {
        const double most = reach * (1.0 + 1e-12);
        return dot(dp, dp) > most * most;
    }
    // Has the ball been slow at each of its events for sleep_time or sleep_events?
    bool quiet(const Balls& balls, std::uint32_t slot, double now) const {
        return now - balls.quiet_since[slot] >= def_.sleep_time || balls.quiet_events[slot] >= def_.sleep_events;
    }

    // The speed below which a ball counts as slow (unit: length/time): sleep_speed, or with
    // sleeping off, for the balls the jam rule stops, rest_speed. An impact that slow leaves a
    // sleeping ball asleep: with 0, two balls jam-stopped against a wall woke each other at once,
    // each with a new jam budget.
    double slow() const { return def_.sleep_speed > 0.0 ? def_.sleep_speed : def_.rest_speed; }

private:
    const WorldDef& def_;
};

}  // namespace ballistic::detail
