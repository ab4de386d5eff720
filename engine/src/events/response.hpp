// Ballistic — the response: processing one event on the balls it touches, by the collision rules
// (collision_rules.hpp).
//
// A collision goes in three phases: the response (the impulses, on the balls' velocities and
// supports), then the sleep phase (each ball hit notes its quiet history and may fall asleep where
// it is carried: Sleep::note_quiet(), Sleep::sleep_if_carried()), then the balls' next events.
//
// Invariants: compute() writes only the balls the event touches (their state, their contacts, a
// crossing ball's cell), after saving them in the outcome, so that undo() puts back exactly what
// it changed, also when compute() failed part-way (out of memory); the queue, the world's
// counters and the event record are left to the commit (event_loop.hpp).
#pragma once

#include "base/columns.hpp"
#include "base/prefetch.hpp"
#include "space/balls.hpp"
#include "rules/collision_rules.hpp"
#include "events/event_queue.hpp"
#include "space/cells.hpp"
#include "events/outcome.hpp"
#include "events/predictor.hpp"
#include "sleep/sleep.hpp"
#include "space/statics.hpp"

#include <ballistic/types.hpp>

#include <cstdint>
#include <vector>

namespace ballistic::detail {

class Response {
public:
    Response(const WorldDef& def, Balls& balls, Cells& cells, const Statics& statics, Column<Contact>& contacts,
             Predictor& predictor, Sleep& sleep)
        : def_(def), balls_(balls), cells_(cells), statics_(statics), contacts_(contacts), predictor_(predictor),
          sleep_(sleep) {}

    // Processes `event`, the pending event of ball `slot`: the physics on the balls it touches,
    // a crossing ball moved to its new cell, their next events predicted into `out`.
    void compute(std::uint32_t slot, const Pending& event, Outcome& out);
    // Starts loading what compute() first reads of the balls of the event likely to come next in
    // part `part` of the queue (EventQueue::second_of()): their cells, states, contacts and
    // counters.
    void prefetch_next(const EventQueue& queue, std::size_t part) const {
        Pending next;
        const std::uint32_t slot = queue.second_of(part, next);
        if (slot == EventQueue::kNoSlot) return;
        auto prefetch = [&](std::uint32_t s) {
            cells_.prefetch(s);
            balls_.prefetch_motion(s);
            detail::prefetch(&contacts_[s]);
            detail::prefetch(&balls_.counter[s]);
        };
        prefetch(slot);
        if (next.kind == Kind::BallBall) prefetch(next.other);
    }
    // Has the partner of ball `slot`'s ball–ball or Wake event changed its trajectory since the
    // event was predicted (lazy invalidation)? Its region may be changing it meanwhile.
    bool stale(std::uint32_t slot, const Pending& event) const {
        return balls_.counter_now(event.other) != contacts_[slot].other_counter;
    }
    // Has the ball's trajectory changed at `time` or after? Every change brings it to its time
    // (read after stale(), which reads the counter).
    bool changed_since(std::uint32_t slot, double time) const { return !(balls_.time_now(slot) < time); }
    // Puts back what compute() changed, also when it failed part-way.
    void undo(const Outcome& out);
    // After a change of velocity: a ball given a real normal velocity leaves the planes it rested
    // on; rounding noise into them is removed.
    void release_supports(std::uint32_t slot);

    // Balls roam as `roaming` says (World::Impl's; none without): its counts follow every crossing.
    void roam_with(Roaming* roaming) { roaming_ = roaming; }
    bool roaming() const { return roaming_ && roaming_->active(); }
    // After ball `mover` crossed into `cell` at `now` (committed): every other roamer now sharing
    // the 27 blocks around its own with it comes down to the level at which it is alone, or to the
    // cells; requeue(slot, event) takes its new pending event.
    template <class Requeue>
    void crowd_roamers(std::uint32_t mover, const CellKey& cell, double now, Requeue&& requeue) {
        std::uint32_t crowded[Roaming::kMostRoamers];
        std::size_t n = 0;
        for (const std::uint32_t r : roaming_->roamers()) {
            const int level = roaming_->level(r);
            if (r != mover && cells_.distance(Roaming::block(cells_.key(r), level), Roaming::block(cell, level)) <= 1)
                crowded[n++] = r;
        }
        for (std::size_t k = 0; k < n; ++k) requeue(crowded[k], land(crowded[k], now));
    }
    // A roamer brought to the cell of its position at `now` (within its block), at the level at
    // which it is alone there; returns its next event.
    Pending land(std::uint32_t slot, double now);
    void settle_roaming() { roaming_->settle(); }
    // The cell of a roamer's position at `now`, kept within its block (its listed cell is where it
    // last crossed into that block).
    CellKey roamer_cell(std::uint32_t slot, double now) const {
        return Roaming::within(cells_.key(slot), roaming_->level(slot), cells_.key_of(predictor_.motion(slot, now).p));
    }

private:
    // What a collision's response leaves to the phases after it: the balls hit, for the sleep
    // phase, and the balls to predict, in order.
    struct Impacts {
        struct Hit {
            std::uint32_t ball, partner;  // partner kFixed: a static
            double approach;
            bool jammed, wedged;
            Vec3 push;  // from the partner to the ball (a ball partner only)
        };
        std::array<Hit, 2> hits;  // the first n_hits
        int n_hits = 0;
        std::array<std::uint32_t, 2> predicted;  // the first n_predicted
        int n_predicted = 0;
        void hit(const Hit& h) { hits[static_cast<std::size_t>(n_hits++)] = h; }
        void predict(std::uint32_t ball) { predicted[static_cast<std::size_t>(n_predicted++)] = ball; }
    };
    // A collision of ball s (`event`, not stale) in its three phases: the response, the sleep
    // phase, the next events into `out` (after_response()).
    void collide(std::uint32_t s, const Pending& event, double now, Outcome& out);
    void after_response(const Impacts& impacts, double now, Outcome& out);
    void save(std::uint32_t slot, Outcome& out) const;
    // What a crossing changes of the ball that keeps its trajectory: its contact.
    void save_contact(std::uint32_t slot, Outcome& out) const;
    // A collision's first touch of ball i: saved and brought to `now`; true if the collision is
    // part of a jam (Sleep::jammed()).
    bool meet(std::uint32_t i, double now, Outcome& out);
    void collide_balls(std::uint32_t i, std::uint32_t j, double now, Outcome& out, Impacts& impacts);
    void collide_plane(std::uint32_t i, std::uint32_t k, double now, Outcome& out, Impacts& impacts);
    void collide_cylinder(std::uint32_t i, std::uint32_t k, double now, Outcome& out, Impacts& impacts);
    // Ball i (met at `now`) against a flat static, a plane or a block's face (`support`), with
    // outward unit normal n, its centre `gap` from it: it settles on it and slides, or bounces.
    void collide_flat(std::uint32_t i, Vec3 n, std::int32_t support, double gap, EventKind kind, std::uint32_t k,
                      double now, bool jammed, Outcome& out, Impacts& impacts);
    void collide_finite(std::uint32_t i, const Finite& f, double now, Outcome& out, Impacts& impacts);
    // Ball i (met at `now`) resting on a face of block k: the block's event is its centre passing
    // the face's edge, and it leaves the block's faces. False when it rests on none of them.
    bool leave_block(std::uint32_t i, std::uint32_t k, Impacts& impacts);
    // Ball i meeting block k over one of its faces (w: from the face to its centre), clear of the
    // face's edges: collide_flat() with the face. False when it is not over a face (an edge or a
    // corner: a round static of radius 0).
    bool collide_face(std::uint32_t i, std::uint32_t k, Vec3 w, double now, bool jammed, Outcome& out,
                      Impacts& impacts);
    // Ball i (met at `now`) against a static of `radius` around the point or axis at −w from its
    // centre (a block's nearest point, radius 0): wv = w·v, wa = w·a with the ball's velocity and acceleration (across the
    // axis, for a column).
    void collide_round(std::uint32_t i, Vec3 w, double wv, double wa, double radius, EventKind kind,
                       std::uint32_t k, double now, bool jammed, Outcome& out, Impacts& impacts);
    // The end of a collision's response with a static: counted, recorded, its hit left to the
    // sleep phase.
    void static_collided(std::uint32_t i, double approach, bool jammed, bool wedged, const CollisionEvent& event,
                         double overlap, Outcome& out, Impacts& impacts);
    // The impulse over the effective mass (any length will do) that ball j (`on_j`) or i, asleep,
    // would take from their impact were it immovable: along the normal, and with friction the
    // tangential part that slows the sliding. dp = p_j - p_i, dv = v_j - v_i, u the approach.
    Vec3 carried_impulse(std::uint32_t i, std::uint32_t j, Vec3 dp, Vec3 dv, double u, bool on_j) const;
    // The least speed at which balls i and j leave each other, n the unit normal from i to j, when
    // their accelerations press them together (collision_rules.hpp's pressed_leaving(), for the
    // smaller ball); 0 when they do not.
    double pressed_speed(std::uint32_t i, std::uint32_t j, Vec3 n) const {
        return pressed_leaving(dot(n, balls_.acceleration(i) - balls_.acceleration(j)),
                               std::min(balls_.radius[i], balls_.radius[j]), def_.rest_speed);
    }
    // The faster of the two balls' speeds (separation_speed() reads it for rounding).
    double faster(std::uint32_t i, std::uint32_t j) const {
        return std::max(length(balls_.velocity(i)), length(balls_.velocity(j)));
    }
    // Velocity v after a static's contact of normal n, approached at u, separates at s, with
    // Coulomb friction slowing the sliding along the contact.
    Vec3 bounce(Vec3 v, Vec3 n, double u, double s) const;
    // The velocity v of awake ball i, just given by a slow impact on sleeping ball `hit` (kFixed:
    // a settle on a flat static) whose unit normal n towards i it leaves at `speed`, made to leave at
    // once every static and sleeping ball i is in contact with and moves into slower than
    // rest_speed (leaving(); faster contacts are events of their own), each sleeping ball at
    // kLeastLeaving rest_speed at least: without it the ball met them one after the other at one
    // instant, each impact undoing part of the last, until the jam budget stopped it (a ball
    // sliding on the floor under a sleeping ball: 64 collisions). `wedged` when those speeds
    // cannot be met: the velocity then moves into none of them (leaving()). v unchanged unless a
    // sleeping ball is among them. For an impact the sleeping pile carries at rest_speed or
    // faster, `before` is i's velocity before it: then the impact is met at once with every
    // static and sleeping ball i touches, from `before` (with the friction of the one hit), with
    // Poisson's restitution (the ball never comes off faster than it came), so that the order of
    // impacts at one instant does not decide where the ball goes.
    Leaving leave_immovables(std::uint32_t i, double now, Vec3 v, std::uint32_t hit, Vec3 n, double speed,
                             const Vec3* before) const;
    void cross_cell(std::uint32_t i, std::uint32_t face, double now, Outcome& out);
    // A roamer leaving the block of its level through `face`: it enters the next block and roams
    // on at the level at which it is alone there, or comes down to the cells.
    void roam_on(std::uint32_t i, std::uint32_t face, double now, Outcome& out);
    // A roamer in cell `key` at `now`: its level where it is (Roaming::free_level), and its next
    // event.
    Pending roam_or_land(std::uint32_t i, double now, const CellKey& key);
    // A Wake event: awake ball `s` wakes sleeping ball `k` resting on it (or that rested on it,
    // for a Wake due later: SleepRules::wake_time()).
    void wake_resting(std::uint32_t s, std::uint32_t k, double now, Outcome& out);
    // The entry of these supports in the table of rests (collision_rules.hpp).
    std::uint32_t rest_for(Supports& supports) {
        return detail::rest_for(balls_.rests, supports, def_.gravity, statics_.supports());
    }

    const WorldDef& def_;
    Balls& balls_;
    Cells& cells_;
    const Statics& statics_;
    Column<Contact>& contacts_;
    Roaming* roaming_ = nullptr;
    Predictor& predictor_;
    Sleep& sleep_;
};

}  // namespace ballistic::detail
