// Ballistic — snapshots: World::save() and World::restore() (engine/README.md, "Snapshots").
//
// A snapshot holds everything a step reads: the settings, the statics, the ball store (with each
// ball's local time, rest, quiet history and event counter), the table of rests, the handles,
// every ball's cell and its contact and pending event, and the measurements. The cells's buckets,
// the queue's calendar and the slabs are rebuilt from those: none of them changes what is
// processed (the queue's order is a total order on its keys; predictions do not depend on the
// order cells are walked; results are the same for any slab plan).
#include "base/byte_stream.hpp"

#include "base/format.hpp"
#include "base/validate.hpp"
#include "world/world_impl.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

namespace ballistic {

using detail::reject;
using detail::show;
using detail::SnapshotReader;
using detail::SnapshotWriter;

namespace {

constexpr char kMagic[8] = {'B', 'L', 'S', 'T', 'S', 'N', 'A', 'P'};
constexpr std::uint32_t kByteOrder = 0x01020304;

[[noreturn]] void bad(const std::string& what) { reject("snapshot", what); }

void put_pending(SnapshotWriter& out, const detail::Pending& e) {
    out.put(e.time);
    out.put(e.other);
    out.put(static_cast<std::uint32_t>(e.kind));
}

}  // namespace

namespace detail {

std::uint64_t fnv1a(std::uint64_t hash, const char* bytes, std::size_t count) {
    for (std::size_t k = 0; k < count; ++k) hash = (hash ^ static_cast<unsigned char>(bytes[k])) * 0x100000001b3ull;
    return hash;
}

void SnapshotWriter::write(const char* bytes, std::size_t count) {
    hash_ = fnv1a(hash_, bytes, count);
    out_.write(bytes, static_cast<std::streamsize>(count));
}

void SnapshotWriter::put_checksum() {
    const std::uint64_t hash = hash_;
    put(hash);
}

void SnapshotReader::read(char* bytes, std::size_t count, const char* what) {
    in_.read(bytes, static_cast<std::streamsize>(count));
    if (static_cast<std::size_t>(in_.gcount()) != count)
        bad("ends early, at byte " + std::to_string(offset_ + static_cast<std::uint64_t>(in_.gcount())) + " (reading " +
            what + ")");
    offset_ += count;
    hash_ = fnv1a(hash_, bytes, count);
}

void SnapshotReader::check_checksum() {
    const std::uint64_t expected = hash_;
    if (get<std::uint64_t>("checksum") != expected) bad("checksum mismatch: the file is damaged");
}

}  // namespace detail

void World::save(std::ostream& out_stream) const {
    impl_->between_steps("save");
    const Impl& w = *impl_;
    SnapshotWriter out(out_stream);
    out.write(kMagic, sizeof kMagic);
    out.put(kSnapshotVersion);
    out.put(kByteOrder);

    // Settings (the machine's own, threads, task system and memory limit, are the restorer's).
    const WorldDef& d = w.def;
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

    out.put(w.time);
    out.put(w.loop.processed);
    out.put(w.loop.last_processed);
    out.put(w.collisions_at_reorder);
    out.put(w.max_radius);

    // Statics, with their counters.
    out.put(static_cast<std::uint64_t>(w.statics.planes().size()));
    for (const PlaneDef& p : w.statics.planes()) { out.put(p.point); out.put(p.normal); }
    out.put(static_cast<std::uint64_t>(w.statics.cylinders().size()));
    for (const CylinderDef& c : w.statics.cylinders()) { out.put(c.point); out.put(c.axis); out.put(c.radius); }
    out.put(static_cast<std::uint64_t>(w.statics.capsules().size()));
    for (const detail::Capsule& c : w.statics.capsules()) { out.put(c.def.a); out.put(c.def.b); out.put(c.def.radius); }
    out.put(static_cast<std::uint64_t>(w.statics.blocks().size()));
    for (const BlockDef& b : w.statics.blocks()) { out.put(b.min); out.put(b.max); }
    for (const PlaneId id : w.plane_ids) out.put(id.value);
    w.plane_handles.write(out);
    for (const CylinderId id : w.cylinder_ids) out.put(id.value);
    w.cylinder_handles.write(out);
    for (const CapsuleId id : w.capsule_ids) out.put(id.value);
    w.capsule_handles.write(out);
    for (const BlockId id : w.block_ids) out.put(id.value);
    w.block_handles.write(out);

    // Measurements.
    const detail::Measurements& m = w.measurements;
    out.put(m.counts.ball_ball);
    out.put(m.counts.ball_plane);
    out.put(m.counts.ball_cylinder);
    out.put(m.counts.ball_capsule);
    out.put(m.counts.ball_block);
    out.put(m.counts.cell_crossings);
    for (const auto* list : {&m.plane_counters, &m.cylinder_counters, &m.capsule_counters, &m.block_counters})
        for (const StaticCounters& c : *list) { out.put(c.hits); out.put(c.impulse); }
    out.put(m.window_start);
    out.put(m.virial);
    out.put(m.temperature_time);
    out.put(m.event_overlap);
    out.put(m.collisions_before_reset);

    // RestTable, then balls and handles.
    const Balls& b = w.balls;
    out.put(static_cast<std::uint64_t>(b.rests.size()));
    for (std::uint32_t k = 0; k < b.rests.size(); ++k) {
        const detail::RestTable::Rest& r = b.rests[k];
        for (const std::int32_t s : r.supports) out.put(s);
        out.put(static_cast<std::uint8_t>(r.asleep));
        out.put(r.acceleration);
    }
    out.put(static_cast<std::uint64_t>(b.size()));
    for (const auto* column : b.double_columns()) out.put_column(*column);
    out.put_column(b.counter);
    out.put_column(b.rest);
    out.put_column(b.quiet_events);
    out.put_column(b.jam);
    for (const BallId id : b.id) out.put(id.value);
    out.put_column(b.user);
    w.handles.write(out);

    // Cells, contacts and pending events.
    out.put(static_cast<std::uint8_t>(w.cells_valid));
    if (w.cells_valid) {
        out.put(w.cells.min_width());
        for (std::uint32_t s = 0; s < b.size(); ++s) {
            const detail::CellKey& k = w.cells.key(s);
            out.put(k.x); out.put(k.y); out.put(k.z);
        }
    }
    out.put(static_cast<std::uint8_t>(w.events_valid));
    if (w.events_valid) {
        for (std::uint32_t s = 0; s < b.size(); ++s) {
            put_pending(out, w.contacts[s].event);
            out.put(w.contacts[s].other_counter);
            put_pending(out, w.loop.pending(s));
        }
    }

    // A stopped step's tests of sleeping, for the step that goes on (SleepTests::carried).
    const std::optional<detail::SleepTests::Carried>& carried = w.sleep_tests.carried;
    out.put(static_cast<std::uint8_t>(carried.has_value()));
    if (carried) {
        out.put(carried->test);
        out.put(carried->since);
        for (const auto* list : {&w.sleep_tests.listed, &w.loop.woken}) {
            out.put(static_cast<std::uint64_t>(list->size()));
            for (const std::uint32_t s : *list) out.put(s);
        }
    }
    out.put_checksum();
    out_stream.flush();
    if (out.failed()) throw std::runtime_error("World::save: the stream failed (disk full or closed?)");
}

namespace {

double finite(SnapshotReader& in, const char* what) {
    const double v = in.get<double>(what);
    if (!std::isfinite(v)) bad(std::string(what) + " is " + show(v));
    return v;
}

Vec3 finite_vec(SnapshotReader& in, const char* what) {
    const double x = finite(in, what), y = finite(in, what), z = finite(in, what);
    return {x, y, z};
}

// Statics are kept with unit directions (the world made them so when they were added).
void unit(Vec3 v, const char* what) {
    if (!(std::abs(length(v) - 1.0) <= 1e-12)) bad(std::string(what) + " is not of unit length");
}

std::size_t count(SnapshotReader& in, const char* what, std::uint64_t limit) {
    const auto n = in.get<std::uint64_t>(what);
    if (n > limit) bad(std::string(what) + " " + std::to_string(n) + " exceeds " + std::to_string(limit));
    return static_cast<std::size_t>(n);
}

// A pending event or contact as the queue keeps it, checked against the world's sizes.
detail::Pending get_pending(SnapshotReader& in, std::size_t balls, std::size_t planes, std::size_t cylinders,
                            std::size_t capsules, std::size_t blocks, std::uint32_t slot) {
    detail::Pending e;
    e.time = in.get<double>("event time");
    e.other = in.get<std::uint32_t>("event partner");
    const auto kind = in.get<std::uint32_t>("event kind");
    if (kind > static_cast<std::uint32_t>(detail::Kind::None) || std::isnan(e.time))
        bad("ball slot " + std::to_string(slot) + " has an event of kind " + std::to_string(kind) + " at " + show(e.time));
    e.kind = static_cast<detail::Kind>(kind);
    const std::size_t limit = detail::pairwise(e.kind) ? balls
                              : e.kind == detail::Kind::BallPlane ? planes
                              : e.kind == detail::Kind::BallCylinder ? cylinders
                              : e.kind == detail::Kind::BallCapsule ? capsules
                              : e.kind == detail::Kind::BallBlock ? blocks
                              : e.kind == detail::Kind::Crossing ? 6 : std::size_t{1} << 32;
    if (e.other >= limit || (detail::pairwise(e.kind) && e.other == slot))
        bad("ball slot " + std::to_string(slot) + " has an event with partner " + std::to_string(e.other) +
            " out of range");
    return e;
}


// The settings a snapshot keeps; the threads, task system and memory limit are the restorer's.
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
    d.task_system = options.task_system;
    d.memory_limit = options.memory_limit;
    return d;
}

// How many statics of each kind a snapshot holds.
struct StaticCounts {
    std::size_t planes = 0, cylinders = 0, capsules = 0, blocks = 0;
};

// The planes, cylinders, capsules and blocks, each checked as World::add_* checks it.
StaticCounts read_statics(SnapshotReader& in, const WorldDef& d, detail::Statics& statics) {
    constexpr std::uint64_t kMaxStatics = 1u << 20;
    StaticCounts n;
    n.planes = count(in, "plane count", kMaxStatics);
    for (std::size_t k = 0; k < n.planes; ++k) {
        PlaneDef p;
        p.point = finite_vec(in, "plane point");
        p.normal = finite_vec(in, "plane normal");
        if (detail::periodic_axis_crossed(d, p) >= 0) bad("a periodic world with a plane across a periodic axis");
        detail::Statics::checked(p, "snapshot.planes[" + std::to_string(k) + "]");
        unit(p.normal, "plane normal");
        statics.add(p);
    }
    n.cylinders = count(in, "cylinder count", kMaxStatics);
    for (std::size_t k = 0; k < n.cylinders; ++k) {
        CylinderDef c;
        c.point = finite_vec(in, "cylinder point");
        c.axis = finite_vec(in, "cylinder axis");
        c.radius = finite(in, "cylinder radius");
        if (detail::periodic_axis_crossed(d, c) >= 0) bad("a periodic world with a cylinder across a periodic axis");
        detail::Statics::checked(c, "snapshot.cylinders[" + std::to_string(k) + "]");
        unit(c.axis, "cylinder axis");
        statics.add(c);
    }
    n.capsules = count(in, "capsule count", kMaxStatics);
    if (n.capsules > 0 && d.periodic) bad("a periodic world with capsules");
    for (std::size_t k = 0; k < n.capsules; ++k) {
        CapsuleDef c;
        c.a = finite_vec(in, "capsule end");
        c.b = finite_vec(in, "capsule end");
        c.radius = finite(in, "capsule radius");
        statics.add(detail::Statics::checked(c, "snapshot.capsules[" + std::to_string(k) + "]"));
    }
    n.blocks = count(in, "block count", kMaxStatics);
    if (n.blocks > 0 && d.periodic) bad("a periodic world with blocks");
    for (std::size_t k = 0; k < n.blocks; ++k) {
        BlockDef b;
        b.min = finite_vec(in, "block corner");
        b.max = finite_vec(in, "block corner");
        statics.add(detail::Statics::checked(b, "snapshot.blocks[" + std::to_string(k) + "]"));
    }
    return n;
}

// The counters (overall and per static), the measurement window's sums and the largest overlap.
void read_measurements(SnapshotReader& in, const StaticCounts& n, detail::Measurements& m) {
    m.counts.ball_ball = in.get<std::uint64_t>("counters");
    m.counts.ball_plane = in.get<std::uint64_t>("counters");
    m.counts.ball_cylinder = in.get<std::uint64_t>("counters");
    m.counts.ball_capsule = in.get<std::uint64_t>("counters");
    m.counts.ball_block = in.get<std::uint64_t>("counters");
    m.counts.cell_crossings = in.get<std::uint64_t>("counters");
    m.plane_counters.resize(n.planes);
    m.cylinder_counters.resize(n.cylinders);
    m.capsule_counters.resize(n.capsules);
    m.block_counters.resize(n.blocks);
    for (auto* list : {&m.plane_counters, &m.cylinder_counters, &m.capsule_counters, &m.block_counters})
        for (StaticCounters& c : *list) {
            c.hits = in.get<std::uint64_t>("static counters");
            c.impulse = finite(in, "static impulse");
        }
    m.window_start = finite(in, "measurement window start");
    m.virial = finite(in, "virial");
    m.temperature_time = finite(in, "temperature integral");
    m.event_overlap = finite(in, "largest overlap");
    m.collisions_before_reset = in.get<std::uint64_t>("collisions before reset");
}

// The table of rests: each set of supports once (up to three planes or block faces, awake or
// asleep), the first resting on nothing and awake. They are read one at a time: a count larger
// than the file costs nothing before the file ends. Returns the count.
std::size_t read_rest_table(SnapshotReader& in, const StaticCounts& n, detail::RestTable& table) {
    const double support_sets = 2.0 * std::pow(double(n.planes) + 6.0 * double(n.blocks) + 1.0, 3.0);
    const std::size_t rests = count(in, "rest count", static_cast<std::uint64_t>(std::min(support_sets, 4294967295.0)));
    if (rests == 0) bad("no rest table");
    for (std::size_t k = 0; k < rests; ++k) {
        detail::Supports sup;
        for (std::int32_t& s : sup) {
            s = in.get<std::int32_t>("supports");
            const bool known = s == detail::kNoSupport || (s >= 0 && static_cast<std::size_t>(s) < n.planes) ||
                               (detail::is_face(s) && detail::face_block(s) < n.blocks);
            if (!known)
                bad("rest " + std::to_string(k) + " names support " + std::to_string(s) + " of " + std::to_string(n.planes) +
                    " planes and " + std::to_string(n.blocks) + " blocks");
        }
        const bool asleep = in.get<std::uint8_t>("asleep") != 0;
        const Vec3 a = finite_vec(in, "rest acceleration");
        if (asleep && a != Vec3{}) bad("rest " + std::to_string(k) + " is asleep with acceleration " + show(a));
        const std::uint32_t index = k == 0 ? detail::RestTable::kNone : table.intern(sup, asleep, a);
        const detail::RestTable::Rest& kept = table[index];
        if (index != k || kept.supports != sup || kept.asleep != asleep)
            bad("rest " + std::to_string(k) + " repeats an earlier one or is not the first entry's 'on nothing'");
    }
    return rests;
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

    w.time = finite(in, "time");
    w.loop.processed = in.get<std::uint64_t>("events processed");
    w.loop.last_processed = finite(in, "time of the last event");
    w.collisions_at_reorder = in.get<std::uint64_t>("collisions at the last reorder");
    w.max_radius = finite(in, "largest radius");

    const StaticCounts statics = read_statics(in, d, w.statics);
    const std::size_t planes = statics.planes, cylinders = statics.cylinders, capsules = statics.capsules,
                      blocks = statics.blocks;

    auto static_handles = [&](std::size_t n, auto& handles, auto& ids) {
        const std::vector<std::uint64_t> values = in.get_column<std::uint64_t>(n, "static handles");
        ids.resize(n);
        for (std::size_t k = 0; k < n; ++k) ids[k].value = values[k];
        handles.read(in, std::span(std::as_const(ids)));
    };
    static_handles(planes, w.plane_handles, w.plane_ids);
    static_handles(cylinders, w.cylinder_handles, w.cylinder_ids);
    static_handles(capsules, w.capsule_handles, w.capsule_ids);
    static_handles(blocks, w.block_handles, w.block_ids);

    read_measurements(in, statics, w.measurements);

    const std::size_t rests = read_rest_table(in, statics, w.balls.rests);
    const std::size_t max_balls = w.max_balls();
    Balls& b = w.balls;

    // Balls: counted against the memory limit before any column is read.
    const auto n = in.get<std::uint64_t>("ball count");
    if (n > max_balls) bad(std::to_string(n) + " balls; " + w.too_many_balls(static_cast<std::size_t>(n)));
    const std::size_t balls = static_cast<std::size_t>(n);
    for (auto* column : b.double_columns()) {
        *column = in.get_column<double>(balls, "ball state");
        for (const double v : *column)
            if (!std::isfinite(v) || std::abs(v) > detail::kMaxMagnitude) bad("a ball's state holds " + show(v));
    }
    for (std::size_t s = 0; s < balls; ++s)
        if (!(b.radius[s] > 0.0 && b.inv_mass[s] > 0.0 && b.radius[s] <= w.max_radius))
            bad("ball slot " + std::to_string(s) + " has radius " + show(b.radius[s]) + " and inverse mass " +
                show(b.inv_mass[s]));
    b.counter = in.get_column<std::uint64_t>(balls, "event counters");
    b.rest = in.get_column<std::uint32_t>(balls, "rests");
    for (const std::uint32_t r : b.rest)
        if (r >= rests) bad("a ball rests on entry " + std::to_string(r) + " of " + std::to_string(rests));
    b.quiet_events = in.get_column<std::uint32_t>(balls, "quiet events");
    b.jam = in.get_column<std::uint32_t>(balls, "collisions in a jam");
    for (const std::uint32_t count : b.jam)
        if (count > detail::SleepRules::kJamBudget + 1) bad("a ball counts " + std::to_string(count) + " collisions in a jam");
    const std::vector<std::uint64_t> ids = in.get_column<std::uint64_t>(balls, "handles");
    b.id.resize(balls);
    for (std::size_t s = 0; s < balls; ++s) b.id[s] = BallId{ids[s]};
    b.user = in.get_column<std::uint64_t>(balls, "user data");
    for (auto* column : b.view_columns()) column->resize(balls);  // shown once the world is whole
    w.handles.read(in, b.id);

    // Cells: each ball's, within one cell of where its position lies (rounding at a face).
    w.cells_valid = in.get<std::uint8_t>("cells valid") != 0;
    if (w.cells_valid != (balls > 0)) bad("cells for " + std::to_string(balls) + " balls");
    if (w.cells_valid) {
        const double width = finite(in, "cell width");
        if (!(width >= detail::CellWidths::least(w.max_radius))) bad("cells of width " + show(width) + " are narrower than a ball");
        w.cells.configure(width, d.periodic, d.periodic_axes, balls);
        w.widths.chosen = balls > detail::CellWidths::kFewBalls ? width : 0.0;  // remade at this width
        std::vector<detail::CellKey> keys(balls);
        for (std::size_t s = 0; s < balls; ++s) {
            detail::CellKey& k = keys[s];
            k.x = in.get<std::int32_t>("cell"); k.y = in.get<std::int32_t>("cell"); k.z = in.get<std::int32_t>("cell");
            const detail::CellKey at = w.cells.key_of(b.position_at(s, w.time));
            for (int a = 0; a < 3; ++a) {
                const bool in_range = d.periodic ? k[a] >= 0 && k[a] < w.cells.cells(a)
                                               : k[a] >= -detail::kKeyLimit && k[a] <= detail::kKeyLimit;
                if (!in_range || w.cells.distance(k, at) > 1)
                    bad("ball slot " + std::to_string(s) + " is filed in a cell it is not in");
            }
        }
        w.fit_cells(w.cells, keys);
        w.cells.assign(keys, w.parallel);
        w.index_finite();
    }

    // Contacts and pending events; the queue and the slabs are built from them.
    w.events_valid = in.get<std::uint8_t>("events valid") != 0;
    if (w.events_valid && !w.cells_valid) bad("events without cells");
    if (w.events_valid) {
        w.contacts.resize(balls);
        std::vector<detail::Pending> events(balls);
        for (std::uint32_t s = 0; s < balls; ++s) {
            w.contacts[s].event = get_pending(in, balls, planes, cylinders, capsules, blocks, s);
            w.contacts[s].other_counter = in.get<std::uint64_t>("partner counter");
            events[s] = get_pending(in, balls, planes, cylinders, capsules, blocks, s);
        }
        w.loop.build(events, w.cells);
    }

    // A stopped step's tests of sleeping: the next not before the stop, the lists of balls in range
    // (the first ascending), no more of them than events and balls allow.
    if (in.get<std::uint8_t>("carried tests") != 0) {
        if (!w.events_valid) bad("a stopped step's tests without events");
        const double test = in.get<double>("the next test of sleeping");
        // At the time itself when the step stopped at an event that fell on the test's time.
        if (!(test >= w.time)) bad("the next test of sleeping, at " + show(test) + ", is before the time " + show(w.time));
        const auto since = in.get<std::uint64_t>("events since a test of sleeping");
        if (since > w.loop.processed) bad(std::to_string(since) + " events since a test of sleeping, of " + std::to_string(w.loop.processed));
        for (auto* list : {&w.sleep_tests.listed, &w.loop.woken}) {
            const auto count = in.get<std::uint64_t>("balls to test for sleeping");
            if (count > balls && count - balls > since) bad(std::to_string(count) + " balls to test for sleeping");
            list->clear();
            for (std::uint64_t k = 0; k < count; ++k) {
                const auto s = in.get<std::uint32_t>("a ball to test for sleeping");
                if (s >= balls || (list == &w.sleep_tests.listed && !list->empty() && s <= list->back()))
                    bad("ball slot " + std::to_string(s) + " listed for the tests of sleeping");
                list->push_back(s);
            }
        }
        // As a step leaves them: tests on the interval's multiples and nothing listed without an
        // interval, and every awake ball listed (a ball the lists miss would go untested to the
        // step's end).
        const double every = d.sleep_interval;
        if (test != std::numeric_limits<double>::infinity() && !(every > 0.0 && std::round(test / every) * every == test))
            bad("the next test of sleeping, at " + show(test) + ", is not one of sleep_interval's multiples");
        if (!(every > 0.0) && !(w.sleep_tests.listed.empty() && w.loop.woken.empty()))
            bad("balls listed for the tests of sleeping without a sleep_interval");
        if (w.sleep.enabled()) {
            std::vector<std::uint8_t> listed(balls, 0);
            for (const auto* list : {&w.sleep_tests.listed, &w.loop.woken})
                for (const std::uint32_t s : *list) listed[s] = 1;
            for (std::size_t s = 0; s < balls; ++s)
                if (!listed[s] && !w.balls.asleep(s)) bad("the awake ball slot " + std::to_string(s) + " is not listed for the tests of sleeping");
        }
        w.sleep_tests.carried = detail::SleepTests::Carried{test, since};
    }
    in.check_checksum();
    w.show_balls(w.time);
    return world;
}

}  // namespace ballistic
