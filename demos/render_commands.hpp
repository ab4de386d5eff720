// ballistic render / view, and the picture of the default demo: the program's use of
// ballistic::renderer (built only with BALLISTIC_BUILD_RENDERER).
#pragma once

#include <ballistic/scene/scene.hpp>

#include <optional>
#include <string>

namespace ballistic::demo {

// Where the camera stands: each empty or zero field keeps what framing the whole scene gives.
struct CameraOptions {
    std::string eye, target;    // "X,Y,Z"
    std::string fov;            // vertical field of view in degrees, as given
    bool given() const { return !eye.empty() || !target.empty() || !fov.empty(); }
};

struct RenderOptions {
    std::string scene_path;
    std::string out_dir;
    int frames = 60;
    std::optional<double> duration;  // frames from the start to this much later, the last at that time
    int every = 1;
    std::string size = "1280x720";
    int threads = 0;
    std::string color = "id";   // "id" or "speed"
    bool explosions = true;
    bool tint_sleeping = false; // sleeping balls drawn in a muted slate
    bool caption = false;       // time, balls, asleep and events per simulated second in each image
    CameraOptions camera;
    bool validate = false;      // validation layers required; any message fails the command
};

struct ViewOptions {
    std::string scene_path;
    int frames = 0;             // 0: until the window is closed
    std::string size = "1280x720";
    int threads = 0;
    std::string color = "id";
    bool tint_sleeping = false;
    CameraOptions camera;
    bool paused = false;
    bool vsync = true;
    bool validate = false;
};

// Each returns the exit status (0 success, 1 failure; bad input throws BadInput-like
// std::invalid_argument, which main() turns into status 2).
int render_command(const RenderOptions& options);
int view_command(const ViewOptions& options);

// Default demo: true when a display is there (the window then opened on the lesson scene).
bool display_available();
int view_scene(scene::Scene& scene, const ViewOptions& options);
// Writes the world's current state, framed whole, to a PNG; prints what happened. Without a
// Vulkan device it says so and returns true; false (with a message) when the file cannot be
// written.
bool write_demo_picture(const World& world, const std::string& path);

}  // namespace ballistic::demo
