// Ballistic — slabs and batches of parallel event processing (batch.hpp).
#include "batch.hpp"

#include <algorithm>

namespace ballistic::detail {

void SlabPlan::plan(const Grid& grid, std::size_t balls, int concurrency, std::size_t min_balls) {
    count_ = 1;
    bounds_.clear();
    if (concurrency < 2 || balls == 0 || balls < min_balls) return;
    int axis = 0;
    for (int d = 1; d < 3; ++d)
        if (grid.dense_cells(d) > grid.dense_cells(axis)) axis = d;
    const std::int64_t cells = grid.dense_cells(axis);
    const std::int64_t slab_count = std::min<std::int64_t>(concurrency, cells / kMinSlabCells);
    if (slab_count < 2) return;
    axis_ = axis;
    // Slabs holding equal numbers of balls, each at least kMinSlabCells thick.
    const std::int64_t lo = grid.dense_lo(axis);
    std::vector<std::uint32_t> count(static_cast<std::size_t>(cells), 0);
    std::uint64_t total = 0;
    for (std::uint32_t s = 0; s < balls; ++s) {
        const std::int64_t k = grid.key(s)[axis] - lo;
        if (k >= 0 && k < cells) {
            ++count[static_cast<std::size_t>(k)];
            ++total;
        }
    }
    std::uint64_t seen = 0;
    std::int64_t cell = 0, previous = 0;
    for (std::int64_t r = 1; r < slab_count; ++r) {
        while (cell < cells && seen * static_cast<std::uint64_t>(slab_count) < static_cast<std::uint64_t>(r) * total)
            seen += count[static_cast<std::size_t>(cell++)];
        previous = std::clamp(cell, previous + kMinSlabCells, cells - (slab_count - r) * kMinSlabCells);
        bounds_.push_back(lo + previous);
    }
    count_ = static_cast<std::size_t>(slab_count);
}

bool SlabPlan::near_boundary(const CellKey& key, const Grid& grid) const {
    const std::int64_t k = key[axis_];
    for (const std::int64_t bound : bounds_)
        if (k >= bound - kBoundaryReach && k < bound + kBoundaryReach) return true;
    if (!grid.periodic() || !grid.wraps(axis_)) return false;
    // The last slab of a periodic box meets the first one across the wrap.
    const std::int64_t lo = grid.dense_lo(axis_), n = grid.dense_cells(axis_);
    return k < lo + kBoundaryReach || k >= lo + n - kBoundaryReach;
}

void Batch::clear() {
    if (touched.empty()) touched.resize(kTouchCapacity);
    for (const std::uint32_t i : touched_at) touched[i] = Touch{};
    touched_at.clear();
    events.clear();
    boundary.clear();
}

Batch::Touch& Batch::touch(std::uint32_t slot, std::uint32_t event) {
    for (std::size_t i = (slot * 0x9E3779B1u) & (kTouchCapacity - 1);; i = (i + 1) & (kTouchCapacity - 1)) {
        Touch& t = touched[i];
        if (t.slot == slot) return t;
        if (t.slot == ~0u) {
            touched_at.push_back(static_cast<std::uint32_t>(i));  // first: should it fail, nothing is marked
            t = {slot, event, false, {}};
            return t;
        }
    }
}

}  // namespace ballistic::detail
