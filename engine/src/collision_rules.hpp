// Ballistic — the collision rules, as pure functions: how fast a contact separates (restitution
// with the slow- and pressed-contact rules of engine/README.md, "Robustness"), resting on planes
// (which supports carry a ball, the acceleration they leave, the velocity they allow), and the
// nearest periodic image. The response (response.hpp) applies them to the balls of an event;
// sleeping and the world use them too.
#pragma once

#include "balls.hpp"

#include <ballistic/types.hpp>

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

}  // namespace ballistic::detail
