// Ballistic — the tests of sleeping within a step (docs/architecture.md, "Piles that settle"): at the
// multiples of WorldDef::sleep_interval, the clusters of the balls awake when the step began, and
// of those woken since, that can stand fall asleep, and their events are predicted afresh.
#pragma once

#include "events/predictor.hpp"
#include "loop/event_loop.hpp"
#include "sleep/sleep.hpp"
#include "space/balls.hpp"

#include <ballistic/types.hpp>

#include <cstdint>
#include <optional>
#include <vector>

namespace ballistic::detail {

class SleepTests {
public:
    // A test runs unless fewer events than a kShare-th of the listed balls came since the last,
    // so that the tests cost O(1) an event, amortised.
    static constexpr std::size_t kShare = 2;

    SleepTests(const WorldDef& def, const Balls& balls, Sleep& sleep, Predictor& predictor, EventLoop& loop)
        : def_(def), balls_(balls), sleep_(sleep), predictor_(predictor), loop_(loop) {}

    // Lists the awake balls (O(N), once a step; none without an interval).
    void begin();
    // The first multiple of the interval after `after` that follows the next event (+inf when
    // none can come: nothing awake, no event, or no interval).
    double next(double after) const;
    // At `at`, every event before it done: the test, when enough events came since the last;
    // then `tested` becomes `at`.
    void within_step(double at, double& tested);
    // The test over the list (the balls woken since merged in); those that fell asleep leave it.
    void test_listed(double at);

    // A step stopped by its budget or interrupt flag leaves its tests as they stood: the next one
    // at `test`, `since` events after the last, the list and the loop's woken balls kept. The next
    // step, which goes on from the time the stop reached when no call that may change the world
    // came between (World::Impl::changing() drops them, even for a call refused), tests at the
    // times and after the events the step never stopped would have. Snapshots keep them.
    struct Carried {
        double test;
        std::uint64_t since;
    };
    Carried stopped(double test) const { return {test, loop_.processed - tested_at_event}; }
    // Goes on as the stopped step would have; returns the time of its next test.
    double carry_on(const Carried& c) {
        tested_at_event = loop_.processed - c.since;
        return c.test;
    }

    // Snapshots: the carried tests, the list and the loop's woken balls. restore() reads them for
    // a world at time `now` whose balls and loop are restored, each checked: the next test not
    // before `now` and on the interval's multiples, no more events since the last than the loop
    // processed, every awake ball listed once, the list ascending.
    void save(SnapshotWriter& out) const;
    void restore(SnapshotReader& in, double now, bool events_valid);

    std::optional<Carried> carried;
    std::vector<std::uint32_t> listed;  // the balls listed, ascending
    std::uint64_t tested_at_event = 0;  // the loop's count of events at the last test

private:
    const WorldDef& def_;
    const Balls& balls_;
    Sleep& sleep_;
    Predictor& predictor_;
    EventLoop& loop_;
};

}  // namespace ballistic::detail
