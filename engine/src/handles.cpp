// Ballistic — ball handles (handles.hpp).
#include "handles.hpp"

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

}  // namespace ballistic::detail
