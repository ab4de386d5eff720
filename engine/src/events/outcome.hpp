// Ballistic — what predicting and processing an event produce: a ball's contact, and an event's
// outcome, which parallel processing commits in order or undoes.
#pragma once

#include <ballistic/types.hpp>

#include "events/event_queue.hpp"
#include "space/cells.hpp"

#include <array>
#include <cstdint>

namespace ballistic::detail {

// A ball's earliest collision found for its current trajectory (predictor.hpp).
struct Contact {
    Pending event;
    std::uint64_t other_counter = 0;  // a ball–ball partner's event counter at prediction
};

// What processing one event did, kept apart from the shared state (queue, cells, counters, the
// event list) so that events can be computed in parallel, then committed in order or undone.
struct Outcome {
    struct Saved {  // a touched ball's state before the event
        std::uint32_t slot;
        Vec3 position, velocity;
        double t;
        std::uint64_t counter;
        std::uint32_t rest;
        Contact contact;
        bool trajectory;  // position to rest were saved (a crossing keeps them: the contact only)
        bool quiet;  // the quiet history below was saved (Response::save())
        double quiet_since;
        std::uint32_t quiet_events, jam;
    };
    std::array<Saved, 2> saved{};
    int n_saved = 0;
    // Balls with a new pending event and that event, in update order: the queue learns it at the
    // commit (and never, when undone).
    std::array<std::uint32_t, 2> requeue{};
    std::array<Pending, 2> next{};
    int n_requeue = 0;
    void queue(std::uint32_t slot, const Pending& pending) {
        requeue[static_cast<std::size_t>(n_requeue)] = slot;
        next[static_cast<std::size_t>(n_requeue++)] = pending;
    }
    bool collided = false;
    CollisionEvent event;
    double virial = 0.0;   // J·|Δp| of a ball–ball collision
    double overlap = 0.0;  // overlap met at the collision
    bool crossing = false;
    CellKey old_key, new_key;  // the crossing ball's cells (it moves in compute(), back in undo())
    std::int32_t before = -1;  // the ball before it in its old cell's list (Cells::move_dense)
    bool dense = false;        // both cells dense: undo() puts it back exactly there
    bool counted = false;      // balls roam: the crossing moved the ball's count (Roaming)
    int old_level = 0;         // the crossing ball's roaming level before
    double time = 0.0;  // of the event
    static constexpr std::uint32_t kNoBall = ~0u;
    std::uint32_t woken = kNoBall;  // the sleeping ball the event woke (at most one)
    void clear() {  // what the next event reads; the rest is written before it is read
        n_saved = n_requeue = 0;
        woken = kNoBall;
        collided = crossing = counted = dense = false;
        virial = overlap = 0.0;
    }
};

}  // namespace ballistic::detail
