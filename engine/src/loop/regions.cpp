// Ballistic — the plan of the regions (regions.hpp).
#include "loop/regions.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ballistic::detail {

namespace {

// The prime factors of n, the largest first.
std::vector<std::int64_t> prime_factors(std::size_t n) {
    std::vector<std::int64_t> factors;
    for (std::size_t left = n, p = 2; left > 1;) {
        if (left % p == 0) {
            factors.push_back(static_cast<std::int64_t>(p));
            left /= p;
        } else {
            ++p;
        }
    }
    std::reverse(factors.begin(), factors.end());
    return factors;
}

// The axis nearest gravity, −1 without gravity.
int vertical_axis(Vec3 gravity) {
    int vertical = -1;
    if (!(gravity == Vec3{})) {
        vertical = 0;
        for (int d = 1; d < 3; ++d)
            if (std::abs(axis(gravity, d)) > std::abs(axis(gravity, vertical))) vertical = d;
    }
    return vertical;
}

// The bounds between the pieces along axis d of the dense block (`across` cells from `lo`), each
// piece holding a share of the balls of `keys` in it that follows its `weight`, and at least
// `thinnest` cells thick.
std::vector<std::int64_t> share_bounds(const std::vector<CellKey>& keys, int d, const std::vector<double>& weight,
                                       std::int64_t across, std::int64_t lo, std::int64_t thinnest) {
    const auto count = static_cast<std::int64_t>(weight.size());
    std::vector<std::int64_t> bounds;
    std::vector<std::uint64_t> per(static_cast<std::size_t>(across), 0);
    std::uint64_t total = 0;
    for (const CellKey& key : keys) {
        const std::int64_t k = key[d] - lo;
        if (k < 0 || k >= across) continue;
        ++per[static_cast<std::size_t>(k)];
        ++total;
    }
    const double sum = std::accumulate(weight.begin(), weight.end(), 0.0);
    double before = 0.0;  // the weights of the pieces before the bound
    std::uint64_t seen = 0;
    std::int64_t cell = 0, previous = 0;
    for (std::int64_t r = 1; r < count; ++r) {
        before += weight[static_cast<std::size_t>(r - 1)];
        while (cell < across && static_cast<double>(seen) * sum < before * static_cast<double>(total))
            seen += per[static_cast<std::size_t>(cell++)];
        previous = std::clamp(cell, previous + thinnest, across - (count - r) * thinnest);
        bounds.push_back(lo + previous);
    }
    return bounds;
}

// Per coordinate of the dense block along an axis (`across` cells from `lo`), its distance to the
// nearest cell of another piece past `bounds` (across the wrap too when the axis `wraps`), at
// most `far` and 255.
std::vector<std::uint8_t> depths_to_bounds(const std::vector<std::int64_t>& bounds, std::int64_t lo,
                                           std::int64_t across, bool wraps, std::int64_t far) {
    std::vector<std::uint8_t> depths(static_cast<std::size_t>(across));
    for (std::int64_t k = 0; k < across; ++k) {
        const std::int64_t c = lo + k;
        std::int64_t below = wraps ? k + 1 : far, above = wraps ? across - k : far;
        for (const std::int64_t bound : bounds) {
            if (bound <= c) below = c - bound + 1;
            else above = std::min(above, bound - c);
        }
        depths[static_cast<std::size_t>(k)] = static_cast<std::uint8_t>(std::min<std::int64_t>({below, above, 255}));
    }
    return depths;
}

}  // namespace

void RegionPlan::plan(const Cells& cells, const std::vector<CellKey>& keys, std::size_t balls, Vec3 gravity,
                      int concurrency, std::size_t min_balls, const RegionWeights& weights) {
    count_ = 1;
    for (auto& b : bounds_) b.clear();
    for (auto& d : depths_) d.clear();
    for (auto& t : near_) for (auto& a : t) a.clear();
    const std::size_t most = std::min<std::size_t>(static_cast<std::size_t>(std::max(concurrency, 1)), kMostRegions);
    if (most < 2 || keys.empty() || balls < min_balls || cells.dense_cells(0) == 0) return;
    std::array<std::int64_t, 3> pieces{1, 1, 1};
    for (int d = 0; d < 3; ++d) {
        lo_[static_cast<std::size_t>(d)] = cells.dense_lo(d);
        n_[static_cast<std::size_t>(d)] = cells.dense_cells(d);
        wraps_[static_cast<std::size_t>(d)] = cells.periodic() && cells.wraps(d);
    }
    // The prime factors of the count, the largest first, each to the axis whose pieces stay the
    // thickest (a factor that fits no axis gives way to a smaller count, or none: fewer regions).
    // A block of more than 8 dense cells per ball is cut along two axes at most, so that the
    // stamps' patches (RegionLoop::prepare()) stay at most 8 per ball.
    const int vertical = vertical_axis(gravity);
    const bool sparse = double(cells.dense_count()) > kStampsPerBall * double(balls);
    auto cut_axes = [&] { return int(pieces[0] > 1) + int(pieces[1] > 1) + int(pieces[2] > 1); };
    for (const std::int64_t factor : prime_factors(most)) {
        // A factor that fits no axis tries the smaller counts (three regions that do not fit: two).
        for (std::int64_t f = factor; f >= 2; --f) {
            int best = -1;
            auto thick = [&](int d) { return n_[static_cast<std::size_t>(d)] / (pieces[static_cast<std::size_t>(d)] * f); };
            auto least = [&](int d) { return wraps_[static_cast<std::size_t>(d)] ? 2 * kMinCells : kMinCells; };
            for (const bool across : {true, false}) {
                for (int d = 0; d < 3; ++d) {
                    if ((d == vertical) == across || thick(d) < least(d)) continue;
                    if (sparse && pieces[static_cast<std::size_t>(d)] == 1 && cut_axes() == 2) continue;
                    if (best < 0 || thick(d) > thick(best)) best = d;
                }
                if (best >= 0) break;
            }
            if (best < 0) continue;
            pieces[static_cast<std::size_t>(best)] *= f;
            break;
        }
    }
    // Along each cut axis, bounds at shares of the balls in the dense block: equal ones, or a
    // piece's weight the sum of its regions'.
    count_ = static_cast<std::size_t>(pieces[0] * pieces[1] * pieces[2]);
    const bool weighed = weights.of.size() == count_ && std::equal(pieces.begin(), pieces.end(), weights.pieces.begin());
    for (int d = 0; d < 3; ++d) {
        const auto axis = static_cast<std::size_t>(d);
        if (pieces[axis] < 2) continue;
        std::vector<double> weight(static_cast<std::size_t>(pieces[axis]), weighed ? 0.0 : 1.0);
        if (weighed) {
            for (std::size_t r = 0; r < count_; ++r) {
                std::size_t at = r;
                for (int e = 0; e < d; ++e) at /= static_cast<std::size_t>(pieces[static_cast<std::size_t>(e)]);
                weight[at % static_cast<std::size_t>(pieces[axis])] += weights.of[r];
            }
        }
        bounds_[axis] = share_bounds(keys, d, weight, n_[axis], lo_[axis], kMinCells);
    }
    // Along each cut axis, every coordinate's distance to the nearest cell of another piece, and
    // the pieces near it.
    for (int d = 0; d < 3; ++d) {
        const auto axis = static_cast<std::size_t>(d);
        if (bounds_[axis].empty()) continue;
        const std::int64_t lo = lo_[axis], across = n_[axis];
        depths_[axis] = depths_to_bounds(bounds_[axis], lo, across, wraps_[axis], kFar);
        for (int reach = 0; reach <= kTabled; ++reach) {
            auto& masks = near_[static_cast<std::size_t>(reach)][axis];
            masks.resize(static_cast<std::size_t>(across));
            for (std::int64_t k = 0; k < across; ++k) masks[static_cast<std::size_t>(k)] = pieces_near(d, lo + k, reach);
        }
    }
}

std::uint64_t RegionPlan::pieces_near(int d, std::int64_t c, int reach) const {
    const auto axis = static_cast<std::size_t>(d);
    const std::uint32_t n = pieces(d);
    if (n == 1) return 1;
    auto span = [&](std::int64_t from, std::int64_t to) {  // the pieces holding cells from .. to
        const std::uint32_t a = piece(d, from), b = piece(d, to);
        return (b - a + 1 == 64 ? ~std::uint64_t{0} : ((std::uint64_t{1} << (b - a + 1)) - 1)) << a;
    };
    if (!wraps_[axis]) return span(c - reach, c + reach);
    const std::int64_t lo = lo_[axis], cells = n_[axis];
    if (2 * reach + 1 >= cells) return n == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
    std::uint64_t set = span(std::max(c - reach, lo), std::min(c + reach, lo + cells - 1));
    if (c - reach < lo) set |= span(c - reach + cells, lo + cells - 1);
    if (c + reach >= lo + cells) set |= span(lo, c + reach - cells);
    return set;
}

}  // namespace ballistic::detail
