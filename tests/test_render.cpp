// Renderer tests that look at pixels, through whatever Vulkan device the loader offers (Mesa's
// lavapipe on machines without a GPU), with the validation layers required and every message
// counted as a failure.
#include <ballistic/render/camera.hpp>
#include <ballistic/render/renderer.hpp>
#include <ballistic/render/viewer.hpp>
#include <ballistic/world.hpp>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

using namespace ballistic;
using namespace ballistic::render;

namespace {

constexpr int kWidth = 320, kHeight = 240;

class Render : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        GpuOptions options;
        options.validation = true;
        options.require_validation = true;
        auto created = Gpu::create(options);
        ASSERT_TRUE(created.ok()) << created.error().message();
        gpu_ = new Gpu(std::move(created.value()));
    }
    static void TearDownTestSuite() {
        delete gpu_;
        gpu_ = nullptr;
    }
    void TearDown() override {
        ASSERT_NE(gpu_, nullptr);
        for (const auto& m : gpu_->validation_messages()) ADD_FAILURE() << "validation: " << m;
    }

    Image draw(const World& world, const Camera& camera, const FrameStyle& style,
               const Explosions* explosions = nullptr) {
        auto renderer = OffscreenRenderer::create(*gpu_, kWidth, kHeight);
        EXPECT_TRUE(renderer.ok()) << renderer.error().message();
        auto image = renderer->render(world, camera, style, explosions);
        EXPECT_TRUE(image.ok()) << image.error().message();
        return image.ok() ? image.value() : Image{};
    }

    static Gpu* gpu_;
};
Gpu* Render::gpu_ = nullptr;

FrameStyle flat() {
    FrameStyle style;
    style.lighting = false;
    style.explosions = false;
    style.background = {0.0f, 0.0f, 0.0f};
    return style;
}

std::array<std::uint8_t, 3> srgb(std::array<float, 3> c) { return {to_srgb8(c[0]), to_srgb8(c[1]), to_srgb8(c[2])}; }

void expect_colour(const Image& image, double x, double y, std::array<std::uint8_t, 3> want, const char* what) {
    const auto p = image.pixel(static_cast<int>(x), static_cast<int>(y));
    for (int c = 0; c < 3; ++c)
        EXPECT_NEAR(int(p[static_cast<std::size_t>(c)]), int(want[static_cast<std::size_t>(c)]), 2)
            << what << " at (" << x << ", " << y << ") channel " << c;
}

Camera looking_down_z(double distance) {
    Camera camera;
    camera.eye = {0, 0, distance};
    camera.target = {0, 0, 0};
    camera.near = 0.1;
    camera.far = 200.0;
    return camera;
}

}  // namespace

TEST_F(Render, BallCentreHasItsColourAndBackgroundElsewhere) {
    World world;
    const BallId id = world.add_ball({{2, 1, 0}, {}, 1.0, 1.0});
    const Camera camera = looking_down_z(20);
    const Image image = draw(world, camera, flat());
    ASSERT_EQ(image.width, kWidth);
    const auto centre = camera.project({2, 1, 0}, kWidth, kHeight);
    expect_colour(image, centre.x, centre.y, srgb(ball_color(id)), "ball centre");
    // Just outside the projected disc, and far away: background.
    const auto beside = camera.project({2, 1 + 1.3, 0}, kWidth, kHeight);
    expect_colour(image, beside.x, beside.y, {0, 0, 0}, "beside the ball");
    expect_colour(image, 5, 5, {0, 0, 0}, "corner");
}

TEST_F(Render, NearerOfTwoOverlappingBallsWins) {
    World world;
    const BallId far_ball = world.add_ball({{0, 0, -5}, {}, 2.0, 1.0});
    const BallId near_ball = world.add_ball({{0.5, 0, 0}, {}, 1.0, 1.0});
    const Camera camera = looking_down_z(20);
    const Image image = draw(world, camera, flat());
    const auto at = camera.project({0.5, 0, 1}, kWidth, kHeight);  // the near ball's front point
    expect_colour(image, at.x, at.y, srgb(ball_color(near_ball)), "overlap");
    const auto edge = camera.project({-1.6, 0, -5}, kWidth, kHeight);  // only the far ball there
    expect_colour(image, edge.x, edge.y, srgb(ball_color(far_ball)), "far ball alone");
}

TEST_F(Render, WallAndColumnAppearWhereTheyShould) {
    World world;
    world.add_plane({{0, 0, -10}, {0, 0, 1}});            // a back wall facing the camera
    world.add_cylinder({{4, 0, 0}, {0, 1, 0}, 1.0});      // an upright column to the right
    world.add_ball({{-4, 0, 0}, {}, 1.0, 1.0});
    const Camera camera = looking_down_z(20);
    const Image image = draw(world, camera, flat());
    const auto column = camera.project({4, 0, 1}, kWidth, kHeight);
    expect_colour(image, column.x, column.y, srgb(kCylinderColor), "column");
    const auto wall = camera.project({0, 4, -10}, kWidth, kHeight);
    const auto p = image.pixel(static_cast<int>(wall.x), static_cast<int>(wall.y));
    const auto light = srgb(kPlaneColor);
    const auto dark = srgb({kPlaneColor[0] * 0.72f, kPlaneColor[1] * 0.72f, kPlaneColor[2] * 0.72f});
    const bool checker = std::abs(int(p[0]) - int(light[0])) <= 2 || std::abs(int(p[0]) - int(dark[0])) <= 2;
    EXPECT_TRUE(checker) << "wall pixel " << int(p[0]) << " is neither checker colour";
    EXPECT_GT(int(p[0]), 20);
}

TEST_F(Render, ExplosionAppearsAfterAnImpact) {
    World world;
    world.add_plane({{0, 0, -10}, {0, 0, 1}});
    const BallId id = world.add_ball({{0, 0, -5}, {10, 0, -20}, 0.5, 1.0});  // hits the wall at t = 0.225, x = 2.25
    Explosions explosions;
    const Camera camera = looking_down_z(20);
    FrameStyle style = flat();
    style.explosions = true;
    const Image before = draw(world, camera, style, &explosions);
    world.step(0.35);  // the ball has moved on to x = 3.5, clear of the impact point
    explosions.update(world);
    ASSERT_EQ(explosions.live().size(), 1u);
    const Vec3 point = explosions.live().front().point;
    EXPECT_NEAR(point.z, -10.0, 1e-9);
    const Image after = draw(world, camera, style, &explosions);
    const auto at = camera.project(point, kWidth, kHeight);
    EXPECT_NEAR(point.x, 2.25, 1e-9);
    const auto a = before.pixel(static_cast<int>(at.x), static_cast<int>(at.y));
    const auto b = after.pixel(static_cast<int>(at.x), static_cast<int>(at.y));
    const bool changed = a[0] != b[0] || a[1] != b[1] || a[2] != b[2];
    const auto ball = camera.project(world.ball(id).position, kWidth, kHeight);
    EXPECT_GT(std::hypot(ball.x - at.x, ball.y - at.y), 10.0) << "the ball hides the impact point";
    EXPECT_TRUE(changed) << "the impact point looks the same with its explosion";
}

TEST_F(Render, ManyBallsInOneDraw) {
    World world;
    std::vector<BallDef> defs;
    for (int i = 0; i < 100; ++i)
        for (int j = 0; j < 100; ++j) defs.push_back({{i * 0.3 - 15, j * 0.3 - 15, 0}, {}, 0.1, 1.0});
    world.add_balls(defs);
    const Camera camera = looking_down_z(40);
    const Image image = draw(world, camera, flat());
    int lit = 0;
    for (int y = 0; y < kHeight; ++y)
        for (int x = 0; x < kWidth; ++x) lit += image.pixel(x, y)[0] + image.pixel(x, y)[1] + image.pixel(x, y)[2] > 0;
    EXPECT_GT(lit, kWidth * kHeight / 20);
}

// The window: needs an X display (the ctest entry runs this suite under xvfb-run).
TEST(Window, OpensRendersAndClosesUnderX) {
    if (std::getenv("DISPLAY") == nullptr) GTEST_SKIP() << "no DISPLAY (run under xvfb-run)";
    WorldDef def;
    def.gravity = {0, -9.81, 0};
    World world(def);
    world.add_plane({{0, 0, 0}, {0, 1, 0}});
    world.add_ball({{0, 3, 0}, {1, 0, 0}, 0.5, 1.0});
    ViewerOptions options;
    options.width = 320;
    options.height = 240;
    options.max_frames = 10;
    options.validation = true;
    options.require_validation = true;
    auto viewer = Viewer::create(world, options);
    ASSERT_TRUE(viewer.ok()) << viewer.error().message();
    viewer->resize(400, 300);  // the swapchain must follow
    auto report = viewer->run();
    ASSERT_TRUE(report.ok()) << report.error().message();
    EXPECT_EQ(report->frames, 10u);
    EXPECT_TRUE(report->validation_messages.empty()) << report->validation_messages.front();
    EXPECT_GT(world.time(), 0.0);
}
