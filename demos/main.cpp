// ballistic — runs a scene headless and reports what happened.
//
//   ballistic                          the built-in NeHe lesson scene, human-readable summary
//   ballistic run SCENE.json [...]     a scene file, statistics as JSON (see README.md)
//
// Exit status: 0 success, 2 bad input (scene, options), 1 anything else.
#include "scene.hpp"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

namespace scene = ballistic::scene;

constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;

struct RunOptions {
    std::string scene_path;
    double duration = scene::kDefaultDuration;
    int threads = 0;
    std::string stats;
    std::string state;
};

// Bad input: reported by the caller with exit status 2.
struct BadInput : std::runtime_error {
    using std::runtime_error::runtime_error;
};

void check_options(const RunOptions& options) {
    if (!std::isfinite(options.duration) || options.duration <= 0.0) {
        std::ostringstream message;
        message << "--duration: must be a finite number > 0, got " << options.duration;
        throw BadInput(message.str());
    }
    if (options.threads < 0) {
        throw BadInput("--threads: must be >= 0, got " + std::to_string(options.threads));
    }
}

// Output files are opened before the simulation so that a bad path fails in a second, not after
// a long run.
std::optional<std::ofstream> open_output(const std::string& path, const char* what) {
    if (path.empty()) return std::nullopt;
    std::ofstream file(path);
    if (!file) {
        throw std::runtime_error(std::string("cannot write ") + what + " file " + path + ": " + std::strerror(errno));
    }
    return file;
}

void write(std::ostream& out, const std::string& text, const std::string& path) {
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("writing " + path + " failed");
}

// Scene errors are bad input; an InvalidArgument from the engine later on would be a bug.
scene::Scene load(const RunOptions& options) {
    try {
        return scene::load_scene_file(options.scene_path, options.threads);
    } catch (const ballistic::InvalidArgument& error) {
        throw BadInput(error.what());
    }
}

int run_file(const RunOptions& options) {
    check_options(options);
    scene::Scene loaded = load(options);
    std::optional<std::ofstream> stats_file = open_output(options.stats, "stats");
    std::optional<std::ofstream> state_file = open_output(options.state, "state");

    const scene::RunStats stats = scene::run_scene(loaded, options.duration);
    const std::string stats_text = scene::stats_json(stats);
    if (stats_file) {
        write(*stats_file, stats_text, options.stats);
    } else {
        write(std::cout, stats_text, "standard output");
    }
    if (state_file) write(*state_file, scene::state_json(loaded.world, loaded.balls), options.state);
    return 0;
}

int run_default() {
    scene::Scene lesson = scene::load_scene_text(scene::default_scene_text());
    std::cout << "Ballistic: the NeHe collision lesson, exact (" << scene::kDefaultDuration
              << " s simulated)\n";
    const scene::RunStats stats = scene::run_scene(lesson, scene::kDefaultDuration);
    std::cout << scene::summary_text(stats);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Ballistic: exact event-driven ball physics. Without a command, runs the built-in "
                 "NeHe lesson scene and prints a summary.",
                 "ballistic"};
    app.require_subcommand(0, 1);
    RunOptions options;
    CLI::App* run = app.add_subcommand("run", "Simulate a scene file headless and print statistics as JSON");
    run->add_option("scene", options.scene_path, "Scene file (JSON, see README.md)")->required();
    run->add_option("--duration", options.duration, "Simulated time (default 10)");
    run->add_option("--threads", options.threads, "Worker threads, 0 = all hardware threads (default 0)");
    run->add_option("--stats", options.stats, "Write the statistics JSON to this file instead of stdout");
    run->add_option("--state", options.state, "Write final positions and velocities (JSON) to this file");

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        return app.exit(error) == 0 ? 0 : kExitBadInput;
    }

    try {
        return run->parsed() ? run_file(options) : run_default();
    } catch (const BadInput& error) {
        std::cerr << "ballistic: " << error.what() << "\n";
        return kExitBadInput;
    } catch (const std::exception& error) {
        std::cerr << "ballistic: " << error.what() << "\n";
        return kExitFailure;
    }
}
