// Ballistic — regions of space with their own event loops (docs/architecture.md, "Parallel event
// processing: regions"): the plan that cuts the dense cells into blocks, one per region, and what
// an event needs to know of it.
//
// Invariants: count() regions, at most kMostRegions; along each axis the bounds ascend and the
// regions are at least kMinCells cells thick; every cell lies in exactly one region (cells outside
// the dense block in the region their coordinates clamp to).
#pragma once

#include "space/cells.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

namespace ballistic::detail {

// A set of regions, bit r for region r.
using RegionSet = std::uint64_t;

// The weights of a plan's regions (RegionShares): along each cut axis a piece's share of the balls
// follows the summed weights of its regions, for a plan cut into the same `pieces` per axis.
struct RegionWeights {
    std::array<std::uint32_t, 3> pieces{1, 1, 1};
    std::vector<double> of;  // per region; none: equal shares
};

class RegionPlan {
public:
    static constexpr std::size_t kMostRegions = 64;
    // Cells of a region along an axis, twice as many along one that wraps (a cut at either end):
    // with fewer, most of its events would lie within reach of a neighbour.
    static constexpr std::int64_t kMinCells = 12;
    // Most stamps per ball (RegionLoop: one per patch of dense cells).
    static constexpr double kStampsPerBall = 8.0;

    // Up to `concurrency` regions, blocks of the dense cells of `cells` cut along the axes with the
    // most cells (one cut for two regions, two axes for four, three for eight; two at most for more
    // than kStampsPerBall dense cells per ball of the world's `balls`), but along the axis nearest
    // `gravity` only when the others cannot take more cuts (a pile is busy along its whole surface:
    // cut across the floor, not by height), each holding about as many of the balls at `keys` (the
    // cells of those with events coming) as the others along its axes, or shares that follow
    // `weights` when they are of a plan cut into the same pieces; one region (serial processing)
    // for fewer than `min_balls` balls, a world without dense cells, or one too thin to cut.
    void plan(const Cells& cells, const std::vector<CellKey>& keys, std::size_t balls, Vec3 gravity, int concurrency,
              std::size_t min_balls, const RegionWeights& weights = {});
    std::size_t count() const { return count_; }
    std::uint32_t region_of(const CellKey& key) const {
        std::uint32_t region = 0;
        for (int d = 2; d >= 0; --d) region = region * pieces(d) + piece(d, key[d]);
        return region;
    }
    // Cells from `key`, a dense cell, to the nearest cell of another region (Chebyshev distance,
    // across the faces of a periodic box that wrap), at most 255.
    int depth(const CellKey& key) const {
        int least = 255;
        for (int d = 0; d < 3; ++d) {
            const auto& along = depths_[static_cast<std::size_t>(d)];
            if (!along.empty()) least = std::min<int>(least, along[static_cast<std::size_t>(key[d] - lo_[static_cast<std::size_t>(d)])]);
        }
        return least;
    }
    // The regions other than `own` with a cell within `reach` cells of `key` (Chebyshev distance,
    // across the faces of a periodic box that wrap).
    RegionSet near(const CellKey& key, std::uint32_t own, int reach) const {
        if (count_ == 1) return 0;
        std::uint64_t along[3];
        for (int d = 0; d < 3; ++d) {
            const auto axis = static_cast<std::size_t>(d);
            const std::int64_t k = key[d] - lo_[axis];
            const auto& masks = near_[static_cast<std::size_t>(std::min(reach, kTabled))][axis];
            along[d] = reach <= kTabled && !masks.empty() && k >= 0 && k < n_[axis] ? masks[static_cast<std::size_t>(k)]
                                                                                    : pieces_near(d, key[d], reach);
        }
        RegionSet set = 0;
        for (std::uint32_t z = 0; z < pieces(2); ++z) {
            if (!(along[2] >> z & 1)) continue;
            for (std::uint32_t y = 0; y < pieces(1); ++y) {
                if (!(along[1] >> y & 1)) continue;
                for (std::uint32_t x = 0; x < pieces(0); ++x)
                    if (along[0] >> x & 1) set |= RegionSet{1} << (x + pieces(0) * (y + pieces(1) * z));
            }
        }
        return set & ~(RegionSet{1} << own);
    }
    // Pieces along axis d, and their bounds (the first cell of every piece after the first).
    std::uint32_t pieces(int d) const { return static_cast<std::uint32_t>(bounds_[static_cast<std::size_t>(d)].size() + 1); }
    const std::vector<std::int64_t>& bounds(int d) const { return bounds_[static_cast<std::size_t>(d)]; }

private:
    std::uint32_t piece(int d, std::int64_t c) const {
        std::uint32_t p = 0;
        for (const std::int64_t bound : bounds_[static_cast<std::size_t>(d)]) p += c >= bound;
        return p;
    }
    // Bit p: piece p along axis d holds a cell within `reach` of coordinate c.
    std::uint64_t pieces_near(int d, std::int64_t c, int reach) const;

    std::size_t count_ = 1;
    std::array<std::vector<std::int64_t>, 3> bounds_;
    std::array<bool, 3> wraps_{};       // the axis wraps (a periodic box)
    std::array<std::int64_t, 3> lo_{}, n_{};  // the dense block along each axis
    std::array<std::vector<std::uint8_t>, 3> depths_;  // per cut axis and coordinate: depth() along it
    // pieces_near() of each coordinate of the dense block along each cut axis, for reaches up to
    // kTabled.
    static constexpr int kTabled = 3;
    std::array<std::array<std::vector<std::uint64_t>, 3>, kTabled + 1> near_;
    static constexpr std::int64_t kFar = 255;
};

}  // namespace ballistic::detail
