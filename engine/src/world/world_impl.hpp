// Ballistic — the world's private state: the components (docs/architecture.md has the map) and what
// joins them, implemented in simulate.cpp (the cells and the queue built afresh, sleeping where it
// meets the event loop), reorder.cpp, raycast.cpp and world.cpp.
#pragma once

#include <ballistic/world.hpp>

#include "base/columns.hpp"
#include "space/balls.hpp"
#include "space/cell_widths.hpp"
#include "loop/event_loop.hpp"
#include "loop/sleep_tests.hpp"
#include "space/cells.hpp"
#include "space/handles.hpp"
#include "space/static_handles.hpp"
#include "sleep/islands.hpp"
#include "events/measurements.hpp"
#include "base/parallel.hpp"
#include "events/predictor.hpp"
#include "events/response.hpp"
#include "space/roaming.hpp"
#include "sleep/sleep.hpp"
#include "rules/sleep_rules.hpp"
#include "space/statics.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace ballistic {

using detail::Balls;
using detail::Supports;

struct World::Impl {
    explicit Impl(const WorldDef& d)
        : def(d), time(d.time), parallel(d.task_system ? d.task_system : make_tbb_task_system(d.threads)) {
        balls.rests.reset(d.gravity);
        measurements.window_start = d.time;
        predictor.roam_with(&roaming);
        response.roam_with(&roaming);
    }

    WorldDef def;
    double time = 0.0;

    detail::Statics statics;
    detail::StaticHandles static_handles;

    Balls balls;
    detail::Handles<BallId> handles;
    double max_radius = 0.0;

    detail::Cells cells;
    // Every ball is in its cell. Between calls this holds whenever there are balls, with cells at
    // least CellWidths::least(max_radius) wide: the const queries rely on it.
    bool cells_valid = false;
    bool events_valid = false;  // every ball has its earliest event queued
    // A step's caller runs within it (World::step with pauses): only balls may be added.
    bool pausing = false;
    void between_steps(const char* call) const;  // std::logic_error while pausing
    void changing(const char* call);  // between_steps(), and a stopped step's tests are dropped
    // A pause at `at` (every event before it done): time reads `at` while `pause` runs, the balls
    // it adds are queued and listed for the tests of sleeping, and `tested` becomes `at`. Returns the next pause.
    double pause_step(double at, double& tested, const std::function<double(World&)>& pause, World& world);
    // Per slot: the ball's contact, the earliest collision found for its current trajectory. Its
    // pending event, the earlier of its next cell crossing and its contact, is kept only by the
    // queue (predictor.hpp); a ball–ball pending event is always the contact, which holds the
    // partner's counter.
    detail::Column<detail::Contact> contacts;
    detail::SleepRules rules{def};
    // Lone balls roaming in blocks of cells within a step (roaming.hpp).
    detail::Roaming roaming;
    // A step of `dt` expected to cross at least Roaming::kCrossingsPerBall cells per ball lets the
    // balls alone in the blocks around them roam, before its first event.
    void start_roaming(double dt);
    // Can balls roam in this world? Blocks of cells do not tile a periodic box, and capsules and
    // blocks are found through the cells.
    bool roams() const { return !def.periodic && !statics.has_finite(); }
    // Brings every roamer back to its cell at `at` (a step's end, a stop, a failure, a rebuild
    // within the step), its next event predicted there unless the events are to be rebuilt
    // (`events_valid` false).
    void stop_roaming(double at);
    // Balls added in a pause (slots from `first` on) while balls roam: counted, and the roamers
    // whose blocks they crowd brought down.
    void roaming_added(std::uint32_t first);
    detail::Predictor predictor{def, balls, cells, statics, contacts, rules};
    detail::Sleep sleep{def, balls, cells, statics, rules, parallel};
    detail::Response response{def, balls, cells, statics, contacts, predictor, sleep};

    detail::Measurements measurements;

    detail::Parallel parallel;
    detail::EventLoop loop{def, cells, response, measurements, parallel, def.time};
    detail::SleepTests sleep_tests{def, balls, sleep, predictor, loop};  // within a step
    // How wide the cells are built, and reviewed within steps (docs/architecture.md, "Cells as wide as
    // the balls are sparse"): a step looks at how crowded they are whenever the world's event
    // count passes a multiple of review_every(), and remakes them wider when balls are far
    // apart, narrower again when they crowd.
    detail::CellWidths widths{def, balls, cells, statics, parallel};

    // --- simulate.cpp
    void rebuild_cells(double min_radius_for_cells);  // all or nothing
    void fit_cells(detail::Cells& cells, const std::vector<detail::CellKey>& keys);  // dense cells where the balls are
    // The smallest block of cells holding all `keys` (lowest and highest coordinate per axis).
    std::array<detail::CellKey, 2> key_block(const std::vector<detail::CellKey>& keys);
    // Lists the capsules and blocks in the cells (the cells must be valid); after any change of the
    // cells' width or of those statics, before predicting.
    void index_finite();
    // Leaves the world consistent if it fails (events_valid false). `within_step`: a review or a
    // pause rebuilds, storage is as the contacts were made and no snapshot can have been taken
    // since, so the Wakes still due are kept (Predictor::forget_contacts); between steps every
    // contact is forgotten (a removal renumbers storage without them, and a snapshot of a world
    // whose events are invalid holds none).
    void rebuild_events(bool within_step);
    // The end of a step at `end`: the world's time, islands put to sleep, every ball's view
    // there. Returns how many balls sleep then.
    std::size_t finish_step(double end);
    // Writes every ball's position and velocity at `at` to its view (Balls::view_*), leaving the
    // balls at their own times; a ball asleep since before `shown_at` keeps the view it has.
    // Returns how many balls sleep.
    std::size_t show_balls(double at);
    double shown_at = -std::numeric_limits<double>::infinity();  // when every view was last written
    // The world's time becomes `at`, with the temperature integral of periodic worlds. With
    // Bring::Balls, first every ball is brought there and shown on the calling thread, allocating
    // nothing (a failure within a step), and then it never fails; with Bring::Nothing the balls
    // stay at their own times (their views were written already).
    enum class Bring { Balls, Nothing };
    void stand_at(double at, Bring bring);
    // Waking every ball in two halves, so that a failure (out of memory) leaves the world as it
    // was: prepare builds, aside, the table of rests every ball will have, awake on its supports
    // under `gravity` and `planes` (with plane `removed` dropped and the last plane renumbered
    // into its index, when given; with `off_faces`, off every block's face), and `now`, each old
    // entry's new index; commit, which never fails, swaps it in.
    struct Awakening {
        detail::RestTable fresh;
        std::vector<std::uint32_t> now;
    };
    void prepare_awakening(Awakening& awakening, Vec3 gravity, const std::vector<PlaneDef>& planes,
                           std::int32_t removed = detail::kNoSupport, bool off_faces = false) const;
    void commit_awakening(Awakening& awakening) noexcept;
    // A ball given a new position or velocity between steps: awake, its quiet history restarted,
    // its partners' predictions of it invalid, its events predicted again with those of the
    // balls `woken` around it (predict_changed()).
    void disturbed(std::uint32_t slot, const detail::Sleep::Woken& woken);
    // Between steps, with the events queued: the balls `changed` (given a new state) are
    // predicted again and those added at slots [first_added, size()) for the first time, and
    // every other ball keeps its event. That is exact as a collision is: a ball's prediction
    // covers every ball near it, and a partner's prediction of a changed ball's old path is found
    // stale by its counter. Adding balls rebuilds the queue instead (every ball predicted, the
    // storage re-sorted, the slabs of parallel processing planned again) when the count reaches
    // a power of two, which keeps the slabs fitting the balls at an amortised O(1) per ball; the
    // rule reads the counts alone, so a restored snapshot decides as the world it was taken from.
    // A failure (out of memory) leaves the queue to be rebuilt at the next step.
    void predict_changed(std::span<const std::uint32_t> changed, std::uint32_t first_added) noexcept;
    // Refuses a plane or cylinder (`field`) beyond kMostInfinite of both together.
    void room_for_infinite(const std::string& field) const;
    // Adds a capsule or a block (`kind`: "capsules" or "blocks", as fields are named): refused in a
    // periodic world and beyond kMostFinite of the kind, then add_static().
    template <class Id, class Def>
    Id add_finite(const Def& static_def, const std::string& kind, std::vector<StaticCounters>& counters);
    // Removes a column, capsule or block (`remove`, the Statics member for its kind): every ball
    // woken, then its handle released and the last of its kind moved into its index.
    template <class Id>
    void remove_static(Id id, const char* what, std::vector<StaticCounters>& counters,
                       void (detail::Statics::*remove)(std::uint32_t) noexcept);
    // After the static at `index` was removed (the last one took its index): its handle released
    // (reserve_release() called first), the last one's handle and counters moved. Never fails.
    template <class Id>
    void drop_static(std::uint32_t index, std::vector<StaticCounters>& counters) noexcept;

    // --- sleeping where it meets the event loop (simulate.cpp; the component: sleep.hpp)
    // End of a step at `now` (or the events predicted afresh, `within` StillDrift: Sleep::sleep_clusters()):
    // the clusters that can stand fall asleep, and their events are predicted afresh. Returns how
    // many fell asleep.
    std::size_t sleep_clusters(double now, detail::Sleep::Within within = detail::Sleep::Within::TouchGap);
    void wake_all();  // between steps; as it was if it fails

    // --- reorder.cpp
    // Remakes the cells, their dense block fitted where the balls are, and with `Slots` first
    // re-sorts the balls' slots; all or nothing.
    enum class Resort { Slots, CellsOnly };
    void reorder(Resort resort = Resort::Slots);
    // Slot s takes the ball of order[s], with its handle (through `scratch`, n words; never fails).
    void move_balls(const std::vector<std::uint32_t>& order, std::vector<std::uint64_t>& scratch);
    std::uint64_t collisions_at_reorder = 0;   // lifetime collision count at the last sort

    // --- world.cpp
    // The phases of World::step around its event loop: the loop's and the measurements' counts
    // (a StepResult of totals, with `sleeping` balls asleep); the beginning (a re-sort, the events
    // predicted afresh when invalid, the measurements and the tests of sleeping begun or carried
    // on), which returns the time of the next test; and a failure's end at `reached`.
    StepResult counted(std::size_t sleeping) const;
    double begin_step(const std::optional<detail::SleepTests::Carried>& carried);
    void fail_step(double reached);
    // The review of the cells' width due at the event just processed: remade wider or narrower
    // when the balls' spacing asks for it, the events predicted afresh.
    void review_cells();
    // A step stopped at `reached` of a step to `end` (`stopped`: by its budget or interrupt flag),
    // its next test of sleeping at `test`: the world stands there, consistent, and the stop is
    // thrown (BudgetExceeded or StepInterrupted).
    [[noreturn]] void stop_step(double reached, double end, double test, detail::EventLoop::End stopped);
    struct Adding;  // World::add_balls, all or nothing (world.cpp)
    std::size_t max_balls() const;
    std::size_t bytes_per_ball_estimate() const;  // kBytesPerBall, and the regions' share  // World::max_balls()
    // Why `more` balls cannot be added (the ball or memory limit), for an error message.
    std::string too_many_balls(std::size_t more) const;
    // Adds a checked static (unit direction) that overlaps no ball, with its counters and its
    // handle (all or nothing).
    template <class Id, class Def>
    Id add_static(const Def& unit, const std::string& field, std::vector<StaticCounters>& counters);
    // Overlap of a ball at p with radius r against the statics and the balls in slots below
    // `below`, the largest of whose radii is `largest`; returns a description of the first
    // conflict or an empty string. Balls in slots from `first_new` on are named by their index in
    // the current call. The capsules and blocks tested are those `near` lists (all when null).
    // The ball in slot `except` is not counted.
    std::string conflict(Vec3 p, double r, std::uint32_t first_new, std::uint32_t below, double largest,
                         const detail::FiniteNear* near, std::uint32_t except = UINT32_MAX) const;

    // --- raycast.cpp
    // Nearest hit; `bounds` holds every ball (ball_bounds()), the cells must be valid; `near`
    // lists the capsules and blocks (Statics::finite_near_points(0), null without them).
    std::optional<RayHit> cast(const Ray& ray, const Box& bounds, const detail::FiniteNear* near) const;
    Box ball_bounds() const;  // every ball where balls() shows it, with the largest radius around
};

}  // namespace ballistic
