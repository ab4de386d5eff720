// libFuzzer target: piles that settle, under any settings of contact and sleeping. The bytes
// choose restitution (0 to 1), friction, rest_speed, sleep_speed, sleep_time, sleep_events,
// sleep_friction, wake_lift, sleep_interval and gravity, a closed box of planes (with a block
// and a capsule peg on its floor, or not), groups of balls of radii and masses far apart
// dropped into it, then steps and what an embedder does between them: pushes, balls put to
// sleep or woken, removals, added balls (some added asleep), new gravity or restitution,
// snapshot round trips.
// After every step, finished or stopped by its event budget: no ball has left the box, and
// overlaps are at rounding level. Steps in a row that spend their event budgets at one instant,
// nothing else called between them, on more events than the jam rule lets the balls spend there
// (65 collisions each, with their re-predictions), are a failure: time has stopped. Invalid
// settings must throw InvalidArgument; nothing may crash, hang, run out of memory or trip a
// sanitizer.
#include <ballistic/generate.hpp>
#include <ballistic/world.hpp>

#include "support.hpp"

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using namespace ballistic;

using fuzz::Bytes;

[[noreturn]] void fail(const char* what, double value) {
    std::fprintf(stderr, "fuzz_pile: %s (%g)\n", what, value);
    std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Bytes in(data, size);
    WorldDef def;
    def.threads = 1 + in.byte() % 2;
    def.restitution = in.unit();
    def.friction = in.pick(std::array{0.0, 0.5, 0.0, 1.0, 1e-3, 20.0});
    def.rest_speed = in.pick(std::array{0.05, 1e-12, 1e-6, 1e-3, 0.5, 5.0});
    def.sleep_speed = in.pick(std::array{0.1, 0.0, 1e-9, 0.01, 1.0, 10.0});
    def.sleep_time = in.pick(std::array{0.1, 0.0, 1e-9, 0.01, 10.0});
    def.sleep_events = static_cast<std::uint32_t>(in.pick(std::array{1.0, 2.0, 16.0, 1000.0}));
    def.sleep_friction = in.pick(std::array{0.0, 0.3, 1.0, 10.0});
    def.wake_lift = in.pick(std::array{0.25, 0.0, 0.01, 1.0, 100.0});
    def.sleep_interval = in.pick(std::array{0x1p-13, 0.0, 0x1p-20, 0x1p-6, 1.0});
    const double g = in.pick(std::array{9.81, 1e-6, 1.0, 1000.0});
    def.gravity = Vec3{in.unit() - 0.5, -1.0, in.unit() - 0.5} * g;
    def.step_event_budget = 5000;
    def.memory_limit = std::size_t{16} << 20;
    const double half = 1.0 + in.byte() % 8;  // the box: [-half, 0, -half] to [half, 4 half, half]
    const double scale = 4.0 * half;
    try {
        World world(def);
        world.add_plane({{0, 0, 0}, {0, 1, 0}});
        world.add_plane({{0, scale, 0}, {0, -1, 0}});
        for (const double side : {-1.0, 1.0}) {
            world.add_plane({{side * half, 0, 0}, {-side, 0, 0}});
            world.add_plane({{0, 0, side * half}, {0, 0, -side}});
        }
        const std::uint8_t statics = in.byte();
        if (statics & 1) world.add_block({{-0.5 * half, 0, -0.5 * half}, {0, 0.25 * half, 0}});
        if (statics & 2) world.add_capsule({{0.5 * half, 0.3 * half, 0}, {0.5 * half, 0.3 * half, 0}, 0.1 * half});
        std::vector<BallId> ids;
        const int groups = 1 + in.byte() % 3;
        for (int k = 0; k < groups; ++k) {
            GenerateDef gen;
            gen.count = in.byte() % 100;
            gen.radius = in.pick(std::array{0.1, 0.3, 0.01, 0.5}) * half;
            gen.mass = in.pick(std::array{1.0, 1e-12, 1e12, 8.0});
            gen.region = Box{{-half, 0, -half}, {half, scale, half}};
            gen.speed = in.pick(std::array{0.0, 1.0, 30.0});
            gen.seed = 1 + in.byte();
            try {
                const std::vector<BallDef> balls = generate_balls(world, gen);
                for (const BallId id : world.add_balls(balls)) ids.push_back(id);
            } catch (const InvalidArgument&) {  // no room left: fewer balls
            }
        }
        std::uint64_t checked = 0;
        double stopped_at = -1.0;  // the instant where steps in a row stopped at their budgets
        std::uint64_t stopped_after = 0;  // the events processed before the first of them
        for (int call = 0; call < 24 && !in.empty(); ++call) {
            const std::uint8_t kind = in.byte() % 8;
            if (kind > 2) stopped_at = -1.0;  // anything but a step may restart a jam
            try {
                switch (kind) {
                    case 0:
                    case 1:
                    case 2:
                        world.step(in.pick(std::array{1.0 / 60.0, 0.25, 1.0 / 240.0, 1.0}));
                        break;
                    case 3:
                        if (!ids.empty()) {
                            const BallId id = ids[in.byte() % ids.size()];
                            if (in.byte() % 4 == 1) {  // the embedder puts it to sleep where it is, or wakes it
                                try {
                                    world.set_sleeping(id, !world.sleeping(id));
                                } catch (const InvalidArgument&) {  // where no ball can sleep
                                }
                            } else {
                                world.apply_impulse(id, Vec3{in.unit() - 0.5, in.unit(), in.unit() - 0.5} *
                                                            (world.ball(id).mass * in.pick(std::array{1.0, 0.01, 50.0})));
                            }
                        }
                        break;
                    case 4:
                        if (!ids.empty()) {
                            const std::size_t k = in.byte() % ids.size();
                            world.remove_ball(ids[k]);
                            ids.erase(ids.begin() + static_cast<std::ptrdiff_t>(k));
                        }
                        break;
                    case 5: {
                        const Vec3 p{(in.unit() - 0.5) * half, in.unit() * scale, (in.unit() - 0.5) * half};
                        const double r = in.pick(std::array{0.1, 0.02, 0.5}) * half;
                        BallDef ball{p, {}, r, in.pick(std::array{1.0, 1e6})};
                        ball.sleeping = in.byte() % 4 == 1;  // asleep where it is put, on the pile or in the air
                        try {
                            if (world.is_free(p, r)) ids.push_back(world.add_ball(ball));
                        } catch (const InvalidArgument&) {  // asleep where no ball can sleep (e = 1, no friction)
                        }
                        break;
                    }
                    case 6:
                        if (in.byte() % 2 == 0) world.set_gravity(Vec3{in.unit() - 0.5, -1.0, in.unit() - 0.5} * g);
                        else world.set_restitution(in.unit());
                        break;
                    case 7: fuzz::round_trip(world, def); break;
                }
            } catch (const BudgetExceeded&) {  // the world stands consistent where the budget stopped it
                if (world.time() != stopped_at) {
                    stopped_at = world.time();
                    stopped_after = checked;
                } else if (world.events_processed() - stopped_after > 130 * world.ball_count() + 2 * def.step_event_budget) {
                    fail("time stopped", stopped_at);
                }
            }
            if (world.events_processed() == checked) continue;
            checked = world.events_processed();
            if (const std::size_t escaped = world.escaped_count(); escaped != 0)
                fail("balls left the box", static_cast<double>(escaped));
            if (const double overlap = world.max_overlap(); !(overlap <= 1e-9 * scale)) fail("overlap", overlap);
        }
    } catch (const InvalidArgument&) {
    }
    return 0;
}
