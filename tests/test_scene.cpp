// Scene files: every key read into the world, every kind of bad input named by its JSON path,
// and the run statistics helpers.
#include <ballistic/scene/scene.hpp>

#include <ballistic/generate.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

namespace ballistic::scene {
namespace {

using nlohmann::json;

Scene load(const std::string& text) { return load_scene_text(text, 1); }

// Loads `text` expecting a rejection naming `field`; the message must start with the field and
// contain `detail`.
void expect_rejected(const std::string& text, const std::string& field, const std::string& detail) {
    SCOPED_TRACE(text);
    try {
        (void)load(text);
        ADD_FAILURE() << "accepted";
    } catch (const InvalidArgument& error) {
        const std::string message = error.what();
        EXPECT_EQ(error.field(), field) << message;
        EXPECT_TRUE(message.starts_with(field.empty() ? "scene: " : field + ": ")) << message;
        EXPECT_NE(message.find(detail), std::string::npos) << message;
    }
}

// ------------------------------------------------------------------------------------------------
// Good scenes

TEST(SceneFile, EmptyObjectIsAnEmptyWorldWithDefaults) {
    const Scene scene = load("{}");
    EXPECT_EQ(scene.world.ball_count(), 0u);
    EXPECT_EQ(scene.world.plane_count(), 0u);
    EXPECT_EQ(scene.world.cylinder_count(), 0u);
    EXPECT_TRUE(scene.balls.empty());
    const WorldDef& def = scene.world.def();
    EXPECT_EQ(def.gravity, (Vec3{0, 0, 0}));
    EXPECT_EQ(def.restitution, 1.0);
    EXPECT_EQ(def.rest_speed, WorldDef{}.rest_speed);
    EXPECT_FALSE(def.periodic.has_value());
    EXPECT_EQ(def.threads, 1);
}

TEST(SceneFile, PeriodicAxes) {
    const Scene column = load(R"({"gravity": [0, -1, 0],
        "periodic": {"min": [0, 0, 0], "max": [10, 20, 10], "axes": [true, false, true]},
        "planes": [{"point": [0, 0, 0], "normal": [0, 1, 0]}],
        "balls": [{"position": [5, 1, 5], "velocity": [1, 0, 0], "radius": 0.5}]})");
    EXPECT_EQ(column.world.def().periodic_axes, (std::array<bool, 3>{true, false, true}));
    // The state file keeps them, and a world periodic along every axis does not write them.
    const json state = json::parse(state_json(column.world, column.balls));
    EXPECT_EQ(state["periodic"]["axes"], json::parse("[true, false, true]"));
    EXPECT_EQ(load(state.dump()).world.def().periodic_axes, (std::array<bool, 3>{true, false, true}));
    const Scene gas = load(R"({"periodic": {"min": [0, 0, 0], "max": [10, 10, 10]}})");
    EXPECT_FALSE(json::parse(state_json(gas.world, gas.balls))["periodic"].contains("axes"));
    expect_rejected(R"({"periodic": {"min": [0, 0, 0], "max": [9, 9, 9], "axes": [true, 1, true]}})",
                    "periodic.axes[1]", "true or false");
    expect_rejected(R"({"periodic": {"min": [0, 0, 0], "max": [9, 9, 9], "axes": [true]}})", "periodic.axes",
                    "3 booleans");
    expect_rejected(R"({"periodic": {"min": [0, 0, 0], "max": [9, 9, 9], "axes": [false, false, false]}})",
                    "periodic.axes", "none");
    expect_rejected(R"({"periodic": {"min": [0, 0, 0], "max": [9, 9, 9], "axes": [true, false, true]},
        "planes": [{"point": [0, 0, 0], "normal": [1, 0, 0]}]})", "planes[0].normal", "periodic axis x");
}

TEST(SceneFile, ReadsWorldSettings) {
    const Scene scene = load(R"({"gravity": [0.5, -9.81, 2], "restitution": 0.75, "friction": 0.25, "rest_speed": 0.01,
                                 "sleep_speed": 0.2, "sleep_time": 0.5, "sleep_events": 1e3, "sleep_interval": 0.25, "wake_lift": 0.5,
                                 "periodic": {"min": [-5, -6, -7], "max": [5, 6, 7]}})");
    const WorldDef& def = scene.world.def();
    EXPECT_EQ(def.gravity, (Vec3{0.5, -9.81, 2}));
    EXPECT_EQ(def.restitution, 0.75);
    EXPECT_EQ(def.friction, 0.25);
    EXPECT_EQ(def.rest_speed, 0.01);
    EXPECT_EQ(def.sleep_speed, 0.2);
    EXPECT_EQ(def.sleep_time, 0.5);
    EXPECT_EQ(def.sleep_events, 1000u);
    EXPECT_EQ(def.sleep_interval, 0.25);
    EXPECT_EQ(def.wake_lift, 0.5);
    // The state file (--state) keeps the settings.
    const WorldDef again = load(state_json(scene.world, scene.balls)).world.def();
    EXPECT_EQ(again.friction, 0.25);
    EXPECT_EQ(again.restitution, 0.75);
    EXPECT_EQ(again.sleep_events, 1000u);
    EXPECT_EQ(again.sleep_interval, 0.25);
    EXPECT_EQ(again.wake_lift, 0.5);
    ASSERT_TRUE(def.periodic.has_value());
    EXPECT_EQ(def.periodic->min, (Vec3{-5, -6, -7}));
    EXPECT_EQ(def.periodic->max, (Vec3{5, 6, 7}));
}

TEST(SceneFile, PassesTheThreadCount) {
    EXPECT_EQ(load_scene_text("{}", 3).world.def().threads, 3);
    EXPECT_EQ(load_scene_text("{}").world.def().threads, 0);
}

TEST(SceneFile, BoxIsSixInwardPlanesBeforeThePlanesList) {
    const Scene scene = load(R"({"box": {"min": [-1, -2, -3], "max": [4, 5, 6]},
                                 "planes": [{"point": [0, 0, 0], "normal": [0, 2, 0]}]})");
    ASSERT_EQ(scene.world.plane_count(), 7u);
    const Vec3 normals[] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
    const double offsets[] = {-1, 4, -2, 5, -3, 6};  // n·point for each face, along its axis
    for (std::uint32_t i = 0; i < 6; ++i) {
        const PlaneDef& plane = scene.world.plane(i);
        EXPECT_EQ(plane.normal, normals[i]) << i;
        const Vec3 axis{std::abs(normals[i].x), std::abs(normals[i].y), std::abs(normals[i].z)};
        EXPECT_EQ(dot(plane.point, axis), offsets[i]) << i;
    }
    EXPECT_EQ(scene.world.plane(6).normal, (Vec3{0, 1, 0}));
    // Inside the box is free, outside is not.
    EXPECT_TRUE(scene.world.is_free({1, 1, 1}, 0.5));
    EXPECT_FALSE(scene.world.is_free({4.2, 1, 1}, 0.5));
}

TEST(SceneFile, ReadsPlanesAndCylinders) {
    const Scene scene = load(R"({"planes": [{"point": [0, -1, 0], "normal": [0, 1, 0]},
                                            {"point": [3, 0, 0], "normal": [-1, 0, 0]}],
                                 "cylinders": [{"point": [1, 0, 2], "axis": [0, 3, 0], "radius": 0.5}]})");
    ASSERT_EQ(scene.world.plane_count(), 2u);
    EXPECT_EQ(scene.world.plane(1).point, (Vec3{3, 0, 0}));
    EXPECT_EQ(scene.world.plane(1).normal, (Vec3{-1, 0, 0}));
    ASSERT_EQ(scene.world.cylinder_count(), 1u);
    EXPECT_EQ(scene.world.cylinder(0).point, (Vec3{1, 0, 2}));
    EXPECT_EQ(scene.world.cylinder(0).axis, (Vec3{0, 1, 0}));
    EXPECT_EQ(scene.world.cylinder(0).radius, 0.5);
}

TEST(SceneFile, ReadsCapsulesAndBlocksAndWritesThemBack) {
    Scene scene = load(R"({"gravity": [0, -10, 0],
                           "capsules": [{"a": [0, 1, 0], "b": [0, 1, 4], "radius": 0.25},
                                        {"a": [3, 3, 3], "b": [3, 3, 3], "radius": 0.5}],
                           "blocks": [{"min": [-5, -1, -5], "max": [5, 0, 5]}],
                           "balls": [{"position": [2, 2, 2], "velocity": [0, 0, 0], "radius": 0.5}]})");
    ASSERT_EQ(scene.world.capsule_count(), 2u);
    EXPECT_EQ(scene.world.capsule(0).b, (Vec3{0, 1, 4}));
    EXPECT_EQ(scene.world.capsule(1).radius, 0.5);
    ASSERT_EQ(scene.world.block_count(), 1u);
    EXPECT_EQ(scene.world.block(0).min, (Vec3{-5, -1, -5}));
    const json state = json::parse(state_json(scene.world, scene.balls));
    ASSERT_EQ(state["capsules"].size(), 2u);
    EXPECT_EQ(state["capsules"][0]["b"][2].get<double>(), 4.0);
    ASSERT_EQ(state["blocks"].size(), 1u);
    const Scene again = load(state.dump());
    EXPECT_EQ(again.world.capsule_count(), 2u);
    EXPECT_EQ(again.world.block(0).max, (Vec3{5, 0, 5}));
    // Statistics per capsule and per block, like planes and cylinders.
    const RunStats stats = run_scene(scene, 1.0);
    EXPECT_EQ(stats.capsules.size(), 2u);
    ASSERT_EQ(stats.blocks.size(), 1u);
    EXPECT_GT(stats.blocks[0].hits, 0u);  // the ball falls on it
    EXPECT_EQ(stats.events.ball_block, stats.blocks[0].hits);
}

TEST(SceneFile, ReadsBallsInOrderWithDefaultMass) {
    const Scene scene = load(R"({"balls": [
        {"position": [1, 2, 3], "velocity": [4, 5, 6], "radius": 0.25},
        {"position": [-1, -2, -3], "velocity": [0, 0, 0], "radius": 0.5, "mass": 7}]})");
    ASSERT_EQ(scene.balls.size(), 2u);
    const BallState a = scene.world.ball(scene.balls[0]);
    const BallState b = scene.world.ball(scene.balls[1]);
    EXPECT_EQ(a.position, (Vec3{1, 2, 3}));
    EXPECT_EQ(a.velocity, (Vec3{4, 5, 6}));
    EXPECT_EQ(a.radius, 0.25);
    EXPECT_EQ(a.mass, 1.0);
    EXPECT_EQ(b.position, (Vec3{-1, -2, -3}));
    EXPECT_EQ(b.mass, 7.0);
}

TEST(SceneFile, GeneratedBallsFollowExplicitOnesAndAvoidThem) {
    const Scene scene = load(R"({
        "balls": [{"position": [5, 5, 5], "velocity": [0, 0, 0], "radius": 2}],
        "generate": [{"count": 50, "radius": 0.5, "min": [0, 0, 0], "max": [10, 10, 10], "speed": 2},
                     {"count": 20, "radius": 0.25, "mass": 3, "min": [0, 0, 0], "max": [10, 10, 10],
                      "temperature": 1.5, "zero_momentum": true, "seed": 9}]})");
    ASSERT_EQ(scene.balls.size(), 71u);
    EXPECT_EQ(scene.world.ball(scene.balls[0]).radius, 2.0);
    const Vec3 centre = scene.world.ball(scene.balls[0]).position;
    Vec3 momentum;
    for (std::size_t i = 1; i < scene.balls.size(); ++i) {
        const BallState ball = scene.world.ball(scene.balls[i]);
        EXPECT_EQ(ball.radius, i <= 50 ? 0.5 : 0.25) << i;
        EXPECT_EQ(ball.mass, i <= 50 ? 1.0 : 3.0) << i;
        if (i <= 50) {
            EXPECT_NEAR(length(ball.velocity), 2.0, 1e-14) << i;
        } else {
            momentum += ball.mass * ball.velocity;
        }
        EXPECT_GE(length(ball.position - centre), 2.0 + ball.radius) << i;
        // The second batch also avoids the first.
        for (std::size_t j = 1; j < i; ++j) {
            const BallState other = scene.world.ball(scene.balls[j]);
            EXPECT_GE(length(ball.position - other.position), ball.radius + other.radius) << i << " " << j;
        }
    }
    EXPECT_LT(length(momentum), 1e-12);
}

TEST(SceneFile, GenerateMatchesTheLibraryCallAndItsSeed) {
    const char* text = R"({"generate": [{"count": 30, "radius": 0.5, "min": [0, 0, 0], "max": [8, 8, 8],
                                         "temperature": 2, "seed": 77}]})";
    const Scene scene = load(text);
    GenerateDef def;
    def.count = 30;
    def.radius = 0.5;
    def.region = {{0, 0, 0}, {8, 8, 8}};
    def.velocity = GenerateDef::Velocity::Temperature;
    def.temperature = 2.0;
    def.seed = 77;
    const std::vector<BallDef> expected = generate_balls(World{}, def);
    ASSERT_EQ(scene.balls.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(scene.world.ball(scene.balls[i]).position, expected[i].position);
        EXPECT_EQ(scene.world.ball(scene.balls[i]).velocity, expected[i].velocity);
    }
}

TEST(SceneFile, AcceptsIntegralFloatsAsCounts) {
    EXPECT_EQ(load(R"({"generate": [{"count": 1e2, "radius": 0.1, "min": [0, 0, 0], "max": [5, 5, 5],
                                     "speed": 0, "seed": 4.0}]})")
                  .balls.size(),
              100u);
}

TEST(SceneFile, DefaultSceneIsTheLessonRoom) {
    const Scene scene = load(std::string(default_scene_text()));
    EXPECT_EQ(scene.world.plane_count(), 5u);
    EXPECT_EQ(scene.world.cylinder_count(), 3u);
    EXPECT_EQ(scene.balls.size(), 310u);
    EXPECT_EQ(scene.world.def().gravity, (Vec3{0, -9.81, 0}));
    EXPECT_EQ(scene.world.escaped_count(), 0u);
}

TEST(SceneFile, ExampleScenesLoadAndRun) {
    std::size_t count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(BALLISTIC_SCENES_DIR)) {
        if (entry.path().extension() != ".json") continue;
        SCOPED_TRACE(entry.path().string());
        Scene scene = load_scene_file(entry.path(), 1);
        EXPECT_GT(scene.balls.size() + scene.emitters.size(), 0u);
        EXPECT_EQ(scene.world.escaped_count(), 0u);
        run_scene(scene, 0.1);  // emitters emit
        EXPECT_GT(scene.balls.size(), 0u);
        EXPECT_EQ(scene.world.escaped_count(), 0u);
        EXPECT_LT(scene.world.max_overlap(), 1e-9);
        ++count;
    }
    EXPECT_GE(count, 6u);
}

TEST(Showcase, LessonFileIsTheDefaultScene) {
    Scene file = load_scene_file(std::filesystem::path(BALLISTIC_SCENES_DIR) / "lesson.json", 1);
    Scene built_in = load(std::string(default_scene_text()));
    advance(file.world, 1.0);
    advance(built_in.world, 1.0);
    EXPECT_EQ(file.world.state_hash(), built_in.world.state_hash());
}

TEST(Showcase, NewtonsCradlePassesTheImpulseThrough) {
    // The striker (2 units/s) meets the row of five touching balls at t = 1; the impulse passes
    // through the row at that instant and the last ball leaves at the striker's speed, every
    // other ball at rest. It meets the wall at x = 10 at t = 3.75, comes back to the row at
    // t = 6.5, and the striker, now the row's first ball, leaves to the left; and so on for ever.
    Scene cradle = load_scene_file(std::filesystem::path(BALLISTIC_SCENES_DIR) / "cradle.json", 1);
    ASSERT_EQ(cradle.balls.size(), 6u);
    const double energy = cradle.world.kinetic_energy();
    advance(cradle.world, 2.0);
    for (std::size_t k = 0; k < 6; ++k)
        EXPECT_EQ(cradle.world.ball(cradle.balls[k]).velocity, (Vec3{k == 5 ? 2.0 : 0.0, 0, 0})) << "ball " << k;
    EXPECT_NEAR(cradle.world.ball(cradle.balls[5]).position.x, 6.0, 1e-12);
    advance(cradle.world, 5.0);  // t = 7
    for (std::size_t k = 0; k < 6; ++k)
        EXPECT_EQ(cradle.world.ball(cradle.balls[k]).velocity, (Vec3{k == 0 ? -2.0 : 0.0, 0, 0})) << "ball " << k;
    EXPECT_EQ(cradle.world.event_counts().ball_ball, 10u);
    EXPECT_EQ(cradle.world.event_counts().ball_plane, 1u);
    advance(cradle.world, 93.0);
    EXPECT_EQ(cradle.world.kinetic_energy(), energy);
    EXPECT_LT(cradle.world.max_overlap(), 1e-12);
}

// Every ```json block of the README is a scene that loads and runs.
// Every ```json block of the README and of docs/ is a scene that loads and runs.
TEST(SceneFile, DocumentedExamplesLoad) {
    std::vector<std::filesystem::path> pages{BALLISTIC_README};
    for (const auto& entry : std::filesystem::directory_iterator(BALLISTIC_DOCS))
        if (entry.path().extension() == ".md") pages.push_back(entry.path());
    std::size_t count = 0;
    for (const auto& page : pages) {
        std::ifstream file(page);
        std::stringstream content;
        content << file.rdbuf();
        const std::string text = content.str();
        for (std::size_t at = text.find("```json\n"); at != std::string::npos; at = text.find("```json\n", at + 1)) {
            const std::size_t begin = at + 8, end = text.find("```", begin);
            ASSERT_NE(end, std::string::npos) << page;
            SCOPED_TRACE(page.string() + ":\n" + text.substr(begin, end - begin));
            Scene scene = load_scene_text(text.substr(begin, end - begin), 1);
            EXPECT_GT(scene.world.ball_count(), 0u);
            scene.world.step(0.1);
            EXPECT_EQ(scene.world.escaped_count(), 0u);
            ++count;
        }
    }
    EXPECT_GE(count, 2u);
}

// ------------------------------------------------------------------------------------------------
// Bad scenes

TEST(SceneErrors, UnknownKeysAnywhere) {
    expect_rejected(R"({"gravityy": [0, 0, 0]})", "gravityy", "unknown key");
    expect_rejected(R"({"box": {"min": [0, 0, 0], "max": [1, 1, 1], "centre": 1}})", "box.centre", "unknown key");
    expect_rejected(R"({"periodic": {"min": [0, 0, 0], "max": [9, 9, 9], "wrap": true}})", "periodic.wrap", "unknown key");
    expect_rejected(R"({"planes": [{"point": [0, 0, 0], "normal": [0, 1, 0], "size": 3}]})", "planes[0].size", "unknown key");
    expect_rejected(R"({"cylinders": [{"point": [0, 0, 0], "axis": [0, 1, 0], "radius": 1, "height": 2}]})",
                    "cylinders[0].height", "unknown key");
    expect_rejected(R"({"balls": [{"position": [0, 0, 0], "velocity": [0, 0, 0], "radius": 1},
                                  {"position": [3, 0, 0], "velocity": [0, 0, 0], "radius": 1, "colour": "red"}]})",
                    "balls[1].colour", "unknown key");
    expect_rejected(R"({"generate": [{"count": 1, "radius": 1, "min": [0, 0, 0], "max": [5, 5, 5], "speed": 0,
                                      "velocity": 3}]})",
                    "generate[0].velocity", "unknown key");
}

TEST(SceneErrors, WrongTypes) {
    expect_rejected(R"([1, 2])", "", "expected an object");
    expect_rejected(R"({"gravity": "down"})", "gravity", "expected an array of 3 numbers, got \"down\"");
    expect_rejected(R"({"restitution": "1"})", "restitution", "expected a number, got \"1\"");
    expect_rejected(R"({"rest_speed": true})", "rest_speed", "expected a number, got true");
    expect_rejected(R"({"periodic": [0, 1]})", "periodic", "expected an object");
    expect_rejected(R"({"planes": {"point": [0, 0, 0]}})", "planes", "expected an array of objects");
    expect_rejected(R"({"planes": [3]})", "planes[0]", "expected an object, got 3");
    expect_rejected(R"({"balls": [{"position": [0, 0, 0], "velocity": [0, 0, 0], "radius": 1},
                                  {"position": [3, 0, 0], "velocity": [0, 0, 0], "radius": 1},
                                  {"position": [6, 0, 0], "velocity": "fast", "radius": 1}]})",
                    "balls[2].velocity", "expected an array of 3 numbers, got \"fast\"");
    expect_rejected(R"({"balls": [{"position": [0, 0, 0], "velocity": [0, 0, 0], "radius": [1]}]})",
                    "balls[0].radius", "expected a number, got [1]");
    expect_rejected(R"({"generate": [{"count": 1, "radius": 1, "min": [0, 0, 0], "max": [5, 5, 5], "speed": 0,
                                      "zero_momentum": 1}]})",
                    "generate[0].zero_momentum", "expected true or false, got 1");
    expect_rejected(R"({"generate": [{"count": "many", "radius": 1, "min": [0, 0, 0], "max": [5, 5, 5], "speed": 0}]})",
                    "generate[0].count", "expected a non-negative integer");
}

TEST(SceneErrors, WrongArrayLengthsAndElements) {
    expect_rejected(R"({"gravity": [0, -9.81]})", "gravity", "expected an array of 3 numbers, got [0,-9.81]");
    expect_rejected(R"({"gravity": [0, -9.81, 0, 0]})", "gravity", "expected an array of 3 numbers");
    expect_rejected(R"({"box": {"min": [0, 0, null], "max": [1, 1, 1]}})", "box.min", "expected an array of 3 numbers");
    expect_rejected(R"({"planes": [{"point": [0, 0, 0], "normal": [[0], 1, 0]}]})", "planes[0].normal",
                    "expected an array of 3 numbers");
}

TEST(SceneErrors, NumbersOutOfRange) {
    expect_rejected(R"({"generate": [{"count": -3, "radius": 1, "min": [0, 0, 0], "max": [5, 5, 5], "speed": 0}]})",
                    "generate[0].count", "must be >= 0, got -3");
    expect_rejected(R"({"generate": [{"count": 2.5, "radius": 1, "min": [0, 0, 0], "max": [5, 5, 5], "speed": 0}]})",
                    "generate[0].count", "expected a non-negative integer, got 2.5");
    expect_rejected(R"({"generate": [{"count": 1, "radius": 1, "min": [0, 0, 0], "max": [5, 5, 5], "speed": 0,
                                      "seed": -1}]})",
                    "generate[0].seed", "must be >= 0");
    expect_rejected(R"({"generate": [{"count": 1, "radius": 1, "min": [0, 0, 0], "max": [5, 5, 5], "speed": 0,
                                      "seed": 1e30}]})",
                    "generate[0].seed", "expected a non-negative integer");
}

TEST(SceneErrors, NonFiniteNumbersAreSyntaxErrorsWithALine) {
    // JSON has no infinity; a literal too large for a double is reported where it stands.
    expect_rejected("{\n  \"restitution\": 1,\n  \"gravity\": [0, 1e400, 0]\n}", "", "line 3");
}

TEST(SceneErrors, SpeedAndTemperature) {
    expect_rejected(R"({"generate": [{"count": 1, "radius": 1, "min": [0, 0, 0], "max": [5, 5, 5],
                                      "speed": 1, "temperature": 1}]})",
                    "generate[0].temperature", "not both");
    expect_rejected(R"({"generate": [{"count": 1, "radius": 1, "min": [0, 0, 0], "max": [5, 5, 5]}]})",
                    "generate[0]", "needs \"speed\" or \"temperature\"");
    expect_rejected(R"({"generate": [{"count": 1, "radius": 1, "min": [0, 0, 0], "max": [5, 5, 5], "speed": -2}]})",
                    "generate[0].speed", "must be >= 0, got -2");
    expect_rejected(R"({"generate": [{"count": 1, "radius": 1, "min": [0, 0, 0], "max": [5, 5, 5], "temperature": -1}]})",
                    "generate[0].temperature", "must be >= 0, got -1");
}

TEST(SceneErrors, MissingRequiredKeys) {
    expect_rejected(R"({"box": {"min": [0, 0, 0]}})", "box.max", "missing");
    expect_rejected(R"({"periodic": {"max": [9, 9, 9]}})", "periodic.min", "missing");
    expect_rejected(R"({"planes": [{"point": [0, 0, 0]}]})", "planes[0].normal", "missing");
    expect_rejected(R"({"cylinders": [{"point": [0, 0, 0], "axis": [0, 1, 0]}]})", "cylinders[0].radius", "missing");
    expect_rejected(R"({"capsules": [{"a": [0, 0, 0], "b": [0, 1, 0]}]})", "capsules[0].radius", "missing");
    expect_rejected(R"({"capsules": [{"a": [0, 0, 0], "b": [0, 1, 0], "radius": 1, "c": 2}]})", "capsules[0].c",
                    "unknown key");
    expect_rejected(R"({"blocks": [{"min": [0, 0, 0]}]})", "blocks[0].max", "missing");
    expect_rejected(R"({"blocks": [{"min": [0, 0, 0], "max": [1, 0, 1]}]})", "blocks[0].max", "greater");
    expect_rejected(R"({"capsules": [{"a": [0, 0, 0], "b": [0, 1, 0], "radius": -1}]})", "capsules[0].radius", "");
    expect_rejected(R"({"periodic": {"min": [0, 0, 0], "max": [9, 9, 9]},
                        "capsules": [{"a": [1, 1, 1], "b": [2, 1, 1], "radius": 0.5}]})", "capsules[0]", "periodic");
    expect_rejected(R"({"balls": [{"position": [0, 0, 0], "radius": 1}]})", "balls[0].velocity", "missing");
    expect_rejected(R"({"generate": [{"radius": 1, "min": [0, 0, 0], "max": [5, 5, 5], "speed": 0}]})",
                    "generate[0].count", "missing");
}

TEST(SceneErrors, BoxesMustHaveVolume) {
    expect_rejected(R"({"box": {"min": [0, 0, 0], "max": [1, 0, 1]}})", "box.max", "greater than box.min");
    expect_rejected(R"({"periodic": {"min": [0, 0, 0], "max": [9, 9, -9]}})", "periodic.max",
                    "greater than periodic.min");
}

TEST(SceneErrors, EngineErrorsNameThePlaceInTheFile) {
    // The plane list starts after the box's six planes: the error must still say planes[1].
    expect_rejected(R"({"box": {"min": [-9, -9, -9], "max": [9, 9, 9]},
                        "planes": [{"point": [0, 0, 0], "normal": [0, 1, 0]},
                                   {"point": [0, 0, 0], "normal": [0, 0, 0]}]})",
                    "planes[1].normal", "");
    expect_rejected(R"({"cylinders": [{"point": [0, 0, 0], "axis": [0, 1, 0], "radius": 0}]})",
                    "cylinders[0].radius", "");
    expect_rejected(R"({"cylinders": [{"point": [0, 0, 0], "axis": [0, 0, 0], "radius": 1}]})",
                    "cylinders[0].axis", "");
    expect_rejected(R"({"balls": [{"position": [0, 0, 0], "velocity": [0, 0, 0], "radius": 1},
                                  {"position": [3, 0, 0], "velocity": [0, 0, 0], "radius": 1},
                                  {"position": [6, 0, 0], "velocity": [0, 0, 0], "radius": -1}]})",
                    "balls[2].radius", "");
    expect_rejected(R"({"balls": [{"position": [0, 0, 0], "velocity": [0, 0, 0], "radius": 1, "mass": 0}]})",
                    "balls[0].mass", "");
    expect_rejected(R"({"restitution": 1.5})", "restitution", "");
    expect_rejected(R"({"rest_speed": 0})", "rest_speed", "");
    expect_rejected(R"({"rest_speed": 0.5, "sleep_speed": 0.2})", "rest_speed", "must be <= sleep_speed (0.2)");
    expect_rejected(R"({"friction": -0.5})", "friction", "must be >= 0, got -0.5");
    expect_rejected(R"({"sleep_speed": -1})", "sleep_speed", "");
    expect_rejected(R"({"sleep_time": "long"})", "sleep_time", "expected a number");
    expect_rejected(R"({"sleep_events": 0})", "sleep_events", "must be >= 1, got 0");
    expect_rejected(R"({"sleep_events": -3})", "sleep_events", "must be >= 1, got -3");
    expect_rejected(R"({"sleep_events": 1e10})", "sleep_events", "");
    expect_rejected(R"({"balls": [{"position": [0, 0, 0], "velocity": [0, 0, 0], "radius": 1, "sleeping": 1}]})",
                    "balls[0].sleeping", "expected true or false, got 1");
    expect_rejected(R"({"balls": [{"position": [0, 0, 0], "velocity": [0, 0, 0], "radius": 1, "sleeping": true}]})",
                    "balls[0].sleeping", "no ball can sleep in this world");
}

TEST(SceneRun, TheStateFileKeepsWhichBallsSleep) {
    // Three balls stacked on the floor sleep; a fourth falls beside them.
    Scene scene = load(R"({"gravity": [0, -9.81, 0], "restitution": 0.5,
                           "planes": [{"point": [0, 0, 0], "normal": [0, 1, 0]}],
                           "balls": [{"position": [0, 1, 0], "velocity": [0, 0, 0], "radius": 1},
                                     {"position": [0, 3, 0], "velocity": [0, 0, 0], "radius": 1},
                                     {"position": [0, 5, 0], "velocity": [0, 0, 0], "radius": 1},
                                     {"position": [9, 50, 0], "velocity": [0, 0, 0], "radius": 1}]})");
    (void)run_scene(scene, 1.0);
    const json state = json::parse(state_json(scene.world, scene.balls));
    for (std::size_t i = 0; i < 4; ++i)
        EXPECT_EQ(state["balls"][i].value("sleeping", false), i < 3) << state["balls"][i].dump();
    Scene again = load(state.dump());
    for (std::size_t i = 0; i < 4; ++i) EXPECT_EQ(again.world.sleeping(again.balls[i]), i < 3);
    const json twice = json::parse(state_json(again.world, again.balls));
    EXPECT_EQ(twice["balls"], state["balls"]);
}

TEST(SceneRun, ASettledStackSleepsAndTheStatisticsSaySo) {
    Scene scene = load(R"({"gravity": [0, -9.81, 0], "restitution": 0.5, "sleep_time": 0.2,
                           "planes": [{"point": [0, 0, 0], "normal": [0, 1, 0]}],
                           "balls": [{"position": [0, 1, 0], "velocity": [0, 0, 0], "radius": 1},
                                     {"position": [0, 3, 0], "velocity": [0, 0, 0], "radius": 1},
                                     {"position": [0, 5.5, 0], "velocity": [0, 0, 0], "radius": 1}]})");
    const RunStats stats = run_scene(scene, 3.0);
    EXPECT_EQ(stats.sleeping, 3u);
    EXPECT_EQ(json::parse(stats_json(stats))["sleeping"].get<std::size_t>(), 3u);
    EXPECT_NE(summary_text(stats).find("sleeping          3"), std::string::npos);
}

TEST(SceneErrors, GenerateErrorsNameTheEntry) {
    expect_rejected(R"({"generate": [{"count": 5, "radius": 0.5, "min": [0, 0, 0], "max": [5, 5, 5], "speed": 0},
                                     {"count": 5, "radius": -1, "min": [0, 0, 0], "max": [5, 5, 5], "speed": 0}]})",
                    "generate[1].radius", "must be > 0, got -1");
    expect_rejected(R"({"generate": [{"count": 1000, "radius": 0.5, "min": [0, 0, 0], "max": [5, 5, 5], "speed": 0}]})",
                    "generate[0].count", "only 64 balls");
}

TEST(SceneErrors, DuplicateKeys) {
    expect_rejected(R"({"balls": [{"position": [0, 0, 0], "velocity": [0, 0, 0], "radius": 1, "radius": 2}]})",
                    "balls[0].radius", "duplicate key");
    expect_rejected(R"({"gravity": [0, 0, 0], "gravity": [0, -1, 0]})", "gravity", "duplicate key");
}

TEST(SceneErrors, SyntaxErrorsGiveLineAndColumn) {
    expect_rejected("{\n  \"gravity\": [0, 0, 0],\n  \"restitution\": ,\n}", "", "line 3, column");
    expect_rejected("{\"gravity\": [0, 0, 0]", "", "line 1");
    expect_rejected("", "", "invalid JSON");
}

// ------------------------------------------------------------------------------------------------
// Files

class SceneFiles : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern = (std::filesystem::temp_directory_path() / "ballistic-scene-XXXXXX").string();
        ASSERT_NE(mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    std::filesystem::path write(const std::string& name, const std::string& text) {
        const std::filesystem::path path = dir_ / name;
        std::ofstream(path) << text;
        return path;
    }

    std::filesystem::path dir_;
};

TEST_F(SceneFiles, LoadsAFile) {
    const auto path = write("one.json", R"({"balls": [{"position": [1, 2, 3], "velocity": [0, 0, 0], "radius": 1}]})");
    EXPECT_EQ(load_scene_file(path).balls.size(), 1u);
}

TEST_F(SceneFiles, ErrorsNameTheFile) {
    const auto path = write("bad.json", "{\n\"balls\": [{\"position\": [1, 2], \"velocity\": [0, 0, 0], \"radius\": 1}]}");
    try {
        (void)load_scene_file(path);
        FAIL() << "accepted";
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "balls[0].position");
        EXPECT_EQ(std::string(error.what()), path.string() + ": balls[0].position: expected an array of 3 numbers, got [1,2]");
    }
}

TEST_F(SceneFiles, SyntaxErrorsNameFileAndLine) {
    const auto path = write("syntax.json", "{\n  \"gravity\": [0, 0, 0]\n  \"restitution\": 1\n}");
    try {
        (void)load_scene_file(path);
        FAIL() << "accepted";
    } catch (const InvalidArgument& error) {
        const std::string message = error.what();
        EXPECT_TRUE(message.starts_with(path.string() + ": line 3, column")) << message;
    }
}

TEST_F(SceneFiles, MissingFileIsAnError) {
    const auto path = dir_ / "absent.json";
    try {
        (void)load_scene_file(path);
        FAIL() << "accepted";
    } catch (const InvalidArgument& error) {
        const std::string message = error.what();
        EXPECT_NE(message.find(path.string()), std::string::npos) << message;
        EXPECT_NE(message.find("cannot open"), std::string::npos) << message;
    }
}

// ------------------------------------------------------------------------------------------------
// Running and reporting

TEST(SceneRun, AdvanceReachesTheDurationInFrames) {
    for (const double duration : {1.0, 0.01, 2.5, 1.0 / 60.0, 0.5, 10.0, 1e-7}) {
        World world;
        advance(world, duration);
        EXPECT_EQ(world.time(), duration) << duration;
        advance(world, 0.75);
        EXPECT_NEAR(world.time(), duration + 0.75, 1e-15 * (duration + 0.75)) << duration;
    }
}

// A run's event budget stops the run at that event and leaves the world its own step budget.
TEST(SceneRun, RunBudgetStopsAndRestoresTheStepBudget) {
    Scene scene = load(R"({"periodic": {"min": [0, 0, 0], "max": [20, 20, 20]},
        "generate": [{"count": 500, "radius": 0.5, "min": [0, 0, 0], "max": [20, 20, 20], "temperature": 1}]})");
    World& world = scene.world;
    const std::uint64_t own = world.def().step_event_budget;
    EXPECT_THROW(advance(world, 100.0, {nullptr, 5000}), BudgetExceeded);
    EXPECT_EQ(world.events_processed(), 5000u);
    EXPECT_EQ(world.def().step_event_budget, own);
    advance(world, 0.1, {nullptr, 1000000});
    EXPECT_EQ(world.def().step_event_budget, own);
}

// The stop flag (a signal) ends a run at an event inside a frame, and the world keeps no flag.
TEST(SceneRun, StopFlagEndsTheRunInsideAFrame) {
    Scene scene = load(R"({"periodic": {"min": [0, 0, 0], "max": [20, 20, 20]},
        "generate": [{"count": 500, "radius": 0.5, "min": [0, 0, 0], "max": [20, 20, 20], "temperature": 1e14}]})");
    World& world = scene.world;
    std::atomic<bool> stop{false};
    std::thread setter([&stop] {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        stop = true;
    });
    // At these speeds one frame is about 10⁷ collisions: the flag ends the run inside it.
    RunControl control{&stop};
    control.on_frame = [](const World&) { ADD_FAILURE() << "the frame ended"; };
    EXPECT_FALSE(advance(world, 1.0, control));
    setter.join();
    EXPECT_GT(world.time(), 0.0);
    EXPECT_LT(world.max_overlap(), 1e-9);
    const std::uint64_t events = world.events_processed();
    world.step(1e-6);  // the flag, still set, is no longer the world's: the step goes on
    EXPECT_GT(world.events_processed(), events);
}

TEST(SceneRun, TotalEnergyCountsHeightAndSpeed) {
    const Scene scene = load(R"({"gravity": [0, -10, 0],
        "balls": [{"position": [0, 3, 0], "velocity": [4, 0, 0], "radius": 1, "mass": 2},
                  {"position": [5, -1, 0], "velocity": [0, 0, 0], "radius": 1}]})");
    EXPECT_DOUBLE_EQ(total_energy(scene), 2 * 10 * 3 + 0.5 * 2 * 16 + 1 * 10 * -1);
}

// The regions' share of a run: none on one thread; on two, the pour's first frames cut into two
// regions that process events at once, and the run ends in the same state.
TEST(SceneRun, StatsTellHowTheRegionsSharedTheEvents) {
    const std::string pour = std::string(BALLISTIC_SCENES_DIR) + "/pour.json";
    Scene one = load_scene_file(pour, 1);
    Scene two = load_scene_file(pour, 2);
    const RunStats serial = run_scene(one, 0.05);
    const RunStats shared = run_scene(two, 0.05);
    EXPECT_EQ(serial.regions.count, 1u);
    EXPECT_EQ(serial.regions.events, 0u);
    EXPECT_EQ(serial.regions.runs, 0u);
    EXPECT_EQ(shared.regions.count, 2u);
    EXPECT_GT(shared.regions.events, 0u);
    EXPECT_GT(shared.regions.runs, 0u);
    EXPECT_EQ(shared.regions.processed, serial.regions.processed);
    EXPECT_GT(shared.regions.share(), 0.0);
    EXPECT_LE(shared.regions.share(), 1.0);
    EXPECT_EQ(shared.state_hash, serial.state_hash);
    const nlohmann::json document = nlohmann::json::parse(stats_json(shared));
    EXPECT_EQ(document["regions"]["count"].get<std::uint32_t>(), 2u);
    EXPECT_EQ(document["regions"]["events"].get<std::uint64_t>(), shared.regions.events);
    EXPECT_EQ(document["regions"]["undone"].get<std::uint64_t>(), shared.regions.undone);
}

TEST(SceneRun, StatsCoverTheRunAndSerialiseEveryKey) {
    Scene scene = load(R"({"box": {"min": [0, 0, 0], "max": [10, 10, 10]},
        "cylinders": [{"point": [5, 0, 5], "axis": [0, 1, 0], "radius": 1}],
        "generate": [{"count": 40, "radius": 0.5, "min": [0, 0, 0], "max": [10, 10, 10], "speed": 5}]})");
    const RunStats stats = run_scene(scene, 2.0);
    EXPECT_EQ(stats.balls, 40u);
    EXPECT_NEAR(stats.time, 2.0, 1e-12);
    EXPECT_GT(stats.events.ball_plane, 0u);
    EXPECT_EQ(stats.planes.size(), 6u);
    EXPECT_EQ(stats.cylinders.size(), 1u);
    EXPECT_FALSE(stats.pressure.has_value());
    EXPECT_EQ(stats.threads, 1);
    EXPECT_NEAR(stats.kinetic_energy_end, stats.kinetic_energy_start, 1e-9 * stats.kinetic_energy_start);
    EXPECT_EQ(stats.state_hash, scene.world.state_hash());

    const json document = json::parse(stats_json(stats));
    for (const char* key : {"balls", "time", "events", "planes", "cylinders", "kinetic_energy", "energy", "momentum",
                            "temperature", "pressure", "max_overlap", "escaped", "sleeping", "cells", "threads", "regions", "wall_seconds",
                            "events_per_second", "state_hash"}) {
        EXPECT_TRUE(document.contains(key)) << key;
    }
    EXPECT_EQ(document["events"]["total"].get<std::uint64_t>(), stats.events.collisions());
    EXPECT_EQ(document["events"]["ball_plane"].get<std::uint64_t>(), stats.events.ball_plane);
    EXPECT_EQ(document["planes"].size(), 6u);
    EXPECT_EQ(document["planes"][0]["hits"].get<std::uint64_t>(), stats.planes[0].hits);
    EXPECT_TRUE(document["pressure"].is_null());
    EXPECT_EQ(document["momentum"]["end"].size(), 3u);
    char hash[32];
    std::snprintf(hash, sizeof hash, "0x%016llx", static_cast<unsigned long long>(stats.state_hash));
    EXPECT_EQ(document["state_hash"].get<std::string>(), hash);

    const std::string summary = summary_text(stats);
    EXPECT_NE(summary.find(hash), std::string::npos) << summary;
    EXPECT_NE(summary.find("relative drift"), std::string::npos) << summary;
}

TEST(SceneRun, PeriodicWorldsReportPressure) {
    Scene scene = load(R"({"periodic": {"min": [0, 0, 0], "max": [12, 12, 12]},
        "generate": [{"count": 100, "radius": 0.5, "min": [0, 0, 0], "max": [12, 12, 12], "temperature": 1}]})");
    const RunStats stats = run_scene(scene, 1.0);
    ASSERT_TRUE(stats.pressure.has_value());
    EXPECT_GT(*stats.pressure, 0.0);
    EXPECT_TRUE(json::parse(stats_json(stats))["pressure"].is_number());
}

TEST(SceneRun, StateListsBallsInInputOrderWithRoundTripNumbers) {
    Scene scene = load(R"({"balls": [
        {"position": [0.1, 0.2, 0.3], "velocity": [1, 0, 0], "radius": 0.05},
        {"position": [5, 5, 5], "velocity": [0, 0, -0.7], "radius": 0.05}]})");
    advance(scene.world, 0.3);
    const json state = json::parse(state_json(scene.world, scene.balls));
    EXPECT_EQ(state["time"].get<double>(), scene.world.time());
    ASSERT_EQ(state["balls"].size(), 2u);
    for (std::size_t i = 0; i < 2; ++i) {
        const BallState ball = scene.world.ball(scene.balls[i]);
        const auto& p = state["balls"][i]["position"];
        const auto& v = state["balls"][i]["velocity"];
        EXPECT_EQ((Vec3{p[0].get<double>(), p[1].get<double>(), p[2].get<double>()}), ball.position);
        EXPECT_EQ((Vec3{v[0].get<double>(), v[1].get<double>(), v[2].get<double>()}), ball.velocity);
    }
    EXPECT_GT(state["balls"][1]["position"][0].get<double>(), 4.0);
}

}  // namespace
}  // namespace ballistic::scene

// ------------------------------------------------------------------------------------------------
// Emitters

namespace ballistic::scene {
namespace {

// One spout at (0, 10, 0) throwing balls of radius 0.01 along +x at speed 1, one every 0.05 from
// 0.02 (inside the second frame), under g = 9.81, elastic, in an open world.
constexpr const char* kSpout = R"({"gravity": [0, -9.81, 0],
    "emitters": [{"position": [0, 10, 0], "velocity": [1, 0, 0], "radius": 0.01, "count": 10,
                  "interval": 0.05, "start": 0.02}]})";

TEST(Emitters, ReleaseTheirBallsAtTheTimesTheyAreDue) {
    Scene scene = load(kSpout);
    EXPECT_EQ(scene.world.ball_count(), 0u);
    const RunStats stats = run_scene(scene, 1.0);
    ASSERT_EQ(scene.balls.size(), 10u);
    EXPECT_EQ(stats.emitted, 10u);
    EXPECT_EQ(scene.emitters[0].emitted, 10u);
    // Ball k comes out at the spout at 0.02 + 0.05 k, inside a frame: at the run's end it is
    // where its flight since then puts it.
    const double end = scene.world.time();
    for (std::size_t k = 0; k < 10; ++k) {
        const double t = end - (0.02 + 0.05 * static_cast<double>(k));
        const BallState ball = scene.world.ball(scene.balls[k]);
        EXPECT_NEAR(ball.position.x, t, 1e-12) << k;
        EXPECT_NEAR(ball.position.y, 10 - 0.5 * 9.81 * t * t, 1e-12) << k;
        EXPECT_NEAR(ball.velocity.y, -9.81 * t, 1e-12) << k;
    }
    // The energy the balls brought is accounted for: nothing else changed it.
    EXPECT_GT(stats.energy_emitted, 0.0);
    EXPECT_LT(stats.relative_energy_drift(), 1e-12);
    EXPECT_NE(stats_json(stats).find("\"emitted\": 10"), std::string::npos);
}

TEST(Emitters, ABallMeetsWhatIsInItsWayFromTheInstantItIsDue) {
    // Due at 0.001, a ball leaves the spout at 10 towards a resting ball of the same mass 0.1
    // ahead of it: they meet at 0.011, inside the first frame, and the elastic head-on collision
    // hands all the motion on. Frames of any length give the same.
    for (const double frame : {kFrame, 0.004, 0.5}) {
        Scene scene = load(R"({"balls": [{"position": [0.3, 0, 0], "velocity": [0, 0, 0], "radius": 0.1}],
            "emitters": [{"position": [0, 0, 0], "velocity": [10, 0, 0], "radius": 0.1, "count": 1,
                          "interval": 1, "start": 0.001}]})");
        while (scene.world.time() < 0.05 - 1e-12) step(scene, std::min(frame, 0.05 - scene.world.time()));
        ASSERT_EQ(scene.balls.size(), 2u) << frame;
        const BallState emitted = scene.world.ball(scene.balls[1]), hit = scene.world.ball(scene.balls[0]);
        EXPECT_EQ(scene.world.event_counts().ball_ball, 1u) << frame;
        EXPECT_NEAR(emitted.position.x, 0.1, 1e-12) << frame;
        EXPECT_NEAR(emitted.velocity.x, 0.0, 1e-12) << frame;
        EXPECT_NEAR(hit.position.x, 0.3 + 10 * (0.05 - 0.011), 1e-12) << frame;
        EXPECT_NEAR(hit.velocity.x, 10.0, 1e-12) << frame;
    }
}

TEST(Emitters, WaitWhileTheirSpoutIsTaken) {
    Scene scene = load(R"({"balls": [{"position": [0, 0, 0], "velocity": [0, 0, 0], "radius": 0.5}],
        "emitters": [{"position": [0, 0.5, 0], "velocity": [0, 10, 0], "radius": 0.5, "count": 3,
                      "interval": 0.001}]})");
    for (int k = 0; k < 5; ++k) {
        step(scene, kFrame);  // the resting ball takes the spout's place
        EXPECT_EQ(scene.balls.size(), 1u);
        EXPECT_EQ(scene.emitters[0].next, scene.world.time());  // due again at the step's end
    }
    scene.world.set_position(scene.balls[0], {0, -5, 0});
    // The first ball comes out at the next step's start; the next, due 0.001 later, is too close
    // behind it to fit and waits to the step's end.
    step(scene, kFrame);
    ASSERT_EQ(scene.balls.size(), 2u);
    EXPECT_NEAR(scene.world.ball(scene.balls[1]).position.y, 0.5 + 10 * kFrame, 1e-12);
    EXPECT_EQ(scene.emitters[0].next, scene.world.time());
    for (int k = 0; k < 60; ++k) step(scene, kFrame);
    EXPECT_EQ(scene.balls.size(), 4u);
    EXPECT_EQ(scene.emitters[0].emitted, 3u);
    EXPECT_LT(scene.world.max_overlap(), 1e-12);
}

TEST(Emitters, BallsThatLeaveThroughAPeriodicFaceComeInThroughTheOther) {
    // A spout just inside the +x face throwing balls along +x in a box periodic along x: each
    // ball soon leaves through the face and comes in through the other.
    Scene scene = load(R"({"periodic": {"min": [0, 0, 0], "max": [10, 10, 10]},
        "emitters": [{"position": [9.95, 5, 5], "velocity": [6, 0, 0], "radius": 0.2, "count": 5,
                      "interval": 0.5, "start": 0.01}]})");
    const RunStats stats = run_scene(scene, 3.0);
    EXPECT_EQ(stats.emitted, 5u);
    for (std::size_t k = 0; k < 5; ++k) {
        const double flown = 6 * (scene.world.time() - (0.01 + 0.5 * static_cast<double>(k)));
        EXPECT_NEAR(scene.world.ball(scene.balls[k]).position.x, std::fmod(9.95 + flown, 10.0), 1e-9) << k;
    }
}

TEST(Emitters, ProgressSurvivesTheStateFileAndASnapshot) {
    Scene whole = load(kSpout), first = load(kSpout);
    run_scene(whole, 0.3);
    run_scene(first, 0.3);
    // --state: the emitters with their progress, read back.
    const Scene from_state = load(state_json(first.world, first.balls, first.emitters));
    ASSERT_EQ(from_state.emitters.size(), 1u);
    EXPECT_EQ(from_state.emitters[0].emitted, first.emitters[0].emitted);
    EXPECT_EQ(from_state.emitters[0].next, first.emitters[0].next);
    EXPECT_EQ(from_state.balls.size(), first.balls.size());
    // --checkpoint: the world's snapshot and the emitters after it continue bit for bit.
    std::stringstream bytes;
    first.world.save(bytes);
    Scene restored{World::restore(bytes), {}};
    restored.balls = first.balls;
    // Another world's emitters are refused, by its state hash.
    try {
        read_emitters(restored, emitters_json(World{}, first.emitters));
        ADD_FAILURE() << "another world's emitters were read";
    } catch (const InvalidArgument& error) {
        EXPECT_EQ(error.field(), "state_hash");
    }
    read_emitters(restored, emitters_json(first.world, first.emitters));
    run_scene(whole, 0.7);
    run_scene(restored, 0.7);
    EXPECT_EQ(restored.emitters[0].emitted, 10u);
    EXPECT_EQ(restored.world.state_hash(), whole.world.state_hash());
}

TEST(Emitters, AnEmptySpoutWrittenLongAfterItsLastBallLoads) {
    // The Galton board written at 320 s by --state: its spout emptied at 300 s.
    Scene first = load_scene_text(R"({"gravity": [0, -9.81, 0], "planes": [{"point": [0, 0, 0], "normal": [0, 1, 0]}],
        "emitters": [{"position": [0, 5, 0], "radius": 0.5, "count": 3, "interval": 0.1}]})", 1);
    run_scene(first, 2.0);
    ASSERT_EQ(first.emitters[0].emitted, 3u);
    Scene again = load_scene_text(state_json(first.world, first.balls, first.emitters), 1);
    EXPECT_EQ(again.world.ball_count(), 3u);
    EXPECT_EQ(again.emitters[0].emitted, 3u);
    run_scene(again, 1.0);
    EXPECT_EQ(again.world.ball_count(), 3u);
}

TEST(Emitters, BadValuesAreNamed) {
    auto spout = [](const std::string& extra) {
        return R"({"emitters": [{"position": [0, 0, 0], "radius": 0.5, "count": 2, "interval": 0.1)" + extra +
               "}]}";
    };
    expect_rejected(spout(R"(, "spread": [1, -1, 0])"), "emitters[0].spread", ">= 0");
    expect_rejected(spout(R"(, "mass": 0)"), "emitters[0].mass", "");
    expect_rejected(spout(R"(, "emitted": 3)"), "emitters[0].emitted", "at most");
    expect_rejected(spout(R"(, "start": 1, "next": 2)"), "emitters[0].next", "not both");
    expect_rejected(spout(R"(, "velocity": [1e300, 0, 0])"), "emitters[0].velocity", "");
    expect_rejected(spout(R"(, "rate": 3)"), "emitters[0].rate", "");
    expect_rejected(R"({"emitters": [{"position": [0, 0, 0], "radius": 0.5, "count": 2, "interval": 0}]})",
                    "emitters[0].interval", "> 0");
    expect_rejected(R"({"emitters": [{"position": [0, 0, 0], "radius": 0.5, "count": 1e15, "interval": 1}]})",
                    "emitters[0].count", "memory limit");
    expect_rejected(R"({"emitters": [{"position": [0, 0, 0], "radius": -1, "count": 1, "interval": 1}]})",
                    "emitters[0].radius", "");
    expect_rejected(spout(R"(, "start": -1)"), "emitters[0].start", "before the scene's time");
    expect_rejected(R"({"time": 5, "emitters": [{"position": [0, 0, 0], "radius": 0.5, "count": 2, "interval": 0.1,
                      "next": 4}]})", "emitters[0].next", "a frame");
    expect_rejected(R"({"time": 1e9, "emitters": [{"position": [0, 0, 0], "radius": 0.5, "count": 2,
                      "interval": 1e-12}]})", "emitters[0].interval", "too small");
    // Counts that would wrap a 64-bit sum, and one beyond 2^53 written as an integer.
    expect_rejected(R"({"emitters": [{"position": [0, 0, 0], "radius": 0.5, "count": 10, "interval": 1},
                      {"position": [5, 0, 0], "radius": 0.5, "count": 18446744073709551615, "emitted": 4,
                       "interval": 1}]})", "emitters[1].count", "below");
    expect_rejected(R"({"emitters": [{"position": [0, 0, 0], "radius": 0.5, "count": 10, "interval": 1},
                      {"position": [5, 0, 0], "radius": 0.5, "count": 9007199254740000, "emitted": 4,
                       "interval": 1}]})", "emitters[1].count", "memory limit");
    // A spout whose place is taken by a static for good: behind a wall, or in a peg.
    expect_rejected(R"({"box": {"min": [0, 0, 0], "max": [10, 10, 10]},
                      "emitters": [{"position": [5, 5, 5], "spread": [5, 0, 0], "radius": 0.5, "count": 2,
                                    "interval": 1}]})", "emitters[0].position", "");
    expect_rejected(R"({"capsules": [{"a": [0, 0, -1], "b": [0, 0, 1], "radius": 0.3}],
                      "emitters": [{"position": [0, 0.5, 0], "radius": 0.5, "count": 2, "interval": 1}]})",
                    "emitters[0].position", "");
}


// A floor under gravity, and in a row on it `asleep` balls asleep and `awake` balls standing still.
std::string settling_note_of(double restitution, double friction, int asleep, int awake) {
    std::ostringstream text;
    text << R"({"gravity": [0, -9.81, 0], "restitution": )" << restitution << R"(, "friction": )" << friction
         << R"(, "planes": [{"point": [0, 0, 0], "normal": [0, 1, 0]}], "balls": [)";
    for (int k = 0; k < asleep + awake; ++k)
        text << (k ? ", " : "") << R"({"position": [)" << 2 * k << R"(, 0.5, 0], "velocity": [0, 0, 0], "radius": 0.5)"
             << (k < asleep ? R"(, "sleeping": true})" : "}");
    text << "]}";
    return settling_note(load_scene_text(text.str()).world);
}

TEST(SettlingNote, NamesFrictionWhereMostSlowBallsStayAwake) {
    const std::string note = settling_note_of(0.7, 0.0, 10, 20);
    EXPECT_NE(note.find("20 awake slower than sleep_speed, 10 asleep"), std::string::npos) << note;
    EXPECT_NE(note.find("\"friction\""), std::string::npos) << note;
}

TEST(SettlingNote, SilentWhereFrictionElasticityOrSleepExplainIt) {
    EXPECT_EQ(settling_note_of(0.7, 0.5, 10, 20), "");  // friction settles it
    EXPECT_EQ(settling_note_of(1.0, 0.0, 0, 20), "");   // an elastic world never settles
    EXPECT_EQ(settling_note_of(0.7, 0.0, 20, 20), "");  // as many asleep as slow and awake
    EXPECT_EQ(settling_note_of(0.7, 0.0, 0, 0), "");
}

}  // namespace
}  // namespace ballistic::scene
