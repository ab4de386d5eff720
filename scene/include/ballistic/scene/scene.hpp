// Ballistic — scene files and run statistics, shared by the `ballistic` program, the benchmarks
// and the tests.
//
// A scene file is JSON (format in docs/scenes.md). Every bad input — an unreadable
// file, a JSON syntax error, an unknown key, a wrong type or an invalid value — throws
// ballistic::InvalidArgument whose field() is the JSON path of the offending value (e.g.
// "balls[2].velocity"; empty for problems with the file as a whole) and whose message names the
// path, and the file when there is one.
#pragma once

#include <ballistic/world.hpp>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ballistic::scene {

// Frame length of `ballistic run`: the simulation is stepped (and events are reported) at 60 Hz.
inline constexpr double kFrame = 1.0 / 60.0;

// A spout (scene key "emitters"): `count` balls of `radius` and `mass`, one every `interval` of
// time from `next` (the file's "start"), leaving `position` at `velocity`. Ball k comes out at the
// time it is due (step() pauses the world's step there), from a place drawn (from `seed` and k) in
// the box of half-extents `spread` around `position`. When that place is not free
// (World::is_free), the ball waits: it is due again at the end of that step, and so on. `emitted`
// and `next` (the time the next ball is due) are the progress, which --state and --checkpoint
// keep.
struct Emitter {
    Vec3 position, velocity, spread;
    double radius = 0.0, mass = 1.0, interval = 0.0;
    std::uint64_t count = 0, seed = 0;
    std::uint64_t emitted = 0;
    double next = 0.0;
};

// A world built from a scene, with the handles of its balls in input order: the explicit
// "balls" first, then each "generate" entry's balls, then the emitted ones as they come. The
// emitters and the energy (kinetic and potential, as total_energy()) their balls brought.
struct Scene {
    World world;
    std::vector<BallId> balls;
    std::vector<Emitter> emitters = {};
    double energy_emitted = 0.0;
};

// Steps the scene's world by `dt` (World::step), its emitters adding each ball at the time it is
// due, those due at the step's start first: a spout costs what its balls do, whatever the step.
// A ball comes out only where World::is_free finds room, so the world takes it.
StepResult step(Scene& scene, double dt);

// Limits on scene input: larger files and deeper nesting are refused with an error naming the
// limit (docs/cli.md, "Bad input and limits").
inline constexpr std::uintmax_t kMaxSceneBytes = std::uintmax_t{1} << 30;
inline constexpr std::size_t kMaxJsonDepth = 64;

// What the program, not the file, decides about the world.
struct LoadOptions {
    int threads = 0;                                   // WorldDef::threads (0 = all hardware threads)
    std::size_t memory_limit = WorldDef{}.memory_limit;  // WorldDef::memory_limit (bytes)
    bool regions_when_faster = true;                   // WorldDef::regions_when_faster
};

Scene load_scene_text(std::string_view text, const LoadOptions& options);
Scene load_scene_file(const std::filesystem::path& path, const LoadOptions& options);
inline Scene load_scene_text(std::string_view text, int threads = 0) { return load_scene_text(text, LoadOptions{threads}); }
inline Scene load_scene_file(const std::filesystem::path& path, int threads = 0) {
    return load_scene_file(path, LoadOptions{threads});
}

// The classic NeHe lesson scene, made exact: an open-topped box with three columns, ten large
// balls and a few hundred small ones under gravity.
std::string_view default_scene_text();
inline constexpr double kDefaultDuration = 10.0;

// Steps the world by `duration` in frames of kFrame (the last one partial).
// What may end a run early.
struct RunControl {
    // Set (by a signal handler): stop at the next event. The world holds it as its interrupt flag
    // (World::set_interrupt) while the run lasts.
    const std::atomic<bool>* stop = nullptr;
    std::uint64_t event_budget = 0;           // events the run may process (0: none)
    // Called after every frame (progress, trajectory samples); may not change the world.
    std::function<void(const World&)> on_frame = {};
    // Steps the world by a frame's dt (default: World::step; run_scene() steps a scene with
    // emitters by step(Scene&, dt)).
    std::function<StepResult(World&, double)> step = {};
};

// Returns false when `control.stop` became true first: then the world stands, consistent, at the
// last event processed. Throws BudgetExceeded, the world consistent at the time reached, when the run's event
// budget (or the world's own per-step budget) runs out.
bool advance(World& world, double duration, const RunControl& control = {});

// Kinetic energy plus gravitational potential energy −Σ m g·x (zero at the origin).
double total_energy(const Scene& scene);

// A note for a world that settles without friction: gravity, restitution below one, no friction,
// balls that may sleep, and more awake balls slower than sleep_speed than balls asleep (at least
// a tenth of all). Frictionless balls in a pile keep sliding, so they rarely hold still long
// enough to sleep; friction settles them. Empty when that is not so. O(N).
std::string settling_note(const World& world);

// What `ballistic run` reports; the stats JSON is this struct, key for key.
struct RunStats {
    std::size_t balls = 0;
    double time = 0.0;
    EventCounts events;
    std::vector<StaticCounters> planes;
    std::vector<StaticCounters> cylinders;
    std::vector<StaticCounters> capsules;
    std::vector<StaticCounters> blocks;
    double kinetic_energy_start = 0.0;
    double kinetic_energy_end = 0.0;
    double energy_start = 0.0;   // total_energy()
    double energy_end = 0.0;
    double energy_emitted = 0.0;  // brought by the balls emitters added during the run
    std::uint64_t emitted = 0;    // balls emitters added during the run
    std::vector<Emitter> emitters;  // the scene's emitters at the end (their progress)
    Vec3 momentum_start;
    Vec3 momentum_end;
    double temperature = 0.0;
    std::optional<double> pressure;   // periodic worlds only
    double max_overlap = 0.0;
    std::size_t escaped = 0;
    std::size_t sleeping = 0;         // balls asleep at the end
    double cell_width = 0.0;          // of the spatial cells at the end (World::cell_width())
    int threads = 0;                  // tasks the world runs at once (World::concurrency())
    // How the run's steps shared their events among the regions (StepResult): the regions of the
    // last step, and over the steps that ended (a step a signal or the budget stopped is not
    // counted) every event processed, those the regions processed, their runs and the events
    // they undid.
    struct Regions {
        std::uint32_t count = 1;
        std::uint64_t processed = 0, events = 0, runs = 0, undone = 0;
        double share() const { return processed > 0 ? static_cast<double>(events) / static_cast<double>(processed) : 0.0; }
    } regions;
    bool interrupted = false;         // stopped early; `time` is the time reached
    std::string stop_reason;          // why: "signal", "out of memory", or the event budget's message
    double measured_from = 0.0;       // when the measurements began (World::measured_since())
    double wall_seconds = 0.0;        // of the whole run, equilibration included
    std::uint64_t run_collisions = 0;  // collisions the run processed, equilibration included
    std::uint64_t state_hash = 0;

    double events_per_second() const;  // run_collisions / wall_seconds
    // |E_end − E_start − E_emitted| / max(|E_start|, |E_start + E_emitted|) (0 when the
    // numerator is 0).
    double relative_energy_drift() const;
};

// Simulates `duration` and measures it: conserved quantities before and after, counters, wall
// time. Counters run from the world's creation (or its last reset_measurements()). A signal
// (control.stop) or the event budget ends the run early (RunStats::interrupted, stop_reason). A
// state that is no longer finite (the scene's magnitudes overflowed) throws std::runtime_error.
// With `equilibrate` > 0 the scene first runs that long, then the measurements are reset
// (World::reset_measurements) and `duration` more is measured: the statistics describe only
// that part. The event budget covers both.
RunStats run_scene(Scene& scene, double duration, const RunControl& control = {}, double equilibrate = 0.0);

// Stats as JSON text (keys in docs/cli.md, "Statistics").
std::string stats_json(const RunStats& stats);
// The world as a scene file that load_scene_*() reads back: its time and settings, its planes
// and other statics, and every ball of `balls` in that order with position, velocity, radius and
// mass, every number with full round-trip precision. (Bit-identical continuation needs a
// snapshot, World::save: a scene holds no pending events and no sleep history.)
// With `emitters`, their definitions and progress too.
std::string state_json(const World& world, std::span<const BallId> balls, std::span<const Emitter> emitters = {});
// The same text written to `out` as it is made, in pieces of about a megabyte: millions of balls
// need no room for the whole text.
void write_state_json(std::ostream& out, const World& world, std::span<const BallId> balls,
                      std::span<const Emitter> emitters = {});
// The emitters alone, {"emitters": [...], "state_hash": "0x…", "checksum": "0x…"} (the list as a
// scene file has it, the state hash of the world they belong to, and a checksum of both), and
// read back into a scene restored from a snapshot of that world (a checkpoint keeps them after
// the world's snapshot); errors as load_scene_text(), a damaged list named by its checksum and
// another world's by its state hash.
std::string emitters_json(const World& world, std::span<const Emitter> emitters);
void read_emitters(Scene& scene, std::string_view text);
// One extended XYZ frame (read by ASE and OVITO): the ball count, a comment line with the time,
// the periodic box as Lattice (pbc "T T T") or pbc "F F F", and one line per ball of `balls`:
// species X, position, velocity, radius, at full round-trip precision.
std::string extxyz_frame(const World& world, std::span<const BallId> balls);
void write_extxyz_frame(std::ostream& out, const World& world, std::span<const BallId> balls);  // the same, written as made
// A few human-readable lines.
std::string summary_text(const RunStats& stats);

}  // namespace ballistic::scene
