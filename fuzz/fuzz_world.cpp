// libFuzzer target: the bytes as a sequence of World calls with their arguments (add balls,
// planes and columns, remove balls, step, change gravity and restitution, cast rays, query).
// Rejected calls must throw InvalidArgument and leave the world as it was; nothing may crash,
// hang or trip a sanitizer.
#include <ballistic/world.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using namespace ballistic;

class Bytes {
public:
    Bytes(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
    bool empty() const { return at_ >= size_; }
    std::uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
    // Mostly small ordinary numbers, sometimes any double (NaN, infinities, huge, tiny).
    double number() {
        const std::uint8_t kind = byte();
        if (kind < 200) return (static_cast<double>(byte()) - 100.0) / 8.0;
        double value = 0.0;
        std::uint8_t raw[8];
        for (auto& b : raw) b = byte();
        std::memcpy(&value, raw, sizeof value);
        return value;
    }
    Vec3 vec() { return {number(), number(), number()}; }

private:
    const std::uint8_t* data_;
    std::size_t size_, at_ = 0;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    Bytes in(data, size);
    WorldDef def;
    def.threads = 1 + in.byte() % 2;
    def.gravity = {0, -in.number(), 0};
    def.restitution = std::fabs(in.number()) / 12.5;
    def.step_event_budget = 20000;
    def.memory_limit = std::size_t{16} << 20;
    if (in.byte() % 4 == 0) def.periodic = Box{{0, 0, 0}, {in.number() + 20, in.number() + 20, in.number() + 20}};
    try {
        World world(def);
        std::vector<BallId> ids;
        for (int call = 0; call < 64 && !in.empty(); ++call) {
            try {
                switch (in.byte() % 9) {
                    case 0: ids.push_back(world.add_ball({in.vec(), in.vec(), std::fabs(in.number()), 1.0 + std::fabs(in.number())})); break;
                    case 1: world.add_plane({in.vec(), in.vec()}); break;
                    case 2: world.add_cylinder({in.vec(), in.vec(), in.number()}); break;
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
                }
            } catch (const InvalidArgument&) {
            } catch (const BudgetExceeded&) {
            }
        }
    } catch (const InvalidArgument&) {
    }
    return 0;
}
