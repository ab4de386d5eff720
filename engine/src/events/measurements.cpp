// Ballistic — what a world measures (measurements.hpp).
#include "events/measurements.hpp"

#include <algorithm>

namespace ballistic::detail {

void Measurements::count(const CollisionEvent& e, double virial_term, double overlap, std::size_t record_limit) {
    // Within the room made (room_for()): it never allocates. Without room (out of memory), the
    // collision is counted but not recorded.
    if (step_events.size() < record_limit && step_events.size() < step_events.capacity()) step_events.push_back(e);
    else ++step_events_unrecorded;
    switch (e.kind) {
        case EventKind::BallBall:
            ++counts.ball_ball;
            virial += virial_term;
            break;
        case EventKind::BallPlane:
            ++counts.ball_plane;
            plane_counters[e.static_index].hits += 1;
            plane_counters[e.static_index].impulse += e.impulse;
            break;
        case EventKind::BallCylinder:
            ++counts.ball_cylinder;
            cylinder_counters[e.static_index].hits += 1;
            cylinder_counters[e.static_index].impulse += e.impulse;
            break;
        case EventKind::BallCapsule:
            ++counts.ball_capsule;
            capsule_counters[e.static_index].hits += 1;
            capsule_counters[e.static_index].impulse += e.impulse;
            break;
        case EventKind::BallBlock:
            ++counts.ball_block;
            block_counters[e.static_index].hits += 1;
            block_counters[e.static_index].impulse += e.impulse;
            break;
    }
    event_overlap = std::max(event_overlap, overlap);
}

void Measurements::reset(double now) {
    collisions_before_reset += counts.collisions();
    counts = {};
    std::fill(plane_counters.begin(), plane_counters.end(), StaticCounters{});
    std::fill(cylinder_counters.begin(), cylinder_counters.end(), StaticCounters{});
    std::fill(capsule_counters.begin(), capsule_counters.end(), StaticCounters{});
    std::fill(block_counters.begin(), block_counters.end(), StaticCounters{});
    window_start = now;
    virial = 0.0;
    temperature_time = 0.0;
    event_overlap = 0.0;
}

}  // namespace ballistic::detail
