// Ballistic — the World facade: validation of every call, creation, the balls and statics added,
// changed and removed between steps, and the questions and measurements it answers (stepping is
// in step.cpp).
#include "base/format.hpp"
#include "base/validate.hpp"
#include "world/world_impl.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ballistic {

using detail::axis;
using detail::CellKey;

using detail::kTouchTolerance;
using detail::reject;
using detail::require_finite;
using detail::require_non_negative;
using detail::require_positive;
using detail::show;

namespace {

// The queue packs a partner slot with the event kind into 32 bits.
constexpr std::size_t kMaxBalls = std::size_t{1} << 29;

}  // namespace

// ---------------------------------------------------------------------------------------------
// Memory

double World::bytes_per_ball() const {
    const Impl& w = *impl_;
    const std::size_t n = w.balls.size();
    if (n == 0) return 0.0;
    const std::size_t per_ball = w.balls.bytes_per_ball() + sizeof(detail::Contact) +
                                 detail::EventQueue::kBytesPerEntry + detail::Handles<BallId>::kBytesPerBall;
    return double(per_ball) + double(w.cells.bytes() + w.balls.rests.bytes() + w.loop.bytes()) / double(n);
}

double World::cell_width() const {
    if (!impl_->cells_valid) return 0.0;
    const double width = impl_->cells.min_width();
    return width < detail::kWholeSpace ? width : std::numeric_limits<double>::infinity();
}

// ---------------------------------------------------------------------------------------------
// Impl helpers

namespace {

constexpr std::string_view kNoSleepHere =
    "no ball can sleep in this world: it takes gravity, restitution below 1 or friction, and a plane, capsule or "
    "block to rest on";

}  // namespace

std::string World::Impl::conflict(Vec3 p, double r, std::uint32_t first_new, std::uint32_t below,
                                  double largest, const detail::FiniteNear* near, std::uint32_t except) const {
    if (std::string found = statics.overlapped(p, r, near); !found.empty()) return found;
    if (def.periodic) {
        for (int d = 0; d < 3; ++d)
            if (!(axis(p, d) >= axis(def.periodic->min, d) && axis(p, d) < axis(def.periodic->max, d)))
                return "lies outside the periodic box";
    }
    if (below == 0) return {};
    std::string found;
    auto check = [&](std::uint32_t j) {
        if (!found.empty() || j >= below || j == except) return;
        const double sigma = r + balls.radius[j];
        const Vec3 at = balls.position_at(j, time);
        const double gap = length(detail::min_image(def, at - p)) - sigma;
        if (!(gap < -kTouchTolerance * sigma)) return;
        const std::string other = j >= first_new
            ? "balls[" + std::to_string(j - first_new) + "]"
            : "the ball with handle " + std::to_string(balls.id[j].value);
        found = "overlaps " + other + " at " + show(at) + " by " + show(-gap);
    };
    // The query never reconfigures the cells (that would change the world): it searches as many
    // cells around p as a contact can span, or every ball when that is cheaper.
    const double reach = r + largest;
    const double around = std::ceil(reach * (1.0 + detail::CellWidths::kMargin) / cells.min_width());
    if (std::pow(2.0 * around + 1.0, 3.0) > double(below)) {
        for (std::uint32_t j = 0; j < below && found.empty(); ++j) check(j);
    } else {
        cells.for_each_within(cells.key_of(p), static_cast<std::int64_t>(around), check);
        // Roamers (in a pause) are listed where they last crossed into their blocks.
        if (roaming.active())
            for (const std::uint32_t j : roaming.roamers()) check(j);
    }
    return found;
}

// ---------------------------------------------------------------------------------------------
// World

World::World(const WorldDef& def) {
    require_finite("world.gravity", def.gravity);
    require_finite("world.time", def.time);
    if (!(def.restitution >= 0.0 && def.restitution <= 1.0))
        reject("world.restitution", "must be in [0, 1], got " + show(def.restitution));
    require_positive("world.rest_speed", def.rest_speed);
    require_non_negative("world.sleep_speed", def.sleep_speed);
    // A ball pressed into another leaves at rest_speed: faster than sleep_speed, it is never
    // quiet, and a pile chatters on (demos/scenes/pile.json with 0.2: half its balls awake at 10 s).
    if (def.sleep_speed > 0.0 && def.rest_speed > def.sleep_speed)
        reject("world.rest_speed", "must be <= sleep_speed (" + show(def.sleep_speed) +
                                       ") where balls may sleep, as a ball pressed into another leaves at rest_speed "
                                       "and one faster than sleep_speed never sleeps (or set sleep_speed 0), got " +
                                       show(def.rest_speed));
    require_non_negative("world.sleep_time", def.sleep_time);
    if (def.sleep_events < 1) reject("world.sleep_events", "must be >= 1, got 0");
    require_non_negative("world.sleep_friction", def.sleep_friction);
    require_non_negative("world.sleep_interval", def.sleep_interval);
    require_non_negative("world.wake_lift", def.wake_lift);
    require_non_negative("world.friction", def.friction);
    if (def.threads < 0 || def.threads > kMaxThreads)
        reject("world.threads", "must be in [0, " + std::to_string(kMaxThreads) + "] (the limit on threads), got " +
                                    std::to_string(def.threads));
    if (def.task_system && def.task_system->concurrency() < 1)
        reject("world.task_system", "concurrency must be >= 1, got " + std::to_string(def.task_system->concurrency()));
    if (def.periodic) detail::require_box("world.periodic", *def.periodic, "world.periodic");
    if (def.periodic && def.periodic_axes == std::array<bool, 3>{})
        reject("world.periodic.axes", "at least one axis must be periodic, got none (a world without periodic axes "
                                      "has no periodic box: close it with planes)");
    impl_ = std::make_unique<Impl>(def);
}

World::~World() = default;
World::World(World&& other) {
    if (other.impl_) other.impl_->between_steps("move");
    impl_ = std::move(other.impl_);
}

World& World::operator=(World&& other) {
    if (impl_) impl_->between_steps("operator=");
    if (other.impl_) other.impl_->between_steps("move");
    impl_ = std::move(other.impl_);
    return *this;
}

template <class Id, class Def>
Id World::Impl::add_static(const Def& unit, const std::string& field, std::vector<StaticCounters>& counters) {
    for (std::size_t s = 0; s < balls.size(); ++s)
        if (const Vec3 p = balls.position_at(s, time); detail::overlaps(unit, p, balls.radius[s]))
            reject(field, "overlaps the ball with handle " + std::to_string(balls.id[s].value) + " by " +
                              show(-detail::clearance(unit, p, balls.radius[s])));
    // Room for everything first: once the static is in, nothing fails.
    detail::reserve_for(counters, counters.size() + 1);
    static_handles.reserve_one<Id>();
    const std::uint32_t index = statics.add(unit);
    counters.emplace_back();
    events_valid = false;
    return static_handles.issue<Id>(index);
}

PlaneId World::add_plane(const PlaneDef& def) {
    impl_->changing("add_plane");
    Impl& w = *impl_;
    const std::string field = "planes[" + std::to_string(w.statics.planes().size()) + "]";
    w.room_for_infinite(field);
    if (const int d = detail::periodic_axis_crossed(w.def, def); d >= 0)
        reject(field + ".normal", show(def.normal) + " crosses the periodic axis " + "xyz"[d] +
                                      ": a plane of a periodic world must be parallel to every axis that wraps");
    return w.add_static<PlaneId>(detail::Statics::checked(def, field), field, w.measurements.plane_counters);
}

CylinderId World::add_cylinder(const CylinderDef& def) {
    impl_->changing("add_cylinder");
    Impl& w = *impl_;
    const std::string field = "cylinders[" + std::to_string(w.statics.cylinders().size()) + "]";
    w.room_for_infinite(field);
    if (const int d = detail::periodic_axis_crossed(w.def, def); d >= 0)
        reject(field + ".axis", show(def.axis) + " is not along the periodic axis " + "xyz"[d] +
                                    ": a column of a periodic world must lie along the one axis that wraps");
    return w.add_static<CylinderId>(detail::Statics::checked(def, field), field, w.measurements.cylinder_counters);
}

void World::Impl::room_for_infinite(const std::string& field) const {
    if (statics.planes().size() + statics.cylinders().size() >= detail::kMostInfinite)
        reject(field, "a world holds at most " + std::to_string(detail::kMostInfinite) +
                          " planes and cylinders together (every prediction tests each of them); capsules and "
                          "blocks, found through the cells, may be many more");
}

template <class Id, class Def>
Id World::Impl::add_finite(const Def& static_def, const std::string& kind, std::vector<StaticCounters>& counters) {
    const std::size_t count = static_handles.of<Id>().ids.size();
    const std::string field = kind + "[" + std::to_string(count) + "]";
    if (def.periodic)
        reject(field, "a periodic world has no " + kind + " (" + kind +
                          " have no periodic images); close the world with planes instead");
    if (count >= detail::kMostFinite)
        reject(field, "a world holds at most " + std::to_string(detail::kMostFinite) + " " + kind);
    return add_static<Id>(detail::Statics::checked(static_def, field), field, counters);
}

CapsuleId World::add_capsule(const CapsuleDef& def) {
    impl_->changing("add_capsule");
    return impl_->add_finite<CapsuleId>(def, "capsules", impl_->measurements.capsule_counters);
}

BlockId World::add_block(const BlockDef& def) {
    impl_->changing("add_block");
    return impl_->add_finite<BlockId>(def, "blocks", impl_->measurements.block_counters);
}

template <class Id>
void World::Impl::drop_static(std::uint32_t index, std::vector<StaticCounters>& counters) noexcept {
    static_handles.drop<Id>(index);
    counters[index] = counters.back();
    counters.pop_back();
    events_valid = false;  // pending events name statics by index
}

void World::remove_plane(PlaneId id) {
    impl_->changing("remove_plane");
    Impl& w = *impl_;
    const std::uint32_t k = w.static_handles.index(id, "plane");
    // Everything that allocates first (the planes and rests as they will be): then nothing fails.
    std::vector<PlaneDef> after = w.statics.planes();
    after[k] = after.back();
    after.pop_back();
    Impl::Awakening awakening;
    w.prepare_awakening(awakening, w.def.gravity, after, static_cast<std::int32_t>(k));  // nothing rests on it
    w.static_handles.of<PlaneId>().handles.reserve_release();
    w.commit_awakening(awakening);
    w.statics.remove_plane(k);
    w.drop_static<PlaneId>(k, w.measurements.plane_counters);
}

template <class Id>
void World::Impl::remove_static(Id id, const char* what, std::vector<StaticCounters>& counters,
                                void (detail::Statics::*remove)(std::uint32_t) noexcept) {
    const std::uint32_t k = static_handles.index(id, what);
    Awakening awakening;
    // Balls resting on a block's face leave them all (block indices change); they settle again.
    prepare_awakening(awakening, def.gravity, statics.planes(), detail::kNoSupport,
                      std::is_same_v<Id, BlockId>);
    static_handles.of<Id>().handles.reserve_release();
    commit_awakening(awakening);
    (statics.*remove)(k);
    drop_static<Id>(k, counters);
}

void World::remove_cylinder(CylinderId id) {
    impl_->changing("remove_cylinder");
    impl_->remove_static(id, "cylinder", impl_->measurements.cylinder_counters, &detail::Statics::remove_cylinder);
}

void World::remove_capsule(CapsuleId id) {
    impl_->changing("remove_capsule");
    impl_->remove_static(id, "capsule", impl_->measurements.capsule_counters, &detail::Statics::remove_capsule);
}

void World::remove_block(BlockId id) {
    impl_->changing("remove_block");
    impl_->remove_static(id, "block", impl_->measurements.block_counters, &detail::Statics::remove_block);
}

bool World::contains(PlaneId id) const { return impl_->static_handles.contains(id); }
bool World::contains(CylinderId id) const { return impl_->static_handles.contains(id); }
bool World::contains(CapsuleId id) const { return impl_->static_handles.contains(id); }
bool World::contains(BlockId id) const { return impl_->static_handles.contains(id); }
std::uint32_t World::index(PlaneId id) const { return impl_->static_handles.index(id, "plane"); }
std::uint32_t World::index(CylinderId id) const { return impl_->static_handles.index(id, "cylinder"); }
std::uint32_t World::index(CapsuleId id) const { return impl_->static_handles.index(id, "capsule"); }
std::uint32_t World::index(BlockId id) const { return impl_->static_handles.index(id, "block"); }
PlaneId World::plane_id(std::uint32_t index) const { return impl_->static_handles.id<PlaneId>(index, "plane"); }
CylinderId World::cylinder_id(std::uint32_t index) const { return impl_->static_handles.id<CylinderId>(index, "cylinder"); }
CapsuleId World::capsule_id(std::uint32_t index) const { return impl_->static_handles.id<CapsuleId>(index, "capsule"); }
BlockId World::block_id(std::uint32_t index) const { return impl_->static_handles.id<BlockId>(index, "block"); }

BallId World::add_ball(const BallDef& def) {
    return add_balls(std::span<const BallDef>(&def, 1)).front();
}

namespace {

// A ball's radius must be at least kResolved of its largest coordinate (then 2¹² doubles per
// radius there): a smaller one leaves its contacts to rounding.
constexpr double kResolved = 0x1p-40;
void require_resolved(const std::string& field, Vec3 position, double radius) {
    const double far = std::max({std::abs(position.x), std::abs(position.y), std::abs(position.z)});
    if (!(radius >= kResolved * far))
        reject(field, "a ball of radius " + show(radius) + " at " + show(position) +
                          " is smaller than the doubles there resolve: the radius must be at least 2^-40 (about "
                          "9.1e-13) of the largest coordinate, so that contacts are not left to rounding");
}

// Refuses a ball of add_balls() (balls[k]) that no world could take, or this one could not: its
// numbers, its sleeping, and in a periodic world its size against the box.
void check_ball(const BallDef& ball, std::size_t k, const WorldDef& def, bool balls_can_sleep,
                const detail::CellWidths& widths, double max_radius) {
    auto field = [k](const char* member) {
        return [k, member] { return "balls[" + std::to_string(k) + "]" + member; };
    };
    require_finite(field(".position"), ball.position);
    require_finite(field(".velocity"), ball.velocity);
    require_positive(field(".radius"), ball.radius);
    require_positive(field(".mass"), ball.mass);
    // Inverse masses and squared radii must stay ordinary doubles.
    if (!std::isnormal(1.0 / ball.mass))
        reject(field(".mass")(), "is out of range (its inverse must be a normal double), got " + show(ball.mass));
    if (!std::isnormal(ball.radius * ball.radius))
        reject(field(".radius")(), "is too small (its square must be a normal double: at least about 1.5e-154), got " +
                                      show(ball.radius));
    require_resolved(field(".radius")(), ball.position, ball.radius);
    if (ball.sleeping && !(ball.velocity == Vec3{}))
        reject(field(".sleeping")(), "a sleeping ball stands still: its velocity must be [0, 0, 0], got " +
                                        show(ball.velocity));
    if (ball.sleeping && !balls_can_sleep) reject(field(".sleeping")(), std::string(kNoSleepHere));
    if (def.periodic) {
        const double width = detail::CellWidths::least(std::max(ball.radius, max_radius));
        // The same arithmetic as the cells: whole cells per periodic side, at least three.
        if (std::floor(widths.shortest_period() / width) < 3.0)
            reject(field(".radius")(), "too large for the periodic box: every periodic side must be at least " +
                                          show(3.0 * width) + " (three cell widths), got radius " + show(ball.radius));
    }
}

}  // namespace

// World::add_balls, all or nothing. Every ball goes in first; then each is checked against the
// statics and the balls before it (the world's and the earlier ones of the call), in parallel
// blocks, exactly as adding them one by one would check it, and the problem of the lowest index
// is reported (the world's balls where they are at its time). Cells are missing only before the
// first ball, when no event is pending: then they are made once, from all balls, with the cell
// width and, cell by cell, the lists that making them first and inserting the new balls one by
// one gives. Until commit(), roll_back() leaves the world as it was.
struct World::Impl::Adding {
    static constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

    Impl& w;
    std::span<const BallDef> defs;
    const double old_max_radius = w.max_radius;
    const std::uint32_t first_slot = static_cast<std::uint32_t>(w.balls.size());
    // Past CellWidths::kFewBalls the world's one wide cell splits (CellWidths::for_radius()): the
    // cells are remade. They are kept (at most kFewBalls balls) to be put back should the call be
    // refused.
    const bool remake = !w.cells_valid || (w.balls.size() <= detail::CellWidths::kFewBalls &&
                                           w.balls.size() + defs.size() > detail::CellWidths::kFewBalls);
    std::optional<detail::Cells> cells_before = remake ? std::optional(w.cells) : std::nullopt;
    const bool cells_were_valid = w.cells_valid, events_were_valid = w.events_valid;
    std::size_t in_cells = 0;  // new balls inserted into the cells so far
    // The scratch of the test of the balls added asleep (Sleep::wake_unheld()).
    const bool any_asleep = std::any_of(defs.begin(), defs.end(), [](const BallDef& d) { return d.sleeping; });
    std::vector<std::uint8_t> held;
    std::vector<std::uint32_t> on_held;
    std::vector<BallId> ids;

    // Room for what the commit hands out, before any change: what may fail comes first.
    Adding(Impl& world, std::span<const BallDef> added) : w(world), defs(added) {
        ids.reserve(defs.size());
        if (any_asleep) {
            held.reserve(defs.size());
            on_held.reserve(defs.size());
        }
    }
    // Puts every ball in and checks them; returns the lowest index with a problem, and the problem
    // in `found`, or kNone.
    std::size_t place(std::string& found) {
        std::vector<double> largest_before(defs.size());  // the largest radius a ball is checked against
        w.handles.reserve(defs.size());
        w.balls.reserve(first_slot + defs.size());
        if (w.events_valid) {  // room for their events (predict_changed()), which then fails only for want of scratch
            detail::reserve_for(w.contacts, first_slot + defs.size());
            w.loop.reserve(first_slot + defs.size());
        }
        for (std::size_t k = 0; k < defs.size(); ++k) {
            largest_before[k] = w.max_radius;
            push(defs[k]);
        }
        if (remake) w.rebuild_cells(w.max_radius);
        const auto near = w.statics.finite_near_points(w.max_radius);  // the largest ball now, added ones too
        auto problem = [&](std::size_t k) {
            return w.conflict(defs[k].position, defs[k].radius, first_slot,
                              first_slot + static_cast<std::uint32_t>(k), largest_before[k], near.get());
        };
        const std::size_t first_bad = w.parallel.reduce(
            defs.size(), kNone,
            [&](std::size_t begin, std::size_t end) {
                for (std::size_t k = begin; k < end; ++k)
                    if (!problem(k).empty()) return k;
                return kNone;
            },
            [](std::size_t a, std::size_t b) { return std::min(a, b); });
        if (first_bad != kNone) found = problem(first_bad);
        return first_bad;
    }
    void push(const BallDef& added) {
        const auto s = static_cast<std::uint32_t>(w.balls.size());
        // A ball added at rest counts as quiet: a saved settled state sleeps again at once.
        const bool at_rest = length(added.velocity) <= w.def.sleep_speed;
        BallDef def = added;
        if (def.sleeping) def.velocity = {};  // +0 as for a ball that fell asleep, never −0
        w.balls.push(def, w.time, BallId{}, at_rest ? w.def.sleep_events : 0);
        if (def.sleeping)  // on nothing: woken, it finds what it rests on by its first collisions
            w.balls.rest[s] = w.balls.rests.intern(w.balls.rests[detail::RestTable::kNone].supports, true, {});
        if (!remake) {
            w.cells.insert(s, w.cells.key_of(added.position));
            ++in_cells;
        }
        w.max_radius = std::max(w.max_radius, added.radius);
    }
    void roll_back() {
        while (w.balls.size() > first_slot) {
            const auto s = static_cast<std::uint32_t>(w.balls.size() - 1);
            if (s < first_slot + in_cells) w.cells.erase(s);
            w.balls.pop();
        }
        w.max_radius = old_max_radius;
        if (remake) {  // the cells and events as they were (nothing else has changed)
            w.cells = std::move(*cells_before);
            w.cells_valid = cells_were_valid;
            w.events_valid = events_were_valid;
        }
    }
    // Between calls the cells are at least as wide as the largest ball: the const queries
    // (is_free, max_overlap, ray_cast) read them and never change the world. Returns whether the
    // cells were remade.
    bool widen_cells() {
        const bool regrid = remake || w.cells.min_width() < detail::CellWidths::least(w.max_radius);
        if (remake || !regrid) return regrid;
        try {
            w.rebuild_cells(w.max_radius);
        } catch (...) {
            in_cells = 0;  // the cells are remade, not edited
            roll_back();
            w.rebuild_cells(old_max_radius);
            throw;
        }
        return true;
    }
    // With nothing left to fail: the balls added asleep with nothing under them fall, the handles
    // are handed out, and the events found.
    std::vector<BallId> commit(bool regrid) {
        // A state file may list a ball before the one it rests on: all of them are in the cells now.
        if (any_asleep) w.sleep.wake_unheld(first_slot, w.time, held, on_held);
        for (std::uint32_t s = first_slot; s < w.balls.size(); ++s) {
            w.balls.id[s] = w.handles.issue(s);
            ids.push_back(w.balls.id[s]);
        }
        // New cells (pending crossings name the old ones), or a larger ball (the capsules and
        // blocks are listed in the cells a largest ball's reach around them): the events are
        // rebuilt.
        if (regrid || w.max_radius > old_max_radius) {
            w.events_valid = false;
        } else {
            // An awake ball that a new sleeping one rests on wakes it as it moves away: its event
            // is found again (the new balls' own are found with the new sleeping balls there).
            std::vector<std::uint32_t> under;
            try {
                for (std::uint32_t s = first_slot; s < w.balls.size(); ++s)
                    if (w.balls.asleep(s)) w.sleep.awake_under(s, w.time, first_slot, under);
                std::sort(under.begin(), under.end());
                under.erase(std::unique(under.begin(), under.end()), under.end());
            } catch (...) {  // out of memory: every event is found again at the next step
                w.events_valid = false;
            }
            w.predict_changed(under, first_slot);
        }
        w.roaming_added(first_slot);  // in a pause while balls roam
        return std::move(ids);
    }
};

std::vector<BallId> World::add_balls(std::span<const BallDef> defs) {
    Impl& w = *impl_;
    w.sleep_tests.carried.reset();  // in a pause, the step has taken them already
    for (std::size_t k = 0; k < defs.size(); ++k) check_ball(defs[k], k, w.def, w.sleep.jams(), w.widths, w.max_radius);
    if (defs.empty()) return {};
    if (defs.size() > w.max_balls() - w.balls.size()) reject("balls", w.too_many_balls(defs.size()));
    Impl::Adding adding(w, defs);
    std::string found;
    std::size_t first_bad;
    try {
        first_bad = adding.place(found);
    } catch (...) {
        adding.roll_back();
        throw;
    }
    if (first_bad != Impl::Adding::kNone) {
        adding.roll_back();
        reject("balls[" + std::to_string(first_bad) + "].position", show(defs[first_bad].position) + " " + found);
    }
    return adding.commit(adding.widen_cells());
}

void World::remove_ball(BallId id) {
    impl_->changing("remove_ball");
    Impl& w = *impl_;
    const std::uint32_t s = w.handles.slot(id, "ball");
    w.handles.reserve_release();
    // The last step that may fail (out of memory), leaving the world as it was.
    w.sleep.commit_wake(w.sleep.prepare_wake_touching(s, w.time), w.time);
    const auto last = static_cast<std::uint32_t>(w.balls.size() - 1);
    if (w.cells_valid) w.cells.erase(s);
    if (s != last) {
        w.balls.move(last, s);
        w.handles.moved(w.balls.id[s], s);
        if (w.cells_valid) w.cells.renumber(last, s);
    }
    w.balls.pop();
    w.handles.release(id);
    w.events_valid = false;
}

void World::Impl::disturbed(std::uint32_t s, const detail::Sleep::Woken& woken) {
    balls.show(s);  // the callers brought it to the world's time
    balls.restart_quiet(s, time);
    balls.hold_still(s, balls.position(s), time);
    balls.jam[s] = 0;
    ++balls.counter[s];
    const auto none_added = static_cast<std::uint32_t>(balls.size());
    predict_changed(std::span(&s, 1), none_added);
    for (const auto& [j, rest] : woken) predict_changed(std::span(&j, 1), none_added);
}

void World::Impl::predict_changed(std::span<const std::uint32_t> changed, std::uint32_t first_added) noexcept {
    if (!events_valid) return;
    const auto n = static_cast<std::uint32_t>(balls.size());
    if (first_added < n && std::bit_floor(n) > first_added) {  // the count reached a power of two
        events_valid = false;
        return;
    }
    try {
        contacts.resize(n);
        for (const std::uint32_t s : changed) loop.requeue(s, predictor.predict(s, time));
        for (std::uint32_t s = first_added; s < n; ++s) loop.append(s, predictor.predict(s, time));
    } catch (...) {
        events_valid = false;
    }
}

void World::set_position(BallId id, Vec3 position) {
    impl_->changing("set_position");
    Impl& w = *impl_;
    const std::uint32_t s = w.handles.slot(id, "ball");
    require_finite("ball.position", position);
    require_resolved("ball.position", position, w.balls.radius[s]);
    const std::string found = w.conflict(position, w.balls.radius[s], UINT32_MAX,
                                         static_cast<std::uint32_t>(w.balls.size()), w.max_radius,
                                         w.statics.finite_near_points(w.balls.radius[s]).get(), s);
    if (!found.empty()) reject("ball.position", show(position) + " " + found);
    // What may fail first, changing nothing: what rested on it where it was, its new cell.
    const detail::Sleep::Woken woken = w.sleep.prepare_wake_touching(s, w.time);
    if (w.cells_valid) w.cells.move(s, w.cells.key_of(position));
    w.balls.advance(s, w.time);  // its velocity there
    w.balls.set_position(s, position);
    w.balls.rest[s] = detail::RestTable::kNone;  // awake, on nothing: it settles again if it is on a plane
    w.sleep.commit_wake(woken, w.time);
    w.disturbed(s, woken);
}

void World::set_velocity(BallId id, Vec3 velocity) {
    impl_->changing("set_velocity");
    Impl& w = *impl_;
    const std::uint32_t s = w.handles.slot(id, "ball");
    require_finite("ball.velocity", velocity);
    const bool asleep = w.balls.asleep(s);
    // The balls resting on it.
    const detail::Sleep::Woken woken =
        asleep ? w.sleep.prepare_wake_touching(s, w.time) : detail::Sleep::Woken{};
    // As it was, to be put back should an entry of the table of rests fail: a sleeping ball's
    // local time is when it fell asleep (SleepRules::wake_time()).
    const Vec3 from = w.balls.position(s), before = w.balls.velocity(s);
    const double since = w.balls.t[s];
    const std::uint32_t rest = w.balls.rest[s];
    const std::uint64_t counter = w.balls.counter[s];
    w.balls.advance(s, w.time);  // the same path: its position there
    try {
        if (asleep) w.sleep.wake(s, w.time);
        w.balls.set_velocity(s, velocity);
        w.response.release_supports(s);  // off the planes it now leaves; along those it stays on
    } catch (...) {  // out of memory for an entry of the table of rests: as it was
        w.balls.set_position(s, from);
        w.balls.set_velocity(s, before);
        w.balls.t[s] = since;
        w.balls.rest[s] = rest;
        w.balls.counter[s] = counter;
        throw;
    }
    w.sleep.commit_wake(woken, w.time);
    w.disturbed(s, woken);
}

void World::set_sleeping(BallId id, bool sleeping) {
    impl_->changing("set_sleeping");
    Impl& w = *impl_;
    const std::uint32_t s = w.handles.slot(id, "ball");
    if (sleeping == w.balls.asleep(s)) return;
    if (!sleeping) return set_velocity(id, {});
    if (!w.sleep.jams()) reject("ball.sleeping", std::string(kNoSleepHere));
    // What may fail first, changing nothing: the awake balls it may rest on, which wake it as
    // they leave (their events are found again), and its entry in the table of rests.
    std::vector<std::uint32_t> changed{s};
    if (w.cells_valid) w.sleep.awake_under(s, w.time, static_cast<std::uint32_t>(w.balls.size()), changed);
    w.sleep.sleep_now(s, w.time);
    w.balls.show(s);
    w.balls.jam[s] = 0;
    w.predict_changed(changed, static_cast<std::uint32_t>(w.balls.size()));
}

void World::apply_impulse(BallId id, Vec3 impulse) {
    const Impl& w = *impl_;
    const std::uint32_t s = w.handles.slot(id, "ball");
    require_finite("ball.impulse", impulse);
    const Vec3 velocity = w.balls.velocity_at(s, w.time) + impulse * w.balls.inv_mass[s];
    require_finite("ball.impulse", velocity);  // the velocity it gives, within the same bounds
    set_velocity(id, velocity);
}

void World::set_user_data(BallId id, std::uint64_t value) {
    Impl& w = *impl_;
    w.balls.user[w.handles.slot(id, "ball")] = value;
}

std::uint64_t World::user_data(BallId id) const { return impl_->balls.user[impl_->handles.slot(id, "ball")]; }

void World::set_event_record_limit(std::size_t collisions) {
    impl_->between_steps("set_event_record_limit");
    impl_->def.event_record_limit = collisions;
}

void World::Impl::between_steps(const char* call) const {
    if (pausing)
        throw std::logic_error(std::string("world.") + call +
                               ": not allowed in a pause of a step (only adding balls and reading single balls are)");
}

void World::Impl::changing(const char* call) {
    between_steps(call);
    sleep_tests.carried.reset();
}

void World::set_step_event_budget(std::uint64_t events) {
    impl_->between_steps("set_step_event_budget");
    impl_->def.step_event_budget = events;
}
void World::set_interrupt(const std::atomic<bool>* flag) { impl_->loop.interrupt = flag; }
std::uint64_t World::events_processed() const { return impl_->loop.processed; }

void World::set_gravity(Vec3 gravity) {
    impl_->changing("set_gravity");
    require_finite("world.gravity", gravity);
    Impl& w = *impl_;
    Impl::Awakening awakening;
    w.prepare_awakening(awakening, gravity, w.statics.planes());
    w.commit_awakening(awakening);
    w.def.gravity = gravity;
}

void World::set_restitution(double restitution) {
    impl_->changing("set_restitution");
    if (!(restitution >= 0.0 && restitution <= 1.0))
        reject("world.restitution", "must be in [0, 1], got " + show(restitution));
    Impl& w = *impl_;
    const double before = w.def.restitution;
    w.def.restitution = restitution;
    try {
        if (!w.sleep.jams()) w.wake_all();
    } catch (...) {
        w.def.restitution = before;
        throw;
    }
}

double World::time() const { return impl_->time; }
int World::concurrency() const { return impl_->parallel.concurrency(); }
const WorldDef& World::def() const { return impl_->def; }
std::size_t World::ball_count() const { return impl_->balls.size(); }
std::size_t World::max_balls() const { return impl_->max_balls(); }

std::size_t World::Impl::bytes_per_ball_estimate() const {
    return kBytesPerBall + (parallel.concurrency() > 1 ? kBytesPerBallInRegions : 0);
}

std::size_t World::Impl::max_balls() const { return std::min(kMaxBalls, def.memory_limit / bytes_per_ball_estimate()); }

std::string World::Impl::too_many_balls(std::size_t more) const {
    if (max_balls() == kMaxBalls)
        return "a world holds at most " + std::to_string(kMaxBalls) + " balls, got " + std::to_string(balls.size()) +
               " + " + std::to_string(more);
    return std::to_string(balls.size()) + " + " + std::to_string(more) + " balls need about " +
           show(double(balls.size() + more) * double(bytes_per_ball_estimate())) + " bytes (" +
           std::to_string(bytes_per_ball_estimate()) + " per ball), more than the memory limit of " +
           std::to_string(def.memory_limit) +
           " bytes (WorldDef::memory_limit, the program's --memory-limit)";
}
std::size_t World::plane_count() const { return impl_->statics.planes().size(); }
std::size_t World::cylinder_count() const { return impl_->statics.cylinders().size(); }
const PlaneDef& World::plane(std::uint32_t index) const {
    if (index >= impl_->statics.planes().size()) reject("plane", "no plane with index " + std::to_string(index));
    return impl_->statics.planes()[index];
}
const CylinderDef& World::cylinder(std::uint32_t index) const {
    if (index >= impl_->statics.cylinders().size()) reject("cylinder", "no cylinder with index " + std::to_string(index));
    return impl_->statics.cylinders()[index];
}
std::size_t World::capsule_count() const { return impl_->statics.capsules().size(); }
std::size_t World::block_count() const { return impl_->statics.blocks().size(); }
const BlockDef& World::block(std::uint32_t index) const {
    if (index >= impl_->statics.blocks().size()) reject("block", "no block with index " + std::to_string(index));
    return impl_->statics.blocks()[index];
}
const CapsuleDef& World::capsule(std::uint32_t index) const {
    if (index >= impl_->statics.capsules().size()) reject("capsule", "no capsule with index " + std::to_string(index));
    return impl_->statics.capsules()[index].def;
}

bool World::contains(BallId id) const { return impl_->handles.contains(id); }

BallState World::ball(BallId id) const {
    const Impl& w = *impl_;
    const std::uint32_t s = w.handles.slot(id, "ball");
    return {id, w.balls.position_at(s, w.time), w.balls.velocity_at(s, w.time), w.balls.radius[s],
            1.0 / w.balls.inv_mass[s], w.balls.asleep(s), w.balls.user[s]};
}

bool World::sleeping(BallId id) const { return impl_->balls.asleep(impl_->handles.slot(id, "ball")); }

std::size_t World::sleeping_count() const {
    const Balls& b = impl_->balls;
    return impl_->parallel.reduce(
        b.size(), std::size_t{0},
        [&](std::size_t begin, std::size_t end) {
            std::size_t n = 0;
            for (std::size_t s = begin; s < end; ++s) n += b.asleep(s);
            return n;
        },
        std::plus<>());
}

std::vector<std::uint8_t> World::sleeping_flags() const {
    const Balls& b = impl_->balls;
    std::vector<std::uint8_t> flags(b.size());
    for (std::size_t s = 0; s < b.size(); ++s) flags[s] = b.asleep(s);
    return flags;
}

BallView World::balls() const {
    const Balls& b = impl_->balls;
    return {b.view_x, b.view_y, b.view_z, b.view_vx, b.view_vy, b.view_vz, b.radius, b.id};
}

bool World::is_free(Vec3 position, double radius) const {
    const Impl& w = *impl_;
    if (!is_finite(position) || !(radius > 0.0) || !std::isfinite(radius)) return false;
    return w.conflict(position, radius, UINT32_MAX, static_cast<std::uint32_t>(w.balls.size()), w.max_radius,
                      w.statics.finite_near_points(radius).get())
        .empty();
}

std::span<const CollisionEvent> World::events() const { return impl_->measurements.step_events; }
std::uint64_t World::events_unrecorded() const { return impl_->measurements.step_events_unrecorded; }

// ---------------------------------------------------------------------------------------------
// Measurements

EventCounts World::event_counts() const { return impl_->measurements.counts; }
std::span<const StaticCounters> World::plane_counters() const { return impl_->measurements.plane_counters; }
std::span<const StaticCounters> World::cylinder_counters() const { return impl_->measurements.cylinder_counters; }
std::span<const StaticCounters> World::capsule_counters() const { return impl_->measurements.capsule_counters; }
std::span<const StaticCounters> World::block_counters() const { return impl_->measurements.block_counters; }

double World::kinetic_energy() const {
    return 0.5 * detail::moments(impl_->balls, impl_->time, impl_->parallel).twice_kinetic;
}
Vec3 World::momentum() const { return detail::moments(impl_->balls, impl_->time, impl_->parallel).momentum; }

double World::temperature() const { return detail::temperature(impl_->balls, impl_->time, impl_->parallel); }

double World::pressure() const {
    const Impl& w = *impl_;
    const detail::Measurements& m = w.measurements;
    const double window = w.time - m.window_start;
    const bool bulk = w.def.periodic && w.def.periodic_axes == std::array<bool, 3>{true, true, true};
    if (!bulk || !(window > 0.0)) return std::nan("");
    const Vec3 side = w.def.periodic->max - w.def.periodic->min;
    const double volume = side.x * side.y * side.z;
    const double density = static_cast<double>(w.balls.size()) / volume;
    return density * (m.temperature_time / window) + m.virial / (3.0 * volume * window);
}

double World::max_overlap() const {
    const Impl& w = *impl_;
    const Balls& b = w.balls;
    const auto near = w.statics.finite_near_points(w.max_radius);
    const double now = w.parallel.reduce(b.size(), 0.0, [&](std::size_t begin, std::size_t end) {
        double worst = 0.0;
        for (std::size_t s = begin; s < end; ++s) {
            const Vec3 p = b.position_at(s, w.time);
            const double r = b.radius[s];
            worst = std::max(worst, w.statics.deepest_overlap(p, r, near.get()));
            w.cells.for_each_near(w.cells.key(static_cast<std::uint32_t>(s)), [&](std::uint32_t j, const auto&) {
                if (j <= s) return;  // each pair once
                const double d = length(detail::min_image(w.def, b.position_at(j, w.time) - p));
                worst = std::max(worst, r + b.radius[j] - d);
            });
        }
        return worst;
    }, [](double a, double c) { return std::max(a, c); });
    return std::max(now, w.measurements.event_overlap);
}

std::size_t World::escaped_count() const {
    const Impl& w = *impl_;
    const Balls& b = w.balls;
    const auto near = w.statics.finite_near_points(0.0);
    return w.parallel.reduce(b.size(), std::size_t{0}, [&](std::size_t begin, std::size_t end) {
        std::size_t escaped = 0;
        for (std::size_t s = begin; s < end; ++s) {
            const Vec3 p = b.position_at(s, w.time);
            escaped += !is_finite(p) || w.statics.inside(p, near.get()) ? 1 : 0;
        }
        return escaped;
    }, [](std::size_t a, std::size_t c) { return a + c; });
}

std::uint64_t World::state_hash() const {
    const Impl& w = *impl_;
    std::uint64_t hash = 0xcbf29ce484222325ull;
    auto mix = [&](double value) {
        const auto bits = std::bit_cast<std::uint64_t>(value);
        for (int byte = 0; byte < 8; ++byte) {
            hash ^= (bits >> (8 * byte)) & 0xffu;
            hash *= 0x100000001b3ull;
        }
    };
    w.handles.for_each_live([&](std::uint32_t s) {
        const Vec3 p = w.balls.position_at(s, w.time), v = w.balls.velocity_at(s, w.time);
        for (double value : {p.x, p.y, p.z, v.x, v.y, v.z}) mix(value);
    });
    return hash;
}

void World::reset_measurements() {
    impl_->between_steps("reset_measurements");
    impl_->measurements.reset(impl_->time);
}

double World::measured_since() const { return impl_->measurements.window_start; }

}  // namespace ballistic
