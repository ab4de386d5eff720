// The `ballistic` program end to end: scenes written to a temporary directory, the real binary
// run on them, exit codes, stats and state files checked against closed forms.
#include <ballistic/generate.hpp>
#include <ballistic/version.hpp>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <numbers>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

using nlohmann::json;
namespace fs = std::filesystem;

struct Result {
    int exit_code = -1;
    std::string out;
    std::string err;
};

std::string read_file(const fs::path& path) {
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
}

ballistic::Vec3 vec(const json& array) {
    return {array.at(0).get<double>(), array.at(1).get<double>(), array.at(2).get<double>()};
}

class Cli : public ::testing::Test {
protected:
    void SetUp() override {
        std::string pattern = (fs::temp_directory_path() / "ballistic-cli-XXXXXX").string();
        ASSERT_NE(mkdtemp(pattern.data()), nullptr);
        dir_ = pattern;
    }
    void TearDown() override { fs::remove_all(dir_); }

    fs::path write(const std::string& name, const std::string& text) {
        const fs::path path = dir_ / name;
        std::ofstream(path) << text;
        return path;
    }

    fs::path path(const std::string& name) const { return dir_ / name; }

    // Runs the program with `args` (already shell-safe: the temporary paths hold no spaces).
    Result run(const std::string& args) {
        const fs::path out = dir_ / "stdout.txt";
        const fs::path err = dir_ / "stderr.txt";
        const std::string command =
            std::string(BALLISTIC_EXE) + " " + args + " >" + out.string() + " 2>" + err.string();
        const int status = std::system(command.c_str());
        Result result;
        result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        result.out = read_file(out);
        result.err = read_file(err);
        return result;
    }

    // Runs a scene expecting success; returns the stats (from stdout).
    json run_ok(const fs::path& scene, const std::string& options) {
        const Result result = run("run " + scene.string() + " " + options);
        EXPECT_EQ(result.exit_code, 0) << result.err;
        return json::parse(result.out.empty() ? "{}" : result.out);
    }

    fs::path dir_;
};

// A dilute hard-sphere gas in a periodic cube, at temperature 1.
std::string periodic_gas(std::size_t count, double radius, double phi) {
    const double side = std::cbrt(static_cast<double>(count) * 4.0 / 3.0 * std::numbers::pi * std::pow(radius, 3) / phi);
    const json scene = {
        {"periodic", {{"min", {0, 0, 0}}, {"max", {side, side, side}}}},
        {"generate",
         {{{"count", count}, {"radius", radius}, {"min", {0, 0, 0}}, {"max", {side, side, side}},
           {"temperature", 1.0}, {"zero_momentum", true}, {"seed", 5}}}}};
    return scene.dump();
}

constexpr const char* kBoxGas = R"({
  "gravity": [0, -2, 0],
  "box": {"min": [0, 0, 0], "max": [12, 12, 12]},
  "cylinders": [{"point": [6, 0, 6], "axis": [0, 1, 0], "radius": 1.5}],
  "generate": [{"count": 300, "radius": 0.4, "min": [0, 0, 0], "max": [12, 12, 12], "speed": 3, "seed": 11}]
})";

// ------------------------------------------------------------------------------------------------
// Default scene and help

TEST_F(Cli, NoCommandRunsTheLessonScene) {
    const Result result = run("");
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_NE(result.out.find("NeHe"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("balls             310"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("relative drift"), std::string::npos) << result.out;
    EXPECT_NE(result.out.find("escaped           0"), std::string::npos) << result.out;
    EXPECT_TRUE(std::regex_search(result.out, std::regex("state hash +0x[0-9a-f]{16}"))) << result.out;
}

TEST_F(Cli, HelpForTheProgramAndTheRunCommand) {
    const Result top = run("--help");
    EXPECT_EQ(top.exit_code, 0);
    EXPECT_NE(top.out.find("run"), std::string::npos) << top.out;
    const Result sub = run("run --help");
    EXPECT_EQ(sub.exit_code, 0);
    for (const char* option : {"--duration", "--threads", "--stats", "--state"}) {
        EXPECT_NE(sub.out.find(option), std::string::npos) << option << "\n" << sub.out;
    }
}

TEST_F(Cli, VersionIsTheProjectVersion) {
    const Result result = run("--version");
    EXPECT_EQ(result.exit_code, 0) << result.err;
    EXPECT_EQ(result.out, std::string("ballistic ") + ballistic::kVersion + "\n");
    EXPECT_TRUE(std::regex_match(std::string(ballistic::kVersion), std::regex("[0-9]+\\.[0-9]+\\.[0-9]+")));
}

// ------------------------------------------------------------------------------------------------
// Exit codes

TEST_F(Cli, BadInputExitsWithTwoAndSaysWhy) {
    const fs::path good = write("good.json", R"({"balls": [{"position": [0, 0, 0], "velocity": [1, 0, 0], "radius": 1}]})");
    const fs::path unknown = write("unknown.json", R"({"balls": [{"position": [0, 0, 0], "velocity": [1, 0, 0], "radius": 1, "colour": "red"}]})");
    const fs::path syntax = write("syntax.json", "{\n  \"gravity\": [0, 0, 0],\n  \"balls\": [,]\n}");
    struct Case {
        std::string args;
        std::string says;
    };
    const std::vector<Case> cases = {
        {"run " + unknown.string(), "balls[0].colour: unknown key"},
        {"run " + syntax.string(), syntax.string() + ": line 3"},
        {"run " + path("absent.json").string(), "absent.json"},
        {"run " + good.string() + " --duration 0", "--duration"},
        {"run " + good.string() + " --duration -1", "--duration"},
        {"run " + good.string() + " --duration nan", "--duration"},
        {"run " + good.string() + " --duration inf", "--duration"},
        {"run " + good.string() + " --duration soon", "--duration"},
        {"run " + good.string() + " --threads -1", "--threads"},
        {"run " + good.string() + " --frobnicate", "frobnicate"},
        {"run", "scene"},
        {"walk " + good.string(), "walk"},
    };
    for (const Case& c : cases) {
        const Result result = run(c.args);
        EXPECT_EQ(result.exit_code, 2) << c.args << "\n" << result.err;
        EXPECT_NE(result.err.find(c.says), std::string::npos) << c.args << "\n" << result.err;
    }
}

TEST_F(Cli, UnwritableOutputExitsWithOne) {
    const fs::path good = write("good.json", R"({"balls": [{"position": [0, 0, 0], "velocity": [1, 0, 0], "radius": 1}]})");
    // A directory cannot be opened as a file, not even by root.
    const Result stats = run("run " + good.string() + " --duration 0.1 --stats " + dir_.string());
    EXPECT_EQ(stats.exit_code, 1) << stats.err;
    EXPECT_NE(stats.err.find("stats"), std::string::npos) << stats.err;
    const Result state = run("run " + good.string() + " --duration 0.1 --state " + (dir_ / "no" / "such" / "dir").string());
    EXPECT_EQ(state.exit_code, 1) << state.err;
}

// ------------------------------------------------------------------------------------------------
// Results against closed forms

TEST_F(Cli, FreeFallFollowsTheParabola) {
    const ballistic::Vec3 p0{1.0, 2.0, 3.0};
    const ballistic::Vec3 v0{0.5, 10.0, -1.25};
    const ballistic::Vec3 g{0.0, -9.81, 0.0};
    const fs::path scene = write("fall.json", R"({"gravity": [0, -9.81, 0],
        "balls": [{"position": [1, 2, 3], "velocity": [0.5, 10, -1.25], "radius": 0.5}]})");
    const json stats = run_ok(scene, "--duration 1 --state " + path("state.json").string());
    const json state = json::parse(read_file(path("state.json")));
    const double t = state["time"].get<double>();
    EXPECT_EQ(t, 1.0);
    EXPECT_EQ(stats["time"].get<double>(), t);
    const ballistic::Vec3 expected_p = p0 + v0 * t + 0.5 * g * t * t;
    const ballistic::Vec3 expected_v = v0 + g * t;
    const ballistic::Vec3 p = vec(state["balls"][0]["position"]);
    const ballistic::Vec3 v = vec(state["balls"][0]["velocity"]);
    EXPECT_NEAR(p.x, expected_p.x, 1e-12);
    EXPECT_NEAR(p.y, expected_p.y, 1e-12);
    EXPECT_NEAR(p.z, expected_p.z, 1e-12);
    EXPECT_NEAR(v.x, expected_v.x, 1e-12);
    EXPECT_NEAR(v.y, expected_v.y, 1e-12);
    EXPECT_NEAR(v.z, expected_v.z, 1e-12);
    EXPECT_EQ(stats["events"]["total"].get<std::uint64_t>(), 0u);
    EXPECT_EQ(stats["balls"].get<std::size_t>(), 1u);
    // Kinetic plus potential energy is conserved along the parabola.
    const double e0 = stats["energy"]["start"].get<double>();
    EXPECT_NEAR(stats["energy"]["end"].get<double>(), e0, 1e-12 * std::abs(e0));
}

TEST_F(Cli, PeriodicElasticGasConservesEnergyAndMomentum) {
    const fs::path scene = write("gas.json", periodic_gas(500, 0.5, 0.2));
    const json stats = run_ok(scene, "--duration 2 --threads 1");
    const double start = stats["kinetic_energy"]["start"].get<double>();
    const double end = stats["kinetic_energy"]["end"].get<double>();
    EXPECT_GT(stats["events"]["ball_ball"].get<std::uint64_t>(), 1000u);
    EXPECT_NEAR(end, start, 1e-9 * start);
    const ballistic::Vec3 momentum = vec(stats["momentum"]["end"]);
    EXPECT_LT(ballistic::length(momentum), 1e-9 * std::sqrt(2.0 * start * 500));
    EXPECT_EQ(stats["escaped"].get<std::size_t>(), 0u);
    EXPECT_LT(stats["max_overlap"].get<double>(), 1e-9);
    EXPECT_TRUE(stats["planes"].empty());
    EXPECT_TRUE(stats["cylinders"].empty());
    EXPECT_EQ(stats["threads"].get<int>(), 1);
}

TEST_F(Cli, DiluteGasPressureIsNearIdeal) {
    // P = ρ kT Z with Z = (1 + φ + φ² − φ³)/(1 − φ)³ (Carnahan–Starling): Z ≈ 1.08 at φ = 0.02,
    // so both the kinetic and the collisional part must be right to land within 3 %.
    const std::size_t count = 1000;
    const double radius = 0.5;
    const double phi = 0.02;
    const fs::path scene = write("dilute.json", periodic_gas(count, radius, phi));
    const json stats = run_ok(scene, "--duration 20");
    ASSERT_TRUE(stats["pressure"].is_number()) << stats.dump();
    const double volume = static_cast<double>(count) * 4.0 / 3.0 * std::numbers::pi * std::pow(radius, 3) / phi;
    const double rho = static_cast<double>(count) / volume;
    const double kT = stats["temperature"].get<double>();
    const double z = (1 + phi + phi * phi - phi * phi * phi) / std::pow(1 - phi, 3);
    EXPECT_NEAR(kT, 1.0, 0.1);
    EXPECT_NEAR(stats["pressure"].get<double>() / (rho * kT), z, 0.03);
}

TEST_F(Cli, StatsKeysAndCountersInABox) {
    const fs::path scene = write("box.json", kBoxGas);
    const Result result = run("run " + scene.string() + " --duration 2 --threads 1 --stats " + path("stats.json").string());
    ASSERT_EQ(result.exit_code, 0) << result.err;
    EXPECT_TRUE(result.out.empty()) << result.out;
    const json stats = json::parse(read_file(path("stats.json")));
    for (const char* key : {"balls", "time", "events", "planes", "cylinders", "kinetic_energy", "momentum",
                            "temperature", "pressure", "max_overlap", "escaped", "sleeping", "cells", "threads", "regions", "wall_seconds",
                            "events_per_second", "state_hash"}) {
        EXPECT_TRUE(stats.contains(key)) << key;
    }
    EXPECT_EQ(stats["balls"].get<std::size_t>(), 300u);
    const json& events = stats["events"];
    const auto bb = events["ball_ball"].get<std::uint64_t>();
    const auto bp = events["ball_plane"].get<std::uint64_t>();
    const auto bc = events["ball_cylinder"].get<std::uint64_t>();
    EXPECT_EQ(events["total"].get<std::uint64_t>(), bb + bp + bc);
    EXPECT_GT(bb, 0u);
    EXPECT_GT(bc, 0u);
    ASSERT_EQ(stats["planes"].size(), 6u);
    std::uint64_t plane_hits = 0;
    for (const json& plane : stats["planes"]) {
        EXPECT_GT(plane["hits"].get<std::uint64_t>(), 0u);
        EXPECT_GT(plane["impulse"].get<double>(), 0.0);
        plane_hits += plane["hits"].get<std::uint64_t>();
    }
    EXPECT_EQ(plane_hits, bp);
    ASSERT_EQ(stats["cylinders"].size(), 1u);
    EXPECT_EQ(stats["cylinders"][0]["hits"].get<std::uint64_t>(), bc);
    EXPECT_TRUE(stats["pressure"].is_null());
    EXPECT_EQ(stats["escaped"].get<std::size_t>(), 0u);
    EXPECT_EQ(stats["threads"].get<int>(), 1);
    EXPECT_GE(stats["cells"]["width"].get<double>(), 2 * 0.4);  // at least a diameter
    EXPECT_EQ(stats["momentum"]["start"].size(), 3u);
    const double wall = stats["wall_seconds"].get<double>();
    EXPECT_GT(wall, 0.0);
    EXPECT_NEAR(stats["events_per_second"].get<double>(), static_cast<double>(bb + bp + bc) / wall,
                1e-9 * stats["events_per_second"].get<double>());
    EXPECT_TRUE(std::regex_match(stats["state_hash"].get<std::string>(), std::regex("0x[0-9a-f]{16}")));
    // Elastic walls and gravity: kinetic plus potential energy is conserved.
    const double e0 = stats["energy"]["start"].get<double>();
    EXPECT_NEAR(stats["energy"]["end"].get<double>(), e0, 1e-9 * std::abs(e0));
}

TEST_F(Cli, AllThreadsIsTheDefault) {
    const fs::path scene = write("one.json", R"({"balls": [{"position": [0, 0, 0], "velocity": [1, 0, 0], "radius": 1}]})");
    const json stats = run_ok(scene, "--duration 0.1");
    EXPECT_GE(stats["threads"].get<int>(), 1);
    EXPECT_TRUE(stats["cells"]["width"].is_null()) << "one cell for a single ball: " << stats["cells"];
    EXPECT_EQ(run_ok(scene, "--duration 0.1 --threads 3")["threads"].get<int>(), 3);
    // More threads than CPUs run as asked, without oneTBB's warning that it would not.
    const Result many = run("run " + scene.string() + " --duration 0.1 --threads 64");
    ASSERT_EQ(many.exit_code, 0) << many.err;
    EXPECT_EQ(json::parse(many.out)["threads"].get<int>(), 64);
    EXPECT_EQ(many.err.find("TBB"), std::string::npos) << many.err;
}

TEST_F(Cli, StateIsInInputOrder) {
    // Speed 0 and no gravity: the generated balls stay where generate_balls puts them.
    const std::string text = R"({
      "balls": [{"position": [1, 1, 1], "velocity": [0.25, 0, 0], "radius": 0.5},
                {"position": [8, 8, 8], "velocity": [0, -0.5, 0.125], "radius": 0.5}],
      "generate": [{"count": 7, "radius": 0.5, "min": [0, 0, 0], "max": [10, 10, 10], "speed": 0, "seed": 3}]})";
    const fs::path scene = write("order.json", text);
    run_ok(scene, "--duration 0.5 --state " + path("state.json").string());
    const json state = json::parse(read_file(path("state.json")));
    ASSERT_EQ(state["balls"].size(), 9u);
    const double t = state["time"].get<double>();
    // The engine moves balls frame by frame: positions carry a few roundings per frame.
    EXPECT_LT(ballistic::length(vec(state["balls"][0]["position"]) - ballistic::Vec3{1 + 0.25 * t, 1, 1}), 1e-12);
    EXPECT_LT(ballistic::length(vec(state["balls"][1]["position"]) - ballistic::Vec3{8, 8 - 0.5 * t, 8 + 0.125 * t}), 1e-12);
    EXPECT_EQ(vec(state["balls"][1]["velocity"]), (ballistic::Vec3{0, -0.5, 0.125}));

    ballistic::World world;
    world.add_balls(std::vector<ballistic::BallDef>{{{1, 1, 1}, {0.25, 0, 0}, 0.5, 1.0}, {{8, 8, 8}, {0, -0.5, 0.125}, 0.5, 1.0}});
    ballistic::GenerateDef def;
    def.count = 7;
    def.radius = 0.5;
    def.region = {{0, 0, 0}, {10, 10, 10}};
    def.seed = 3;
    const std::vector<ballistic::BallDef> generated = ballistic::generate_balls(world, def, "generate[0]");
    for (std::size_t i = 0; i < generated.size(); ++i) {
        EXPECT_EQ(vec(state["balls"][2 + i]["position"]), generated[i].position) << i;
    }
}

TEST_F(Cli, ThreadCountDoesNotChangeTheResult) {
    const fs::path scene = write("box.json", kBoxGas);
    const json one = run_ok(scene, "--duration 3 --threads 1 --state " + path("one.json").string());
    const json two = run_ok(scene, "--duration 3 --threads 2 --state " + path("two.json").string());
    EXPECT_EQ(one["state_hash"], two["state_hash"]);
    EXPECT_EQ(one["events"], two["events"]);
    EXPECT_EQ(read_file(path("one.json")), read_file(path("two.json")));
}

TEST_F(Cli, RegionsAlwaysOrWhenFasterGiveTheSameResult) {
    // 12 000 balls: above WorldDef::parallel_events_min_balls, so two threads cut it into regions.
    const fs::path scene = write("many.json", R"({"box": {"min": [0, 0, 0], "max": [40, 40, 40]},
      "generate": [{"count": 12000, "radius": 0.5, "min": [0, 0, 0], "max": [40, 40, 40], "speed": 5, "seed": 9}]})");
    const json one = run_ok(scene, "--duration 0.2 --threads 1");
    const json always = run_ok(scene, "--duration 0.2 --threads 2 --always-regions");
    const json faster = run_ok(scene, "--duration 0.2 --threads 2");
    EXPECT_EQ(always["regions"]["count"].get<int>(), 2);
    EXPECT_GT(always["regions"]["share"].get<double>(), 0.9) << always["regions"];
    for (const json& two : {always, faster}) {
        EXPECT_EQ(two["state_hash"], one["state_hash"]);
        EXPECT_EQ(two["events"], one["events"]);
    }
}

}  // namespace

// ------------------------------------------------------------------------------------------------
// Bad input and limits (docs/cli.md, "Bad input and limits"): exit 2 and the field, limit or path named

TEST_F(Cli, HostileInputIsRefusedWithTheLimitNamed) {
    const fs::path good = write("good.json", R"({"balls": [{"position": [0, 0, 0], "velocity": [1, 0, 0], "radius": 1}]})");
    const fs::path nul = write("nul.json", std::string("{\"balls\": []}\0{\"gravity\": 1}", 28));
    const fs::path deep = write("deep.json", std::string(100000, '[') + std::string(100000, ']'));
    const fs::path huge = write("huge.json", R"({"gravity": [0, -1e308, 0], "balls": []})");
    const fs::path many = write("many.json", R"({"generate": [{"count": 1000000000, "radius": 0.5, "min": [0, 0, 0],
        "max": [1e4, 1e4, 1e4], "speed": 1}]})");
    const fs::path late = write("late.json", R"({"time": 1e16, "balls": [{"position": [0, 0, 0], "velocity": [1, 0, 0], "radius": 1}]})");
    struct Case {
        std::string args;
        std::string says;
    };
    const std::vector<Case> cases = {
        {"run " + dir_.string(), dir_.string() + ": cannot open scene file: not a regular file (a directory)"},
        {"run /dev/zero", "/dev/zero: cannot open scene file: not a regular file"},
        {"run " + nul.string(), "byte 13 is a NUL character"},
        {"run " + deep.string(), "nested deeper than 64 arrays and objects (the limit on JSON depth)"},
        {"run " + huge.string(), "gravity: must be at most 1e+30 in magnitude"},
        {"run " + many.string(), "generate[0].count: asks for 1000000000 balls; the world holds 0 and may hold at most "},
        {"run " + many.string() + " --memory-limit 0", "--memory-limit: must be a number of GiB"},
        {"run " + good.string() + " --threads 1000000", "--threads: must be in [0, 1024] (the limit on threads), got 1000000"},
        {"run " + good.string() + " --duration 1e300", "more than the limit of 3e+09 frames per run"},
        {"run " + good.string() + " --stats " + path("out.json").string() + " --state " + (dir_ / "." / "out.json").string(),
         "--stats and --state name the same file"},
        {"run " + good.string() + " --state " + good.string(), "--state names the scene file " + good.string()},
        {"run " + good.string() + " --event-budget 0", "--event-budget: must be a whole number of events from 1 to 10^18"},
        {"run " + good.string() + " --event-budget -1", "got -1"},
        {"run " + late.string(), late.string() + ": time: 1e+16, beyond 2^40 (about 1.1e12) in magnitude"},
        {"run " + good.string() + " --state ''", "--state: must name a file, got an empty path"},
        {"run " + good.string() + " --stats ''", "--stats: must name a file, got an empty path"},
        {"run " + good.string() + " --checkpoint ''", "--checkpoint: must name a file, got an empty path"},
        {"run " + good.string() + " --trajectory ''", "--trajectory: must name a file, got an empty path"},
        {"run " + good.string() + " --every 0.1", "--every requires --trajectory"},
        {"run " + good.string() + " --equilibrate 4e7 --duration 4e7",
         "--equilibrate and --duration: 4e+07 and 4e+07 are 4.8e+09 frames of 1/60 together"},
        {"run " + good.string() + " --event-budget 1.5", "got 1.5"},
        {"run " + good.string() + " --event-budget 1e19", "got 1e19"},
    };
    for (const Case& c : cases) {
        const Result result = run(c.args);
        EXPECT_EQ(result.exit_code, 2) << c.args << "\n" << result.err;
        EXPECT_NE(result.err.find(c.says), std::string::npos) << c.args << "\n" << result.err;
    }
    EXPECT_FALSE(fs::exists(path("out.json")));
    EXPECT_EQ(read_file(good), R"({"balls": [{"position": [0, 0, 0], "velocity": [1, 0, 0], "radius": 1}]})");
}

// A device or a pipe is written straight through, a symbolic link followed: the file it names
// is replaced and the link stays.
TEST_F(Cli, OutputsThroughLinksAndDevices) {
    const fs::path scene = write("box.json", kBoxGas);
    fs::create_symlink("target.json", path("link.json"));
    ASSERT_EQ(run("run " + scene.string() + " --duration 0.1 --stats " + path("link.json").string()).exit_code, 0);
    EXPECT_TRUE(fs::is_symlink(path("link.json")));
    EXPECT_TRUE(json::parse(read_file(path("target.json"))).contains("state_hash"));
    ASSERT_EQ(run("run " + scene.string() + " --duration 0.1 --stats /dev/null").exit_code, 0);
    EXPECT_TRUE(fs::is_character_file("/dev/null"));
    // A file replaced keeps its permissions.
    const fs::path kept = write("private.json", "old");
    fs::permissions(kept, fs::perms::owner_read | fs::perms::owner_write);
    ASSERT_EQ(run("run " + scene.string() + " --duration 0.1 --stats " + kept.string()).exit_code, 0);
    EXPECT_EQ(fs::status(kept).permissions(), fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(Cli, ControlCharactersAndHugeNumbersAreShownEscapedAndCut) {
    const Result nul = run("run " + write("nul_key.json", R"({"balls": [{"po\u0000s": 1}]})").string());
    EXPECT_EQ(nul.exit_code, 2);
    EXPECT_NE(nul.err.find("balls[0].po\\u0000s: unknown key"), std::string::npos) << nul.err;
    const Result escape = run("run " + write("escape_key.json", R"({"\u001b[31mred": 1})").string());
    EXPECT_EQ(escape.err.find('\x1b'), std::string::npos) << escape.err;
    // A byte that is not UTF-8 is shown as \xNN; a well-formed character as it is.
    const Result bad_utf8 = run("run " + write("bad_utf8.json", "{\"caf\xc3\xa9\xff\": 1}").string());
    EXPECT_EQ(bad_utf8.exit_code, 2);
    EXPECT_NE(bad_utf8.err.find("caf\xc3\xa9\\xff"), std::string::npos) << bad_utf8.err;
    EXPECT_EQ(bad_utf8.err.find('\xff'), std::string::npos) << bad_utf8.err;
    const Result digits = run("run " + write("digits.json", "{\"time\": " + std::string(1 << 20, '1') + "}").string());
    EXPECT_EQ(digits.exit_code, 2);
    EXPECT_LT(digits.err.size(), 1000u) << digits.err.substr(0, 300);
}

TEST_F(Cli, AHugeUnknownKeyIsNotEchoedWhole) {
    const fs::path scene = write("key.json", "{\"" + std::string(1 << 20, 'k') + "\": 1}");
    const Result result = run("run " + scene.string());
    EXPECT_EQ(result.exit_code, 2);
    EXPECT_LT(result.err.size(), 1000u) << result.err.substr(0, 200);
    EXPECT_NE(result.err.find("(1048576 bytes): unknown key"), std::string::npos) << result.err.substr(0, 300);
}

// Outputs are written whole or not at all: a failed run leaves the old files as they were and no
// temporary file behind.
TEST_F(Cli, OutputsAreAtomic) {
    const fs::path stats = write("stats.json", "old stats");
    const fs::path falls = write("falls.json", R"({"gravity": [0, -10, 0], "balls": [{"position": [0, 0, 0], "velocity": [0, 0, 0], "radius": 1}]})");
    const Result bad = run("run " + falls.string() + " --threads 2000 --stats " + stats.string());
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_EQ(read_file(stats), "old stats");
    const Result good = run("run " + falls.string() + " --duration 0.5 --stats " + stats.string() + " --state " +
                            path("state.json").string());
    EXPECT_EQ(good.exit_code, 0) << good.err;
    EXPECT_EQ(json::parse(read_file(stats))["time"].get<double>(), 0.5);
    fs::create_directory(path("taken"));  // an output path that is a directory fails at once
    EXPECT_EQ(run("run " + falls.string() + " --stats " + path("taken").string()).exit_code, 1);
    for (const auto& entry : fs::directory_iterator(dir_))
        EXPECT_EQ(entry.path().string().find(".tmp-"), std::string::npos) << entry.path();
}

// SIGINT (and SIGTERM) stop the run at a frame end: exit 130, complete statistics and state for
// the time reached, marked interrupted.
TEST_F(Cli, InterruptWritesCompleteOutputsAndExits130) {
    const fs::path scene = write("gas.json", R"({"periodic": {"min": [0, 0, 0], "max": [40, 40, 40]},
        "generate": [{"count": 8000, "radius": 0.5, "min": [0, 0, 0], "max": [40, 40, 40], "temperature": 1}]})");
    for (const char* signal : {"INT", "TERM"}) {
        const fs::path stats = path(std::string("stats-") + signal + ".json");
        const fs::path state = path(std::string("state-") + signal + ".json");
        const std::string command = std::string(BALLISTIC_EXE) + " run " + scene.string() + " --duration 1e6 --threads 1 --stats " +
                                    stats.string() + " --state " + state.string() + " 2>/dev/null & pid=$!; sleep 1.5; kill -" +
                                    signal + " $pid; wait $pid";
        const int status = std::system(("sh -c '" + command + "'").c_str());
        ASSERT_TRUE(WIFEXITED(status));
        EXPECT_EQ(WEXITSTATUS(status), 130) << signal;
        const json s = json::parse(read_file(stats));
        EXPECT_TRUE(s["interrupted"].get<bool>()) << signal;
        const double time = s["time"].get<double>();
        EXPECT_GE(time, 0.0);  // a slow (sanitizer) build may still be loading at the signal
        EXPECT_LT(time, 1e6);
        EXPECT_EQ(json::parse(read_file(state))["balls"].size(), 8000u) << signal;
    }
}

// --event-budget ends a run at that many events (2e4 reads as 20000): complete outputs for the
// time reached, exit 1.
TEST_F(Cli, EventBudgetStopsTheRunWithCompleteOutputs) {
    const fs::path scene = write("gas.json", R"({"periodic": {"min": [0, 0, 0], "max": [20, 20, 20]},
        "generate": [{"count": 1000, "radius": 0.5, "min": [0, 0, 0], "max": [20, 20, 20], "temperature": 1}]})");
    const Result result = run("run " + scene.string() + " --duration 100 --event-budget 2e4 --stats " +
                              path("stats.json").string() + " --state " + path("state.json").string());
    EXPECT_EQ(result.exit_code, 1) << result.err;
    EXPECT_NE(result.err.find("--event-budget: 20000 events in the run"), std::string::npos) << result.err;
    const json stats = json::parse(read_file(path("stats.json")));
    EXPECT_TRUE(stats["interrupted"].get<bool>());
    EXPECT_NE(stats["stop_reason"].get<std::string>().find("--event-budget"), std::string::npos);
    EXPECT_LT(stats["time"].get<double>(), 100.0);
    EXPECT_EQ(json::parse(read_file(path("state.json")))["balls"].size(), 1000u);
}

// ------------------------------------------------------------------------------------------------
// Checkpoints

TEST_F(Cli, ResumeFromACheckpointGivesTheWholeRun) {
    std::string text = kBoxGas;
    text.insert(1, R"("restitution": 0.6, )");
    const fs::path scene = write("box.json", text);
    const json whole = run_ok(scene, "--duration 2 --threads 1");
    const Result first = run("run " + scene.string() + " --duration 1 --threads 2 --stats " + path("first.json").string() +
                             " --checkpoint " + path("box.ckpt").string());
    ASSERT_EQ(first.exit_code, 0) << first.err;
    const Result second = run("resume " + path("box.ckpt").string() + " --duration 1 --threads 1 --state " +
                              path("state.json").string());
    ASSERT_EQ(second.exit_code, 0) << second.err;
    const json resumed = json::parse(second.out);
    EXPECT_EQ(resumed["state_hash"], whole["state_hash"]);
    EXPECT_EQ(resumed["time"].get<double>(), 2.0);
    EXPECT_EQ(resumed["events"], whole["events"]) << "the counters go on from the checkpoint";
    EXPECT_EQ(resumed["planes"], whole["planes"]);
    EXPECT_EQ(json::parse(read_file(path("state.json")))["balls"].size(), 300u);
}

TEST_F(Cli, ResumeFromACheckpointGoesOnEmitting) {
    // A spout over a floor: a run split by a checkpoint emits and moves as the whole run does,
    // on any thread count; --state keeps the emitter's progress for `ballistic run`.
    const fs::path scene = write("spout.json", R"({"gravity": [0, -9.81, 0], "restitution": 0.5,
        "box": {"min": [-3, 0, -3], "max": [3, 20, 3]},
        "emitters": [{"position": [0, 15, 0], "velocity": [0, -3, 0], "spread": [1, 0, 1], "radius": 0.2,
                      "count": 400, "interval": 0.02, "seed": 3}]})");
    const json whole = run_ok(scene, "--duration 3 --threads 1");
    ASSERT_EQ(run("run " + scene.string() + " --duration 1.5 --threads 2 --stats " + path("first.json").string() +
                  " --checkpoint " + path("spout.ckpt").string() + " --state " + path("state.json").string())
                  .exit_code, 0);
    const Result second = run("resume " + path("spout.ckpt").string() + " --duration 1.5 --threads 1");
    ASSERT_EQ(second.exit_code, 0) << second.err;
    const json resumed = json::parse(second.out);
    EXPECT_EQ(resumed["state_hash"], whole["state_hash"]);
    EXPECT_EQ(resumed["balls"], whole["balls"]);
    EXPECT_GT(whole["balls"].get<int>(), 50);
    EXPECT_EQ(resumed["emitters"], whole["emitters"]);
    const json state = json::parse(read_file(path("state.json")));
    const json first = json::parse(read_file(path("first.json")));
    EXPECT_EQ(state["emitters"][0]["emitted"], first["emitters"][0]["emitted"]);
    EXPECT_EQ(state["balls"].size(), first["balls"].get<std::size_t>());
    const json from_state = run_ok(path("state.json"), "--duration 1.5 --threads 1");
    EXPECT_EQ(from_state["balls"], whole["balls"]) << "the spout goes on from its progress";
    // A damaged tail is refused, naming the file: broken JSON, or a digit changed (the checksum).
    const std::string bytes = read_file(path("spout.ckpt"));
    std::string broken = bytes;
    broken.back() = '#';
    std::ofstream(path("bad.ckpt"), std::ios::binary) << broken;
    const Result bad = run("resume " + path("bad.ckpt").string());
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("bad.ckpt: the emitters after the snapshot"), std::string::npos) << bad.err;
    std::string changed = bytes;
    const std::size_t digit = changed.find("\"emitted\":") + 10;
    ASSERT_TRUE(std::isdigit(static_cast<unsigned char>(changed[digit]))) << changed.substr(digit - 10, 20);
    changed[digit] = changed[digit] == '1' ? '2' : '1';
    std::ofstream(path("changed.ckpt"), std::ios::binary) << changed;
    const Result wrong = run("resume " + path("changed.ckpt").string());
    EXPECT_EQ(wrong.exit_code, 2);
    EXPECT_NE(wrong.err.find("changed.ckpt: the emitters after the snapshot: checksum: does not match"), std::string::npos)
        << wrong.err;
    // Cut at the end of the snapshot, it is refused too: the emitters' progress would be lost.
    std::ofstream(path("cut.ckpt"), std::ios::binary) << bytes.substr(0, bytes.rfind("{\"emitters\""));
    const Result cut = run("resume " + path("cut.ckpt").string());
    EXPECT_EQ(cut.exit_code, 2);
    EXPECT_NE(cut.err.find("cut.ckpt: nothing after the snapshot"), std::string::npos) << cut.err;
}

TEST_F(Cli, ARunStoppedAnywhereResumesToTheWholeRun) {
    // A pile settling (restitution, friction: balls sleep), stopped by the event budget or ended
    // between two frame ends: resumed, it steps on the whole run's frame ends n/60 and ends with
    // its bits, on any thread count; the counters go on from the checkpoint's start. (The end at
    // 1.37 is a step end, which tests every awake ball for sleeping: none falls asleep there.)
    std::string text = kBoxGas;
    text.insert(1, R"("restitution": 0.5, "friction": 0.5, )");
    const fs::path scene = write("pile.json", text);
    const json whole = run_ok(scene, "--duration 3 --threads 1");
    auto exact = [](double t) {
        std::ostringstream out;
        out.precision(17);
        out << t;
        return out.str();
    };
    const Result stopped = run("run " + scene.string() + " --duration 3 --threads 1 --event-budget 5000 --stats " +
                               path("stats.json").string() + " --checkpoint " + path("budget.ckpt").string());
    EXPECT_EQ(stopped.exit_code, 1) << stopped.err;
    const double reached = json::parse(read_file(path("stats.json")))["time"].get<double>();
    ASSERT_GT(reached, 0.0);
    ASSERT_LT(reached, 3.0);
    EXPECT_NE(std::round(reached * 60.0) / 60.0, reached) << "the budget stops between frame ends";
    const Result budget = run("resume " + path("budget.ckpt").string() + " --duration " + exact(3.0 - reached) +
                              " --threads 2");
    ASSERT_EQ(budget.exit_code, 0) << budget.err;
    const json resumed = json::parse(budget.out);
    EXPECT_EQ(resumed["time"].get<double>(), 3.0);
    EXPECT_EQ(resumed["state_hash"], whole["state_hash"]);
    EXPECT_EQ(resumed["events"], whole["events"]);
    EXPECT_EQ(resumed["measured_from"].get<double>(), 0.0) << "the counters began with the checkpointed run";
    EXPECT_GT(whole["sleeping"].get<int>(), 0);

    ASSERT_EQ(run("run " + scene.string() + " --duration 1.37 --threads 2 --stats " + path("first.json").string() +
                  " --checkpoint " + path("between.ckpt").string()).exit_code, 0);
    const json split = json::parse(run("resume " + path("between.ckpt").string() + " --duration 1.63 --threads 1").out);
    EXPECT_EQ(split["time"].get<double>(), 3.0);
    EXPECT_EQ(split["state_hash"], whole["state_hash"]);
    // Collisions per second count the run's own: the resumed part's, not the checkpoint's too.
    const json first = json::parse(read_file(path("first.json")));
    const double collisions = split["events"]["total"].get<double>() - first["events"]["total"].get<double>();
    EXPECT_NEAR(split["events_per_second"].get<double>() * split["wall_seconds"].get<double>(), collisions,
                1e-9 * collisions);
}

TEST_F(Cli, ABadCheckpointIsRefusedNamingTheFile) {
    const fs::path scene = write("box.json", kBoxGas);
    const Result not_one = run("resume " + scene.string());
    EXPECT_EQ(not_one.exit_code, 2);
    EXPECT_NE(not_one.err.find(scene.string() + ": snapshot: not a Ballistic snapshot"), std::string::npos) << not_one.err;
    const Result missing = run("resume " + path("none.ckpt").string());
    EXPECT_EQ(missing.exit_code, 2);
    EXPECT_NE(missing.err.find("none.ckpt: not a checkpoint file (no such file)"), std::string::npos) << missing.err;
    ASSERT_EQ(run("run " + scene.string() + " --duration 0.1 --stats " + path("s.json").string() + " --checkpoint " +
                  path("box.ckpt").string()).exit_code, 0);
    const std::string bytes = read_file(path("box.ckpt"));
    const std::size_t snapshot = bytes.rfind("{\"emitters\"");  // the emitters' progress follows it
    ASSERT_NE(snapshot, std::string::npos);
    std::ofstream(path("short.ckpt"), std::ios::binary) << bytes.substr(0, snapshot - 3);
    const Result short_one = run("resume " + path("short.ckpt").string());
    EXPECT_EQ(short_one.exit_code, 2);
    EXPECT_NE(short_one.err.find("ends early"), std::string::npos) << short_one.err;
    const Result same = run("run " + scene.string() + " --checkpoint " + path("x").string() + " --stats " + path("x").string());
    EXPECT_EQ(same.exit_code, 2);
    EXPECT_NE(same.err.find("--stats and --checkpoint name the same file"), std::string::npos) << same.err;
}

TEST_F(Cli, TheStateFileIsACompleteSceneThatGoesOnFromItsTime) {
    std::string text = kBoxGas;
    text.insert(1, R"("restitution": 0.9, )");
    const fs::path scene = write("box.json", text);
    const Result first = run("run " + scene.string() + " --duration 1 --stats " + path("first.json").string() +
                             " --state " + path("state.json").string());
    ASSERT_EQ(first.exit_code, 0) << first.err;
    const json state = json::parse(read_file(path("state.json")));
    EXPECT_EQ(state["time"].get<double>(), 1.0);
    EXPECT_EQ(state["restitution"].get<double>(), 0.9);
    EXPECT_EQ(state["planes"].size(), 6u);
    ASSERT_EQ(state["cylinders"].size(), 1u);
    EXPECT_EQ(state["cylinders"][0]["radius"].get<double>(), 1.5);
    ASSERT_EQ(state["balls"].size(), 300u);
    EXPECT_EQ(state["balls"][0]["radius"].get<double>(), 0.4);
    EXPECT_EQ(state["balls"][0]["mass"].get<double>(), 1.0);

    const json second = run_ok(path("state.json"), "--duration 1");
    EXPECT_EQ(second["time"].get<double>(), 2.0);
    EXPECT_EQ(second["balls"].get<int>(), 300);
    const json before = json::parse(read_file(path("first.json")));
    // The state holds every number to round-trip precision: the energy goes on where it stood.
    EXPECT_NEAR(second["energy"]["start"].get<double>(), before["energy"]["end"].get<double>(),
                1e-12 * std::abs(before["energy"]["end"].get<double>()));
    EXPECT_EQ(second["escaped"].get<int>(), 0);
    EXPECT_LT(second["max_overlap"].get<double>(), 1e-9);
}

// ------------------------------------------------------------------------------------------------
// Equilibration, trajectories, progress

TEST_F(Cli, EquilibrationIsLeftOutOfTheMeasurements) {
    const fs::path scene = write("gas.json", periodic_gas(500, 0.5, 0.2));
    const json whole = run_ok(scene, "--duration 1.5 --threads 1");
    const json measured = run_ok(scene, "--equilibrate 0.5 --duration 1 --threads 1");
    EXPECT_EQ(measured["state_hash"], whole["state_hash"]) << "equilibration changes what is measured, not the run";
    EXPECT_EQ(measured["time"].get<double>(), 1.5);
    EXPECT_EQ(measured["measured_from"].get<double>(), 0.5);
    EXPECT_EQ(whole["measured_from"].get<double>(), 0.0);
    const json first = run_ok(scene, "--duration 0.5 --threads 1");
    EXPECT_EQ(measured["events"]["total"].get<std::uint64_t>(),
              whole["events"]["total"].get<std::uint64_t>() - first["events"]["total"].get<std::uint64_t>());
    EXPECT_EQ(measured["kinetic_energy"]["start"], first["kinetic_energy"]["end"]);
    // Collisions per second count the equilibration's too: the wall time covers it.
    const double collisions = whole["events"]["total"].get<double>();
    EXPECT_NEAR(measured["events_per_second"].get<double>() * measured["wall_seconds"].get<double>(), collisions,
                1e-9 * collisions);
    const Result bad = run("run " + scene.string() + " --equilibrate -1");
    EXPECT_EQ(bad.exit_code, 2);
    EXPECT_NE(bad.err.find("--equilibrate"), std::string::npos) << bad.err;
}

TEST_F(Cli, TrajectorySamplesFallOnFrameEnds) {
    const fs::path scene = write("box.json", kBoxGas);
    const Result result = run("run " + scene.string() + " --duration 0.55 --every 0.25 --trajectory " +
                              path("t.xyz").string() + " --stats " + path("s.json").string());
    ASSERT_EQ(result.exit_code, 0) << result.err;
    const std::string text = read_file(path("t.xyz"));
    std::vector<std::string> times;
    for (std::size_t at = text.find("Time="); at != std::string::npos; at = text.find("Time=", at + 1))
        times.push_back(text.substr(at + 5, text.find('\n', at) - at - 5));
    EXPECT_EQ(times, (std::vector<std::string>{"0", "0.25", "0.5", "0.55"})) << "every 0.25 and the end";
    EXPECT_NE(text.find("pbc=\"F F F\""), std::string::npos);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 4 * (300 + 2));
    for (const char* every : {"0.01", "0", "-0.1"}) {
        const Result bad = run("run " + scene.string() + " --trajectory " + path("u.xyz").string() + " --every " + every);
        EXPECT_EQ(bad.exit_code, 2) << every;
        EXPECT_NE(bad.err.find("--every: must be a whole number of frames"), std::string::npos) << bad.err;
    }
}

TEST_F(Cli, ProgressOnlyOnATerminal) {
    // A run of a second or two: the line is drawn at most four times a second.
    const fs::path scene = write("gas.json", periodic_gas(20000, 0.5, 0.3));
    const std::string run_it = std::string(BALLISTIC_EXE) + " run " + scene.string() + " --duration 5 --threads 1 --stats " +
                               path("s.json").string();
    // Not a terminal: nothing on standard error.
    const Result piped = run("run " + scene.string() + " --duration 0.2 --threads 1 --stats " + path("s.json").string());
    EXPECT_EQ(piped.exit_code, 0);
    EXPECT_EQ(piped.err, "");
    // A terminal (script(1) gives the program one): the line, then erased.
    auto on_terminal = [&](const std::string& extra) {
        const std::string command = "script -qec '" + run_it + extra + "' /dev/null >" + path("tty.txt").string() + " 2>&1";
        EXPECT_EQ(std::system(command.c_str()), 0);
        return read_file(path("tty.txt"));
    };
    const std::string shown = on_terminal("");
    EXPECT_NE(shown.find("ballistic: t = "), std::string::npos) << shown;
    EXPECT_NE(shown.find("events/s"), std::string::npos) << shown;
    EXPECT_EQ(on_terminal(" --quiet").find("ballistic: t = "), std::string::npos);
}
