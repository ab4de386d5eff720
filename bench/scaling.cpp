// ballistic-scaling — sweeps thread counts 1…hardware threads on one scene and prints wall time,
// speed-up and parallel efficiency per count, checks that every count ends in the same state
// hash, and projects the speed-up at more cores than the machine has from the work the regions
// did (a work–span model). Writes a CSV file and a PNG plot (with gnuplot) when asked.
//
//   scaling --scene box --count 100000 --steps 60 --csv scaling.csv --png scaling.png
//
// With --repeat R every thread count is measured R times, the counts taking turns, and the fastest
// run of each is kept: on a shared machine other tenants only ever slow a run down. With --each-cpu
// one thread runs on each CPU in turn, and the one-thread row takes their mean speed: cores need
// not be equally fast. With --interleave K the worlds of every thread count (and CPU) live at once
// and take turns of K steps: a machine whose speed swings slows them alike.
//
// With --skip-steps K the timed steps begin after K untimed ones: a later stretch of the run.
//
// The projection. A step's events split into those processed serially and those the regions
// processed in runs; a run lasts as long as its busiest region (StepResult::region_span). With
// P regions the step costs (serial + span) events of one thread's time each, plus what the
// largest thread count measured took beyond its own path of such events, charged two ways: to
// every event on the path alike (the speed-up column), or to the events on the path near another
// region alone (StepResult::region_span_interface; the low end), whose share grows with P. The
// regions for P cores are planned and run for real (on the cores there are), so the split of the
// work, the events near cuts, the serial events and the undone ones are measured; only the time
// is modelled. They run their regions always, in equal shares; with --when-faster the counts
// measured run as a world does by default, their regions' shares following their cores' speeds.
#include <ballistic/scene/builders.hpp>
#include <ballistic/task_system.hpp>

#include <CLI/CLI.hpp>
#include <sched.h>
#include <tbb/info.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

using namespace ballistic;

namespace {

scenes::Scene build(const std::string& name, std::size_t count, double packing) {
    if (name == "gas") return scenes::periodic_gas(count, packing, 1.0);
    if (name == "box") return scenes::closed_box(count, packing, 5.0);
    return scenes::lesson_scene();
}

// With --when-faster, the least share of the widest count's events processed in regions for a projection.
constexpr double kLeastInRegions = 0.9;

// Plans the regions of `cores` cores and runs their tasks on the machine's threads (a region that
// waits for a neighbour gives up its turn): the projection's runs.
class Claiming final : public TaskSystem {
public:
    explicit Claiming(int cores) : cores_(cores) {}
    int concurrency() const override { return cores_; }
    void run(std::size_t count, TaskFunction task) override { machine_->run(count, task); }

private:
    int cores_;
    std::shared_ptr<TaskSystem> machine_ = make_tbb_task_system(0);
};

struct Run {
    int threads;
    double seconds;
    std::uint64_t collisions;
    std::uint64_t hash;
    std::uint64_t events = 0, in_regions = 0, span = 0, undone = 0, runs = 0;
    std::uint64_t interface = 0, span_interface = 0;  // of in_regions and span: the events near a cut
    std::uint32_t regions = 1;
    // Of its time, the share in the regions' runs; of those, the share the busiest region waited.
    double in_runs = 0.0, waits = 0.0;
    bool repeatable = true;  // every repetition ended in the same state
    // The critical path in events: those processed serially, and per run the busiest region's.
    double path() const { return double(events - in_regions) + double(span); }
};

// The steps of a run: `skip` untimed after the first (which builds the cells and the queue), then
// `timed`.
struct Stretch {
    int skip = 0, timed = 60;
};

// The first `most` CPUs this process may run on, in order (none where that cannot be read).
std::vector<int> usable_cpus(int most) {
    cpu_set_t set;
    CPU_ZERO(&set);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE && static_cast<int>(cpus.size()) < most; ++cpu)
        if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    return cpus;
}

// While it lives, the calling thread runs on `cpu` alone (a world of one thread runs on the
// calling thread); its CPUs are as before after it. No CPU (-1): as it is.
class Pinned {
public:
    explicit Pinned(int cpu) {
        if (cpu < 0) return;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        pinned_ = sched_getaffinity(0, sizeof before_, &before_) == 0 && sched_setaffinity(0, sizeof one, &one) == 0;
        if (!pinned_) throw std::runtime_error("cannot run on CPU " + std::to_string(cpu));
    }
    ~Pinned() {
        if (pinned_) sched_setaffinity(0, sizeof before_, &before_);
    }
    Pinned(const Pinned&) = delete;
    Pinned& operator=(const Pinned&) = delete;

private:
    cpu_set_t before_{};
    bool pinned_ = false;
};

// A world of the scene at one thread count (its steps on one CPU, when `cpu` is not -1), built,
// stepped outside the timed part, then timed step by step.
class Timed {
public:
    Timed(const scenes::Scene& scene, int threads, int cpu, Stretch steps, bool claimed = false)
        : world_(make(scene, threads, claimed)), dt_(scene.dt), cpu_(cpu) {
        run_.threads = threads;
        const Pinned pinned(cpu_);
        world_.step(dt_);  // builds cells and queue outside the timed part
        for (int k = 0; k < steps.skip; ++k) world_.step(dt_);
    }
    void step() {
        const Pinned pinned(cpu_);
        const auto start = std::chrono::steady_clock::now();
        const StepResult step = world_.step(dt_);
        run_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        run_.events += step.events;
        run_.in_regions += step.in_regions;
        run_.span += step.region_span;
        run_.undone += step.undone;
        run_.runs += step.region_runs;
        run_.interface += step.region_interface;
        run_.span_interface += step.region_span_interface;
        run_.regions = step.regions;
        region_seconds_ += step.region_seconds;
        region_work_ += step.region_work_seconds;
    }
    double bytes() const { return world_.bytes_per_ball() * static_cast<double>(world_.ball_count()); }
    Run result() const {
        Run run = run_;
        if (region_seconds_ > 0.0) {
            run.in_runs = region_seconds_ / run.seconds;
            run.waits = 1.0 - region_work_ / region_seconds_;
        }
        run.collisions = world_.event_counts().collisions();
        run.hash = world_.state_hash();
        return run;
    }

private:
    static World make(const scenes::Scene& scene, int threads, bool claimed) {
        scenes::Scene copy = scene;
        copy.world.threads = threads;
        if (claimed) copy.world.task_system = std::make_shared<Claiming>(threads);
        return scenes::make_world(copy);
    }
    World world_;
    double dt_;
    int cpu_;
    Run run_{};
    double region_seconds_ = 0.0, region_work_ = 0.0;
};

Run measure(const scenes::Scene& scene, int threads, int cpu, Stretch steps, bool claimed = false) {
    Timed timed(scene, threads, cpu, steps, claimed);
    for (int k = 0; k < steps.timed; ++k) timed.step();
    return timed.result();
}

// The memory the system can give without swapping (MemAvailable), in bytes; 0 where unknown.
double available_bytes() {
    std::ifstream meminfo("/proc/meminfo");
    std::string name;
    double kib = 0.0;
    while (meminfo >> name >> kib)
        if (name == "MemAvailable:") return 1024.0 * kib;
        else meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
    return 0.0;
}

// Every world of `worlds` (threads, CPU) at once, taking turns of `turn` steps, the first of
// each round one later than the last round's: a machine whose speed swings slows them alike.
std::vector<Run> measure_interleaved(const scenes::Scene& scene, const std::vector<std::pair<int, int>>& worlds,
                                     Stretch steps, int turn) {
    std::vector<Timed> timed;
    timed.reserve(worlds.size());
    for (const auto& [threads, cpu] : worlds) {
        timed.emplace_back(scene, threads, cpu, steps);
        // The others, as large as the first, must fit in the memory free now (with a margin:
        // bytes_per_ball() leaves out the allocator's own).
        const double more = 1.25 * timed.front().bytes() * static_cast<double>(worlds.size() - timed.size());
        const double available = available_bytes();
        if (available > 0.0 && more > available)
            throw std::runtime_error("--interleave holds " + std::to_string(worlds.size()) + " worlds at once: " +
                                     std::to_string(static_cast<long long>(more / 1e6)) + " MB more needed, " +
                                     std::to_string(static_cast<long long>(available / 1e6)) + " MB available");
    }
    for (int done = 0, round = 0; done < steps.timed; done += turn, ++round)
        for (std::size_t w = 0; w < timed.size(); ++w)
            for (int k = done; k < std::min(done + turn, steps.timed); ++k)
                timed[(w + static_cast<std::size_t>(round)) % timed.size()].step();
    std::vector<Run> runs;
    for (const Timed& t : timed) runs.push_back(t.result());
    return runs;
}

// The time a cache line takes from one thread to another and back, in ns: what every exchange
// between two regions on different cores pays. Two spinning threads, which the system puts on
// two cores when it has them; at most 0.2 s.
double round_trip_ns() {
    constexpr int kTrips = 100000;
    alignas(64) std::atomic<int> turn{0};
    std::atomic<bool> quit{false};
    std::thread other([&] {
        for (int k = 1; k < 2 * kTrips && !quit.load(std::memory_order_relaxed); k += 2) {
            while (turn.load(std::memory_order_acquire) != k)
                if (quit.load(std::memory_order_relaxed)) return;
            turn.store(k + 1, std::memory_order_release);
        }
    });
    const auto start = std::chrono::steady_clock::now();
    const auto deadline = start + std::chrono::milliseconds(200);
    auto answered = [&](int k) {  // false once past the deadline (the clock read now and then)
        for (unsigned spin = 1; turn.load(std::memory_order_acquire) != k; ++spin)
            if (spin % 1024 == 0 && std::chrono::steady_clock::now() >= deadline) return false;
        return true;
    };
    int trips = 0;
    while (trips < kTrips) {
        turn.store(2 * trips + 1, std::memory_order_release);
        if (!answered(2 * trips + 2)) break;
        ++trips;
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    quit.store(true, std::memory_order_relaxed);
    other.join();
    return trips > 0 ? 1e9 * seconds / trips : 0.0;  // 0: no answer (a single core)
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"Thread scaling of one Ballistic scene, measured and projected"};
    app.option_defaults()->always_capture_default();
    app.footer(
        "Columns: threads; measured, or projected (a work-span model from the work the regions did, "
        "not a measurement); ms per step; speed-up and efficiency against one thread; regions, the "
        "regions of the last step; in reg., the share of events the regions processed at once; at cuts, "
        "the share of those near another region; serial, the events processed serially; undone, events "
        "the regions processed and undid at a stop; the state hash, the same for every thread count.");
    std::string scene_name = "box", csv_path, png_path;
    std::size_t count = 100000;
    double packing = 0.1;
    Stretch steps;
    int repeat = 1, max_threads = tbb::info::default_concurrency(), project = 64;
    std::size_t parallel_min_balls = WorldDef{}.parallel_events_min_balls;
    app.add_option("--scene", scene_name, "gas (periodic, kT = 1), box (six walls, speed 5) or lesson")
        ->check(CLI::IsMember({"gas", "box", "lesson"}));
    app.add_option("--count", count, "balls (gas and box)")->check(CLI::PositiveNumber);
    app.add_option("--packing", packing, "packing fraction (gas and box)")->check(CLI::Range(0.01, 0.45));
    app.add_option("--steps", steps.timed, "timed steps of the scene's dt")->check(CLI::PositiveNumber);
    app.add_option("--skip-steps", steps.skip, "untimed steps before them (after the first, which builds the cells)")
        ->check(CLI::NonNegativeNumber);
    app.add_option("--max-threads", max_threads, "largest thread count measured")->check(CLI::PositiveNumber);
    app.add_option("--project", project,
                   "largest core count projected (powers of two above --max-threads; 1: none)")
        ->check(CLI::Range(1, 64));
    app.add_option("--repeat", repeat, "runs per thread count, taking turns; the fastest is kept")
        ->check(CLI::PositiveNumber);
    app.add_option("--parallel-min-balls", parallel_min_balls,
                   "WorldDef::parallel_events_min_balls: smaller worlds process events serially");
    bool when_faster = false;
    app.add_flag("--when-faster", when_faster,
                 "WorldDef::regions_when_faster: each count runs its regions only while they are faster than "
                 "the serial loop, in shares that follow their measured speeds (without it, always, in equal "
                 "shares); the projection's runs still run their regions always, in equal shares");
    bool each_cpu = false;
    app.add_flag("--each-cpu", each_cpu,
                 "one thread runs on each of the first --max-threads CPUs in turn, and the speed-ups are against "
                 "their mean speed: for machines whose cores differ in speed");
    int interleave = 0;
    app.add_option("--interleave", interleave,
                   "every thread count's world at once, taking turns of K steps, so that a machine whose speed "
                   "swings slows them alike (with --repeat: R such runs; 0: off)")
        ->check(CLI::Range(0, 1000000));
    app.add_option("--csv", csv_path, "CSV file of the table (none when not given)");
    app.add_option("--png", png_path, "PNG plot of the speed-ups (needs gnuplot; none when not given)");
    CLI11_PARSE(app, argc, argv);

    scenes::Scene scene;
    std::vector<Run> runs, projected;
    std::vector<int> cpus;             // --each-cpu: the CPUs of the one-thread runs
    std::vector<double> cpu_seconds;   // and the fastest run on each
    try {  // a scene the engine rejects: more balls than fit, a box narrower than three cells...
        scene = build(scene_name, count, packing);
        scene.world.parallel_events_min_balls = parallel_min_balls;
        scene.world.regions_when_faster = when_faster;
        // With --each-cpu, one thread's run is one on each CPU, the fastest of each kept; its
        // time is that of their mean speed.
        if (each_cpu) cpus = usable_cpus(max_threads);
        // The worlds measured, (threads, CPU): one thread (on each CPU), then two and more.
        std::vector<std::pair<int, int>> worlds;
        if (cpus.empty()) worlds.emplace_back(1, -1);
        for (const int cpu : cpus) worlds.emplace_back(1, cpu);
        for (int threads = 2; threads <= max_threads; ++threads) worlds.emplace_back(threads, -1);
        auto sweep = [&] {
            if (interleave > 0) return measure_interleaved(scene, worlds, steps, interleave);
            std::vector<Run> each;
            for (const auto& [threads, cpu] : worlds) each.push_back(measure(scene, threads, cpu, steps));
            return each;
        };
        std::vector<Run> best = sweep();
        for (int r = 1; r < repeat; ++r) {
            const std::vector<Run> again = sweep();
            for (std::size_t w = 0; w < best.size(); ++w) {
                best[w].repeatable = best[w].repeatable && again[w].repeatable && again[w].hash == best[w].hash;
                best[w].seconds = std::min(best[w].seconds, again[w].seconds);
            }
        }
        // One thread's row: its runs on the CPUs at their mean speed.
        const std::size_t ones = std::max<std::size_t>(cpus.size(), 1);
        Run one = best.front();
        double speed = 0.0;
        for (std::size_t c = 0; c < ones; ++c) {
            one.repeatable = one.repeatable && best[c].repeatable && best[c].hash == one.hash;
            speed += 1.0 / best[c].seconds;
            if (!cpus.empty()) cpu_seconds.push_back(best[c].seconds);
        }
        one.seconds = double(ones) / speed;
        runs.push_back(one);
        runs.insert(runs.end(), best.begin() + static_cast<std::ptrdiff_t>(ones), best.end());
        // The model needs the regions' work at the widest count: not where it chose the serial loop.
        const Run& widest = runs.back();
        const double in_regions = double(widest.in_regions) / double(std::max<std::uint64_t>(widest.events, 1));
        if (when_faster && project > max_threads && in_regions < kLeastInRegions) {
            std::printf("no projection: the run on %d thread%s processed %.0f %% of its events in regions, %.0f %% needed\n",
                        widest.threads, widest.threads == 1 ? "" : "s", 100.0 * in_regions, 100.0 * kLeastInRegions);
            project = 1;
        }
        scenes::Scene always = scene;  // P regions planned and run for real: always, in equal shares
        always.world.regions_when_faster = false;
        for (int cores = 2; cores <= project; cores *= 2)
            if (cores > max_threads) projected.push_back(measure(always, cores, -1, steps, true));
    } catch (const ballistic::InvalidArgument& error) {
        std::cerr << "scaling: " << error.what() << "\n";
        return 2;
    } catch (const std::runtime_error& error) {
        std::cerr << "scaling: " << error.what() << "\n";
        return 1;
    } catch (const std::bad_alloc&) {
        std::cerr << "scaling: out of memory for " << count << " balls"
                  << (interleave > 0 ? " in one world per thread count at once (--interleave)" : "") << "\n";
        return 1;
    }

    // One thread's time per event, and the time the largest count measured took beyond its path
    // of such events: per event on the path (`overhead`), or per event on it near a cut (`surcharge`).
    const Run& serial = runs.front();
    const Run& widest = runs.back();
    const double per_event = serial.seconds / double(serial.events);
    const double beyond = widest.threads > 1 ? std::max(0.0, widest.seconds / per_event - widest.path()) : 0.0;
    const double overhead = 1.0 + beyond / widest.path();
    const double surcharge = widest.span_interface > 0 ? beyond / double(widest.span_interface) : 0.0;
    auto at_cuts_seconds = [&](const Run& r) { return per_event * (r.path() + surcharge * double(r.span_interface)); };

    std::ostringstream csv;
    csv << "threads,kind,seconds,ms_per_step,speedup,efficiency,regions,in_regions_share,at_cuts_share,serial_events,"
           "span_events,span_at_cuts,undone_events,runs,state_hash,low_end_speedup,in_runs_share,busiest_waits_share\n";
    std::printf("%s: %zu balls, %d steps of %g", scene.name.c_str(), scene.balls.size(), steps.timed, scene.dt);
    if (steps.skip > 0) std::printf(" after %d untimed", steps.skip + 1);
    std::printf("\n");
    std::printf("%8s %10s %12s %10s %11s %8s %9s %8s %9s %8s  %-16s  %s\n", "threads", "", "ms/step", "speed-up",
                "efficiency", "regions", "in reg.", "at cuts", "serial", "undone", "state hash", "low end");
    bool same = true;
    auto row = [&](const Run& r, const char* kind, double seconds, double low_end) {
        const double speedup = serial.seconds / seconds;
        const double efficiency = speedup / r.threads;
        const double share = r.events > 0 ? double(r.in_regions) / double(r.events) : 0.0;
        const double at_cuts = r.in_regions > 0 ? double(r.interface) / double(r.in_regions) : 0.0;
        same = same && r.repeatable && r.hash == serial.hash;
        std::printf("%8d %10s %12.3f %10.3f %11.3f %8u %8.1f%% %7.1f%% %9llu %8llu  %016llx", r.threads, kind,
                    1e3 * seconds / steps.timed, speedup, efficiency, r.regions, 100.0 * share, 100.0 * at_cuts,
                    static_cast<unsigned long long>(r.events - r.in_regions), static_cast<unsigned long long>(r.undone),
                    static_cast<unsigned long long>(r.hash));
        if (low_end > 0.0) std::printf("  %7.3f", low_end);
        std::printf("\n");
        csv << r.threads << ',' << kind << ',' << seconds << ',' << 1e3 * seconds / steps.timed << ',' << speedup << ','
            << efficiency << ',' << r.regions << ',' << share << ',' << at_cuts << ',' << r.events - r.in_regions << ','
            << r.span << ',' << r.span_interface << ',' << r.undone << ',' << r.runs << ",0x" << std::hex << r.hash
            << std::dec << ',';
        if (low_end > 0.0) csv << low_end;
        csv << ',';
        if (std::string_view(kind) == "measured" && r.in_runs > 0.0) csv << r.in_runs << ',' << r.waits;
        else csv << ',';
        csv << '\n';
    };
    for (const Run& r : runs) row(r, "measured", r.seconds, 0.0);
    for (const Run& r : projected)
        row(r, "projected", per_event * overhead * r.path(), serial.seconds / at_cuts_seconds(r));
    // The plot reads the table from a file: the one asked for, or one of its own, removed after.
    const bool own_csv = csv_path.empty() && !png_path.empty();
    if (own_csv) csv_path = (std::filesystem::temp_directory_path() / ("ballistic-scaling-" + std::to_string(::getpid()) + ".csv")).string();
    if (!csv_path.empty()) {
        std::ofstream file(csv_path);
        file << csv.str();
        file.close();
        if (!file) {
            std::cerr << "cannot write " << csv_path << "\n";
            return 1;
        }
    }
    std::printf("state hash %s for every thread count\n", same ? "identical" : "DIFFERS");
    if (!cpus.empty()) {
        std::printf("one thread on each CPU, ms/step:");
        for (std::size_t c = 0; c < cpus.size(); ++c) std::printf(" CPU %d %.3f", cpus[c], 1e3 * cpu_seconds[c] / steps.timed);
        std::printf("; the speed-ups are against their mean speed (%.3f ms/step)\n", 1e3 * serial.seconds / steps.timed);
    }
    if (const double trip = max_threads > 1 ? round_trip_ns() : 0.0; trip > 0.0)
        std::printf("a cache line between two threads and back: %.0f ns (each region's exchange with a neighbour "
                    "pays it)\n", trip);
    for (const Run& r : runs)
        if (r.in_runs > 0.0)
            std::printf("%d threads: %.0f %% of the time in the regions' runs; in them, the busiest region waited %.1f %%\n",
                        r.threads, 100.0 * r.in_runs, 100.0 * r.waits);
    if (!projected.empty())
        std::printf("projected: the work the regions did at each count, %.3g us per event on one thread, times %.2f "
                    "per event in a region (measured at %d threads); low end: the extra time all in the events near "
                    "a cut, each %.2f times one thread's (its share grows with the count). A projection, not a "
                    "measurement\n",
                    1e6 * per_event, overhead, widest.threads, 1.0 + surcharge);

    if (!png_path.empty()) {
        const std::string command =
            "gnuplot -e \"set terminal pngcairo size 800,500 noenhanced; set output '" + png_path +
            "'; set datafile separator ','; set xlabel 'threads (cores)'; set ylabel 'speed-up';"
            " set logscale xy 2; set grid; set key top left; set title '" + scene.name + ", " +
            std::to_string(scene.balls.size()) + " balls'; plot '" + csv_path +
            "' using 1:(strcol(2) eq 'measured' ? \\$5 : 1/0) with linespoints pointtype 7 title 'measured',"
            " '' using 1:(strcol(2) eq 'projected' || \\$1 == " + std::to_string(widest.threads) +
            " ? \\$5 : 1/0) with linespoints dashtype 2 title 'projected (work-span model)',"
            " '' using 1:(strcol(2) eq 'projected' ? \\$16 : \\$1 == " + std::to_string(widest.threads) +
            " ? \\$5 : 1/0) with linespoints dashtype 3 title 'projected, low end',"
            " '' using 1:1 with lines linecolor 'gray' title 'ideal'\"";
        const bool plotted = std::system(command.c_str()) == 0;
        if (own_csv) std::filesystem::remove(csv_path);
        if (!plotted) {
            std::cerr << "gnuplot failed (is gnuplot-nox installed?)\n";
            return 1;
        }
        std::printf("plot written to %s\n", png_path.c_str());
    }
    return same ? 0 : 1;
}
