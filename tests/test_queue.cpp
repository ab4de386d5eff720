// The calendar event queue (engine/src/events/event_queue.hpp) against a reference ordered set under the
// same operations: the earliest entry must always be the reference's, whatever the spread of the
// times (clustered, equal, spread over many years, far future, none at all).
#include "events/event_queue.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <vector>

using namespace ballistic::detail;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Key {
    Pending event;
    std::uint32_t slot;
    bool operator<(const Key& o) const { return before(event, slot, o.event, o.slot); }
};

// The queue and a std::set of the same keys, updated together.
class Checked {
public:
    explicit Checked(std::vector<Pending> events, std::size_t parts = 1)
        : events_(std::move(events)), part_(events_.size()) {
        for (std::size_t s = 0; s < part_.size(); ++s) part_[s] = static_cast<std::uint32_t>(s % parts);
        queue_.build(events_, part_, parts, parallel_);
        for (std::uint32_t s = 0; s < events_.size(); ++s) reference_.insert({events_[s], s});
    }
    // A new event for `slot`, moving it to `part` when given.
    void update(std::uint32_t slot, Pending e, std::optional<std::uint32_t> part = {}) {
        reference_.erase({events_[slot], slot});
        events_[slot] = e;
        reference_.insert({e, slot});
        if (part) {
            part_[slot] = *part;
            queue_.update(slot, e, *part);
        } else {
            queue_.update(slot, e);
        }
        EXPECT_EQ(queue_.part_of(slot), part_[slot]);
    }
    // The earliest slot, checked against the reference.
    std::uint32_t top() {
        const std::uint32_t s = queue_.top();
        const Key& first = *reference_.begin();
        if (first.event.time < kInf) {
            EXPECT_EQ(s, first.slot);
        } else {
            EXPECT_FALSE(events_[s].time < kInf);  // any ball without an event will do
        }
        return s;
    }
    // Every slot from `first` on moves to `part` with its event, room made first, as when the
    // regions' shares move a cut.
    void move_from(std::uint32_t first, std::uint32_t part) {
        queue_.reserve_front(part, events_.size() - first);
        for (std::uint32_t s = first; s < events_.size(); ++s) {
            part_[s] = part;
            queue_.update(s, events_[s], part);
        }
    }
    // A new slot at the end, in `part`.
    void append(Pending e, std::uint32_t part) {
        const auto slot = static_cast<std::uint32_t>(events_.size());
        events_.push_back(e);
        part_.push_back(part);
        reference_.insert({e, slot});
        queue_.reserve(events_.size());
        queue_.append(slot, e, part);
        EXPECT_EQ(queue_.part_of(slot), part);
    }
    std::size_t size() const { return events_.size(); }
    const Pending& event(std::uint32_t s) const { return events_[s]; }
    std::size_t parts() const { return queue_.parts(); }

private:
    std::vector<Pending> events_;
    std::vector<std::uint32_t> part_;
    Parallel parallel_{2};  // the parts are built concurrently
    EventQueue queue_;
    std::set<Key> reference_;
};

Pending at(double time, std::uint32_t other = 0, Kind kind = Kind::Crossing) { return {time, other, kind}; }

// n first events at exponentially distributed times of the given rate.
std::vector<Pending> first_events(std::size_t n, double rate, std::mt19937_64& rng) {
    std::exponential_distribution<double> first(rate);
    std::vector<Pending> events(n);
    for (auto& e : events) e = at(first(rng));
    return events;
}

// The event loop's pattern: take the earliest, give it (and sometimes a partner) a later time,
// now and then in another part.
void simulate(Checked& q, std::size_t n, int events, std::mt19937_64& rng, double mean_gap) {
    std::exponential_distribution<double> gap(1.0 / mean_gap);
    std::uniform_int_distribution<std::uint32_t> any(0, static_cast<std::uint32_t>(n - 1));
    std::uniform_int_distribution<std::uint32_t> any_part(0, static_cast<std::uint32_t>(q.parts() - 1));
    std::uniform_int_distribution<int> kind(0, 3);
    for (int e = 0; e < events; ++e) {
        const std::uint32_t s = q.top();
        const double now = q.event(s).time;
        if (!(now < kInf)) return;
        const Pending next = at(now + gap(rng), any(rng), static_cast<Kind>(kind(rng)));
        if (e % 5 == 0) q.update(s, next, any_part(rng));
        else q.update(s, next);
        if (e % 3 == 0) {  // a partner re-predicted too, sometimes to no event at all
            const std::uint32_t p = any(rng);
            q.update(p, e % 11 == 0 ? Pending{} : at(now + gap(rng), s, Kind::BallBall));
        }
    }
}

TEST(EventQueue, FollowsTheTotalOrderThroughManyYears) {
    std::mt19937_64 rng(1);
    const std::size_t n = 2000;
    Checked q(first_events(n, 10.0, rng));
    simulate(q, n, 60000, rng, 0.1);
}

TEST(EventQueue, EqualTimesBreakTiesByKindSlotAndOther) {
    std::vector<Pending> events;
    for (std::uint32_t s = 0; s < 300; ++s)
        events.push_back(at(1.0, 300 - s, static_cast<Kind>(s % 4)));
    Checked q(events);
    for (std::uint32_t k = 0; k < 300; ++k) {
        const std::uint32_t s = q.top();
        q.update(s, at(k % 2 ? std::nextafter(1.0, 2.0) : 1.0, 7, Kind::BallPlane));  // same time or the next double
    }
    for (std::uint32_t k = 0; k < 300; ++k) q.update(q.top(), Pending{});
}

TEST(EventQueue, ClusteredThenSparseTimesAndFarFuture) {
    // A burst of near-simultaneous events builds tiny buckets; the rest are far apart, some
    // beyond any year, some at the largest doubles: the width must follow.
    std::mt19937_64 rng(3);
    std::vector<Pending> events;
    for (int k = 0; k < 400; ++k) events.push_back(at(5.0 + 1e-13 * k));
    for (int k = 0; k < 100; ++k) events.push_back(at(5.0 + std::ldexp(1.0, k % 60)));
    events.push_back(at(std::numeric_limits<double>::max()));
    events.push_back(at(-3.0));
    events.push_back(Pending{});
    Checked q(events);
    simulate(q, events.size(), 5000, rng, 1e-3);
}

TEST(EventQueue, NoEventsAtAllAndEventsAppearingLater) {
    std::vector<Pending> none(50);
    Checked q(none);
    q.top();
    q.update(17, at(2.0));
    EXPECT_EQ(q.top(), 17u);
    q.update(3, at(1.0));
    EXPECT_EQ(q.top(), 3u);
    q.update(3, Pending{});
    q.update(17, Pending{});
    q.top();
    std::mt19937_64 rng(4);
    q.update(9, at(0.5));
    simulate(q, 50, 2000, rng, 1.0);
}

TEST(EventQueue, PartsEachKeepTheirOrderAndTopIsTheEarliestOfAll) {
    std::mt19937_64 rng(6);
    const std::size_t n = 1500;
    std::vector<Pending> events = first_events(n, 3.0, rng);
    for (std::size_t k = 0; k < n; k += 13) events[k] = Pending{};
    Checked q(events, 3);
    simulate(q, n, 30000, rng, 0.2);
}

TEST(EventQueue, SlotsAppendedToABuiltQueueTakeTheirPlace) {
    // Entries appended in every state of a calendar: a queue built empty (no year yet), then the
    // front, the current year, the overflow beyond it, and no event at all; in two parts.
    std::mt19937_64 rng(8);
    Checked q({}, 2);
    q.append(at(1.0), 0);
    q.append(at(1e6), 1);
    q.append(Pending{}, 0);
    EXPECT_EQ(q.top(), 0u);
    simulate(q, q.size(), 500, rng, 0.5);
    for (int k = 0; k < 300; ++k) {
        const double now = q.event(q.top()).time;
        const double later = k % 4 == 0 ? now : now + (k % 4) * std::pow(10.0, k % 7 - 2);
        q.append(at(later, static_cast<std::uint32_t>(k)), static_cast<std::uint32_t>(k % 2));
        if (k % 5 == 0) q.append(Pending{}, 1);
        simulate(q, q.size(), 20, rng, 0.5);
    }
}

TEST(EventQueue, ACutMovedBetweenPartsKeepsTheOrder) {
    // Blocks of slots move from one part to the other between stretches of events, as when the
    // regions' shares move a cut: first nearly all into part 0, then half into part 1.
    std::mt19937_64 rng(9);
    const std::size_t n = 3000;
    Checked q(first_events(n, 5.0, rng), 2);
    q.move_from(100, 0);  // part 1 keeps 50 slots
    simulate(q, n, 20000, rng, 0.2);
    q.move_from(1500, 1);
    simulate(q, n, 20000, rng, 0.2);
    q.move_from(2900, 0);
    simulate(q, n, 20000, rng, 0.2);
}

TEST(EventQueue, SingleEntry) {
    Checked q({at(1.0)});
    std::mt19937_64 rng(5);
    simulate(q, 1, 1000, rng, 3.0);
}

}  // namespace
