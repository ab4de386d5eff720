// Ballistic — lone balls that roam (roaming.hpp).
#include "space/roaming.hpp"

#include <algorithm>
#include <cassert>

namespace ballistic::detail {

void Roaming::count(const Cells& cells, std::size_t balls, bool keep) {
    level_.assign(balls, 0);
    roamers_.reserve(kMostRoamers);
    active_ = true;  // before counting: should it fail, clear() empties what it counted
    keep_ = keep;
    // Storage is sorted along a Morton curve of the cells: runs of balls share their blocks, and
    // a run costs one update of the counts per level.
    for (int l = 1; l < kLevels; ++l) {
        Counts& counts = counts_[static_cast<std::size_t>(l)];
        std::size_t s = 0;
        while (s < balls) {
            const CellKey b = block(cells.key(static_cast<std::uint32_t>(s)), l);
            std::size_t run = s + 1;
            while (run < balls && block(cells.key(static_cast<std::uint32_t>(run)), l) == b) ++run;
            counts[b] += static_cast<std::uint32_t>(run - s);
            s = run;
        }
    }
}

void Roaming::added(const Cells& cells, std::size_t first, std::size_t balls) {
    level_.resize(balls, 0);
    for (std::size_t s = first; s < balls; ++s)
        for (int l = 1; l < kLevels; ++l) ++counts_[static_cast<std::size_t>(l)][block(cells.key(static_cast<std::uint32_t>(s)), l)];
}

void Roaming::moved(const CellKey& from, const CellKey& to) {
    for (int l = 1; l < kLevels; ++l) {
        const CellKey a = block(from, l), b = block(to, l);
        if (a == b) return;  // the same block at every level above too
        Counts& counts = counts_[static_cast<std::size_t>(l)];
        ++counts[b];  // first: a failure to allocate leaves the old count
        const auto it = counts.find(a);
        assert(it != counts.end() && it->second > 0);
        --it->second;
    }
}

int Roaming::free_level(const CellKey& cell) const {
    int best = 0;
    for (int l = 1; l < kLevels; ++l) {
        const CellKey b = block(cell, l);
        // The 27 blocks and the next one beyond along each axis within the cells' range, so that
        // every face of the block has a cell beyond it.
        const std::int64_t side = std::int64_t{1} << (3 * l);
        bool inside = true;
        for (int d = 0; d < 3; ++d) inside = inside && (b[d] - 1) * side > -kKeyLimit && (b[d] + 2) * side < kKeyLimit;
        if (!inside) break;
        const Counts& counts = counts_[static_cast<std::size_t>(l)];
        const auto own = counts.find(b);
        std::uint32_t balls = own == counts.end() ? 0 : own->second;  // 1 at least, in a crowd more
        for (int z = -1; z <= 1 && balls <= 1; ++z)
            for (int y = -1; y <= 1 && balls <= 1; ++y)
                for (int x = -1; x <= 1 && balls <= 1; ++x) {
                    if (x == 0 && y == 0 && z == 0) continue;
                    const auto it = counts.find(CellKey{b.x + x, b.y + y, b.z + z});
                    if (it != counts.end()) balls += it->second;
                }
        // The 27 blocks of a level lie within those of the next: once crowded, always.
        if (balls > 1) break;
        best = l;
    }
    return best;
}

void Roaming::set_level(std::uint32_t slot, int level) {
    const int was = level_[slot];
    if (was == level) return;
    if (was == 0) roamers_.push_back(slot);  // capacity reserved by count()
    if (level == 0) roamers_.erase(std::find(roamers_.begin(), roamers_.end(), slot));
    level_[slot] = static_cast<std::uint8_t>(level);
}

void Roaming::clear() {
    for (std::uint32_t s : roamers_) level_[s] = 0;
    roamers_.clear();
    for (Counts& counts : counts_) counts.clear();
    active_ = keep_ = false;
}

CellKey Roaming::within(const CellKey& cell, int level, const CellKey& at) {
    const int shift = 3 * level;
    CellKey kept;
    for (int d = 0; d < 3; ++d) {
        const std::int64_t first = (cell[d] >> shift) << shift, last = first + (std::int64_t{1} << shift) - 1;
        kept[d] = static_cast<std::int32_t>(std::clamp<std::int64_t>(at[d], first, last));
    }
    return kept;
}

CellKey Roaming::entered(const CellKey& cell, int face, int level, const CellKey& at) {
    const int shift = 3 * level, d = face / 2;
    const std::int64_t side = std::int64_t{1} << shift;
    const std::int64_t first = (cell[d] >> shift) << shift;  // of the block left
    CellKey next = cell;
    next[d] = static_cast<std::int32_t>((face & 1) ? first + side : first - 1);
    return within(next, level, at);
}

}  // namespace ballistic::detail
