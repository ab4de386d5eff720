// Ballistic — lone balls that roam: blocks of cells of several sizes, so that a fast ball far
// from every other ball does not pay an event per cell it crosses (docs/architecture.md, "Cells of
// several sizes").
//
// One cell width serves the whole world, and a crowd keeps it a diameter wide. A step expected to
// cross many cells (World::Impl::start_roaming) counts the balls in blocks of 8^l cells along each axis, at each
// level l = 1 … kLevels − 1; a ball alone in the 27 blocks around its own at some level roams at
// the highest such level: its crossings are those of its block, and it is predicted against the
// statics alone, as no other ball can reach it before it leaves the block. The counts follow every
// ball that crosses into another block; a ball crossing into one of the 27 blocks around a
// roamer's brings the roamer down to the level at which it is alone again (or back to the cells),
// and a ball that finds itself alone when it crosses into another block starts to roam.
//
// Invariants while balls roam (within a step, whose events are then processed serially): every
// ball is counted in the blocks of its cell; a roamer of level l is the only ball in the 27
// blocks of level l around the block of its cell, which holds it, its cell being where it
// last crossed into that block (its position may be anywhere in the block).
#pragma once

#include "space/cells.hpp"

#include <array>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace ballistic::detail {

class Roaming {
public:
    static constexpr int kLevels = 7;                  // levels 1 … 6: blocks of 8 … 8⁶ cells a side
    static constexpr std::size_t kMostRoamers = 64;    // a crossing checks each roamer
    // Steps expected to cross fewer cells than this many per ball do not start roaming: counting
    // costs O(N), and each cell crossing saved an event of about ten times that per ball.
    static constexpr double kCrossingsPerBall = 8.0;

    // The block of level `level` holding `cell`.
    static CellKey block(const CellKey& cell, int level) {
        const int shift = 3 * level;
        return {cell.x >> shift, cell.y >> shift, cell.z >> shift};
    }

    // Are the balls counted (from count() to clear(), within a step)? Then balls roam or may.
    bool active() const { return active_; }
    // The level a ball roams at; 0: it lives in the cells (as a ball added in a pause does
    // before added() counts it).
    int level(std::uint32_t slot) const { return active() && slot < level_.size() ? level_[slot] : 0; }
    std::span<const std::uint32_t> roamers() const { return roamers_; }

    // Counts `balls` balls in the blocks of their cells (Cells::key()), after clear(). With `keep`,
    // the counting goes on once no ball roams (a ball may start to roam again at a crossing);
    // without, it ends then (settle()), and the regions' runs start again.
    void count(const Cells& cells, std::size_t balls, bool keep);
    // Balls added in slots from `first` on (in a pause), counted in their cells.
    void added(const Cells& cells, std::size_t first, std::size_t balls);
    // A ball counted in `from` now lives in `to`. Blocks left empty keep their entries until
    // clear(), so that moving back (Response::undo) allocates nothing.
    void moved(const CellKey& from, const CellKey& to);
    // After an event: ends the counting when no ball roams and it is not kept.
    void settle() {
        if (active_ && !keep_ && roamers_.empty()) clear();
    }
    // The highest level at which the 27 blocks around `cell`'s hold one ball (the one in `cell`),
    // with the blocks within the cells' range; 0 if none.
    int free_level(const CellKey& cell) const;
    void set_level(std::uint32_t slot, int level);
    // No ball roams and nothing is counted. Allocates nothing.
    void clear();

    // The cell a roamer of level `level` in `cell` enters through face `face` of its block: the
    // first cell of the next block along the face's axis, and along the others `at`'s coordinates
    // (the cell of its position), kept within the block.
    static CellKey entered(const CellKey& cell, int face, int level, const CellKey& at);
    // `at` kept within the block of level `level` holding `cell`.
    static CellKey within(const CellKey& cell, int level, const CellKey& at);

private:
    struct Hash {
        std::size_t operator()(const CellKey& k) const {
            return static_cast<std::size_t>(static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.x)) * 0x9E3779B97F4A7C15ull ^
                                            static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.y)) * 0xC2B2AE3D27D4EB4Full ^
                                            static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.z)) * 0x165667B19E3779F9ull);
        }
    };
    using Counts = std::unordered_map<CellKey, std::uint32_t, Hash>;
    std::array<Counts, kLevels> counts_;  // per level (0 unused): balls per block
    std::vector<std::uint8_t> level_;     // per slot, while balls roam
    std::vector<std::uint32_t> roamers_;  // in the order they started roaming
    bool active_ = false, keep_ = false;
};

}  // namespace ballistic::detail
