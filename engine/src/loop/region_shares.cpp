// Ballistic — the regions' shares of the balls, by their measured speed (region_shares.hpp).
#include "loop/region_shares.hpp"

#include <algorithm>
#include <numeric>

namespace ballistic::detail {

void RegionShares::planned(const RegionPlan& plan) {
    const std::size_t count = plan.count() < 2 ? 0 : plan.count();
    const std::array<std::uint32_t, 3> pieces{plan.pieces(0), plan.pieces(1), plan.pieces(2)};
    if (pieces == weights_.pieces && weights_.of.size() == count) return;
    weights_.pieces = pieces;
    weights_.of.assign(count, 1.0);
    seconds_.assign(count, 0.0);
    events_ = 0;
}

void RegionShares::ran(std::span<const double> seconds, std::uint64_t events) {
    if (seconds.size() != seconds_.size()) return;
    for (std::size_t r = 0; r < seconds.size(); ++r) seconds_[r] += std::max(seconds[r], 0.0);
    events_ += events;
}

bool RegionShares::uneven(std::uint64_t least) const {
    if (seconds_.size() < 2 || events_ < std::max(least, kLeastEvents)) return false;
    const auto [fastest, slowest] = std::minmax_element(seconds_.begin(), seconds_.end());
    return *slowest > kUneven * *fastest;
}

void RegionShares::rebalance() {
    const std::size_t count = seconds_.size();
    if (count < 2) return;
    const double mean = std::accumulate(seconds_.begin(), seconds_.end(), 0.0) / static_cast<double>(count);
    std::vector<double>& of = weights_.of;
    for (std::size_t r = 0; r < count; ++r) {
        const double factor = seconds_[r] > 0.0 ? mean / seconds_[r] : kMostChange;
        of[r] *= std::clamp(factor, 1.0 / kMostChange, kMostChange);
    }
    const double heaviest = *std::max_element(of.begin(), of.end());
    for (double& w : of) w = std::max(w, heaviest / kWidest);
    const double total = std::accumulate(of.begin(), of.end(), 0.0);
    for (double& w : of) w *= static_cast<double>(count) / total;
    seconds_.assign(count, 0.0);
    events_ = 0;
}

}  // namespace ballistic::detail
