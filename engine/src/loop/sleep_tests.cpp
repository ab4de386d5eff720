// Ballistic — the tests of sleeping within a step (sleep_tests.hpp).
#include "loop/sleep_tests.hpp"

#include "base/byte_stream.hpp"
#include "base/format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ballistic::detail {

void SleepTests::begin() {
    if (def_.sleep_interval > 0.0) sleep_.list_awake(listed);
    else listed.clear();
    loop_.woken.clear();
    tested_at_event = loop_.processed;
}

double SleepTests::next(double after) const {
    const double every = def_.sleep_interval;
    if ((listed.empty() && loop_.woken.empty()) || !(every > 0.0)) return std::numeric_limits<double>::infinity();
    // Nothing changes without an event: the first test comes after the next one.
    const double first = std::max(after, loop_.next_time());
    const double test = (std::floor(first / every) + 1.0) * every;
    return test > after ? test : std::numeric_limits<double>::infinity();  // past the time's precision: none
}

void SleepTests::within_step(double at, double& tested) {
    if ((loop_.processed - tested_at_event) * kShare < listed.size()) return;
    // Every event up to `at` is done: the world is consistent there whether the test completes,
    // fails before it changes a ball (sleep_clusters() is all or nothing), or fails in its
    // callback after balls fell asleep at `at` (a prediction).
    tested = at;
    tested_at_event = loop_.processed;
    test_listed(at);
}

void SleepTests::test_listed(double at) {
    if (!loop_.woken.empty()) {  // the balls woken since are tried too
        const auto before = static_cast<std::ptrdiff_t>(listed.size());
        listed.insert(listed.end(), loop_.woken.begin(), loop_.woken.end());
        loop_.woken.clear();
        std::sort(listed.begin() + before, listed.end());
        std::inplace_merge(listed.begin(), listed.begin() + before, listed.end());
        listed.erase(std::unique(listed.begin(), listed.end()), listed.end());
    }
    sleep_.sleep_clusters(at, listed,
                          [&](std::span<const std::uint32_t> members) { loop_.repredict(members, at, predictor_); });
    std::erase_if(listed, [&](std::uint32_t s) { return balls_.asleep(s); });
}

void SleepTests::save(SnapshotWriter& out) const {
    out.put(static_cast<std::uint8_t>(carried.has_value()));
    if (!carried) return;
    out.put(carried->test);
    out.put(carried->since);
    const std::vector<std::uint32_t>* lists[] = {&listed, &loop_.woken};
    for (const auto* list : lists) {
        out.put(static_cast<std::uint64_t>(list->size()));
        for (const std::uint32_t s : *list) out.put(s);
    }
}

void SleepTests::restore(SnapshotReader& in, double now, bool events_valid) {
    if (in.get<std::uint8_t>("carried tests") == 0) return;
    if (!events_valid) bad_snapshot("a stopped step's tests without events");
    const double test = in.get<double>("the next test of sleeping");
    // At the time itself when the step stopped at an event that fell on the test's time.
    if (!(test >= now)) bad_snapshot("the next test of sleeping, at " + show(test) + ", is before the time " + show(now));
    const auto since = in.get<std::uint64_t>("events since a test of sleeping");
    if (since > loop_.processed)
        bad_snapshot(std::to_string(since) + " events since a test of sleeping, of " + std::to_string(loop_.processed));
    const std::size_t balls = balls_.size();
    for (auto* list : {&listed, &loop_.woken}) {
        const auto count = in.get<std::uint64_t>("balls to test for sleeping");
        if (count > balls && count - balls > since) bad_snapshot(std::to_string(count) + " balls to test for sleeping");
        list->clear();
        for (std::uint64_t k = 0; k < count; ++k) {
            const auto s = in.get<std::uint32_t>("a ball to test for sleeping");
            if (s >= balls || (list == &listed && !list->empty() && s <= list->back()))
                bad_snapshot("ball slot " + std::to_string(s) + " listed for the tests of sleeping");
            list->push_back(s);
        }
    }
    // As a step leaves them: tests on the interval's multiples and nothing listed without an
    // interval, and every awake ball listed (a ball the lists miss would go untested to the
    // step's end).
    const double every = def_.sleep_interval;
    if (test != std::numeric_limits<double>::infinity() && !(every > 0.0 && std::round(test / every) * every == test))
        bad_snapshot("the next test of sleeping, at " + show(test) + ", is not one of sleep_interval's multiples");
    if (!(every > 0.0) && !(listed.empty() && loop_.woken.empty()))
        bad_snapshot("balls listed for the tests of sleeping without a sleep_interval");
    if (sleep_.enabled()) {
        std::vector<std::uint8_t> seen(balls, 0);
        for (const auto* list : {&listed, &loop_.woken})
            for (const std::uint32_t s : *list) seen[s] = 1;
        for (std::size_t s = 0; s < balls; ++s)
            if (!seen[s] && !balls_.asleep(s))
                bad_snapshot("the awake ball slot " + std::to_string(s) + " is not listed for the tests of sleeping");
    }
    carried = Carried{test, since};
}

}  // namespace ballistic::detail
