// Ballistic — snapshots: World::save() and World::restore() (docs/architecture.md, "Snapshots").
//
// A snapshot holds everything a step reads: the settings, the statics, the ball store (with each
// ball's local time, rest, quiet history and event counter), the table of rests, the handles,
// every ball's cell and its contact and pending event, and the measurements. Each component
// writes and reads its own part (Statics, StaticHandles, Measurements, RestTable, Balls, Handles,
// SleepTests); this file orders them. The cells' buckets, the queue's calendar and the regions
// are rebuilt from what was read: none of them changes what is processed (the queue's order is a
// total order on its keys; predictions do not depend on the order cells are walked; results are
// the same for any region plan).
#include "base/byte_stream.hpp"

#include "base/format.hpp"
#include "base/validate.hpp"
#include "world/world_impl.hpp"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace ballistic {

using detail::show;
using detail::SnapshotReader;
using detail::SnapshotWriter;

namespace {

constexpr char kMagic[8] = {'B', 'L', 'S', 'T', 'S', 'N', 'A', 'P'};
constexpr std::uint32_t kByteOrder = 0x01020304;

using detail::bad_snapshot;
[[noreturn]] void bad(const std::string& what) { bad_snapshot(what); }

void put_pending(SnapshotWriter& out, const detail::Pending& e) {
    out.put(e.time);
    out.put(e.other);
    out.put(static_cast<std::uint32_t>(e.kind));
}

// The settings; the machine's own (threads, task system, memory limit, regions_when_faster) are
// the restorer's.
void write_settings(SnapshotWriter& out, const WorldDef& d) {
    out.put(d.gravity);
    out.put(d.restitution);
    out.put(d.friction);
    out.put(static_cast<std::uint8_t>(d.periodic.has_value()));
    out.put(d.periodic ? d.periodic->min : Vec3{});
    out.put(d.periodic ? d.periodic->max : Vec3{});
    out.put(static_cast<std::uint8_t>(d.periodic_axes[0] | d.periodic_axes[1] << 1 | d.periodic_axes[2] << 2));
    out.put(d.rest_speed);
    out.put(d.sleep_speed);
    out.put(d.sleep_time);
    out.put(d.sleep_events);
    out.put(d.sleep_friction);
    out.put(d.wake_lift);
    out.put(d.sleep_interval);
    out.put(static_cast<std::uint64_t>(d.step_event_budget));
    out.put(static_cast<std::uint64_t>(d.event_record_limit));
    out.put(static_cast<std::uint64_t>(d.parallel_events_min_balls));
}

}  // namespace

void World::save(std::ostream& out_stream) const {
    impl_->between_steps("save");
    const Impl& w = *impl_;
    SnapshotWriter out(out_stream);
    out.write(kMagic, sizeof kMagic);
    out.put(kSnapshotVersion);
    out.put(kByteOrder);

    write_settings(out, w.def);
    out.put(w.time);
    out.put(w.loop.processed);
    out.put(w.loop.last_processed);
    out.put(w.collisions_at_reorder);
    out.put(w.max_radius);

    w.statics.save(out);
    w.static_handles.save(out);

    w.measurements.save(out);

    w.balls.rests.save(out);
    out.put(static_cast<std::uint64_t>(w.balls.size()));
    w.balls.save(out);
    w.handles.write(out);

    // Cells, contacts and pending events.
    out.put(static_cast<std::uint8_t>(w.cells_valid));
    if (w.cells_valid) {
        out.put(w.cells.min_width());
        for (std::uint32_t s = 0; s < w.balls.size(); ++s) {
            const detail::CellKey& k = w.cells.key(s);
            out.put(k.x); out.put(k.y); out.put(k.z);
        }
    }
    out.put(static_cast<std::uint8_t>(w.events_valid));
    if (w.events_valid) {
        for (std::uint32_t s = 0; s < w.balls.size(); ++s) {
            put_pending(out, w.contacts[s].event);
            out.put(w.contacts[s].other_counter);
            put_pending(out, w.loop.pending(s));
        }
    }

    w.sleep_tests.save(out);  // a stopped step's tests, for the step that goes on
    out.put_checksum();
    out_stream.flush();
    if (out.failed()) throw std::runtime_error("World::save: the stream failed (disk full or closed?)");
}

namespace {

// A pending event or contact as the queue keeps it, checked against the world's sizes.
detail::Pending get_pending(SnapshotReader& in, std::size_t balls, const detail::StaticCounts& statics, std::uint32_t slot) {
    detail::Pending e;
    e.time = in.get<double>("event time");
    e.other = in.get<std::uint32_t>("event partner");
    const auto kind = in.get<std::uint32_t>("event kind");
    if (kind > static_cast<std::uint32_t>(detail::Kind::None) || std::isnan(e.time))
        bad("ball slot " + std::to_string(slot) + " has an event of kind " + std::to_string(kind) + " at " + show(e.time));
    e.kind = static_cast<detail::Kind>(kind);
    const std::size_t limit = detail::pairwise(e.kind) ? balls
                              : e.kind == detail::Kind::BallPlane ? statics.planes
                              : e.kind == detail::Kind::BallCylinder ? statics.cylinders
                              : e.kind == detail::Kind::BallCapsule ? statics.capsules
                              : e.kind == detail::Kind::BallBlock ? statics.blocks
                              : e.kind == detail::Kind::Crossing ? 6 : std::size_t{1} << 32;
    if (e.other >= limit || (detail::pairwise(e.kind) && e.other == slot))
        bad("ball slot " + std::to_string(slot) + " has an event with partner " + std::to_string(e.other) +
            " out of range");
    return e;
}


// The settings a snapshot keeps; the threads, task system, memory limit and regions_when_faster are
// the restorer's.
WorldDef read_settings(SnapshotReader& in, const RestoreOptions& options) {
    WorldDef d;
    d.gravity = in.get_vec("gravity");
    d.restitution = in.get<double>("restitution");
    d.friction = in.get<double>("friction");
    const bool periodic = in.get<std::uint8_t>("periodic") != 0;
    const Vec3 lo = in.get_vec("periodic box"), hi = in.get_vec("periodic box");
    if (periodic) d.periodic = Box{lo, hi};
    const auto axes = in.get<std::uint8_t>("periodic axes");
    if (axes > 7) bad("periodic axes " + std::to_string(axes));
    for (std::size_t a = 0; a < 3; ++a) d.periodic_axes[a] = (axes >> a & 1) != 0;
    d.rest_speed = in.get<double>("rest_speed");
    d.sleep_speed = in.get<double>("sleep_speed");
    d.sleep_time = in.get<double>("sleep_time");
    d.sleep_events = in.get<std::uint32_t>("sleep_events");
    d.sleep_friction = in.get<double>("sleep_friction");
    d.wake_lift = in.get<double>("wake_lift");
    d.sleep_interval = in.get<double>("sleep_interval");
    d.step_event_budget = in.get<std::uint64_t>("step_event_budget");
    d.event_record_limit = static_cast<std::size_t>(in.get<std::uint64_t>("event_record_limit"));
    d.parallel_events_min_balls = static_cast<std::size_t>(in.get<std::uint64_t>("parallel_events_min_balls"));
    d.threads = options.threads;
    d.regions_when_faster = options.regions_when_faster;
    d.task_system = options.task_system;
    d.memory_limit = options.memory_limit;
    return d;
}

// Each ball's cell, within one cell of where its position lies (rounding at a face).
std::vector<detail::CellKey> read_cell_keys(SnapshotReader& in, const detail::Cells& cells, const detail::Balls& balls,
                                            double now, bool periodic) {
    std::vector<detail::CellKey> keys(balls.size());
    for (std::size_t s = 0; s < balls.size(); ++s) {
        detail::CellKey& k = keys[s];
        k.x = in.get<std::int32_t>("cell"); k.y = in.get<std::int32_t>("cell"); k.z = in.get<std::int32_t>("cell");
        const detail::CellKey at = cells.key_of(balls.position_at(s, now));
        for (int a = 0; a < 3; ++a) {
            const bool in_range = periodic ? k[a] >= 0 && k[a] < cells.cells(a)
                                           : k[a] >= -detail::kKeyLimit && k[a] <= detail::kKeyLimit;
            if (!in_range || cells.distance(k, at) > 1) bad("ball slot " + std::to_string(s) + " is filed in a cell it is not in");
        }
    }
    return keys;
}

// Every ball's contact, into `contacts`, and its pending event, returned.
std::vector<detail::Pending> read_events(SnapshotReader& in, const detail::StaticCounts& statics,
                                         detail::Column<detail::Contact>& contacts) {
    const auto balls = static_cast<std::uint32_t>(contacts.size());
    std::vector<detail::Pending> events(balls);
    for (std::uint32_t s = 0; s < balls; ++s) {
        contacts[s].event = get_pending(in, balls, statics, s);
        contacts[s].other_counter = in.get<std::uint64_t>("partner counter");
        events[s] = get_pending(in, balls, statics, s);
    }
    return events;
}

}  // namespace

World World::restore(std::istream& in_stream, const RestoreOptions& options) {
    SnapshotReader in(in_stream);
    char magic[sizeof kMagic];
    in.read(magic, sizeof magic, "the header");
    if (std::memcmp(magic, kMagic, sizeof kMagic) != 0) bad("not a Ballistic snapshot (no BLSTSNAP header)");
    const auto version = in.get<std::uint32_t>("the format version");
    if (version != kSnapshotVersion)
        bad("format version " + std::to_string(version) + "; this build of Ballistic reads version " +
            std::to_string(kSnapshotVersion) + " only");
    if (in.get<std::uint32_t>("the byte order") != kByteOrder) bad("written on a machine of another byte order");

    const WorldDef d = read_settings(in, options);
    World world(d);  // checks the settings, naming their fields
    Impl& w = *world.impl_;

    w.time = in.finite("time");
    w.loop.processed = in.get<std::uint64_t>("events processed");
    w.loop.last_processed = in.finite("time of the last event");
    w.collisions_at_reorder = in.get<std::uint64_t>("collisions at the last reorder");
    w.max_radius = in.finite("largest radius");

    const detail::StaticCounts statics = w.statics.restore(in, d);
    w.static_handles.restore(in, statics);
    w.measurements.restore(in, statics);

    // Balls: counted against the memory limit before any column is read.
    const std::size_t rests = w.balls.rests.restore(in, statics);
    const auto n = in.get<std::uint64_t>("ball count");
    if (n > w.max_balls()) bad(std::to_string(n) + " balls; " + w.too_many_balls(static_cast<std::size_t>(n)));
    const auto balls = static_cast<std::size_t>(n);
    w.balls.restore(in, balls, w.max_radius, rests, detail::SleepRules::kJamBudget + 1);
    w.handles.read(in, w.balls.id);

    // Cells and events; the cells' buckets, the queue and the regions are built from them.
    w.cells_valid = in.get<std::uint8_t>("cells valid") != 0;
    if (w.cells_valid != (balls > 0)) bad("cells for " + std::to_string(balls) + " balls");
    std::vector<detail::CellKey> keys;  // each ball's cell, by slot
    if (w.cells_valid) {
        const double width = in.finite("cell width");
        if (!(width >= detail::CellWidths::least(w.max_radius))) bad("cells of width " + show(width) + " are narrower than a ball");
        w.cells.configure(width, d.periodic, d.periodic_axes, balls);
        w.widths.chosen = balls > detail::CellWidths::kFewBalls ? width : 0.0;  // remade at this width
        keys = read_cell_keys(in, w.cells, w.balls, w.time, d.periodic.has_value());
        w.fit_cells(w.cells, keys);
        w.cells.assign(keys, w.parallel);
        w.index_finite();
    }
    w.events_valid = in.get<std::uint8_t>("events valid") != 0;
    if (w.events_valid && !w.cells_valid) bad("events without cells");
    if (w.events_valid) {
        w.contacts.resize(balls);
        w.loop.build(read_events(in, statics, w.contacts), w.cells, keys);
    }
    w.sleep_tests.restore(in, w.time, w.events_valid);
    in.check_checksum();
    w.show_balls(w.time);
    return world;
}

}  // namespace ballistic
