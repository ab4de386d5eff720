// Ballistic — how wide the cells are (cell_widths.hpp).
#include "space/cell_widths.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

namespace ballistic::detail {

namespace {

// Cells widen while a ball has at most this many others (and finite statics) in the 27 cells
// around it on average, and narrow again once it has more than kCrowded: between the two, a
// doubling of the width (eight times the volume) cannot flip the decision back and forth.
constexpr double kSparse = 2.0, kCrowded = 16.0;
constexpr std::size_t kCrowdingSample = 1024;  // balls whose neighbours crowding() counts

}  // namespace

double CellWidths::shortest_period() const {
    double shortest = std::numeric_limits<double>::infinity();
    for (int d = 0; d < 3; ++d)
        if (def_.periodic_axes[static_cast<std::size_t>(d)])
            shortest = std::min(shortest, axis(def_.periodic->max, d) - axis(def_.periodic->min, d));
    return shortest;
}

double CellWidths::for_radius(double radius) const {
    if (balls_.size() > kFewBalls) return std::max(least(radius), chosen);
    if (!def_.periodic) return kWholeSpace;
    // A hair under a third of the shortest periodic side: three whole cells along it.
    return std::max(least(radius), shortest_period() / 3.0 * (1.0 - 1e-12));
}

std::uint64_t CellWidths::review_every(bool cells_valid, double max_radius) const {
    const bool widened = cells_valid && cells_.min_width() > least(max_radius);
    return std::max<std::uint64_t>(std::uint64_t{1} << 16, (widened ? 64 : 1024) * static_cast<std::uint64_t>(balls_.size()));
}

double CellWidths::crowding(double width, double at) const {
    using Key = std::array<std::int64_t, 3>;
    auto key = [width](Vec3 p) {  // clamped: far out, keys stay integers
        Key k;
        for (int d = 0; d < 3; ++d)
            k[static_cast<std::size_t>(d)] =
                static_cast<std::int64_t>(std::clamp(std::floor(axis(p, d) / width), -0x1p40, 0x1p40));
        return k;
    };
    std::vector<Key> keys;
    keys.reserve(balls_.size() + statics_.capsules().size() + statics_.blocks().size());
    for (std::uint32_t s = 0; s < balls_.size(); ++s) keys.push_back(key(balls_.position_at(s, at)));
    for (const Capsule& c : statics_.capsules()) keys.push_back(key(0.5 * (c.def.a + c.def.b)));
    for (const BlockDef& b : statics_.blocks()) keys.push_back(key(0.5 * (b.min + b.max)));
    std::sort(keys.begin(), keys.end());
    const std::size_t stride = std::max<std::size_t>(1, balls_.size() / kCrowdingSample);
    std::size_t near = 0, subjects = 0;
    for (std::uint32_t s = 0; s < balls_.size(); s += static_cast<std::uint32_t>(stride), ++subjects) {
        const Key k = key(balls_.position_at(s, at));
        for (std::int64_t z = -1; z <= 1; ++z)
            for (std::int64_t y = -1; y <= 1; ++y)
                for (std::int64_t x = -1; x <= 1; ++x) {
                    const auto [first, last] = std::equal_range(keys.begin(), keys.end(), Key{k[0] + x, k[1] + y, k[2] + z});
                    near += static_cast<std::size_t>(last - first);
                }
        --near;  // itself
    }
    return subjects == 0 ? 0.0 : static_cast<double>(near) / static_cast<double>(subjects);
}

double CellWidths::reviewed(double at, double max_radius) const {
    if (balls_.size() <= kFewBalls) return 0.0;  // one cell for all space already
    const double lowest = least(max_radius), now = cells_.min_width();
    // At most a third of a periodic side; no wider than the balls' spread (twice it holds every
    // ball in the 27 cells around each: crowded).
    const Box box = centre_bounds(parallel_, balls_.size(), [&](std::size_t s) { return balls_.position_at(s, at); });
    const double spread = std::max({box.max.x - box.min.x, box.max.y - box.min.y, box.max.z - box.min.z});
    const double most = std::min(def_.periodic ? shortest_period() / 3.0 * (1.0 - 1e-12) : kWholeSpace,
                                 std::max(lowest, 2.0 * spread));
    // The widest of base · 2^k (k from `good`, known sparse enough, up to where it reaches `most`)
    // that is sparse enough, by bisection: crowding grows with the width.
    auto widest = [&](double base, int good) {
        const double width_most = std::max(base, most);
        const int last = static_cast<int>(std::ceil(std::log2(width_most / base)));  // min(…, most) there
        auto width = [&](int k) { return std::min(std::ldexp(base, k), width_most); };
        int bad = last + 1;  // beyond the spread: crowded
        while (bad - good > 1) {
            const int mid = good + (bad - good) / 2;
            (crowding(width(mid), at) <= kSparse ? good : bad) = mid;
        }
        return width(std::max(good, 0));
    };
    double pick = 0.0;
    if (now > lowest && crowding(now, at) > kCrowded) pick = widest(lowest, -1);  // narrower, down to the least
    else if (4.0 * now <= most && crowding(4.0 * now, at) <= kSparse) pick = widest(now, 2);
    return pick == now ? 0.0 : pick;
}

}  // namespace ballistic::detail
