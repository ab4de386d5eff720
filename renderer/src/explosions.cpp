// Ballistic renderer — the lesson's explosions, fed from the engine's collision events.
#include <ballistic/render/renderer.hpp>

namespace ballistic::render {

void Explosions::update(const World& world) {
    const double now = world.time();
    while (!live_.empty() && now - live_.front().birth >= def_.lifetime) live_.pop_front();
    for (const CollisionEvent& event : world.events()) {
        // The ball may have been removed since the step; it then gets a unit-size explosion.
        const double radius = world.contains(event.ball) ? world.ball(event.ball).radius : 1.0;
        live_.push_back({event.point, event.time, radius * def_.growth});
    }
    while (live_.size() > def_.max_count) live_.pop_front();
}

}  // namespace ballistic::render
