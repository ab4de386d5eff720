// Ballistic — stepping: World::step, the frame around the event loop (its beginning, pauses, the
// reviews of the cells' width, a stop by the budget or the interrupt flag, a failure, the end),
// and where the world stands between steps (stand_at, show_balls).
#include "base/format.hpp"
#include "base/validate.hpp"
#include "kernels/toi_simd.hpp"
#include "world/world_impl.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>

namespace ballistic {

using detail::reject;
using detail::show;

double World::Impl::pause_step(double at, double& tested, const std::function<double(World&)>& pause, World& world) {
    tested = at;  // the balls enter at `at`: should anything fail from now on, the world stands there
    const std::size_t before = balls.size();
    double next = 0.0;
    {
        // While the caller runs, time reads `at`; then the step's start again, however the caller
        // leaves: the step's measurements are sampled at its end, as without pauses.
        struct Paused {
            Impl& w;
            double start;
            ~Paused() {
                w.pausing = false;
                w.time = start;
            }
        } paused{*this, time};
        pausing = true;
        time = at;
        next = pause(world);
    }
    if (!(next > at))
        reject("pause", "returned " + show(next) + ", not after the pause at " + show(at) + " (+inf: no more pauses)");
    if (def.sleep_interval > 0.0)
        for (std::size_t s = before; s < balls.size(); ++s) loop.woken.push_back(static_cast<std::uint32_t>(s));
    if (!events_valid) {  // new cells or a larger ball (add_balls): predicted afresh from here
        stop_roaming(at);  // in their cells, should the rebuild fail
        stand_at(at, Bring::Balls);
        rebuild_events(true);
    }
    return next;
}

StepResult World::Impl::counted(std::size_t sleeping) const {
    StepResult r;
    r.events = loop.processed;
    r.collisions = measurements.lifetime_collisions();
    r.in_regions = loop.in_regions;
    r.regions = static_cast<std::uint32_t>(loop.regions());
    r.region_runs = loop.region_runs;
    r.region_span = loop.region_span;
    r.undone = loop.undone;
    r.region_interface = loop.region_interface;
    r.region_span_interface = loop.region_span_interface;
    r.region_seconds = loop.region_seconds;
    r.region_work_seconds = loop.region_work_seconds;
    r.sleeping = sleeping;
    r.awake = balls.size() - sleeping;
    return r;
}

double World::Impl::begin_step(const std::optional<detail::SleepTests::Carried>& carried) {
    // Re-sort storage along the Morton curve whenever the queue is rebuilt anyway, and once the
    // balls have had about four collisions each since the last sort: O(N log N) then, amortised
    // O(log N) per collision. Between sorts, the dense cells are fitted again once an eighth of the
    // balls has left them: O(N) per N/8 cell crossings, and no bit changes (the predictions do not
    // depend on how the cells store their balls). The regions are planned again, O(N), once their
    // measured speeds call for other shares (no bit changes either). A step that goes on from a
    // stopped one does none of these.
    const std::uint64_t collisions = measurements.lifetime_collisions();
    if (!events_valid || (!carried && collisions - collisions_at_reorder > 4 * balls.size())) {
        if (cells_valid) reorder();
        collisions_at_reorder = collisions;
    } else if (!carried && cells_valid && cells.outgrown(balls.size())) {
        reorder(Resort::CellsOnly);
    } else if (!carried && cells_valid) {
        loop.balance(cells);
    }
    if (!events_valid) {  // predicted afresh: the cells' width is reviewed first
        if (const double width = cells_valid ? widths.reviewed(time, max_radius) : 0.0; width > 0.0) widths.chosen = width;
        rebuild_events(false);
    }
    measurements.begin_step();
    if (carried) return sleep_tests.carry_on(*carried);
    sleep_tests.begin();
    return sleep_tests.next(time);
}

void World::Impl::fail_step(double reached) {
    // Out of memory (or the embedder's task system failed): every part of a step either completes
    // or changes nothing, and a failed event is undone, so the world stands consistent at the time
    // of its last event or test of sleeping (at the step's end once every event is done); the
    // queue is rebuilt at the next step.
    events_valid = false;
    // Roamers are listed where they last crossed into their blocks: to their cells, for the
    // queries between steps (a second failure here leaves them so until the next step).
    try {
        stop_roaming(reached);
    } catch (...) {
        roaming.clear();
    }
    stand_at(reached, Bring::Balls);
}

namespace {

// The counts of a step: the totals after it less those before.
StepResult since(StepResult after, const StepResult& before) {
    after.events -= before.events;
    after.collisions -= before.collisions;
    after.in_regions -= before.in_regions;
    after.region_runs -= before.region_runs;
    after.region_span -= before.region_span;
    after.undone -= before.undone;
    after.region_interface -= before.region_interface;
    after.region_span_interface -= before.region_span_interface;
    after.region_seconds -= before.region_seconds;
    after.region_work_seconds -= before.region_work_seconds;
    return after;
}

}  // namespace

StepResult World::step(double dt) { return step(dt, std::numeric_limits<double>::infinity(), {}); }

StepResult World::step(double dt, double pause_at, const std::function<double(World&)>& pause) {
    Impl& w = *impl_;
    w.between_steps("step");
    if (!(std::isfinite(dt) && dt > 0.0)) reject("dt", "must be a finite number > 0, got " + show(dt));
    const double end = w.time + dt;
    if (!(end > w.time)) reject("dt", "is too small to advance the world time " + show(w.time) + ", got " + show(dt));
    if (pause && !(pause_at > w.time))
        reject("pause_at", "must be after the world's time " + show(w.time) + " (+inf: no pause), got " + show(pause_at));
    const auto start = std::chrono::steady_clock::now();
    const StepResult before = w.counted(0);
    const std::uint64_t events_before = before.events;
    auto stopped = detail::EventLoop::End::Budget;
    bool all_done = false;  // every event to the step's end processed
    // The last test of sleeping or pause within the step: the world has changed up to it.
    double tested = w.time;
    // The caller's next pause, when it falls within the step (its end included).
    auto inside = [&](double at) { return pause && at <= end ? at : std::numeric_limits<double>::infinity(); };
    double paused = inside(pause_at);
    std::size_t sleeping = 0;
    double test = std::numeric_limits<double>::infinity();  // the next test of sleeping
    // Going on from a stopped step (SleepTests::carried): as that step would have gone on.
    const std::optional<detail::SleepTests::Carried> carried = std::exchange(w.sleep_tests.carried, std::nullopt);
    try {
        test = w.begin_step(carried);
        const std::uint64_t budget = w.def.step_event_budget;
        w.start_roaming(dt);
        for (;;) {  // to the step's end, the budget, the next review of the cells' width, test of sleeping or pause
            const double until = std::min({end, test, paused});
            const std::uint64_t review = w.widths.review_every(w.cells_valid, w.max_radius), done = w.loop.processed - events_before;
            const std::uint64_t to_review = review - w.loop.processed % review;
            const std::uint64_t limit = budget == 0 ? to_review : std::min(to_review, budget - done);
            if (limit == 0) {  // the budget spent: the step ends unless no event is left before its end
                if (w.loop.next_time() <= end) {
                    stopped = detail::EventLoop::End::Budget;
                    break;
                }
                stopped = detail::EventLoop::End::Reached;
            } else {
                stopped = w.loop.run_until(until, limit);
            }
            if (stopped == detail::EventLoop::End::Budget) {
                // The review due at this event comes first, also where the step's budget ends
                // at it: the step that goes on would not meet it again.
                if (w.loop.processed % review == 0) w.review_cells();
                if (budget != 0 && w.loop.processed - events_before >= budget) break;
                continue;
            }
            if (stopped != detail::EventLoop::End::Reached) break;
            if (until == test && until < end) {  // at the end, the end's test (finish_step)
                w.sleep_tests.within_step(until, tested);
                test = w.sleep_tests.next(until);
            }
            if (until == paused) {
                paused = inside(w.pause_step(until, tested, pause, *this));
                test = std::min(test, w.sleep_tests.next(until));  // the balls added may settle
            }
            if (!(until < end)) {
                all_done = true;
                break;
            }
        }
        w.stop_roaming(all_done ? end : std::max({w.time, w.loop.last_processed, tested}));
        if (all_done) {
            sleeping = w.finish_step(end);
            w.loop.took(w.loop.processed - events_before,
                        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        }
    } catch (...) {
        w.fail_step(all_done ? end : std::max({w.time, w.loop.last_processed, tested}));
        throw;
    }
    if (!all_done) w.stop_step(std::max({w.time, w.loop.last_processed, tested}), end, test, stopped);
    return since(w.counted(sleeping), before);
}

void World::Impl::review_cells() {
    const double now = std::max(time, loop.last_processed);
    if (const double width = widths.reviewed(now, max_radius); width > 0.0) {
        stop_roaming(now);
        stand_at(now, Bring::Balls);
        widths.chosen = width;
        rebuild_events(true);
    }
}

void World::Impl::stop_step(double reached, double end, double test, detail::EventLoop::End stopped) {
    // Interrupted before its first event, the step leaves the world where it was. The balls are
    // shown at the time reached but keep their state as it is, as at a step's end: the next step
    // goes on with the very bits an uninterrupted one would have.
    try {
        stand_at(reached, Bring::Nothing);
        show_balls(reached);
    } catch (...) {  // both may allocate: then as a failed step, the balls brought there
        events_valid = false;
        stand_at(reached, Bring::Balls);
        throw;
    }
    sleep_tests.carried = sleep_tests.stopped(test);
    if (stopped == detail::EventLoop::End::Interrupted)
        throw StepInterrupted("world.step: interrupted at time " + show(reached) + " of a step to " + show(end) +
                              "; the world stands there, consistent");
    throw BudgetExceeded("world.step_event_budget: " + std::to_string(def.step_event_budget) +
                         " events in one step, reached at time " + show(reached) + " of a step to " + show(end) +
                         "; the world stands there, consistent (raise WorldDef::step_event_budget, or the "
                         "program's --event-budget)");
}

std::size_t World::Impl::finish_step(double end) {
    stand_at(end, Bring::Nothing);
    // With an interval, the list holds every ball awake now (awake when the step began or woken
    // by an event since): the same test as over every awake ball, without a scan of them all.
    if (def.sleep_interval > 0.0) sleep_tests.test_listed(end);
    else sleep_clusters(end);
    return show_balls(end);
}

std::size_t World::Impl::show_balls(double at) {
    Balls& b = balls;
    // The sleeping balls are counted on the way (their entries of rests are read anyway), and
    // the views' speeds summed where balls can roam (Balls::view_speeds, for start_roaming()).
    const bool speeds = roams();
    struct Shown {
        std::size_t asleep = 0;
        double speeds = 0.0;
    };
    const Shown shown_all = parallel.reduce_light(b.size(), Shown{}, [&](std::size_t begin, std::size_t stop) {
        // The block's accelerations as lanes, then the bits of Balls::advance() for each run of
        // balls whose view is not current: a ball that fell asleep before the last showing was
        // shown asleep then, and has not moved since. A block where no ball rests on anything
        // (every block of an elastic world) is one run under g.
        thread_local std::vector<double> a[3];
        thread_local std::vector<std::uint8_t> shown;
        const std::size_t count = stop - begin;
        for (auto& column : a) column.resize(count);
        std::size_t asleep = 0;
        const detail::RestTable::Rest& none = b.rests[detail::RestTable::kNone];  // most balls
        const auto rests = std::span(b.rest).subspan(begin, count);
        auto on_nothing = [](std::uint32_t r) { return r == detail::RestTable::kNone; };
        const bool plain = b.rests.size() == 1 || std::all_of(rests.begin(), rests.end(), on_nothing);
        if (plain) {
            std::fill(a[0].begin(), a[0].end(), none.acceleration.x);
            std::fill(a[1].begin(), a[1].end(), none.acceleration.y);
            std::fill(a[2].begin(), a[2].end(), none.acceleration.z);
        } else {
            shown.resize(count);
            for (std::size_t k = 0; k < count; ++k) {
                const std::uint32_t r = rests[k];
                const detail::RestTable::Rest& rest = r == detail::RestTable::kNone ? none : b.rests[r];
                a[0][k] = rest.acceleration.x; a[1][k] = rest.acceleration.y; a[2][k] = rest.acceleration.z;
                asleep += rest.asleep;
                shown[k] = rest.asleep && b.t[begin + k] < shown_at;
            }
        }
        auto part = [&](std::span<const double> column) { return column.subspan(begin, count); };
        auto out = [&](std::span<double> column) { return column.subspan(begin, count); };
        const detail::MotionLanes lanes{part(b.x),      part(b.y),      part(b.z),      part(b.vx),
                                        part(b.vy),     part(b.vz),     a[0],           a[1],
                                        a[2],           part(b.t),      out(b.view_x),  out(b.view_y),
                                        out(b.view_z),  out(b.view_vx), out(b.view_vy), out(b.view_vz)};
        // In pieces whose views are summed while still in the cache.
        constexpr std::size_t kPiece = 256;
        double sum = 0.0;
        for (std::size_t piece = 0; piece < count; piece += kPiece) {
            const std::size_t end = std::min(count, piece + kPiece);
            if (plain) {
                detail::state_at_batch_simd(lanes, at, piece, end);
            } else {
                for (std::size_t k = piece; k < end;) {
                    if (shown[k]) { ++k; continue; }
                    std::size_t run = k + 1;
                    while (run < end && !shown[run]) ++run;
                    detail::state_at_batch_simd(lanes, at, k, run);
                    k = run;
                }
            }
            if (speeds) sum = b.view_speeds_of(begin + piece, begin + end, sum);
        }
        return Shown{asleep, sum};
    }, [](const Shown& sum, const Shown& part) { return Shown{sum.asleep + part.asleep, sum.speeds + part.speeds}; });
    b.view_speeds = speeds ? std::optional(shown_all.speeds) : std::nullopt;
    shown_at = at;
    return shown_all.asleep;
}

void World::Impl::stand_at(double at, Bring what) {
    const bool bring = what == Bring::Balls;
    if (bring) {
        for (std::uint32_t s = 0; s < balls.size(); ++s) {
            balls.advance_awake(s, at);
            balls.show(s);
        }
        shown_at = at;
    }
    const double before = time;
    time = at;
    if (!def.periodic) return;
    try {
        measurements.temperature_time += detail::temperature(balls, time, parallel, bring) * (at - before);
    } catch (...) {
        time = before;  // for World::step, which stands the world at `at` again, bringing
        throw;
    }
}

}  // namespace ballistic
