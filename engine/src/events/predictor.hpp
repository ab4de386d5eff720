// Ballistic — the predictor: a ball's next event, the earlier of its next cell crossing and its
// contact, the earliest collision with the statics and the balls of the 27 cells around it, by
// the exact time-of-impact kernels (predictor.cpp has the scheme).
//
// Invariants: it reads the balls, the cells and the statics and writes only the ball's contact;
// a prediction at `now` depends on nothing but the state of the balls it reads at `now`, so the
// serial loop and every batch of parallel processing predict the same bits.
#pragma once

#include <ballistic/types.hpp>

#include "base/columns.hpp"
#include "space/balls.hpp"
#include "events/event_queue.hpp"
#include "space/cells.hpp"
#include "events/outcome.hpp"
#include "space/roaming.hpp"
#include "rules/sleep_rules.hpp"
#include "space/statics.hpp"

#include <cstdint>
#include <vector>

namespace ballistic::detail {

class Predictor {
public:
    Predictor(const WorldDef& def, const Balls& balls, const Cells& cells, const Statics& statics,
              Column<Contact>& contacts, const SleepRules& rules)
        : def_(def), balls_(balls), cells_(cells), statics_(statics), contacts_(contacts), rules_(rules) {}

    // A ball's new contact, stored, and its new pending event, returned.
    Pending predict(std::uint32_t slot, double now);
    Pending predict(std::uint32_t slot, double now, const CellKey& key);
    // After crossing into `key` through `face`: only the balls and the capsules and blocks listed
    // in `key` are new (those listed for every cell were tested before).
    Pending predict_entering(std::uint32_t slot, double now, const CellKey& key, int face);
    // A ball whose trajectory has not changed since its contact was found, and which has no ball
    // near but those in the 27 cells around `key` (a roamer coming down to the cells): the
    // contact kept, the balls of those cells tested.
    Pending predict_around(std::uint32_t slot, double now, const CellKey& key);
    // A roamer of `level` whose trajectory has not changed since its contact was found (alone,
    // it has no ball to meet): the contact kept, the crossing out of its block.
    Pending roam(std::uint32_t slot, double now, const CellKey& key, int level) const;
    // Before every ball is predicted afresh: forgets the contacts of `balls` balls, but with
    // `keep_wakes` not a Wake of a ball the jam put to sleep still due after `now` (predict()
    // keeps it while that ball is unchanged): a support that left it within the delay is no
    // longer found under it, and the ball would sleep on in the air.
    void forget_contacts(std::size_t balls, double now, bool keep_wakes);

    struct Motion {  // a ball at a time
        Vec3 p, v, a;
        double r;
    };
    Motion motion(std::uint32_t slot, double now) const;
    // Without planes and blocks or without gravity no ball ever rests on one, and without them
    // and capsules none jams or sleeps, so every ball's acceleration is the world's gravity, bit
    // for bit: their entries in `rests` need not be read.
    bool shared_gravity() const {
        return def_.gravity == Vec3{} ||
               !(statics_.flat() || jams_possible(def_, !statics_.planes().empty(), statics_.has_finite()));
    }
    // The ball's next crossing out of its cell, or with `level` > 0 out of the block of that
    // level holding its cell (Roaming).
    Pending crossing(const CellKey& key, const Motion& m, double now, int level = 0) const;
    // Balls roam as `roaming` says (World::Impl's; none without).
    void roam_with(const Roaming* roaming) { roaming_ = roaming; }

private:
    template <bool Block>
    Pending crossing_of(const CellKey& key, const Motion& m, double now, int level) const;
    // The ball's contact kept (its trajectory unchanged), the capsules and blocks listed in `key`
    // and the balls of `cells` around it tested (Cells::for_each_near).
    Pending predict_kept(std::uint32_t slot, double now, const CellKey& key, std::uint32_t cells);
    // Lowers `contact` to the earliest collision with the capsules and blocks listed in `key` (and,
    // with `everywhere`, those listed for every cell) but the blocks the ball rests on a face of
    // (`sup`, its supports).
    void predict_finite(double now, const Motion& m, const Supports& sup, const CellKey& key, bool everywhere,
                        Contact& contact) const;
    // Lowers `contact` to the time the centre of a ball resting on a block's face passes the face's
    // edge: an event with that block, which takes the ball off it (response.cpp).
    void predict_leaving(double now, const Motion& m, const Supports& sup, Contact& contact) const;
    // Lowers `contact` to the earliest collision with the balls of `cells` (Cells::for_each_near)
    // and stores it as the ball's contact.
    void predict_balls(std::uint32_t slot, double now, const Motion& m, const CellKey& key, std::uint32_t cells,
                       Contact& contact);

    const WorldDef& def_;
    const Balls& balls_;
    const Cells& cells_;
    const Statics& statics_;
    Column<Contact>& contacts_;
    const SleepRules& rules_;
    const Roaming* roaming_ = nullptr;
};

}  // namespace ballistic::detail
