// Ballistic — the tests of sleeping within a step (sleep_tests.hpp).
#include "loop/sleep_tests.hpp"

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
    sleep_.sleep_clusters(at, listed, [&](std::span<const std::uint32_t> members) {
        for (const std::uint32_t s : members) loop_.requeue(s, predictor_.predict(s, at));
    });
    std::erase_if(listed, [&](std::uint32_t s) { return balls_.asleep(s); });
}

}  // namespace ballistic::detail
