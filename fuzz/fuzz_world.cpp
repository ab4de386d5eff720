// libFuzzer target: the bytes as a sequence of World calls with their arguments (add and remove
// balls, planes, columns, capsules and blocks, move and push balls, step, change gravity and
// restitution, cast rays, query, save and restore a snapshot), in an open world or a box periodic
// along some or all axes.
// Rejected calls must throw InvalidArgument and leave the world as it was; nothing may crash,
// hang or trip a sanitizer.
#include <ballistic/world.hpp>

#include "support.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace {

using namespace ballistic;

using fuzz::Bytes;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Bytes in(data, size);
    WorldDef def;
    def.threads = 1 + in.byte() % 2;
    def.gravity = {0, -in.number(), 0};
    def.restitution = std::fabs(in.number()) / 12.5;
    def.step_event_budget = 20000;
    def.memory_limit = std::size_t{16} << 20;
    if (in.byte() % 4 == 0) {
        def.periodic = Box{{0, 0, 0}, {in.number() + 20, in.number() + 20, in.number() + 20}};
        const std::uint8_t closed = in.byte();  // the axes that do not wrap (0: none, as before)
        def.periodic_axes = {(closed & 1) == 0, (closed & 2) == 0, (closed & 4) == 0};
    }
    try {
        World world(def);
        std::vector<BallId> ids;
        std::vector<PlaneId> planes;
        std::vector<CylinderId> cylinders;
        std::vector<CapsuleId> capsules;
        std::vector<BlockId> blocks;
        for (int call = 0; call < 64 && !in.empty(); ++call) {
            try {
                switch (in.byte() % 19) {
                    case 0: ids.push_back(world.add_ball({in.vec(), in.vec(), std::fabs(in.number()), 1.0 + std::fabs(in.number())})); break;
                    case 1: planes.push_back(world.add_plane({in.vec(), in.vec()})); break;
                    case 2: cylinders.push_back(world.add_cylinder({in.vec(), in.vec(), in.number()})); break;
                    case 3:
                        if (!ids.empty()) world.remove_ball(ids[in.byte() % ids.size()]);
                        break;
                    case 4: world.step(std::fabs(in.number()) / 16.0); break;
                    case 5: world.set_gravity(in.vec()); break;
                    case 6: world.set_restitution(in.number()); break;
                    case 7: (void)world.ray_cast(Ray{in.vec(), in.vec(), std::fabs(in.number()) * 10.0}); break;
                    case 8:
                        (void)world.max_overlap();
                        (void)world.kinetic_energy();
                        (void)world.escaped_count();
                        (void)world.sleeping_count();
                        (void)world.is_free(in.vec(), in.number());
                        break;
                    case 9:
                        if (!ids.empty()) world.set_position(ids[in.byte() % ids.size()], in.vec());
                        break;
                    case 10:
                        if (!ids.empty()) world.set_velocity(ids[in.byte() % ids.size()], in.vec());
                        break;
                    case 11:
                        if (!ids.empty()) world.apply_impulse(ids[in.byte() % ids.size()], in.vec());
                        break;
                    case 12:
                        if (!planes.empty()) world.remove_plane(planes[in.byte() % planes.size()]);
                        break;
                    case 13:
                        if (!cylinders.empty()) world.remove_cylinder(cylinders[in.byte() % cylinders.size()]);
                        break;
                    case 14: fuzz::round_trip(world, def); break;
                    case 15: capsules.push_back(world.add_capsule({in.vec(), in.vec(), in.number()})); break;
                    case 16: blocks.push_back(world.add_block({in.vec(), in.vec()})); break;
                    case 17:
                        if (!capsules.empty()) world.remove_capsule(capsules[in.byte() % capsules.size()]);
                        break;
                    case 18:
                        if (!blocks.empty()) world.remove_block(blocks[in.byte() % blocks.size()]);
                        break;
                }
            } catch (const InvalidArgument&) {
            } catch (const BudgetExceeded&) {
            }
        }
    } catch (const InvalidArgument&) {
    }
    return 0;
}
