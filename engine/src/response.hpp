// Ballistic — collision response: the rules, as pure functions (how fast a contact separates:
// restitution with the slow- and pressed-contact rules of engine/README.md, "Robustness"; resting
// on planes: which supports carry a ball, the acceleration they leave, the velocity they allow),
// and Response, which processes one event on the balls it touches.
//
// Invariants of Response: compute() writes only the balls the event touches (their state, their
// contacts, a crossing ball's cell), after saving them in the outcome when it is undoable, so
// that undo() puts back exactly what it changed; the queue, the counters of the world and the
// event list are left to the commit (world_impl.hpp).
#pragma once

#include "balls.hpp"
#include "event_queue.hpp"
#include "grid.hpp"
#include "outcome.hpp"
#include "predictor.hpp"
#include "sleep.hpp"
#include "statics.hpp"

#include <ballistic/types.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <vector>

namespace ballistic::detail {

// Separation speed after a contact approached at normal speed u, restitution e.
double separation_speed(double u, bool pressed, double e, double rest_speed, bool immovable = false);
// Does this normal velocity take a ball off the plane it rests on (more than rounding noise)?
bool off_plane(double normal_speed, Vec3 v, double rest_speed);
// The acceleration `gravity` leaves a ball resting on `supports` (indices into `planes`); drops
// the supports it does not press into.
Vec3 acceleration_for(Supports& supports, Vec3 gravity, const std::vector<PlaneDef>& planes);
// The entry of `rests` for a ball awake on these supports (added if new), with the acceleration
// acceleration_for() leaves; drops the supports it does not press into.
std::uint32_t rest_for(Rests& rests, Supports& supports, Vec3 gravity, const std::vector<PlaneDef>& planes);
// v without its components into the supports' normals.
Vec3 along_supports(const Supports& supports, Vec3 v, const std::vector<PlaneDef>& planes);
// The nearest periodic image of the separation d (d itself without a periodic box).
Vec3 min_image(const std::optional<Box>& periodic, Vec3 d);

class Response {
public:
    Response(const WorldDef& def, Balls& balls, Grid& grid, const Statics& statics, std::vector<Contact>& contacts,
             Predictor& predictor, Sleep& sleep)
        : def_(def), balls_(balls), grid_(grid), statics_(statics), contacts_(contacts), predictor_(predictor),
          sleep_(sleep) {}

    // Processes `event`, the pending event of ball `slot`: the physics on the balls it touches,
    // a crossing ball moved to its new cell, their next events predicted into `out`.
    void compute(std::uint32_t slot, const Pending& event, Outcome& out);
    // Puts back what compute() changed (an undoable outcome).
    void undo(const Outcome& out);
    // After a change of velocity: a ball given a real normal velocity leaves the planes it rested
    // on; rounding noise into them is removed.
    void release_supports(std::uint32_t slot);

private:
    void save(std::uint32_t slot, Outcome& out) const;
    // A collision's first touch of ball i: saved and brought to `now`; true if the collision is
    // part of a jam (Sleep::jammed()).
    bool meet(std::uint32_t i, double now, Outcome& out);
    void collide_balls(std::uint32_t i, std::uint32_t j, double now, Outcome& out);
    void collide_plane(std::uint32_t i, std::uint32_t k, double now, Outcome& out);
    void collide_cylinder(std::uint32_t i, std::uint32_t k, double now, Outcome& out);
    // The end of a collision with a static: counted, quiet and sleep noted, recorded, predicted.
    void static_collided(std::uint32_t i, double approach, double now, bool jammed, const CollisionEvent& event,
                         double overlap, Outcome& out);
    void cross_cell(std::uint32_t i, std::uint32_t face, double now, Outcome& out);
    // A Wake event: awake ball `s` wakes sleeping ball `k` resting on it.
    void wake_resting(std::uint32_t s, std::uint32_t k, double now, Outcome& out);
    // The entry of these supports in the table of rests (rest_for() above).
    std::uint32_t rest_for(Supports& supports) { return detail::rest_for(balls_.rests, supports, def_.gravity, statics_.planes()); }

    const WorldDef& def_;
    Balls& balls_;
    Grid& grid_;
    const Statics& statics_;
    std::vector<Contact>& contacts_;
    Predictor& predictor_;
    Sleep& sleep_;
};

}  // namespace ballistic::detail
