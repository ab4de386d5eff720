// Ballistic — how wide the cells are (docs/architecture.md, "Cells as wide as the balls are sparse"):
// never so narrow that a contact could hide across a cell; one cell for all space in a world of a
// few balls; wider while the balls are far apart, and narrower again once they crowd, as the
// reviews within a step find.
#pragma once

#include "base/parallel.hpp"
#include "space/balls.hpp"
#include "space/cells.hpp"
#include "space/statics.hpp"

#include <ballistic/box.hpp>
#include <ballistic/types.hpp>

#include <cstddef>
#include <cstdint>
#include <limits>

namespace ballistic::detail {

// The box that holds centre(s) for every s in [0, n) (a parallel reduction; min and max are
// exact, so the box does not depend on how the work was split).
template <class Centre>
Box centre_bounds(const Parallel& parallel, std::size_t n, Centre centre) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    auto widen = [](const Box& a, const Box& b) {
        return Box{{std::min(a.min.x, b.min.x), std::min(a.min.y, b.min.y), std::min(a.min.z, b.min.z)},
                   {std::max(a.max.x, b.max.x), std::max(a.max.y, b.max.y), std::max(a.max.z, b.max.z)}};
    };
    return parallel.reduce(n, Box{{inf, inf, inf}, {-inf, -inf, -inf}}, [&](std::size_t begin, std::size_t end) {
        Box part{{inf, inf, inf}, {-inf, -inf, -inf}};
        for (std::size_t s = begin; s < end; ++s) part = widen(part, Box{centre(s), centre(s)});
        return part;
    }, widen);
}

class CellWidths {
public:
    // A world of at most this many balls has one cell for all space (a third of a periodic box's
    // shortest side): a few balls pay no cell crossings in empty space, only their collisions,
    // and a prediction tests the other few.
    static constexpr std::size_t kFewBalls = 16;
    // Cells are a hair wider than the largest diameter, so rounding at a cell face never hides a
    // contact.
    static constexpr double kMargin = 1e-6;

    CellWidths(const WorldDef& def, const Balls& balls, const Cells& cells, const Statics& statics,
               const Parallel& parallel)
        : def_(def), balls_(balls), cells_(cells), statics_(statics), parallel_(parallel) {}

    // Cells narrower than this could hide a contact of balls of this radius.
    static double least(double radius) { return 2.0 * radius * (1.0 + kMargin); }
    // The shortest side of the periodic box along an axis that wraps.
    double shortest_period() const;
    // The width cells are built at for balls up to `radius`: the least, or the last review's
    // choice; in a world of at most kFewBalls balls, one cell for all space.
    double for_radius(double radius) const;
    // Events between two reviews: widened cells are reviewed often, since balls that gather in
    // them cost a prediction per crowd member; cells of the least width rarely, since a review
    // costs O(N log N) and a dense world's events far more than a sparse one's.
    std::uint64_t review_every(bool cells_valid, double max_radius) const;
    // The width to remake the cells at, `at` (balls of radius up to max_radius), or 0 to keep
    // them: the widest at which a ball has at most kSparse others around it, or narrower once it
    // has more than kCrowded.
    double reviewed(double at, double max_radius) const;

    double chosen = 0.0;  // the width the cells were last made at a review; 0: none yet

private:
    // Mean count of other balls, and of capsules' and blocks' centres, in the 27 cells of this
    // width around a ball (cells from the origin; a sample of the balls, where they are at `at`).
    double crowding(double width, double at) const;

    const WorldDef& def_;
    const Balls& balls_;
    const Cells& cells_;
    const Statics& statics_;
    const Parallel& parallel_;
};

}  // namespace ballistic::detail
