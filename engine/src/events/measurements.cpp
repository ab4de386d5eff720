// Ballistic — what a world measures (measurements.hpp).
#include "events/measurements.hpp"

#include "base/byte_stream.hpp"

#include <algorithm>

namespace ballistic::detail {

Moments moments(const Balls& balls, double now, Parallel& parallel, bool here) {
    auto block = [&](std::size_t begin, std::size_t end) {
        Moments m;
        for (std::size_t s = begin; s < end; ++s) {
            const double mass = 1.0 / balls.inv_mass[s];
            const Vec3 v = balls.velocity_at(s, now);
            m.mass += mass;
            m.momentum += v * mass;
            m.twice_kinetic += mass * dot(v, v);
        }
        return m;
    };
    auto combine = [](const Moments& a, const Moments& b) {
        return Moments{a.mass + b.mass, a.momentum + b.momentum, a.twice_kinetic + b.twice_kinetic};
    };
    return here ? parallel.reduce_here(balls.size(), Moments{}, block, combine)
                : parallel.reduce_light(balls.size(), Moments{}, block, combine);
}

double temperature(const Balls& balls, double now, Parallel& parallel, bool here) {
    const std::size_t n = balls.size();
    if (n < 2) return 0.0;
    const Moments m = moments(balls, now, parallel, here);
    const double peculiar = m.twice_kinetic - dot(m.momentum, m.momentum) / m.mass;
    return peculiar / (3.0 * static_cast<double>(n - 1));
}

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

void Measurements::save(SnapshotWriter& out) const {
    for (const std::uint64_t* counter : counters()) out.put(*counter);
    for (const auto* list : {&plane_counters, &cylinder_counters, &capsule_counters, &block_counters})
        for (const StaticCounters& c : *list) { out.put(c.hits); out.put(c.impulse); }
    out.put(window_start);
    out.put(virial);
    out.put(temperature_time);
    out.put(event_overlap);
    out.put(collisions_before_reset);
}

void Measurements::restore(SnapshotReader& in, const StaticCounts& statics) {
    for (std::uint64_t* counter : counters()) *counter = in.get<std::uint64_t>("counters");
    plane_counters.resize(statics.planes);
    cylinder_counters.resize(statics.cylinders);
    capsule_counters.resize(statics.capsules);
    block_counters.resize(statics.blocks);
    for (auto* list : {&plane_counters, &cylinder_counters, &capsule_counters, &block_counters})
        for (StaticCounters& c : *list) {
            c.hits = in.get<std::uint64_t>("static counters");
            c.impulse = in.finite("static impulse");
        }
    window_start = in.finite("measurement window start");
    virial = in.finite("virial");
    temperature_time = in.finite("temperature integral");
    event_overlap = in.finite("largest overlap");
    collisions_before_reset = in.get<std::uint64_t>("collisions before reset");
}

}  // namespace ballistic::detail
