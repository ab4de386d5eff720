// Ballistic — handles: generation-checked ids (BallId, PlaneId, CylinderId, CapsuleId, BlockId)
// that map to storage slots, one table per kind of thing.
#pragma once

#include <ballistic/types.hpp>

#include "base/reserve.hpp"
#include "base/byte_stream.hpp"
#include "base/validate.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ballistic::detail {

// Invariants: an index's generation is odd while its thing lives and even once removed; index 0
// is never handed out (id 0 is the null handle); freed indices are reused, each time with a new
// generation, so a stale id never reaches another thing.
template <class Id>
class Handles {
public:
    static constexpr std::size_t kBytesPerBall = 2 * sizeof(std::uint32_t);

    bool contains(Id id) const {
        const std::uint32_t index = id.index();
        return id && index < generation_.size() && generation_[index] == id.generation() && (id.generation() & 1u);
    }
    // The slot of a live thing; throws InvalidArgument under `field` ("ball", "plane", …) for a
    // stale or null id.
    std::uint32_t slot(Id id, const char* field) const {
        if (!contains(id))
            reject(field, std::string("no such ") + field + " (null or removed handle " + std::to_string(id.value) + ")");
        return slot_of_[id.index()];
    }
    // Room for `more` handles, so that that many issue() calls cannot fail.
    void reserve(std::size_t more) {
        const std::size_t needed = generation_.size() + more + 1;  // + the unused index 0
        reserve_for(slot_of_, needed);
        reserve_for(generation_, needed);
    }
    Id issue(std::uint32_t slot) {  // a handle for the thing in `slot`
        std::uint32_t index;
        if (!free_.empty()) {
            index = free_.back();
            free_.pop_back();
            ++generation_[index];  // even (dead) -> odd (live)
        } else {
            if (generation_.empty()) {  // index 0 with generation 0 would be the null handle
                generation_.push_back(0);
                slot_of_.push_back(0);
            }
            index = static_cast<std::uint32_t>(generation_.size());
            generation_.push_back(1);
            slot_of_.push_back(0);
        }
        slot_of_[index] = slot;
        return Id{(std::uint64_t{generation_[index]} << 32) | index};
    }
    void moved(Id id, std::uint32_t slot) { slot_of_[id.index()] = slot; }
    void release(Id id) {  // after reserve_release(), never fails
        free_.push_back(id.index());  // first: should it fail, the handle stays live
        ++generation_[id.index()];    // odd (live) -> even (dead)
    }
    void reserve_release() { reserve_for(free_, free_.size() + 1); }
    // fn(slot) for every live thing, in handle-index order.
    template <class Fn>
    void for_each_live(Fn&& fn) const {
        for (std::uint32_t index = 0; index < generation_.size(); ++index)
            if (generation_[index] & 1u) fn(slot_of_[index]);
    }

    // Snapshots: the table as it stands; a table read back, checked to be one whose live handles
    // are exactly `ids` (slot s holds ids[s]) and whose free indices are dead and listed once.
    // Throws InvalidArgument ("snapshot") otherwise, and leaves this table as it was.
    void write(SnapshotWriter& out) const {
        out.put(static_cast<std::uint64_t>(generation_.size()));
        out.put_column(generation_);
        out.put_column(slot_of_);
        out.put(static_cast<std::uint64_t>(free_.size()));
        out.put_column(free_);
    }
    void read(SnapshotReader& in, std::span<const Id> ids);

private:
    std::vector<std::uint32_t> slot_of_;     // per index
    std::vector<std::uint32_t> generation_;  // per index
    std::vector<std::uint32_t> free_;        // removed indices, reused last first
};

template <class Id>
void Handles<Id>::read(SnapshotReader& in, std::span<const Id> ids) {
    auto bad = [](const std::string& what) { reject("snapshot", "inconsistent handles: " + what); };
    const auto size = in.get<std::uint64_t>("handle table size");
    // Every index is a 32-bit handle part; a table may hold dead indices besides the live ones.
    if (size > std::uint64_t{1} << 32) bad("a table of " + std::to_string(size) + " indices");
    std::vector<std::uint32_t> generation = in.get_column<std::uint32_t>(size, "handle generations");
    std::vector<std::uint32_t> slot_of = in.get_column<std::uint32_t>(size, "handle slots");
    const auto free_count = in.get<std::uint64_t>("free handle count");
    if (free_count > size) bad(std::to_string(free_count) + " free indices in a table of " + std::to_string(size));
    std::vector<std::uint32_t> free = in.get_column<std::uint32_t>(free_count, "free handles");
    if (size > 0 && generation[0] != 0) bad("index 0 (the null handle) is in use");
    std::size_t live = 0;
    for (std::size_t index = 0; index < size; ++index) {
        if (!(generation[index] & 1u)) continue;
        ++live;
        const std::uint32_t s = slot_of[index];
        if (s >= ids.size() || ids[s].index() != index || ids[s].generation() != generation[index])
            bad("handle index " + std::to_string(index) + " names slot " + std::to_string(s) + ", which holds another one");
    }
    if (live != ids.size()) bad(std::to_string(live) + " live handles for " + std::to_string(ids.size()) + " slots");
    std::vector<std::uint8_t> listed(size, 0);
    for (const std::uint32_t index : free) {
        if (index == 0 || index >= size || (generation[index] & 1u) || listed[index])
            bad("free index " + std::to_string(index) + " is out of range, live or listed twice");
        listed[index] = 1;
    }
    generation_ = std::move(generation);
    slot_of_ = std::move(slot_of);
    free_ = std::move(free);
}

}  // namespace ballistic::detail
