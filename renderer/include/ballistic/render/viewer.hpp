// Ballistic renderer — the interactive window: GLFW swapchain with two frames in flight, orbit
// and hook cameras, picking by click (an engine ray cast), pause/step/speed keys and an imgui HUD.
//
// Mouse: left-drag orbits, right-drag pans, scroll zooms, a left click picks a ball.
// Keys: Space pause, N step one frame (paused), + / − simulation speed, H hook camera on the
// picked ball, C colour by id / speed, E explosions, L lighting, R reset the camera, F1 HUD,
// Esc quit.
#pragma once

#include <ballistic/render/renderer.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ballistic::render {

// Is there a display a window can open on (DISPLAY or WAYLAND_DISPLAY set, GLFW initialises and
// finds Vulkan)? Never opens a window.
bool display_available();

struct ViewerOptions {
    int width = 1280;                   // window size (screen coordinates)
    int height = 720;
    std::string title = "Ballistic";
    std::uint64_t max_frames = 0;       // close after this many frames; 0 = when the user closes it
    bool validation = kValidationByDefault;
    bool require_validation = false;
    bool vsync = true;                  // FIFO presentation; false prefers MAILBOX / IMMEDIATE
    bool hud = true;
    double frame_time = 1.0 / 60.0;     // simulated time per frame at speed 1 (unit: time)
    double speed = 1.0;                 // simulation speed multiplier
    bool paused = false;
    FrameStyle style;
    std::optional<OrbitCamera> camera;  // the starting camera, which R returns to; default: the whole world
    // Steps the world by dt (default: World::step); a scene's emitters step with scene::step.
    std::function<void(World&, double)> step;
};

struct ViewerReport {
    std::uint64_t frames = 0;
    double seconds = 0.0;               // wall time of the loop
    std::uint64_t swapchain_rebuilds = 0;
    std::string device;
    std::string present_mode;           // "fifo", "mailbox", "immediate"
    std::vector<std::string> validation_messages;
};

class Viewer {
public:
    // Opens the window on `world`, which must outlive the viewer and is stepped by it.
    static Result<Viewer> create(World& world, const ViewerOptions& options = {});
    ~Viewer();
    Viewer(Viewer&&) noexcept;
    Viewer& operator=(Viewer&&) noexcept;

    // Frames until the window is closed (or max_frames); then the report.
    Result<ViewerReport> run();
    // One frame: input, draw and present frame k, then advance the world to frame k + 1 while the
    // device draws.
    Status frame();
    bool should_close() const;
    ViewerReport report() const;

    // What a click at window position (x, y) does: casts the engine ray through that pixel and
    // picks the ball hit (or clears the pick). Returns the hit.
    std::optional<RayHit> click(double x, double y);
    BallId picked() const;
    // Rides behind `ball` (null: back to the orbit camera).
    void hook(BallId ball);
    Camera camera() const;
    // Resizes the window; the swapchain follows on the next frame.
    void resize(int width, int height);
    // Framebuffer size in pixels.
    std::pair<int, int> framebuffer_size() const;
    const Gpu& gpu() const;

    struct Impl;

private:
    explicit Viewer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace ballistic::render
