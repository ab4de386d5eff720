// Ballistic renderer — Vulkan drawing of a ballistic::World: every ball in one draw as a sphere
// impostor, the walls, the columns and the lesson's explosions; offscreen to PNG or in a window
// (viewer.hpp). The engine never depends on this library.
//
// Setup and frame functions return Result / Status (result.hpp) instead of throwing or aborting;
// the message names the stage and the reason (e.g. "pick device: no Vulkan 1.2 device; llvmpipe:
// no graphics queue").
#pragma once

#include <ballistic/render/camera.hpp>
#include <ballistic/render/result.hpp>
#include <ballistic/world.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ballistic::render {

#ifdef NDEBUG
inline constexpr bool kValidationByDefault = false;
#else
inline constexpr bool kValidationByDefault = true;
#endif

struct GpuOptions {
    // Khronos validation layers; every message they send is recorded (validation_messages()).
    bool validation = kValidationByDefault;
    // Fail creation when the layers are missing, instead of running without them.
    bool require_validation = false;
    // A GLFWwindow*: also create its surface and pick a device that can present to it.
    void* window = nullptr;
};

// Instance, device and queue: Vulkan 1.2 or newer, a discrete GPU first, then integrated,
// virtual and CPU devices (Mesa's lavapipe). Move-only; everything made from it must be destroyed
// first.
class Gpu {
public:
    static Result<Gpu> create(const GpuOptions& options = {});
    ~Gpu();
    Gpu(Gpu&&) noexcept;
    Gpu& operator=(Gpu&&) noexcept;

    std::string device_name() const;
    std::string device_type() const;   // "discrete", "integrated", "virtual", "cpu", "other"
    bool validation_enabled() const;
    // Every validation message (warnings and errors) so far, "severity: text".
    std::vector<std::string> validation_messages() const;
    std::size_t validation_message_count() const;

    struct Impl;
    Impl& impl() { return *impl_; }
    const Impl& impl() const { return *impl_; }

private:
    explicit Gpu(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

enum class ColorMode : std::uint8_t { Id, Speed };

struct FrameStyle {
    ColorMode color = ColorMode::Id;
    bool lighting = true;        // false: flat colours (exact values, used by pixel tests)
    bool explosions = true;
    BallId picked;               // drawn highlighted (yellow)
    BallId hidden;               // not drawn (the hook camera's own ball)
    double speed_scale = 0.0;    // speed drawn red (unit: length/time); 0 = the fastest ball now
    bool tint_sleeping = false;  // sleeping balls drawn in sleeping_color() (as Jolt's samples do)
    std::array<float, 3> background{0.03f, 0.04f, 0.07f};   // linear RGB
};

// Colour (linear RGB, 0..1) of a ball drawn with ColorMode::Id and no lighting; the same
// function the shaders use.
std::array<float, 3> ball_color(BallId id);
// Colour (linear RGB) of a sleeping ball with FrameStyle::tint_sleeping and no lighting.
std::array<float, 3> sleeping_color();
// Linear 0..1 → 8-bit sRGB, as the colour attachment stores it.
std::uint8_t to_srgb8(float linear);
// Base colours of the statics (linear RGB); walls are checkered with this colour and 0.72 of it.
inline constexpr std::array<float, 3> kPlaneColor{0.55f, 0.55f, 0.6f};
inline constexpr std::array<float, 3> kCylinderColor{0.75f, 0.45f, 0.25f};

// The lesson's explosions, fed from the engine's event stream: each collision point spawns a
// billboard that grows to `growth` ball radii and fades out over `lifetime` of simulated time.
class Explosions {
public:
    struct Def {
        double lifetime = 0.5;         // (unit: time)
        double growth = 3.0;           // final radius in radii of the (first) ball
        std::size_t max_count = 16384; // the newest are kept
    };
    struct Explosion {
        Vec3 point;
        double birth = 0.0;            // world time of the collision
        double radius = 0.0;           // final radius (unit: length)
    };

    Explosions() = default;
    explicit Explosions(const Def& def) : def_(def) {}

    // Adds one explosion per collision of the world's last step (world.events()) and forgets
    // those older than the lifetime at world.time().
    void update(const World& world);
    void clear() { live_.clear(); }
    const Def& def() const { return def_; }
    const std::deque<Explosion>& live() const { return live_; }

private:
    Def def_;
    std::deque<Explosion> live_;
};

// Instance data of the balls, as the shaders read it: 24 bytes per ball.
inline constexpr std::size_t kBallInstanceBytes = 24;

// Balls close enough to the eye that they may be too large on screen for a point sprite: those
// whose centre is nearer than `radius_factor` of their radii. Filled by fill_instances().
struct NearQuery {
    Vec3 eye;
    double radius_factor = 0.0;
    std::vector<std::uint32_t> indices;   // storage indices, ascending
};

// Writes one instance per ball of `balls` into `out` (at least balls.x.size() *
// kBallInstanceBytes bytes, 4-byte aligned) in parallel (oneTBB), |v| only when `speeds`, and
// collects `near` when given. Balls whose byte in `sleeping` (empty, or one per ball as
// World::sleeping_flags() gives them) is set are marked to be drawn tinted. Returns the largest
// speed written (0 without speeds).
double fill_instances(const BallView& balls, bool speeds, std::span<std::byte> out, NearQuery* near = nullptr,
                      std::span<const std::uint8_t> sleeping = {});

// RGBA8, sRGB-encoded, rows top to bottom.
struct Image {
    int width = 0;
    int height = 0;
    std::vector<std::uint8_t> rgba;

    std::array<std::uint8_t, 4> pixel(int x, int y) const {
        const std::size_t at = (static_cast<std::size_t>(y) * static_cast<std::size_t>(width) + static_cast<std::size_t>(x)) * 4;
        return {rgba[at], rgba[at + 1], rgba[at + 2], rgba[at + 3]};
    }
};

Status write_png(const Image& image, const std::filesystem::path& path);
// Writes `text` (ASCII) in white with a dark shadow at the image's top left, each font pixel
// `scale` image pixels wide (stb_easy_font, on the CPU), wrapped at spaces to the image's width.
void draw_caption(Image& image, std::string_view text, int scale = 2);

// Draws into an offscreen image. Two frames may be in flight: submit() records and submits a
// frame and returns at once, so the caller can advance the world while it is drawn; finish()
// waits for the oldest submitted frame and returns its pixels.
class OffscreenRenderer {
public:
    static Result<OffscreenRenderer> create(Gpu& gpu, int width, int height);
    ~OffscreenRenderer();
    OffscreenRenderer(OffscreenRenderer&&) noexcept;
    OffscreenRenderer& operator=(OffscreenRenderer&&) noexcept;

    // `explosions` may be null. With `read_back` false, finish() returns an empty image (used
    // to time drawing alone).
    Status submit(const World& world, const Camera& camera, const FrameStyle& style,
                  const Explosions* explosions, bool read_back = true);
    Result<Image> finish();
    // submit() then finish().
    Result<Image> render(const World& world, const Camera& camera, const FrameStyle& style,
                         const Explosions* explosions = nullptr);

    int width() const;
    int height() const;
    int frames_in_flight() const;

    struct Impl;

private:
    explicit OffscreenRenderer(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace ballistic::render
