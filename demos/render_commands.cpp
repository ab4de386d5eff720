// ballistic render / view: scenes drawn offscreen to PNG files or in a window.
#include "render_commands.hpp"

#include <ballistic/render/renderer.hpp>
#include <ballistic/render/viewer.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>

namespace ballistic::demo {
namespace {

namespace fs = std::filesystem;

struct Size {
    int width = 0;
    int height = 0;
};

Size parse_size(const std::string& text) {
    int width = 0, height = 0;
    char x = 0;
    char extra = 0;
    if (std::sscanf(text.c_str(), "%d%c%d%c", &width, &x, &height, &extra) != 3 || (x != 'x' && x != 'X') ||
        width < 1 || height < 1 || width > 16384 || height > 16384) {
        throw std::invalid_argument("--size: expected WIDTHxHEIGHT with each in 1..16384, got " + text);
    }
    return {width, height};
}

// "X,Y,Z", finite.
Vec3 parse_point(const std::string& text, const std::string& option) {
    double x = 0.0, y = 0.0, z = 0.0;
    char extra = 0;
    if (std::sscanf(text.c_str(), "%lf,%lf,%lf%c", &x, &y, &z, &extra) != 3 || !std::isfinite(x) || !std::isfinite(y) ||
        !std::isfinite(z)) {
        throw std::invalid_argument(option + ": expected X,Y,Z (three finite numbers), got " + text);
    }
    return {x, y, z};
}

// The framing's camera, with the eye, target and field of view the options give.
render::Camera camera_for(const World& world, const CameraOptions& options) {
    const render::Framing framing = render::frame_world(world);
    render::Camera camera = framing.orbit.camera(framing.near, framing.far);
    if (!options.eye.empty()) camera.eye = parse_point(options.eye, "--eye");
    if (!options.target.empty()) camera.target = parse_point(options.target, "--target");
    if (!options.fov.empty()) {
        double fov = 0.0;
        const char* end = options.fov.data() + options.fov.size();
        const auto [stop, error] = std::from_chars(options.fov.data(), end, fov);
        if (error != std::errc{} || stop != end || !(fov > 0.0 && fov < 180.0))
            throw std::invalid_argument("--fov: must be a number of degrees in (0, 180), got " + options.fov.substr(0, 40));
        camera.fov_y_degrees = fov;
    }
    const double distance = length(camera.eye - camera.target);
    if (!(distance > 0.0)) {
        throw std::invalid_argument("--eye and --target: must differ, both are " +
                                    (options.eye.empty() ? options.target : options.eye));
    }
    camera.far = std::max(camera.far, 2.0 * distance + framing.far);  // an eye moved far out still sees the scene
    return camera;
}

// What the caption says of the world as it is drawn: time, balls, how many sleep, and the
// events of the last frame per simulated second.
std::string caption_of(const World& world, std::uint64_t frame_events, double frame_dt) {
    char text[160];
    std::snprintf(text, sizeof(text), "t = %.2f   %zu balls   %zu asleep   %.2g events/s (simulated)",
                  world.time(), world.ball_count(), world.sleeping_count(),
                  static_cast<double>(frame_events) / frame_dt);
    return text;
}

render::ColorMode parse_color(const std::string& text) {
    if (text == "id") return render::ColorMode::Id;
    if (text == "speed") return render::ColorMode::Speed;
    throw std::invalid_argument("--color: expected id or speed, got " + text);
}

scene::Scene load(const std::string& path, int threads) {
    try {
        return scene::load_scene_file(path, threads);
    } catch (const InvalidArgument& error) {
        throw std::invalid_argument(error.what());
    }
}

// Prints the validation messages; with `strict`, any message is a failure.
bool validation_clean(const std::vector<std::string>& messages, bool strict) {
    for (const std::string& message : messages) std::cerr << "ballistic: Vulkan validation " << message << "\n";
    if (!messages.empty() && strict) {
        std::cerr << "ballistic: " << messages.size() << " validation message(s) with --validate\n";
        return false;
    }
    return true;
}

render::GpuOptions gpu_options(bool validate) {
    render::GpuOptions options;
    options.validation = validate || render::kValidationByDefault;
    options.require_validation = validate;
    return options;
}

}  // namespace

int render_command(const RenderOptions& options) {
    const Size size = parse_size(options.size);
    const render::ColorMode color = parse_color(options.color);
    if (options.frames < 1) throw std::invalid_argument("--frames: must be >= 1, got " + std::to_string(options.frames));
    if (options.every < 1) throw std::invalid_argument("--every: must be >= 1, got " + std::to_string(options.every));
    if (options.threads < 0) throw std::invalid_argument("--threads: must be >= 0, got " + std::to_string(options.threads));
    const bool timed = options.duration.has_value();
    const double duration = options.duration.value_or(0.0);
    // Frames 1/60 apart and one more at the end, which a duration that is not a whole number of
    // frames brings nearer; at most a day of them.
    constexpr double kMostSeconds = 86400.0;
    if (timed && !(duration > 0.0 && duration <= kMostSeconds)) {
        std::ostringstream message;
        message << "--duration: must be > 0 and at most " << kMostSeconds << " seconds, got " << duration;
        throw std::invalid_argument(message.str());
    }
    const int frames = timed ? static_cast<int>(std::ceil(duration / scene::kFrame - 1e-9)) + 1 : options.frames;
    scene::Scene loaded = load(options.scene_path, options.threads);
    World& world = loaded.world;
    const double end = world.time() + duration;
    const render::Camera camera = camera_for(world, options.camera);  // bad camera options before any file

    auto gpu = render::Gpu::create(gpu_options(options.validate));
    if (!gpu) throw std::runtime_error("no Vulkan rendering: " + gpu.error().message());
    auto renderer = render::OffscreenRenderer::create(*gpu, size.width, size.height);
    if (!renderer) throw std::runtime_error(renderer.error().message());
    std::error_code error;
    fs::create_directories(options.out_dir, error);
    if (error) throw std::runtime_error("cannot create output directory " + options.out_dir + ": " + error.message());

    render::FrameStyle style;
    style.color = color;
    style.explosions = options.explosions;
    style.tint_sleeping = options.tint_sleeping;
    render::Explosions explosions;

    int written = 0;
    std::uint64_t frame_events = 0;  // of the step that led to the frame
    double frame_dt = scene::kFrame;
    for (int frame = 0; frame < frames; ++frame) {
        // Every K-th frame, and the last one always.
        const bool draw = frame % options.every == 0 || frame + 1 == frames;
        std::string caption;
        if (draw) {
            if (options.caption) caption = caption_of(world, frame_events, frame_dt);
            if (auto s = renderer->submit(world, camera, style, &explosions); !s) throw std::runtime_error(s.error().message());
        }
        // Frame k + 1 is simulated while frame k is drawn.
        if (frame + 1 < frames) {
            frame_dt = timed && frame + 2 == frames ? end - world.time() : scene::kFrame;
            frame_events = scene::step(loaded, frame_dt).events;
            explosions.update(world);
        }
        if (draw) {
            auto image = renderer->finish();
            if (!image) throw std::runtime_error(image.error().message());
            render::draw_caption(*image, caption, std::max(1, size.width / 640));
            char name[32];
            std::snprintf(name, sizeof(name), "frame_%05d.png", frame);
            if (auto s = render::write_png(*image, fs::path(options.out_dir) / name); !s) {
                throw std::runtime_error(s.error().message());
            }
            ++written;
        }
    }
    std::cout << "wrote " << written << " frame(s) of " << size.width << "x" << size.height << " to " << options.out_dir
              << " (" << world.ball_count() << " balls, " << gpu->device_name() << ")\n";
    return validation_clean(gpu->validation_messages(), options.validate) ? 0 : 1;
}

int view_scene(scene::Scene& loaded, const ViewOptions& options) {
    const Size size = parse_size(options.size);
    render::ViewerOptions viewer_options;
    viewer_options.width = size.width;
    viewer_options.height = size.height;
    viewer_options.max_frames = static_cast<std::uint64_t>(options.frames);
    viewer_options.validation = options.validate || render::kValidationByDefault;
    viewer_options.require_validation = options.validate;
    viewer_options.vsync = options.vsync;
    viewer_options.paused = options.paused;
    viewer_options.frame_time = scene::kFrame;
    viewer_options.style.color = parse_color(options.color);
    viewer_options.style.tint_sleeping = options.tint_sleeping;
    if (!loaded.emitters.empty()) viewer_options.step = [&loaded](World&, double dt) { scene::step(loaded, dt); };
    if (options.camera.given()) {
        const render::Camera camera = camera_for(loaded.world, options.camera);
        viewer_options.camera = render::OrbitCamera::looking(camera.eye, camera.target, camera.fov_y_degrees);
    }
    auto viewer = render::Viewer::create(loaded.world, viewer_options);
    if (!viewer) throw std::runtime_error(viewer.error().message());
    auto report = viewer->run();
    if (!report) throw std::runtime_error(report.error().message());
    std::cout << "viewed " << report->frames << " frame(s) in " << report->seconds << " s ("
              << (report->seconds > 0 ? static_cast<double>(report->frames) / report->seconds : 0.0) << " fps, "
              << report->device << ", " << report->present_mode << ")\n";
    return validation_clean(report->validation_messages, options.validate) ? 0 : 1;
}

int view_command(const ViewOptions& options) {
    if (options.frames < 0) throw std::invalid_argument("--frames: must be >= 0, got " + std::to_string(options.frames));
    if (options.threads < 0) throw std::invalid_argument("--threads: must be >= 0, got " + std::to_string(options.threads));
    parse_size(options.size);
    parse_color(options.color);
    scene::Scene loaded = load(options.scene_path, options.threads);
    return view_scene(loaded, options);
}

bool display_available() { return render::display_available(); }

bool write_demo_picture(const World& world, const std::string& path) {
    auto gpu = render::Gpu::create(gpu_options(false));
    if (!gpu) {
        std::cout << "picture           none: no Vulkan rendering here (" << gpu.error().message() << ")\n";
        return true;
    }
    auto renderer = render::OffscreenRenderer::create(*gpu, 1280, 720);
    if (!renderer) {
        std::cout << "picture           none: " << renderer.error().message() << "\n";
        return true;
    }
    const render::Framing framing = render::frame_world(world);
    auto image = renderer->render(world, framing.orbit.camera(framing.near, framing.far), render::FrameStyle{});
    if (!image) {
        std::cout << "picture           none: " << image.error().message() << "\n";
        return true;
    }
    if (auto s = render::write_png(*image, path); !s) {
        std::cerr << "ballistic: cannot write the picture " << path << ": " << s.error().message() << "\n";
        return false;
    }
    std::cout << "picture           " << path << " (1280x720, " << gpu->device_name() << ")\n";
    validation_clean(gpu->validation_messages(), false);
    return true;
}

}  // namespace ballistic::demo
