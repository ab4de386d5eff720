// A ball dropped onto a floor with restitution 0.5: it bounces, settles, and sleeps.
#include <ballistic/version.hpp>
#include <ballistic/world.hpp>

#include <cstdio>

int main() {
    ballistic::WorldDef def;
    def.gravity = {0.0, -9.81, 0.0};
    def.restitution = 0.5;
    ballistic::World world(def);
    world.add_plane({.point = {0.0, 0.0, 0.0}, .normal = {0.0, 1.0, 0.0}});
    const ballistic::BallId ball = world.add_ball({.position = {0.0, 1.0, 0.0}, .radius = 0.1});

    for (int frame = 0; frame < 120; ++frame) world.step(1.0 / 60.0);

    const ballistic::BallState state = world.ball(ball);
    std::printf("ballistic %s: after %.1f s the ball is at height %.6f (radius 0.1), %llu bounces, %s\n",
                ballistic::kVersion, world.time(), state.position.y,
                static_cast<unsigned long long>(world.event_counts().ball_plane),
                world.sleeping_count() == 1 ? "asleep" : "awake");
    return state.position.y > 0.0999 && state.position.y < 0.1001 ? 0 : 1;
}
