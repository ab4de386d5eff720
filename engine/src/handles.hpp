// Ballistic — ball handles: generation-checked ids that map to storage slots.
#pragma once

#include <ballistic/types.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace ballistic::detail {

class SnapshotReader;
class SnapshotWriter;

// Invariants: an index's generation is odd while its ball lives and even once removed; index 0
// is never handed out (BallId 0 is the null handle); freed indices are reused, each time with
// a new generation, so a stale id never reaches another ball.
class Handles {
public:
    static constexpr std::size_t kBytesPerBall = 2 * sizeof(std::uint32_t);

    bool contains(BallId id) const {
        const std::uint32_t index = id.index();
        return id && index < generation_.size() && generation_[index] == id.generation() && (id.generation() & 1u);
    }
    // The slot of a live ball; throws InvalidArgument under `field` for a stale or null id.
    std::uint32_t slot(BallId id, const char* field) const;
    // Room for `more` handles, so that that many issue() calls cannot fail.
    void reserve(std::size_t more);
    BallId issue(std::uint32_t slot);  // a handle for the ball in `slot`
    void moved(BallId id, std::uint32_t slot) { slot_of_[id.index()] = slot; }
    void release(BallId id);  // after reserve_release(), never fails
    void reserve_release() { free_.reserve(free_.size() + 1); }
    // fn(slot) for every live ball, in handle-index order.
    template <class Fn>
    void for_each_live(Fn&& fn) const {
        for (std::uint32_t index = 0; index < generation_.size(); ++index)
            if (generation_[index] & 1u) fn(slot_of_[index]);
    }

    // Snapshots: the table as it stands; a table read back, checked to be one whose live handles
    // are exactly `ids` (slot s holds ids[s]) and whose free indices are dead and listed once.
    // Throws InvalidArgument ("snapshot") otherwise, and leaves this table as it was.
    void write(SnapshotWriter& out) const;
    void read(SnapshotReader& in, std::span<const BallId> ids);

private:
    std::vector<std::uint32_t> slot_of_;     // per index
    std::vector<std::uint32_t> generation_;  // per index
    std::vector<std::uint32_t> free_;        // removed indices, reused last first
};

}  // namespace ballistic::detail
