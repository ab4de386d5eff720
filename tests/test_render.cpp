// The renderer, headless through whatever Vulkan device is there (Mesa's lavapipe without a GPU),
// with validation layers required: any validation message fails the test that caused it. The
// pictures are checked pixel by pixel against the cameras' closed-form projections.
#include <ballistic/render/renderer.hpp>
#include <ballistic/render/viewer.hpp>

#include <gtest/gtest.h>
#include <stb_image.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

namespace {

using namespace ballistic;
namespace fs = std::filesystem;
using Pixel = std::array<std::uint8_t, 4>;

constexpr int kWidth = 320;
constexpr int kHeight = 240;

Pixel srgb(std::array<float, 3> linear, float scale = 1.0f) {
    return {render::to_srgb8(linear[0] * scale), render::to_srgb8(linear[1] * scale), render::to_srgb8(linear[2] * scale), 255};
}

// Colours match within one step of 8-bit rounding.
::testing::AssertionResult near_color(const Pixel& actual, const Pixel& expected, int tolerance = 2) {
    for (int c = 0; c < 3; ++c) {
        if (std::abs(int(actual[static_cast<std::size_t>(c)]) - int(expected[static_cast<std::size_t>(c)])) > tolerance) {
            return ::testing::AssertionFailure() << "got (" << int(actual[0]) << ", " << int(actual[1]) << ", "
                                                 << int(actual[2]) << "), expected (" << int(expected[0]) << ", "
                                                 << int(expected[1]) << ", " << int(expected[2]) << ")";
        }
    }
    return ::testing::AssertionSuccess();
}

int brightness(const Pixel& p) { return int(p[0]) + int(p[1]) + int(p[2]); }

render::FrameStyle flat_style() {
    render::FrameStyle style;
    style.lighting = false;
    return style;
}

render::Camera looking(Vec3 eye, Vec3 target) {
    render::Camera camera;
    camera.eye = eye;
    camera.target = target;
    camera.near = 0.05;
    camera.far = 200.0;
    return camera;
}

class Render : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        render::GpuOptions options;
        options.validation = true;
        options.require_validation = true;
        auto gpu = render::Gpu::create(options);
        ASSERT_TRUE(gpu) << gpu.error().message();
        gpu_ = new render::Gpu(std::move(gpu.value()));
        auto renderer = render::OffscreenRenderer::create(*gpu_, kWidth, kHeight);
        ASSERT_TRUE(renderer) << renderer.error().message();
        renderer_ = new render::OffscreenRenderer(std::move(renderer.value()));
    }
    static void TearDownTestSuite() {
        delete renderer_;   // before the device it was made from
        renderer_ = nullptr;
        const std::size_t messages = gpu_ ? gpu_->validation_message_count() : 0;
        delete gpu_;
        gpu_ = nullptr;
        EXPECT_EQ(messages, 0u);
    }
    void SetUp() override {
        ASSERT_NE(renderer_, nullptr);
        messages_before_ = gpu_->validation_message_count();
    }
    void TearDown() override {
        const auto messages = gpu_->validation_messages();
        for (std::size_t i = messages_before_; i < messages.size(); ++i) ADD_FAILURE() << messages[i];
    }

    render::Image draw(const World& world, const render::Camera& camera, const render::FrameStyle& style,
                       const render::Explosions* explosions = nullptr) {
        auto image = renderer_->render(world, camera, style, explosions);
        EXPECT_TRUE(image) << image.error().message();
        return image ? std::move(image.value()) : render::Image{};
    }

    static Pixel at(const render::Image& image, const render::Camera& camera, Vec3 point) {
        const auto p = camera.project(point, image.width, image.height);
        return image.pixel(static_cast<int>(p.x), static_cast<int>(p.y));
    }

    static render::Gpu* gpu_;
    static render::OffscreenRenderer* renderer_;
    std::size_t messages_before_ = 0;
};

render::Gpu* Render::gpu_ = nullptr;
render::OffscreenRenderer* Render::renderer_ = nullptr;

// ------------------------------------------------------------------------------------------------
// Balls

TEST_F(Render, BallCentreHasItsColourAndBackgroundElsewhere) {
    World world;
    const BallId id = world.add_ball({{0, 0, 0}, {0, 0, 0}, 1.0});
    const render::Camera camera = looking({0, 0, 10}, {0, 0, 0});
    const render::FrameStyle style = flat_style();
    const render::Image image = draw(world, camera, style);
    ASSERT_EQ(image.width, kWidth);

    EXPECT_TRUE(near_color(at(image, camera, {0, 0, 0}), srgb(render::ball_color(id))));
    // Just inside and just outside the silhouette (the sphere's angular radius is asin(1/10)).
    const double edge = std::tan(std::asin(0.1)) * 10.0;
    EXPECT_TRUE(near_color(at(image, camera, {0.9 * edge, 0, 0}), srgb(render::ball_color(id))));
    EXPECT_TRUE(near_color(at(image, camera, {0, -0.9 * edge, 0}), srgb(render::ball_color(id))));
    EXPECT_TRUE(near_color(at(image, camera, {1.15 * edge, 0, 0}), srgb(style.background)));
    EXPECT_TRUE(near_color(at(image, camera, {0, 1.15 * edge, 0}), srgb(style.background)));
    for (const auto& [x, y] : {std::pair{0, 0}, {kWidth - 1, 0}, {0, kHeight - 1}, {kWidth - 1, kHeight - 1}}) {
        EXPECT_TRUE(near_color(image.pixel(x, y), srgb(style.background))) << x << ", " << y;
    }
}

TEST_F(Render, OffCentreBallIsWhereTheProjectionSays) {
    World world;
    const BallId id = world.add_ball({{3, 1.5, -2}, {0, 0, 0}, 0.5});
    const render::Camera camera = looking({0, 0, 10}, {0, 0, 0});
    const render::Image image = draw(world, camera, flat_style());
    EXPECT_TRUE(near_color(at(image, camera, {3, 1.5, -2}), srgb(render::ball_color(id))));
    EXPECT_TRUE(near_color(at(image, camera, {-3, 1.5, -2}), srgb(flat_style().background)));
}

TEST_F(Render, NearerOfTwoOverlappingBallsWinsInEitherOrder) {
    for (const bool near_first : {true, false}) {
        World world;
        const BallDef near_ball{{0, 0, 3}, {0, 0, 0}, 0.8};
        const BallDef far_ball{{0.6, 0, 0}, {0, 0, 0}, 1.2};
        const BallId first = world.add_ball(near_first ? near_ball : far_ball);
        const BallId second = world.add_ball(near_first ? far_ball : near_ball);
        const BallId near_id = near_first ? first : second;
        const BallId far_id = near_first ? second : first;
        ASSERT_GT(brightness(srgb(render::ball_color(near_id))) + 0, 0);
        ASSERT_FALSE(near_color(srgb(render::ball_color(near_id)), srgb(render::ball_color(far_id)), 8));

        const render::Camera camera = looking({0, 0, 12}, {0, 0, 0});
        const render::Image image = draw(world, camera, flat_style());
        EXPECT_TRUE(near_color(at(image, camera, {0, 0, 3}), srgb(render::ball_color(near_id)))) << near_first;
        // Only the far ball covers its right side.
        EXPECT_TRUE(near_color(at(image, camera, {1.6, 0, 0}), srgb(render::ball_color(far_id)))) << near_first;
    }
}

TEST_F(Render, DepthIsTheSpheresTrueDepthNotTheImpostors) {
    // A thin column passes between the ball's silhouette and its nearest point: in front of the
    // ball's true surface there, behind the flat impostor's depth.
    World world;
    const BallId id = world.add_ball({{0, 0, 0}, {0, 0, 0}, 1.0});
    world.add_cylinder({{1.05, 0, 0.75}, {0, 1, 0}, 0.25});
    const render::Camera camera = looking({0, 0, 10}, {0, 0, 0});
    const render::Image image = draw(world, camera, flat_style());
    EXPECT_TRUE(near_color(at(image, camera, {0, 0.5, 0.8}), srgb(render::ball_color(id))));
    EXPECT_TRUE(near_color(at(image, camera, {0.9, 0, 0.95}), srgb(render::kCylinderColor)));
}

TEST_F(Render, BallLargerThanAPointSpriteIsDrawnWhole) {
    World world;
    const BallId id = world.add_ball({{0, 0, 0}, {0, 0, 0}, 1.0});
    const render::Camera camera = looking({0, 0, 1.6}, {0, 0, 0});   // fills the picture
    const render::Image image = draw(world, camera, flat_style());
    for (const auto& [x, y] : {std::pair{kWidth / 2, kHeight / 2}, {4, kHeight / 2}, {kWidth - 4, kHeight / 2}, {kWidth / 2, 4}}) {
        EXPECT_TRUE(near_color(image.pixel(x, y), srgb(render::ball_color(id)))) << x << ", " << y;
    }
}

TEST_F(Render, BallCutByThePictureEdgeIsDrawn) {
    World world;
    const render::Camera camera = looking({0, 0, 10}, {0, 0, 0});
    // Centre just left of the picture, half the ball inside it.
    const auto left = camera.pixel_ray(-6.0, kHeight / 2.0, kWidth, kHeight);
    const Vec3 centre = left.origin + left.direction * 10.0;
    const BallId id = world.add_ball({centre, {0, 0, 0}, 0.5});
    const render::Image image = draw(world, camera, flat_style());
    EXPECT_TRUE(near_color(image.pixel(1, kHeight / 2), srgb(render::ball_color(id))));
}

TEST_F(Render, LightingShadesWithTheSphereNormal) {
    World world;
    world.add_ball({{0, 0, 0}, {0, 0, 0}, 1.0});
    const render::Camera camera = looking({0, 0, 10}, {0, 0, 0});
    const render::Image image = draw(world, camera, render::FrameStyle{});
    // The light comes from the upper right: the upper-right limb is brighter than the lower-left.
    const int lit = brightness(at(image, camera, {0.6, 0.6, std::sqrt(1 - 0.72)}));
    const int dark = brightness(at(image, camera, {-0.6, -0.6, std::sqrt(1 - 0.72)}));
    EXPECT_GT(lit, dark + 60);
}

TEST_F(Render, PickedBallIsHighlightedAndSpeedColoursRunBlueToRed) {
    World world;
    const BallId slow = world.add_ball({{-2, 0, 0}, {0.1, 0, 0}, 0.8});
    const BallId fast = world.add_ball({{2, 0, 0}, {0, 4, 0}, 0.8});
    const render::Camera camera = looking({0, 0, 10}, {0, 0, 0});
    render::FrameStyle style = flat_style();
    style.picked = slow;
    render::Image image = draw(world, camera, style);
    EXPECT_TRUE(near_color(at(image, camera, {-2, 0, 0}), srgb({1.0f, 0.95f, 0.2f})));
    EXPECT_TRUE(near_color(at(image, camera, {2, 0, 0}), srgb(render::ball_color(fast))));

    style.picked = {};
    style.color = render::ColorMode::Speed;
    image = draw(world, camera, style);
    const Pixel cold = at(image, camera, {-2, 0, 0});
    const Pixel hot = at(image, camera, {2, 0, 0});
    EXPECT_GT(cold[2], cold[0] + 80);   // slow: blue
    EXPECT_GT(hot[0], hot[2] + 80);     // fastest: red
}

TEST_F(Render, SleepingBallsAreTintedOnlyWhenAsked) {
    // A ball resting on the floor of a dissipative world sleeps before its first event; one above
    // it is falling, awake.
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    def.restitution = 0.5;
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    const BallId resting = world.add_ball({{-2, 0.8, 0}, {}, 0.8});
    const BallId falling = world.add_ball({{2, 3, 0}, {}, 0.8});
    world.step(1e-3);
    ASSERT_TRUE(world.sleeping(resting));
    ASSERT_FALSE(world.sleeping(falling));
    const render::Camera camera = looking({0, 2, 10}, {0, 2, 0});
    render::FrameStyle style = flat_style();
    const Vec3 falling_at = world.ball(falling).position;
    render::Image image = draw(world, camera, style);
    EXPECT_TRUE(near_color(at(image, camera, {-2, 0.8, 0}), srgb(render::ball_color(resting))));
    style.tint_sleeping = true;
    image = draw(world, camera, style);
    EXPECT_TRUE(near_color(at(image, camera, {-2, 0.8, 0}), srgb(render::sleeping_color())));
    EXPECT_TRUE(near_color(at(image, camera, falling_at), srgb(render::ball_color(falling))));
}

// ------------------------------------------------------------------------------------------------
// Statics and explosions

TEST_F(Render, WallAndColumnAppearWhereTheyShould) {
    World world;
    world.add_plane({{0, 0, 0}, {0, 1, 0}});                 // floor
    world.add_plane({{0, 0, -6}, {0, 0, 1}});                // back wall, facing the camera
    world.add_plane({{0, 0, 8}, {0, 0, -1}});                // wall behind the camera: seen from its back
    world.add_cylinder({{2, 0, -2}, {0, 1, 0}, 1.0});        // upright column
    const render::Camera camera = looking({0, 4, 7}, {0, 2, -2});
    const render::FrameStyle style = flat_style();
    const render::Image image = draw(world, camera, style);

    const auto is_wall = [&](const Pixel& p) {
        return near_color(p, srgb(render::kPlaneColor)) || near_color(p, srgb(render::kPlaneColor, 0.72f));
    };
    EXPECT_TRUE(is_wall(at(image, camera, {-2.3, 0, -2.5}))) << "floor";
    EXPECT_TRUE(is_wall(at(image, camera, {-2.3, 3.3, -6}))) << "back wall";
    EXPECT_TRUE(near_color(at(image, camera, {2, 1.5, -1}), srgb(render::kCylinderColor))) << "column front";
    // The floor ends at the back wall: beyond it, below the horizon, nothing is drawn... except
    // the back wall itself, which covers everything above the floor.
    EXPECT_TRUE(is_wall(at(image, camera, {-5, 6, -6})));

    // The same scene with the back wall's normal turned away: seen from behind, it is not drawn,
    // and neither is the floor behind it (it bounds the room).
    World open;
    open.add_plane({{0, 0, 0}, {0, 1, 0}});
    open.add_cylinder({{2, 0, -2}, {0, 1, 0}, 1.0});
    const render::Image sky = draw(open, camera, style);
    EXPECT_TRUE(near_color(sky.pixel(kWidth / 2, 2), srgb(style.background))) << "above the horizon";
    EXPECT_TRUE(near_color(at(sky, camera, {2, 1.5, -1}), srgb(render::kCylinderColor)));
}

TEST_F(Render, ExplosionAppearsAfterAnImpact) {
    WorldDef def;
    def.gravity = {0, -10, 0};
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    world.add_ball({{0, 2, 0}, {0, 0, 0}, 0.5});
    const render::Camera camera = looking({0, 3, 8}, {0, 0.5, 0});
    render::Explosions explosions;
    render::FrameStyle style = flat_style();

    int steps = 0;
    while (world.events().empty() && steps < 120) {
        world.step(1.0 / 60.0);
        explosions.update(world);
        ++steps;
    }
    ASSERT_FALSE(world.events().empty()) << "the ball never hit the floor";
    ASSERT_EQ(explosions.live().size(), world.events().size());
    const Vec3 point = world.events().front().point;
    EXPECT_NEAR(point.y, 0.0, 1e-9);

    // Just in front of the contact, on the floor, the glow brightens what is there.
    const Vec3 beside{point.x, point.y, point.z + 0.3};
    style.explosions = false;
    const render::Image before_image = draw(world, camera, style, &explosions);
    const Pixel before = at(before_image, camera, beside);
    style.explosions = true;
    const render::Image glow_image = draw(world, camera, style, &explosions);
    const Pixel glowing = at(glow_image, camera, beside);
    EXPECT_GT(brightness(glowing), brightness(before) + 40);

    // It fades: after its lifetime the first impact's explosion is gone.
    const double impact = world.events().front().time;
    for (int i = 0; i < 40; ++i) {
        world.step(1.0 / 60.0);
        explosions.update(world);
    }
    ASSERT_GT(world.time(), impact + explosions.def().lifetime);
    for (const auto& e : explosions.live()) EXPECT_GT(e.birth, impact);
}

// ------------------------------------------------------------------------------------------------
// Frames in flight, errors, files

TEST_F(Render, TwoFramesInFlightComeBackInOrder) {
    World world;
    const BallId id = world.add_ball({{0, 0, 0}, {1, 0, 0}, 1.0});
    const render::Camera camera = looking({0, 0, 10}, {0, 0, 0});
    const render::FrameStyle style = flat_style();
    ASSERT_TRUE(renderer_->submit(world, camera, style, nullptr));
    world.step(2.0);   // moves the ball off the centre while frame 1 is drawn
    ASSERT_TRUE(renderer_->submit(world, camera, style, nullptr));
    const auto third = renderer_->submit(world, camera, style, nullptr);
    ASSERT_FALSE(third);
    EXPECT_NE(third.error().message().find("in flight"), std::string::npos) << third.error().message();
    auto first = renderer_->finish();
    auto second = renderer_->finish();
    ASSERT_TRUE(first && second);
    EXPECT_TRUE(near_color(first->pixel(kWidth / 2, kHeight / 2), srgb(render::ball_color(id))));
    EXPECT_TRUE(near_color(second->pixel(kWidth / 2, kHeight / 2), srgb(style.background)));
    EXPECT_FALSE(renderer_->finish());
}

TEST_F(Render, SetupErrorsSayWhichStageAndWhy) {
    auto bad = render::OffscreenRenderer::create(*gpu_, 0, 100);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().stage, "create offscreen target");
    EXPECT_NE(bad.error().reason.find("0x100"), std::string::npos) << bad.error().reason;
    render::Image empty;
    const auto png = render::write_png(empty, "unused.png");
    ASSERT_FALSE(png);
    EXPECT_NE(png.error().message().find("empty"), std::string::npos);
}

TEST_F(Render, PngRoundTrips) {
    World world;
    world.add_ball({{0, 0, 0}, {0, 0, 0}, 1.0});
    const render::Image image = draw(world, looking({0, 0, 10}, {0, 0, 0}), render::FrameStyle{});
    const fs::path path = fs::temp_directory_path() / ("ballistic-render-" + std::to_string(::getpid()) + ".png");
    ASSERT_TRUE(render::write_png(image, path));
    int w = 0, h = 0, channels = 0;
    stbi_uc* loaded = stbi_load(path.string().c_str(), &w, &h, &channels, 4);
    ASSERT_NE(loaded, nullptr);
    EXPECT_EQ(w, kWidth);
    EXPECT_EQ(h, kHeight);
    EXPECT_TRUE(std::equal(image.rgba.begin(), image.rgba.end(), loaded));
    stbi_image_free(loaded);
    fs::remove(path);
}

// ------------------------------------------------------------------------------------------------
// CPU side: instance fill and cameras (no device needed)

TEST(InstanceFill, CopiesTheSoAStateAndFindsNearBalls) {
    World world;
    std::vector<BallDef> defs;
    for (int i = 0; i < 40000; ++i) {
        defs.push_back({{(i % 200) * 1.0, (i / 200) * 1.0, 0.0}, {0.0, i * 1e-3, 0.0}, 0.25});
    }
    world.add_balls(defs);
    const BallView view = world.balls();
    std::vector<std::byte> out(view.x.size() * render::kBallInstanceBytes);
    render::NearQuery near;
    near.eye = {10.0, 10.0, 1.0};
    near.radius_factor = 8.0;   // within 2 length units
    const double max_speed = render::fill_instances(view, true, out, &near);
    EXPECT_DOUBLE_EQ(max_speed, 39999 * 1e-3);
    std::size_t expected_near = 0;
    for (std::size_t i = 0; i < view.x.size(); ++i) {
        float f[5];
        std::uint32_t id = 0;
        std::memcpy(f, out.data() + i * 24, 20);
        std::memcpy(&id, out.data() + i * 24 + 20, 4);
        ASSERT_EQ(f[0], static_cast<float>(view.x[i]));
        ASSERT_EQ(f[1], static_cast<float>(view.y[i]));
        ASSERT_EQ(f[3], 0.25f);
        ASSERT_FLOAT_EQ(f[4], static_cast<float>(std::abs(view.vy[i])));
        ASSERT_EQ(id, view.id[i].index());
        const double d2 = std::pow(view.x[i] - 10, 2) + std::pow(view.y[i] - 10, 2) + 1.0;
        if (d2 < 4.0) {
            ASSERT_LT(expected_near, near.indices.size());
            EXPECT_EQ(near.indices[expected_near++], i);
        }
    }
    EXPECT_EQ(near.indices.size(), expected_near);
    EXPECT_GT(expected_near, 4u);
    // Sleeping flags mark their balls with speed −1, the others keep theirs.
    std::vector<std::uint8_t> sleeping(view.x.size(), 0);
    sleeping[7] = 1;
    render::fill_instances(view, true, out, nullptr, sleeping);
    float speed = 0.0f;
    std::memcpy(&speed, out.data() + 7 * 24 + 16, 4);
    EXPECT_EQ(speed, -1.0f);
    std::memcpy(&speed, out.data() + 8 * 24 + 16, 4);
    EXPECT_FLOAT_EQ(speed, static_cast<float>(std::abs(view.vy[8])));
}

TEST(Caption, WhiteTextOverAShadowAtTheTopLeft) {
    render::Image image;
    image.width = 200;
    image.height = 40;
    image.rgba.assign(200 * 40 * 4, 100);
    const std::vector<std::uint8_t> blank = image.rgba;
    render::draw_caption(image, "");
    EXPECT_EQ(image.rgba, blank);
    render::draw_caption(image, "t = 1.00", 1);
    int white = 0, dark = 0, changed_right = 0;
    for (int y = 0; y < 40; ++y) {
        for (int x = 0; x < 200; ++x) {
            const std::uint8_t v = image.pixel(x, y)[0];
            white += v == 255;
            dark += v == 0;
            changed_right += x >= 100 && v != 100;  // 8 characters of about 6 pixels
        }
    }
    EXPECT_GT(white, 20);
    EXPECT_GT(dark, 5);
    EXPECT_EQ(changed_right, 0);
    // Around the letters, a darkened backing: a third of the brightness.
    EXPECT_EQ(image.pixel(5, 5)[0], 33);
    EXPECT_EQ(image.pixel(5, 35)[0], 100);
    // Wider than the image, the text wraps at its spaces onto more lines instead of being cut.
    image.height = 120;
    image.rgba.assign(200 * 120 * 4, 100);
    render::draw_caption(image, "t = 1.00   1000000 balls   20 asleep   2.1e+07 events/s (simulated)", 1);
    int lowest = -1, rightmost = -1;
    for (int y = 0; y < 120; ++y)
        for (int x = 0; x < 200; ++x)
            if (image.pixel(x, y)[0] == 255) {
                lowest = std::max(lowest, y);
                rightmost = std::max(rightmost, x);
            }
    EXPECT_GT(lowest, 20) << "more than one line";
    EXPECT_LT(rightmost, 200 - 6) << "within the right margin";
}

TEST(Camera, ProjectAndPixelRayAgree) {
    render::Camera camera;
    camera.eye = {3, 4, 12};
    camera.target = {-1, 0.5, 0};
    const Vec3 point{2.0, -1.0, 1.5};
    const auto p = camera.project(point, 640, 360);
    const Ray ray = camera.pixel_ray(p.x, p.y, 640, 360);
    const Vec3 to_point = point - ray.origin;
    EXPECT_NEAR(length(cross(ray.direction, to_point)) / length(to_point), 0.0, 1e-12);
    EXPECT_GT(dot(ray.direction, to_point), 0.0);
    EXPECT_NEAR(p.depth, dot(point - camera.eye, normalize(camera.target - camera.eye)), 1e-12);
}

// Balls spread over a 20 × 20 floor, and one far above: the framing fits the floor's balls to the
// image (centred, within it, filling its width or height), not the one far away.
TEST(Camera, FramingFitsTheBulkOfTheBallsToTheImage) {
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    std::vector<BallDef> balls;
    auto ball = [&](Vec3 at) {
        BallDef b;
        b.position = at;
        b.radius = 0.4;
        balls.push_back(b);
    };
    for (int i = 0; i < 20; ++i)
        for (int k = 0; k < 20; ++k) ball({-9.5 + i, 0.5, -9.5 + k});
    ball({0, 1000, 0});
    world.add_balls(balls);
    const render::Framing framing = render::frame_world(world, 16.0 / 9.0);
    const render::Camera camera = framing.orbit.camera(framing.near, framing.far);
    double x_lo = 1e300, x_hi = -1e300, y_lo = 1e300, y_hi = -1e300;
    for (const Vec3 corner : {Vec3{-10, 0, -10}, Vec3{10, 0, -10}, Vec3{-10, 0, 10}, Vec3{10, 0, 10}}) {
        const auto p = camera.project(corner, 1600, 900);
        x_lo = std::min(x_lo, p.x), x_hi = std::max(x_hi, p.x), y_lo = std::min(y_lo, p.y), y_hi = std::max(y_hi, p.y);
    }
    EXPECT_GE(x_lo, 0.0);
    EXPECT_LE(x_hi, 1600.0);
    EXPECT_GE(y_lo, 0.0);
    EXPECT_LE(y_hi, 900.0);
    EXPECT_TRUE(x_hi - x_lo > 0.8 * 1600 || y_hi - y_lo > 0.8 * 900) << x_lo << ".." << x_hi << ", " << y_lo << ".." << y_hi;
    EXPECT_NEAR(0.5 * (x_lo + x_hi), 800.0, 0.1 * 1600);
    EXPECT_NEAR(0.5 * (y_lo + y_hi), 450.0, 0.1 * 900);
    EXPECT_GT(framing.far, 1000.0);  // the far ball is still drawn
}

TEST(Camera, OrbitLookingFromAnEyeAtATargetPutsItsCameraThere) {
    const render::OrbitCamera orbit = render::OrbitCamera::looking({3, 4, 12}, {-1, 0.5, 0}, 30.0);
    const render::Camera camera = orbit.camera(0.1, 100.0);
    EXPECT_NEAR(length(camera.eye - Vec3{3, 4, 12}), 0.0, 1e-12);
    EXPECT_EQ(camera.target, (Vec3{-1, 0.5, 0}));
    EXPECT_EQ(camera.fov_y_degrees, 30.0);
}

TEST(Camera, HookCameraRidesBehindTheBallAlongItsVelocity) {
    BallState ball;
    ball.position = {1, 2, 3};
    ball.velocity = {0, 0, -5};
    ball.radius = 0.5;
    const render::Camera camera = render::hook_camera(ball, {1, 0, 0}, 0.01, 100);
    EXPECT_GT(camera.eye.z, ball.position.z);             // behind
    EXPECT_LT(camera.target.z, ball.position.z);          // looking ahead
    const auto p = camera.project(ball.position, 640, 480);
    EXPECT_GT(p.depth, 0.0);
    EXPECT_NEAR(p.x, 320.0, 1.0);                         // straight ahead, a little below centre
}

// ------------------------------------------------------------------------------------------------
// The program's render command and headless default demo

int run(const std::string& command) {
    const int status = std::system(command.c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

class RenderCli : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern = (fs::temp_directory_path() / "ballistic-render-cli-XXXXXX").string();
        ASSERT_NE(mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
    }
    void TearDown() override { fs::remove_all(dir_); }
    // A ball of radius 1 on a floor, and the render command that draws it into `out` at 160x90.
    std::string one_ball_render(const fs::path& out) const {
        const fs::path scene = dir_ / "scene.json";
        std::ofstream(scene) << R"({"gravity": [0, -9.81, 0], "planes": [{"point": [0, 0, 0], "normal": [0, 1, 0]}],
          "balls": [{"position": [0, 1, 0], "velocity": [0, 0, 0], "radius": 1}]})";
        return std::string(BALLISTIC_EXE) + " render " + scene.string() + " --out " + out.string() + " --size 160x90";
    }
    fs::path dir_;
};

TEST_F(RenderCli, WritesEveryKthFrameWithoutValidationMessages) {
    const fs::path scene = dir_ / "scene.json";
    std::ofstream(scene) << R"({"gravity": [0, -9.81, 0], "planes": [{"point": [0, 0, 0], "normal": [0, 1, 0]}],
      "cylinders": [{"point": [3, 0, 0], "axis": [0, 1, 0], "radius": 1}],
      "generate": [{"count": 200, "radius": 0.2, "min": [-5, 1, -5], "max": [5, 6, 5], "speed": 2, "seed": 1}]})";
    const fs::path out = dir_ / "frames";
    const std::string command = std::string(BALLISTIC_EXE) + " render " + scene.string() + " --frames 5 --every 2 --out " +
                                out.string() + " --size 160x90 --validate >" + (dir_ / "out.txt").string() + " 2>&1";
    ASSERT_EQ(run(command), 0) << std::ifstream(dir_ / "out.txt").rdbuf();
    for (const char* name : {"frame_00000.png", "frame_00002.png", "frame_00004.png"}) {
        int w = 0, h = 0, channels = 0;
        stbi_uc* pixels = stbi_load((out / name).string().c_str(), &w, &h, &channels, 4);
        ASSERT_NE(pixels, nullptr) << name;
        EXPECT_EQ(w, 160);
        EXPECT_EQ(h, 90);
        stbi_image_free(pixels);
    }
    EXPECT_FALSE(fs::exists(out / "frame_00001.png"));
    EXPECT_EQ(run(std::string(BALLISTIC_EXE) + " render " + scene.string() + " --out " + out.string() +
                  " --size 12 >/dev/null 2>&1"),
              2);
}

TEST_F(RenderCli, LastFrameCameraAndCaption) {
    const fs::path out = dir_ / "frames";
    const std::string base = one_ball_render(out);
    // Frames 0 and 3 by --every, and the last one, 4.
    ASSERT_EQ(run(base + " --frames 5 --every 3 --caption --eye 0,1,8 --target 0,1,0 --fov 30 >/dev/null 2>&1"), 0);
    EXPECT_TRUE(fs::exists(out / "frame_00000.png") && fs::exists(out / "frame_00003.png") &&
                fs::exists(out / "frame_00004.png"));
    EXPECT_FALSE(fs::exists(out / "frame_00002.png"));
    // Looked at from the front, 8 away with 30°, the ball of radius 1 fills the middle of the
    // picture; the caption's white pixels sit in its top-left corner.
    int w = 0, h = 0, channels = 0;
    stbi_uc* pixels = stbi_load((out / "frame_00004.png").string().c_str(), &w, &h, &channels, 4);
    ASSERT_NE(pixels, nullptr);
    auto pixel = [&](int x, int y) { return pixels + (static_cast<std::size_t>(y) * static_cast<std::size_t>(w) + static_cast<std::size_t>(x)) * 4; };
    const std::uint8_t* centre = pixel(80, 45);
    const std::uint8_t* background = pixel(159, 89);
    EXPECT_GT(std::abs(int(centre[0]) - int(background[0])) + std::abs(int(centre[1]) - int(background[1])) +
                  std::abs(int(centre[2]) - int(background[2])),
              60);
    int white = 0;
    for (int y = 0; y < 20; ++y)
        for (int x = 0; x < 80; ++x) white += pixel(x, y)[0] == 255 && pixel(x, y)[1] == 255 && pixel(x, y)[2] == 255;
    EXPECT_GT(white, 20);
    stbi_image_free(pixels);
    // Bad camera options are input errors.
    EXPECT_EQ(run(base + " --eye 1,2 >/dev/null 2>&1"), 2);
    EXPECT_EQ(run(base + " --eye 1,2,3 --target 1,2,3 >/dev/null 2>&1"), 2);
    EXPECT_EQ(run(base + " --fov 180 >/dev/null 2>&1"), 2);
}

TEST_F(RenderCli, DurationEndsOnTheTimeAsked) {
    const fs::path out = dir_ / "frames";
    const std::string base = one_ball_render(out);
    // 0.06 s: frames at 0, 1/60, 2/60, 3/60 and the last at 0.06 (a partial frame).
    ASSERT_EQ(run(base + " --duration 0.06 --every 2 > " + (dir_ / "out.txt").string() + " 2>&1"), 0);
    std::stringstream text;
    text << std::ifstream(dir_ / "out.txt").rdbuf();
    EXPECT_NE(text.str().find("wrote 3 frame(s)"), std::string::npos) << text.str();
    for (const char* name : {"frame_00000.png", "frame_00002.png", "frame_00004.png"}) EXPECT_TRUE(fs::exists(out / name)) << name;
    EXPECT_FALSE(fs::exists(out / "frame_00005.png"));
    EXPECT_EQ(run(base + " --duration 0 >/dev/null 2>&1"), 2);
    EXPECT_EQ(run(base + " --duration 1 --frames 3 >/dev/null 2>&1"), 2);
}

TEST_F(RenderCli, DefaultWithoutDisplayPrintsTheSummaryAndWritesAPicture) {
    const std::string command = "cd " + dir_.string() + " && env -u DISPLAY -u WAYLAND_DISPLAY " + BALLISTIC_EXE +
                                " >" + (dir_ / "out.txt").string() + " 2>&1";
    ASSERT_EQ(run(command), 0);
    std::stringstream text;
    text << std::ifstream(dir_ / "out.txt").rdbuf();
    EXPECT_NE(text.str().find("state hash"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("picture           ballistic-demo.png"), std::string::npos) << text.str();
    EXPECT_TRUE(fs::exists(dir_ / "ballistic-demo.png"));
}

// ------------------------------------------------------------------------------------------------
// The window: needs a display; ctest runs this suite under xvfb-run (entry Window.UnderXvfb).

bool has_display() { return std::getenv("DISPLAY") != nullptr || std::getenv("WAYLAND_DISPLAY") != nullptr; }

render::ViewerOptions window_options() {
    render::ViewerOptions options;
    options.width = 320;
    options.height = 240;
    options.validation = true;
    options.require_validation = true;
    options.vsync = false;
    return options;
}

TEST(Window, OpensRendersFollowsAResizeAndClosesCleanly) {
    if (!has_display()) GTEST_SKIP() << "no DISPLAY (ctest runs this under xvfb-run)";
    ASSERT_TRUE(render::display_available());
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    world.add_cylinder({{3, 0, 0}, {0, 1, 0}, 0.5});
    world.add_ball({{0, 3, 0}, {1, 0, 0}, 0.5});
    render::ViewerOptions options = window_options();
    options.max_frames = 40;
    auto viewer = render::Viewer::create(world, options);
    ASSERT_TRUE(viewer) << viewer.error().message();
    for (int i = 0; i < 4; ++i) ASSERT_TRUE(viewer->frame());
    viewer->resize(400, 300);   // the swapchain must follow within the frames left
    auto report = viewer->run();
    ASSERT_TRUE(report) << report.error().message();
    EXPECT_EQ(report->frames, 40u);
    EXPECT_EQ(viewer->framebuffer_size(), (std::pair{400, 300}));
    EXPECT_GE(report->swapchain_rebuilds, 1u);
    EXPECT_TRUE(viewer->should_close());
    EXPECT_NEAR(world.time(), 40.0 / 60.0, 1e-9);   // one simulated frame per drawn frame
    for (const auto& message : report->validation_messages) ADD_FAILURE() << message;
}

TEST(Window, ClickPicksTheBallUnderTheCursorAndTheHookCameraRidesBehindIt) {
    if (!has_display()) GTEST_SKIP() << "no DISPLAY (ctest runs this under xvfb-run)";
    World world;
    world.add_plane({{0, -2, 0}, {0, 1, 0}});
    const BallId left = world.add_ball({{-2, 0, 0}, {0, 0, -1}, 0.7});
    const BallId right = world.add_ball({{2, 0, 0}, {0, 0, 1}, 0.7});
    render::ViewerOptions options = window_options();
    options.paused = true;
    auto viewer = render::Viewer::create(world, options);
    ASSERT_TRUE(viewer) << viewer.error().message();
    ASSERT_TRUE(viewer->frame());

    const render::Camera camera = viewer->camera();
    const auto at = camera.project({2, 0, 0}, options.width, options.height);
    const auto hit = viewer->click(at.x, at.y);
    ASSERT_TRUE(hit.has_value());
    EXPECT_EQ(hit->target, RayHit::Target::Ball);
    EXPECT_EQ(viewer->picked(), right);
    ASSERT_TRUE(viewer->frame());   // drawn highlighted, with the HUD showing its state

    const auto other = camera.project({-2, 0, 0}, options.width, options.height);
    viewer->click(other.x, other.y);
    EXPECT_EQ(viewer->picked(), left);
    viewer->click(2, 2);   // the sky: nothing picked
    EXPECT_FALSE(viewer->picked());

    viewer->hook(right);
    const render::Camera hooked = viewer->camera();
    EXPECT_LT(hooked.eye.z, 0.0);                  // behind a ball moving along +z
    EXPECT_GT(hooked.target.z, hooked.eye.z);      // looking along its velocity
    ASSERT_TRUE(viewer->frame());
    const auto report = viewer->report();
    for (const auto& message : report.validation_messages) ADD_FAILURE() << message;
}

TEST(Window, ViewCommandExitsAfterTheGivenFrames) {
    if (!has_display()) GTEST_SKIP() << "no DISPLAY (ctest runs this under xvfb-run)";
    const fs::path out = fs::temp_directory_path() / ("ballistic-view-" + std::to_string(::getpid()) + ".txt");
    const std::string command = std::string(BALLISTIC_EXE) + " view " + BALLISTIC_SCENES_DIR +
                                "/columns.json --frames 15 --size 320x240 --validate --no-vsync --tint-sleeping --eye 30,20,30 --target 0,5,0 "
                                "--fov 50 >" + out.string() + " 2>&1";
    const int status = std::system(command.c_str());
    std::stringstream text;
    text << std::ifstream(out).rdbuf();
    fs::remove(out);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << text.str();
    EXPECT_NE(text.str().find("viewed 15 frame(s)"), std::string::npos) << text.str();
}

// With a display, `ballistic` without a command still never opens a window (only `demo` and
// `view` do): it finishes on its own with the summary and the picture. The timeout turns a
// window waiting for its user into a failure instead of a hang.
TEST(Window, NoCommandNeverOpensAWindow) {
    if (!has_display()) GTEST_SKIP() << "no DISPLAY (ctest runs this under xvfb-run)";
    const fs::path dir = fs::temp_directory_path() / ("ballistic-nocommand-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string command = "cd " + dir.string() + " && timeout 300 " + BALLISTIC_EXE + " >out.txt 2>&1";
    const int status = std::system(command.c_str());
    std::stringstream text;
    text << std::ifstream(dir / "out.txt").rdbuf();
    const bool picture = fs::exists(dir / "ballistic-demo.png");
    fs::remove_all(dir);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << text.str();
    EXPECT_EQ(text.str().find("in a window"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("state hash"), std::string::npos) << text.str();
    EXPECT_TRUE(picture);
}

}  // namespace
