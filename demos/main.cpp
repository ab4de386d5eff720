// ballistic — runs a scene headless and reports what happened, or draws it.
//
//   ballistic                          the built-in NeHe lesson scene: in a window when there is a
//                                      display, else a human-readable summary and a PNG of the end
//   ballistic run SCENE.json [...]     a scene file, statistics as JSON (docs/cli.md)
//   ballistic render SCENE.json [...]  PNG frames, no window (renderer builds only)
//   ballistic view SCENE.json [...]    the interactive window (renderer builds only)
//
// Exit status: 0 success, 2 bad input (scene, options), 130 interrupted (SIGINT, SIGTERM, SIGHUP or
// SIGQUIT: the statistics and state written are complete, for the time reached), 1 anything else.
#include <ballistic/scene/scene.hpp>
#include <ballistic/version.hpp>
#ifdef BALLISTIC_WITH_RENDERER
#include "render_commands.hpp"
#endif

#include <CLI/CLI.hpp>
#include <tbb/global_control.h>
#include <tbb/info.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <new>
#include <cerrno>
#include <csignal>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>

#include <unistd.h>

namespace {

namespace scene = ballistic::scene;

constexpr int kExitFailure = 1;
constexpr int kExitBadInput = 2;
constexpr int kExitInterrupted = 130;  // 128 + SIGINT, also for SIGTERM
// Frames of a run (each a step of 1/60): a bound on the work a --duration can ask for, even of
// an empty world (about 1.6 years simulated).
constexpr double kMaxFrames = 3e9;
constexpr double kMaxMemoryGib = 1 << 20;  // a PiB: any larger number is a typo

struct RunOptions {
    std::string scene_path;   // the scene file, or the checkpoint a resume continues from
    bool resume = false;
    double duration = scene::kDefaultDuration;
    int threads = 0;
    std::string stats;
    std::string state;
    std::string checkpoint;
    std::string trajectory;
    double every = 0.1;        // trajectory sample interval
    double equilibrate = 0.0;  // simulated before the measurements start
    bool quiet = false;        // no progress line
    double memory_limit_gib = double(ballistic::WorldDef{}.memory_limit) / double(1u << 30);
    std::uint64_t event_budget = 0;
    bool always_regions = false;  // WorldDef::regions_when_faster off
};

// Bad input: reported by the caller with exit status 2.
struct BadInput : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A value as the user gave it: the shortest text that reads back as the same double.
std::string shown(double value) {
    std::array<char, 32> digits{};
    return std::string(digits.data(), std::to_chars(digits.data(), digits.data() + digits.size(), value).ptr);
}

void check_options(const RunOptions& options) {
    if (!std::isfinite(options.duration) || options.duration <= 0.0) {
        std::ostringstream message;
        message << "--duration: must be a finite number > 0, got " << shown(options.duration);
        throw BadInput(message.str());
    }
    if (options.threads < 0 || options.threads > ballistic::kMaxThreads) {
        throw BadInput("--threads: must be in [0, " + std::to_string(ballistic::kMaxThreads) +
                       "] (the limit on threads), got " + std::to_string(options.threads));
    }
    if (!(options.memory_limit_gib > 0.0 && options.memory_limit_gib <= kMaxMemoryGib)) {
        std::ostringstream message;
        message << "--memory-limit: must be a number of GiB in (0, " << shown(kMaxMemoryGib) << "], got " << shown(options.memory_limit_gib);
        throw BadInput(message.str());
    }
    if (options.duration / scene::kFrame > kMaxFrames) {
        std::ostringstream message;
        message << "--duration: " << shown(options.duration) << " is " << shown(options.duration / scene::kFrame)
                << " frames of 1/60, more than the limit of " << kMaxFrames << " frames per run";
        throw BadInput(message.str());
    }
    if (!(std::isfinite(options.equilibrate) && options.equilibrate >= 0.0) ||
        options.equilibrate / scene::kFrame > kMaxFrames) {
        std::ostringstream message;
        message << "--equilibrate: must be a finite time >= 0 of at most " << kMaxFrames << " frames, got "
                << shown(options.equilibrate);
        throw BadInput(message.str());
    }
    if ((options.equilibrate + options.duration) / scene::kFrame > kMaxFrames) {
        std::ostringstream message;
        message << "--equilibrate and --duration: " << shown(options.equilibrate) << " and " << shown(options.duration)
                << " are " << shown((options.equilibrate + options.duration) / scene::kFrame)
                << " frames of 1/60 together, more than the limit of " << kMaxFrames << " frames per run";
        throw BadInput(message.str());
    }
    // Samples fall on frame ends: a trajectory never changes where the steps end (nor the bits).
    const double frames = std::round(options.every / scene::kFrame);
    if (!(frames >= 1.0 && frames <= kMaxFrames && std::abs(frames * scene::kFrame - options.every) <= 1e-9 * scene::kFrame)) {
        std::ostringstream message;
        message << "--every: must be a whole number of frames of 1/60 (1/60, 0.1, 0.5, 1, ...), got " << shown(options.every);
        throw BadInput(message.str());
    }
    const std::pair<const char*, const std::string*> outputs[] = {{"--stats", &options.stats},
                                                                   {"--state", &options.state},
                                                                   {"--checkpoint", &options.checkpoint},
                                                                   {"--trajectory", &options.trajectory}};
    auto canonical = [](const std::string& path) {  // a path that cannot be resolved (a pipe's fd) as written
        std::error_code error;
        std::filesystem::path resolved = std::filesystem::weakly_canonical(std::filesystem::absolute(path, error), error);
        return error ? std::filesystem::absolute(path, error).lexically_normal() : resolved;
    };
    for (const auto& [flag, path] : outputs)
        if (!path->empty() && canonical(*path) == canonical(options.scene_path))
            throw BadInput(std::string(flag) + " names the " + (options.resume ? "checkpoint" : "scene") + " file " +
                           *path + " that the run reads (an output needs a file of its own)");
    for (std::size_t a = 0; a < std::size(outputs); ++a)
        for (std::size_t b = a + 1; b < std::size(outputs); ++b)
            if (!outputs[a].second->empty() && !outputs[b].second->empty() &&
                canonical(*outputs[a].second) == canonical(*outputs[b].second))
                throw BadInput(std::string(outputs[a].first) + " and " + outputs[b].first + " name the same file " +
                               *outputs[b].second + " (each needs its own)");
}

// An output file written atomically: the text goes to a temporary file beside it, created
// before the simulation (a bad path fails in a second, not after a long run), which replaces the
// file only once complete. A failed or interrupted write leaves no partial file behind.
// A path that names a device or a pipe (/dev/null, a FIFO) is written straight through: it is
// not a file to replace. A symbolic link is followed: the file it names is replaced, the link
// stays.
class AtomicOutput {
public:
    AtomicOutput(std::filesystem::path path, const char* what) : path_(std::move(path)), what_(what) {
        std::error_code error;
        const std::filesystem::file_status status = std::filesystem::status(path_, error);  // follows links
        if (std::filesystem::is_directory(status)) {  // before the temporary file exists
            errno = EISDIR;
            fail("cannot write");
        }
        through_ = std::filesystem::exists(status) && !std::filesystem::is_regular_file(status);
        // The file a link names, through links to links (as many as the system follows). A path
        // through /proc or /dev/fd (/dev/stdout) names an open file of this process: written
        // straight through, never replaced.
        const std::filesystem::path given = path_;
        for (int hops = 0; !through_ && hops < 40; ++hops) {
            const std::string text = path_.lexically_normal().string();
            if (text.starts_with("/proc/") || text.starts_with("/dev/fd/")) {
                through_ = true;
                path_ = given;
                break;
            }
            if (!std::filesystem::is_symlink(std::filesystem::symlink_status(path_, error))) break;
            const std::filesystem::path target = std::filesystem::read_symlink(path_, error);
            if (error) break;
            path_ = target.is_absolute() ? target : path_.parent_path() / target;
        }
        temporary_ = through_ ? path_ : std::filesystem::path(path_.string() + ".tmp-" + std::to_string(::getpid()));
        file_.open(temporary_, std::ios::binary | (through_ ? std::ios::app : std::ios::trunc | std::ios::out));
        if (!file_) fail("cannot write");
    }
    AtomicOutput(const AtomicOutput&) = delete;
    AtomicOutput& operator=(const AtomicOutput&) = delete;
    ~AtomicOutput() {
        if (!committed_ && !through_) {
            std::error_code ignored;
            std::filesystem::remove(temporary_, ignored);
        }
    }
    // The text goes here as it is made; after a piece, noted() keeps the reason of a first
    // failure for commit() to report.
    std::ostream& stream() { return file_; }
    void noted() {
        if (!file_ && failure_ == 0) failure_ = errno;
    }
    void commit() {
        noted();
        file_.close();
        if (!file_) fail("writing failed for");
        if (through_) {
            committed_ = true;
            return;
        }
        std::error_code error;
        // A file replaced keeps its permissions (a private 0600 file stays private).
        if (const auto old = std::filesystem::status(path_, error); std::filesystem::is_regular_file(old))
            std::filesystem::permissions(temporary_, old.permissions(), error);
        std::filesystem::rename(temporary_, path_, error);
        if (error) {
            errno = error.value();
            fail("cannot replace");
        }
        committed_ = true;
    }

private:
    [[noreturn]] void fail(const char* doing) const {
        throw std::runtime_error(std::string(doing) + " " + what_ + " file " + path_.string() + ": " +
                                 std::strerror(failure_ != 0 ? failure_ : errno));
    }
    std::filesystem::path path_, temporary_;
    std::string what_;
    std::ofstream file_;
    bool through_ = false;  // a device or a pipe, written straight
    int failure_ = 0;       // errno of the first failed piece
    bool committed_ = false;
};

std::optional<AtomicOutput> open_output(const std::string& path, const char* what) {
    if (path.empty()) return std::nullopt;
    return std::optional<AtomicOutput>(std::in_place, path, what);
}

void write(std::ostream& out, const std::string& text, const std::string& path) {
    out << text;
    out.flush();
    if (!out) throw std::runtime_error("writing " + path + " failed");
}

// A progress line on standard error while a run goes, when that is a terminal and not --quiet:
// simulated time, percent, events per second and the time left, at most four times a second.
// The time left comes from the rate of the last ten seconds, marked when it has fallen below half
// the run's. Unless --quiet, a run that settles without friction is noted once
// (scene::settling_note, looked at every two seconds, said when two looks agree).
class Progress {
public:
    Progress(const RunOptions& options, const ballistic::World& world)
        : line_on_(!options.quiet && ::isatty(STDERR_FILENO) == 1),
          notes_on_(!options.quiet),
          start_(world.time()),
          end_(world.time() + options.equilibrate + options.duration),
          events_(world.events_processed()),
          begun_(std::chrono::steady_clock::now()),
          shown_(begun_),
          looked_(begun_) {}
    void update(const ballistic::World& world) {
        if (!line_on_ && !notes_on_) return;
        const auto now = std::chrono::steady_clock::now();
        if (now - shown_ < std::chrono::milliseconds(250)) return;
        shown_ = now;
        const double wall = seconds(now);
        if (notes_on_ && note_.empty() && now - looked_ >= std::chrono::seconds(2)) look(world, now);
        if (!line_on_) return;
        samples_.push_back({wall, world.time()});
        while (samples_.size() > 2 && wall - samples_[1].wall >= kWindow) samples_.pop_front();
        const Sample& first = samples_.front();
        const double recent = wall > first.wall ? (world.time() - first.time) / (wall - first.wall) : 0.0;
        const double overall = (world.time() - start_) / wall;
        const double total = end_ - start_;
        std::ostringstream line;
        line << "\rballistic: t = " << std::setprecision(4) << world.time() << " (" << std::fixed << std::setprecision(1)
             << 100.0 * std::clamp((world.time() - start_) / total, 0.0, 1.0) << " %), " << std::defaultfloat
             << std::setprecision(3) << double(world.events_processed() - events_) / wall << " events/s, ";
        if (recent > 0.0)
            line << (end_ - world.time()) / recent << " s left" << (recent < 0.5 * overall ? " (slowing)" : "");
        else
            line << "no time left estimated";
        if (!note_.empty()) line << "; slow balls stay awake: see friction";
        std::cerr << line.str() << "\033[K" << std::flush;
        shown_any_ = true;
    }
    void done() {
        if (shown_any_) std::cerr << "\r\033[K" << std::flush;  // the line erased
    }

private:
    static constexpr double kWindow = 10.0;  // seconds of wall time the rate is taken over
    struct Sample {
        double wall, time;
    };
    double seconds(std::chrono::steady_clock::time_point at) const {
        return std::chrono::duration<double>(at - begun_).count();
    }
    void look(const ballistic::World& world, std::chrono::steady_clock::time_point now) {
        looked_ = now;
        std::string note = ballistic::scene::settling_note(world);
        const bool found = !note.empty();
        if (found && seen_) {
            note_ = std::move(note);
            std::cerr << (shown_any_ ? "\r\033[K" : "") << note_ << "\n" << std::flush;
        }
        seen_ = found;
    }

    bool line_on_, notes_on_;
    double start_, end_;
    std::uint64_t events_;
    std::chrono::steady_clock::time_point begun_, shown_, looked_;
    std::deque<Sample> samples_;
    std::string note_;
    bool seen_ = false, shown_any_ = false;
};

// Set by SIGINT, SIGTERM, SIGHUP and SIGQUIT: the run stops at the next event and reports what it
// reached.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler stores into it");
extern "C" void request_stop(int) { g_stop.store(true, std::memory_order_relaxed); }

// A checkpoint's world, its balls in the order their scene gave them (the order of their handles).
scene::Scene restore(const std::string& path, const ballistic::RestoreOptions& restore_options) {
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error))
        throw BadInput(path + ": not a checkpoint file (" +
                       (std::filesystem::exists(path, error) ? "not a regular file" : "no such file") + ")");
    std::ifstream file(path, std::ios::binary);
    if (!file) throw BadInput(path + ": cannot read: " + std::strerror(errno));
    scene::Scene restored{ballistic::World::restore(file, restore_options), {}};
    const ballistic::BallView balls = restored.world.balls();
    restored.balls.assign(balls.id.begin(), balls.id.end());
    std::sort(restored.balls.begin(), restored.balls.end(),
              [](ballistic::BallId a, ballistic::BallId b) { return a.index() < b.index(); });
    // After the world's snapshot, the emitters' progress (scene::emitters_json, an empty list when
    // there are none), no longer than a scene file may be.
    std::string rest;
    std::array<char, 1 << 16> chunk;
    while (file.read(chunk.data(), chunk.size()) || file.gcount() > 0) {
        rest.append(chunk.data(), static_cast<std::size_t>(file.gcount()));
        if (rest.size() > scene::kMaxSceneBytes)
            throw BadInput(path + ": more than " + std::to_string(scene::kMaxSceneBytes) +
                           " bytes after the snapshot (a checkpoint holds the world and its emitters)");
    }
    if (rest.empty()) throw BadInput(path + ": nothing after the snapshot: the checkpoint is cut short (no emitters' progress)");
    try {
        scene::read_emitters(restored, rest);
    } catch (const ballistic::InvalidArgument& bad) {
        throw BadInput(path + ": the emitters after the snapshot: " + bad.what());
    }
    return restored;
}

// Scene and checkpoint errors are bad input; an InvalidArgument from the engine later on would be
// a bug.
scene::Scene load(const RunOptions& options) {
    const auto memory_limit = static_cast<std::size_t>(options.memory_limit_gib * double(1u << 30));
    try {
        if (options.resume) return restore(options.scene_path, {options.threads, nullptr, memory_limit, !options.always_regions});
        return scene::load_scene_file(options.scene_path, {options.threads, memory_limit, !options.always_regions});
    } catch (const ballistic::InvalidArgument& error) {
        throw BadInput(options.resume ? options.scene_path + ": " + error.what() : error.what());
    }
}

int run_file(const RunOptions& options) {
    check_options(options);
    // From here on a signal stops the run cleanly (one during loading stops it at time zero).
    // SIGINT and SIGTERM always stop the run (also one started in the background by a script,
    // which ignores SIGINT); SIGHUP and SIGQUIT unless the run was started ignoring them (nohup).
    std::signal(SIGINT, request_stop);
    std::signal(SIGTERM, request_stop);
    for (const int signal : {SIGHUP, SIGQUIT}) {
        struct sigaction current {};
        if (::sigaction(signal, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) std::signal(signal, request_stop);
    }
    // A reader that goes away (a pipe closed) fails the write, which is reported, instead of
    // killing the run.
    std::signal(SIGPIPE, SIG_IGN);
    scene::Scene loaded = load(options);
    // Frames of 1/60 must advance the world's time, from the start to the end of the run: within
    // 2⁴⁰ (about 1.1e12) doubles are at most 1/68 of a frame apart (near 10¹⁵, 0.125).
    if (const double t = loaded.world.time(), last = t + options.equilibrate + options.duration;
        !(std::abs(t) <= 0x1p40 && std::abs(last) <= 0x1p40)) {
        throw BadInput(options.scene_path + (options.resume ? ": the checkpoint's time " : ": time: ") +
                       shown(t) +
                       (std::abs(t) <= 0x1p40 ? (options.equilibrate > 0.0 ? " with --equilibrate " + shown(options.equilibrate) : std::string()) +
                                                    " and --duration " + shown(options.duration) + " reach " + shown(last)
                                              : std::string()) +
                       ", beyond 2^40 (about 1.1e12) in magnitude: frames of 1/60 cannot advance the time there");
    }
    std::optional<AtomicOutput> stats_file = open_output(options.stats, "stats");
    std::optional<AtomicOutput> state_file = open_output(options.state, "state");
    std::optional<AtomicOutput> checkpoint_file = open_output(options.checkpoint, "checkpoint");
    std::optional<AtomicOutput> trajectory_file = open_output(options.trajectory, "trajectory");

    scene::RunControl control{&g_stop, options.event_budget, {}};
    const auto every = static_cast<std::uint64_t>(std::round(options.every / scene::kFrame));
    std::uint64_t frame = 0;
    double sampled = -INFINITY;
    auto sample = [&](const ballistic::World& world) {
        scene::write_extxyz_frame(trajectory_file->stream(), world, loaded.balls);
        trajectory_file->noted();
        sampled = world.time();
    };
    if (trajectory_file) sample(loaded.world);
    Progress progress(options, loaded.world);
    control.on_frame = [&](const ballistic::World& world) {
        if (trajectory_file && ++frame % every == 0) sample(world);
        progress.update(world);
    };
    const scene::RunStats stats = scene::run_scene(loaded, options.duration, control, options.equilibrate);
    progress.done();
    // The statistics first (they are small); then each other output, written as it is made (a
    // state of millions of balls never has to fit in memory as text). One that fails is reported
    // and the others are still written.
    bool written = true;
    auto attempt = [&](const char* what, auto&& write_it) {
        try {
            write_it();
        } catch (const std::bad_alloc&) {
            std::cerr << "ballistic: out of memory writing the " << what << "; it is not written\n";
            written = false;
        } catch (const std::exception& error) {
            std::cerr << "ballistic: " << error.what() << "\n";
            written = false;
        }
    };
    auto output = [&](std::optional<AtomicOutput>& file, const char* what, auto&& make) {
        if (!file) return;
        attempt(what, [&] {
            make(file->stream());
            file->commit();
        });
        file.reset();  // a file not committed is removed
    };
    const std::string stats_text = scene::stats_json(stats);
    if (stats_file) output(stats_file, "stats file", [&](std::ostream& out) { out << stats_text; });
    else attempt("statistics", [&] { write(std::cout, stats_text, "standard output"); });
    output(trajectory_file, "trajectory file", [&](std::ostream&) {
        if (sampled != loaded.world.time()) sample(loaded.world);  // the end, when off the sample grid
    });
    output(state_file, "state file", [&](std::ostream& out) { scene::write_state_json(out, loaded.world, loaded.balls, loaded.emitters); });
    output(checkpoint_file, "checkpoint file", [&](std::ostream& out) {
        loaded.world.save(out);
        out << scene::emitters_json(loaded.world, loaded.emitters);
    });
    if (stats.interrupted) {
        const bool signal = stats.stop_reason == "signal";
        std::cerr << "ballistic: " << (signal ? "interrupted" : stats.stop_reason) << "; stopped at time " << stats.time
                  << ", the statistics and state are for that time\n";
        return signal && written ? kExitInterrupted : kExitFailure;
    }
    return written ? 0 : kExitFailure;
}

// The lesson scene: in a window when asked for one (`ballistic demo`) and a display exists,
// otherwise headless with a summary and a picture (`ballistic` never opens a window by itself).
int run_default([[maybe_unused]] bool window) {
    scene::Scene lesson = scene::load_scene_text(scene::default_scene_text());
#ifdef BALLISTIC_WITH_RENDERER
    if (window && ballistic::demo::display_available()) {
        std::cout << "Ballistic: the NeHe collision lesson, exact, in a window (Esc closes it)\n";
        return ballistic::demo::view_scene(lesson, {});
    }
#endif
    std::cout << "Ballistic: the NeHe collision lesson, exact (" << scene::kDefaultDuration
              << " s simulated)\n";
    const scene::RunStats stats = scene::run_scene(lesson, scene::kDefaultDuration);
    std::cout << scene::summary_text(stats);
#ifdef BALLISTIC_WITH_RENDERER
    // No display: a picture of the final state instead of the window.
    if (!ballistic::demo::write_demo_picture(lesson.world, "ballistic-demo.png")) return kExitFailure;
#endif
    return 0;
}

#ifdef BALLISTIC_WITH_RENDERER
// The renderer's commands report bad options as std::invalid_argument.
template <class Options>
int bad_input_guard(int (*command)(const Options&), const Options& options) {
    try {
        return command(options);
    } catch (const std::invalid_argument& error) {
        throw BadInput(error.what());
    }
}
#endif

#ifdef BALLISTIC_WITH_RENDERER
void add_camera_options(CLI::App& command, ballistic::demo::CameraOptions& camera) {
    command.add_option("--eye", camera.eye, "Camera position X,Y,Z (default: framing the scene)");
    command.add_option("--target", camera.target, "Point the camera looks at X,Y,Z (default: framing the scene)");
    command.add_option("--fov", camera.fov, "Vertical field of view in degrees (default 45)");
}
#endif

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Ballistic: exact event-driven ball physics. Without a command, runs the built-in "
                 "NeHe lesson scene headless, prints a summary and writes ballistic-demo.png (never a window).",
                 "ballistic"};
    app.require_subcommand(0, 1);
    app.set_version_flag("--version", std::string("ballistic ") + ballistic::kVersion);
    RunOptions options;
    CLI::App* demo = app.add_subcommand(
        "demo", "The main demo: the lesson scene in a window when a display exists, otherwise as without a command");
    CLI::App* run = app.add_subcommand("run", "Simulate a scene file headless and print statistics as JSON");
    run->add_option("scene", options.scene_path, "Scene file (JSON, see docs/scenes.md)")->required();
    CLI::App* resume = app.add_subcommand(
        "resume", "Continue a run from its checkpoint (--checkpoint) and print statistics as JSON; a run "
                  "stopped by a signal or the event budget, or at a frame end, goes on bit-identical to the "
                  "run never having stopped (docs/cli.md: but where lone fast balls roam)");
    resume->add_option("checkpoint", options.scene_path, "Checkpoint file written by --checkpoint")->required();
    for (CLI::App* command : {run, resume}) {
        command->add_option("--duration", options.duration, "Simulated time (default 10)");
        command->add_option("--threads", options.threads, "Worker threads, 0 = all hardware threads (default 0)");
        command->add_flag("--always-regions", options.always_regions,
                          "Process events in regions whenever the world can, in equal shares, not only while they "
                          "measure faster than the serial loop (the same results either way)");
        // An output asked for by an empty name (an unset shell variable) is an error, not skipped.
        auto file = [](const std::string& text) -> std::string {
            return text.empty() ? "must name a file, got an empty path" : std::string();
        };
        command->add_option("--stats", options.stats, "Write the statistics JSON to this file instead of stdout")->check(file);
        command->add_option("--state", options.state, "Write the world at the end as a scene file (JSON: settings, statics, every ball) that "
                            "`ballistic run` goes on from")->check(file);
        command->add_option("--checkpoint", options.checkpoint,
                            "Write a snapshot of the whole world to this file at the end (also when interrupted), "
                            "for `ballistic resume`")->check(file);
        command->add_option("--event-budget", options.event_budget,
                            "Events the run may process, a whole number from 1 to 10^18 (as 250000 or 2.5e5); reached, it "
                            "stops there with complete outputs and exit 1 (default: none; every step is also bounded by "
                            "10^9 events)")
            ->transform(CLI::Validator(
                [](std::string& text) -> std::string {
                    // Digits exactly, or a number in any notation that is whole, handed on in
                    // digits (CLI11 would read a leading zero as octal).
                    const char* end = text.data() + text.size();
                    std::uint64_t events = 0;
                    if (auto [stop, error] = std::from_chars(text.data(), end, events); error != std::errc{} || stop != end) {
                        double value = 0.0;
                        const auto [at, fail] = std::from_chars(text.data(), end, value);
                        events = fail == std::errc{} && at == end && value >= 1.0 && value <= 1e18 && std::floor(value) == value
                                     ? static_cast<std::uint64_t>(value)
                                     : 0;
                    }
                    if (events >= 1 && events <= 1'000'000'000'000'000'000ull) {
                        text = std::to_string(events);
                        return {};
                    }
                    return "must be a whole number of events from 1 to 10^18 (leave it out for none), got " + text.substr(0, 40);
                },
                "EVENTS"));
        command->add_option("--memory-limit", options.memory_limit_gib,
                            "GiB the balls may take, estimated before anything is allocated (default 16)");
        command->add_option("--equilibrate", options.equilibrate,
                            "Simulate this long first, then reset the measurements and run --duration: the "
                            "statistics describe only the run after equilibration (default 0)");
        CLI::Option* trajectory = command->add_option("--trajectory", options.trajectory,
                            "Write extended XYZ frames (ASE, OVITO) to this file: species, position, velocity, "
                            "radius, the time and the periodic box, every --every and at the end")->check(file);
        command->add_option("--every", options.every,
                            "Trajectory sample interval, a whole number of frames of 1/60 (default 0.1)")->needs(trajectory);
        command->add_flag("--quiet", options.quiet, "No progress line on a terminal");
    }

#ifdef BALLISTIC_WITH_RENDERER
    ballistic::demo::RenderOptions render_options;
    CLI::App* render = app.add_subcommand("render", "Draw a scene offscreen (no window) into PNG frames");
    render->add_option("scene", render_options.scene_path, "Scene file (JSON, see docs/scenes.md)")->required();
    render->add_option("--out", render_options.out_dir, "Directory for frame_NNNNN.png (created)")->required();
    CLI::Option* frames = render->add_option(
        "--frames", render_options.frames, "Frames, 1/60 apart: the first at the scene's start, then N - 1 simulated (default 60)");
    render->add_option("--duration", render_options.duration,
                       "Frames 1/60 apart from the scene's start to this many seconds later, the last at that time "
                       "(instead of --frames)")
        ->excludes(frames);
    render->add_option("--every", render_options.every, "Write every K-th frame, and the last (default 1)");
    render->add_option("--size", render_options.size, "Image size WxH (default 1280x720)");
    render->add_option("--color", render_options.color, "Colour balls by id or speed (default id)");
    render->add_flag("!--no-explosions", render_options.explosions, "Do not draw collision explosions");
    render->add_flag("--tint-sleeping", render_options.tint_sleeping, "Draw sleeping balls in a muted slate");
    render->add_flag("--caption", render_options.caption,
                     "Write the time, the balls, how many sleep and the events per simulated second into each image");
    add_camera_options(*render, render_options.camera);
    render->add_option("--threads", render_options.threads, "Simulation worker threads, 0 = all (default 0)");
    render->add_flag("--validate", render_options.validate,
                     "Vulkan validation layers on; any validation message fails the command");

    ballistic::demo::ViewOptions view_options;
    CLI::App* view = app.add_subcommand("view", "Open a window on a scene (mouse camera, picking, HUD)");
    view->add_option("scene", view_options.scene_path, "Scene file (JSON, see docs/scenes.md)")->required();
    view->add_option("--frames", view_options.frames, "Close after N frames (default: when the window is closed)");
    view->add_option("--size", view_options.size, "Window size WxH (default 1280x720)");
    view->add_option("--color", view_options.color, "Colour balls by id or speed (default id)");
    view->add_flag("--tint-sleeping", view_options.tint_sleeping, "Draw sleeping balls in a muted slate");
    add_camera_options(*view, view_options.camera);
    view->add_flag("--paused", view_options.paused, "Start paused (Space runs, N steps)");
    view->add_flag("!--no-vsync", view_options.vsync, "Present as fast as possible (mailbox/immediate)");
    view->add_option("--threads", view_options.threads, "Simulation worker threads, 0 = all (default 0)");
    view->add_flag("--validate", view_options.validate,
                   "Vulkan validation layers on; any validation message fails the command");
#endif

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& error) {
        return app.exit(error) == 0 ? 0 : kExitBadInput;
    }

    try {
        // More threads than the CPUs this process may use run as asked, taking turns, instead of
        // oneTBB's limit of one a CPU (and its warning): `threads` in the statistics is what ran.
        int asked = options.threads;
#ifdef BALLISTIC_WITH_RENDERER
        asked = std::max({asked, render_options.threads, view_options.threads});
#endif
        std::optional<tbb::global_control> threads_as_asked;
        if (asked > tbb::info::default_concurrency())
            threads_as_asked.emplace(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(asked));
        options.resume = resume->parsed();
        if (run->parsed() || resume->parsed()) return run_file(options);
#ifdef BALLISTIC_WITH_RENDERER
        if (render->parsed()) return bad_input_guard(ballistic::demo::render_command, render_options);
        if (view->parsed()) return bad_input_guard(ballistic::demo::view_command, view_options);
#endif
        return run_default(demo->parsed());
    } catch (const BadInput& error) {
        std::cerr << "ballistic: " << error.what() << "\n";
        return kExitBadInput;
    } catch (const std::bad_alloc&) {
        std::cerr << "ballistic: out of memory (lower --memory-limit, or give the program more memory)\n";
        return kExitFailure;
    } catch (const std::exception& error) {
        std::cerr << "ballistic: " << error.what() << "\n";
        return kExitFailure;
    }
}
