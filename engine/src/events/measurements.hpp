// Ballistic — what a world measures: event counters, per-static hits and impulses, the sums
// behind pressure and temperature over the measurement window, and the step's event record.
#pragma once

#include <ballistic/types.hpp>

#include "base/parallel.hpp"
#include "base/reserve.hpp"
#include "space/balls.hpp"
#include "space/statics.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace ballistic::detail {

// The balls' mass, momentum and twice their kinetic energy at world time `now`, summed in blocks
// (`here`: on the calling thread, allocating nothing; the same bits).
struct Moments {
    double mass = 0.0;
    Vec3 momentum;
    double twice_kinetic = 0.0;  // Σ m v²
};
Moments moments(const Balls& balls, double now, Parallel& parallel, bool here = false);
// kT from the peculiar kinetic energy (the centre of mass's motion taken out), 0 below two balls.
double temperature(const Balls& balls, double now, Parallel& parallel, bool here = false);

struct Measurements {
    // The window: from creation or the last reset().
    EventCounts counts;
    std::vector<StaticCounters> plane_counters, cylinder_counters, capsule_counters, block_counters;  // one per static
    double window_start = 0.0;
    double virial = 0.0;            // Σ J σ over ball–ball collisions
    double temperature_time = 0.0;  // ∫ kT dt sampled at step ends
    double event_overlap = 0.0;     // largest overlap met at a collision
    std::uint64_t collisions_before_reset = 0;

    // The current step's collisions, the first `record_limit` of them kept.
    std::vector<CollisionEvent> step_events;
    std::uint64_t step_events_unrecorded = 0;

    std::uint64_t lifetime_collisions() const { return collisions_before_reset + counts.collisions(); }
    void begin_step() {
        step_events.clear();
        step_events_unrecorded = 0;
    }
    void count_crossing() { ++counts.cell_crossings; }
    // Room in the step's record for `more` collisions, so that counting them cannot fail.
    void room_for(std::size_t more, std::size_t record_limit) {
        reserve_for(step_events, std::min(record_limit, step_events.size() + more));
    }
    // A processed collision, its virial J·σ (ball–ball) and the overlap met; after room_for(), it
    // never fails.
    void count(const CollisionEvent& e, double virial_term, double overlap, std::size_t record_limit);
    void reset(double now);

    // Snapshots: the counters (overall and per static), the window's sums and the largest
    // overlap; not the step's record. restore() reads counters for `statics`.
    void save(SnapshotWriter& out) const;
    void restore(SnapshotReader& in, const StaticCounts& statics);

private:
    // The event counters, in the snapshot's order.
    template <class Self>
    static auto counters_of(Self& m) {
        return std::array{&m.counts.ball_ball, &m.counts.ball_plane, &m.counts.ball_cylinder, &m.counts.ball_capsule,
                          &m.counts.ball_block, &m.counts.cell_crossings};
    }
    auto counters() { return counters_of(*this); }
    auto counters() const { return counters_of(*this); }
};

}  // namespace ballistic::detail
