// Ballistic — the regions' shares of the balls, by their measured speed
// (WorldDef::regions_when_faster). A region waits whenever it runs ahead of a neighbour, so a
// run lasts as long as its slowest region. The cores a world runs on need not be equally fast
// (a neighbour on the machine, a slower kind of core), and one region's events may cost more than
// another's. So the world times each region's own work (its waits left out), and once one took
// kUneven times as long as another over as many events as the world has balls (kLeastEvents at
// least), it plans the regions again, O(N), each region's weight divided by its time: the slow
// region's share shrinks, the fast one's grows. A plan changes no bit of the result, only where
// each region's events go.
//
// Invariants: weights() holds one weight per region of the plans cut as the last one planned()
// (none: one region), each within kWidest of the others; the time measured is of those plans'
// runs since the last rebalance().
#pragma once

#include "loop/regions.hpp"

#include <cstdint>
#include <span>
#include <vector>

namespace ballistic::detail {

class RegionShares {
public:
    static constexpr double kUneven = 1.1;
    static constexpr std::uint64_t kLeastEvents = 1u << 15;
    // A weight moves by at most this factor at a time, and stays within kWidest of every other.
    static constexpr double kMostChange = 2.0, kWidest = 4.0;

    const RegionWeights& weights() const { return weights_; }
    // A new plan: its regions keep their weights and what was measured of them when it cuts the
    // world into the same pieces (a region's speed is mostly its core's), and start from equal
    // shares otherwise.
    void planned(const RegionPlan& plan);
    // A run of the regions: each region's `seconds` of work, and the `events` they processed.
    void ran(std::span<const double> seconds, std::uint64_t events);
    // Has one region taken kUneven times as long as another, over `least` events or more (and
    // kLeastEvents)?
    bool uneven(std::uint64_t least) const;
    // Each weight divided by its region's time, then the measurements start afresh.
    void rebalance();

private:
    RegionWeights weights_;
    std::vector<double> seconds_;  // per region, since the plan or the last rebalance()
    std::uint64_t events_ = 0;
};

}  // namespace ballistic::detail
