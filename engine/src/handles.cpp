// Ballistic — ball handles (handles.hpp).
#include "handles.hpp"

#include "snapshot.hpp"
#include "validate.hpp"

#include <string>

namespace ballistic::detail {

std::uint32_t Handles::slot(BallId id, const char* field) const {
    if (!contains(id)) reject(field, "no such ball (null or removed handle " + std::to_string(id.value) + ")");
    return slot_of_[id.index()];
}

void Handles::reserve(std::size_t more) {
    const std::size_t needed = generation_.size() + more + 1;  // + the unused index 0
    slot_of_.reserve(needed);
    generation_.reserve(needed);
}

BallId Handles::issue(std::uint32_t slot) {
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
    return BallId{(std::uint64_t{generation_[index]} << 32) | index};
}

void Handles::release(BallId id) {
    free_.push_back(id.index());  // first: should it fail, the handle stays live
    ++generation_[id.index()];    // odd (live) -> even (dead)
}

void Handles::write(SnapshotWriter& out) const {
    out.put(static_cast<std::uint64_t>(generation_.size()));
    out.put_column(generation_);
    out.put_column(slot_of_);
    out.put(static_cast<std::uint64_t>(free_.size()));
    out.put_column(free_);
}

void Handles::read(SnapshotReader& in, std::span<const BallId> ids) {
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
            bad("handle index " + std::to_string(index) + " names slot " + std::to_string(s) + ", which holds another ball");
    }
    if (live != ids.size()) bad(std::to_string(live) + " live handles for " + std::to_string(ids.size()) + " balls");
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
