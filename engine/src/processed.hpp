// Ballistic — the events processed in a run, put back into the serial loop's order for the
// measurements and the step's record.
//
// The serial loop processes the earliest key among the events that exist. So events come in key
// order, but at one instant an event created there by another one comes after it, whatever their
// keys: a ball bounced off a plane meets a ball at that same instant. Regions process events that
// touch nothing the same in any order. Each event therefore carries the id of the event processed
// at its instant that created it (its parent), and serial_order() replays each instant.
#pragma once

#include <ballistic/types.hpp>

#include "event_queue.hpp"

#include <cstdint>
#include <vector>

namespace ballistic::detail {

inline constexpr std::uint64_t kNoParent = ~std::uint64_t{0};

// An event processed: every collision, and the events that created another at their instant or
// were created so (the links of the replay).
struct Processed {
    EventKey key;
    std::uint64_t id;      // unique within a run (the region's index in the top byte, then a count)
    std::uint64_t parent;  // the event that created it at its instant, or kNoParent
    bool collision;
    CollisionEvent event;
    double virial, overlap;
};

// Per ball: the event that set its pending event, when the two are at one instant (`time` the
// bits of EventKey). Left as it is otherwise: a pending event at another time never matches it.
struct Origin {
    std::uint64_t time = ~std::uint64_t{0};
    std::uint64_t id = kNoParent;
};

// Sorts `events` into the serial loop's order (a stable sort by key, then each instant with links
// replayed: the earliest key among the events whose parent has come).
void serial_order(std::vector<Processed>& events);

}  // namespace ballistic::detail
