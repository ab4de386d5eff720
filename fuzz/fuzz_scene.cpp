// libFuzzer target: any bytes as a scene file. A scene is refused with InvalidArgument or loaded
// and run for a moment within small budgets; anything else (a crash, a hang, another exception,
// a sanitizer report) is a bug.
#include <ballistic/scene/scene.hpp>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace ballistic;
    try {
        scene::LoadOptions options;
        options.threads = 1;
        options.memory_limit = std::size_t{16} << 20;  // 65 536 balls: pour_big.json (10^5) is refused at once
        scene::Scene loaded = scene::load_scene_text(std::string_view(reinterpret_cast<const char*>(data), size), options);
        loaded.world.set_step_event_budget(20000);
        scene::advance(loaded.world, 0.05, {nullptr, 50000});
        (void)scene::stats_json(scene::run_scene(loaded, 0.01, {nullptr, 10000}));
        (void)scene::state_json(loaded.world, loaded.balls);
    } catch (const InvalidArgument&) {
    } catch (const BudgetExceeded&) {
    }
    return 0;
}
