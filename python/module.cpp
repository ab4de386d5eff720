// Ballistic for Python: `import ballistic` (docs/python.md). A World wraps a scene (the world,
// its balls in input order and its emitters), so that run() steps as `ballistic run` does.
#include <ballistic/scene/scene.hpp>
#include <ballistic/world.hpp>
#ifdef BALLISTIC_PYTHON_RENDERER
#include <ballistic/render/camera.hpp>
#include <ballistic/render/renderer.hpp>
#endif

#include <pybind11/eval.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <Python.h>

#include <atomic>
#include <csignal>
#include <cmath>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <sstream>
#include <string>
#include <vector>

namespace py = pybind11;
using namespace ballistic;

namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

// ---------------------------------------------------------------------------------------------
// Ctrl-C. While a step runs without the GIL, Python's own SIGINT handler only notes the signal:
// the step would run to its end. So a step takes SIGINT itself: the handler sets the world's
// interrupt flag (the step stops at its next event, consistent), and Python's handler comes back
// afterwards. Only the main thread does this, as only it receives Python's signals.

std::atomic<bool> g_interrupted{false};
static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler stores into it");
extern "C" void on_sigint(int) { g_interrupted.store(true, std::memory_order_relaxed); }

class CatchInterrupt {
public:
    CatchInterrupt() : main_(on_main_thread()) {
        if (!main_) return;
        g_interrupted.store(false, std::memory_order_relaxed);
        previous_ = PyOS_setsig(SIGINT, on_sigint);
    }
    ~CatchInterrupt() {
        if (main_) PyOS_setsig(SIGINT, previous_);
    }
    const std::atomic<bool>* flag() const { return main_ ? &g_interrupted : nullptr; }
    CatchInterrupt(const CatchInterrupt&) = delete;
    CatchInterrupt& operator=(const CatchInterrupt&) = delete;

private:
    static bool on_main_thread() {
        const py::module_ threading = py::module_::import("threading");
        return threading.attr("current_thread")().is(threading.attr("main_thread")());
    }
    bool main_;
    PyOS_sighandler_t previous_ = nullptr;
};

[[noreturn]] void raise_keyboard_interrupt(const std::string& what) {
    PyErr_SetString(PyExc_KeyboardInterrupt, what.c_str());
    throw py::error_already_set();
}

// ---------------------------------------------------------------------------------------------
// Arrays in.

// `value` as an array of real numbers (integers or floats), or TypeError naming `name`.
py::array real_array(py::handle value, const char* name, const char* expected) {
    py::array raw = py::array::ensure(value);
    if (!raw) throw py::type_error(std::string(name) + ": expected " + expected);
    const char kind = raw.dtype().kind();
    if (kind != 'f' && kind != 'i' && kind != 'u')
        throw py::type_error(std::string(name) + ": expected real numbers, got dtype " + py::str(raw.dtype()).cast<std::string>());
    return raw;
}

// An array's shape as Python writes it: (4, 2), (3,).
std::string shape_of(const py::array& a) {
    std::string shape = "(";
    for (py::ssize_t d = 0; d < a.ndim(); ++d) shape += (d ? ", " : "") + std::to_string(a.shape(d));
    return shape + (a.ndim() == 1 ? ",)" : ")");
}

// A float64 (n, 3) array from `value`, or TypeError / ValueError naming `name` and the shape.
Array vectors(py::handle value, const char* name, py::ssize_t n = -1) {
    const py::array raw = real_array(value, name, "an array of shape (N, 3)");
    if (raw.ndim() != 2 || raw.shape(1) != 3 || (n >= 0 && raw.shape(0) != n))
        throw py::value_error(std::string(name) + ": expected shape (" + (n >= 0 ? std::to_string(n) : "N") +
                              ", 3), got " + shape_of(raw));
    return Array::ensure(raw);
}

// A float64 (n,) array from `value` (a scalar fills it), or TypeError / ValueError naming `name`.
Array scalars(py::handle value, const char* name, py::ssize_t n) {
    const py::array raw = real_array(value, name, "a number or an array of shape (N,)");
    if (raw.ndim() == 0) {
        Array filled(n);
        const double v = Array::ensure(raw).at();
        std::fill(filled.mutable_data(), filled.mutable_data() + n, v);
        return filled;
    }
    if (raw.ndim() != 1 || raw.shape(0) != n)
        throw py::value_error(std::string(name) + ": expected shape (" + std::to_string(n) + ",), got " + shape_of(raw));
    return Array::ensure(raw);
}

Vec3 vec(py::handle value, const char* name) {
    py::array raw = py::array::ensure(value);
    if (!raw || raw.size() != 3)
        throw py::value_error(std::string(name) + ": expected three numbers, got " + py::repr(value).cast<std::string>());
    const Array a = vectors(raw.reshape({1, 3}), name, 1);
    return {a.at(0, 0), a.at(0, 1), a.at(0, 2)};
}

py::tuple tuple_of(Vec3 v) { return py::make_tuple(v.x, v.y, v.z); }

// The array, made read-only: a copy never changes under its reader, and a view must not write
// into the engine.
py::array read_only(py::array a) {
    py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
    return a;
}

// ---------------------------------------------------------------------------------------------
// The settings, by their WorldDef names.

void set_setting(WorldDef& def, const std::string& name, py::handle value);

WorldDef settings(const py::kwargs& kwargs) {
    WorldDef def;
    for (const auto& [key, value] : kwargs) {
        const std::string name = py::str(key);
        try {
            set_setting(def, name, value);
        } catch (const py::cast_error&) {
            throw py::type_error("World(): setting '" + name + "' cannot be " +
                                 py::str(value.get_type().attr("__name__")).cast<std::string>());
        }
    }
    return def;
}

void set_setting(WorldDef& def, const std::string& name, py::handle value) {
    auto number = [&] { return value.cast<double>(); };
    auto count = [&] {
        const auto v = value.cast<long long>();
        if (v < 0) throw py::value_error("world." + name + ": must be >= 0, got " + std::to_string(v));
        return static_cast<unsigned long long>(v);
    };
    if (name == "gravity") def.gravity = vec(value, "gravity");
    else if (name == "restitution") def.restitution = number();
    else if (name == "friction") def.friction = number();
    else if (name == "time") def.time = number();
    else if (name == "periodic") {
        if (!value.is_none()) {
            const Array box = vectors(value, "periodic", 2);
            def.periodic = Box{{box.at(0, 0), box.at(0, 1), box.at(0, 2)}, {box.at(1, 0), box.at(1, 1), box.at(1, 2)}};
        }
    } else if (name == "periodic_axes") {
        const auto axes = value.cast<std::vector<bool>>();
        if (axes.size() != 3) throw py::value_error("world.periodic_axes: expected three booleans");
        def.periodic_axes = {axes[0], axes[1], axes[2]};
    } else if (name == "rest_speed") def.rest_speed = number();
    else if (name == "sleep_speed") def.sleep_speed = number();
    else if (name == "sleep_time") def.sleep_time = number();
    else if (name == "sleep_events") def.sleep_events = static_cast<std::uint32_t>(count());
    else if (name == "sleep_friction") def.sleep_friction = number();
    else if (name == "wake_lift") def.wake_lift = number();
    else if (name == "sleep_interval") def.sleep_interval = number();
    else if (name == "memory_limit") def.memory_limit = static_cast<std::size_t>(count());
    else if (name == "step_event_budget") def.step_event_budget = count();
    else if (name == "event_record_limit") def.event_record_limit = static_cast<std::size_t>(count());
    else if (name == "threads") def.threads = value.cast<int>();
    else if (name == "parallel_events_min_balls") def.parallel_events_min_balls = static_cast<std::size_t>(count());
    else if (name == "regions_when_faster") def.regions_when_faster = value.cast<bool>();
    else throw py::type_error("World(): unknown setting '" + name + "' (the settings are WorldDef's fields)");
}

// ---------------------------------------------------------------------------------------------
// The world.

std::string path_of(py::handle value) { return py::str(py::module_::import("os").attr("fspath")(value)); }
bool is_path(py::handle value) { return py::isinstance<py::str>(value) || py::hasattr(value, "__fspath__"); }

// Keeps the world of column views alive, and counts the views alive, so that a call that may
// move the ball store (adding or removing balls) refuses while one is.
struct ViewGuard {
    py::object world;
    std::shared_ptr<int> alive;
    ViewGuard(py::object w, std::shared_ptr<int> a) : world(std::move(w)), alive(std::move(a)) { ++*alive; }
    ~ViewGuard() { --*alive; }
    ViewGuard(const ViewGuard&) = delete;
    ViewGuard& operator=(const ViewGuard&) = delete;
};

class PyWorld {
public:
    explicit PyWorld(scene::Scene s) : scene_(std::move(s)) {}

    // Refuses a call that may move the ball store while column views are alive.
    void may_move(const char* call) const {
        if (*views_ > 0)
            throw std::runtime_error(std::string("World.") + call + ": " + std::to_string(*views_) +
                                     " arrays from World.columns() are alive; drop them first (del), since " + call +
                                     " may move the storage they show");
    }

    // Read-only arrays over the engine's own columns, no copy: x, y, z, vx, vy, vz, radius.
    py::dict columns(py::object self) {
        const BallView view = scene_.world.balls();
        auto guard = py::cast(std::make_unique<ViewGuard>(std::move(self), views_));
        py::dict out;
        auto add = [&](const char* name, std::span<const double> c) {
            out[name] = read_only(py::array(py::dtype::of<double>(), {static_cast<py::ssize_t>(c.size())},
                                            {sizeof(double)}, c.data(), guard));
        };
        add("x", view.x);
        add("y", view.y);
        add("z", view.z);
        add("vx", view.vx);
        add("vy", view.vy);
        add("vz", view.vz);
        add("radius", view.radius);
        return out;
    }

    World& world() { return scene_.world; }
    const World& world() const { return scene_.world; }
    scene::Scene& scene() { return scene_; }

    py::array add_balls(py::handle positions, py::handle velocities, py::handle radii, py::handle masses) {
        may_move("add_balls");
        const Array p = vectors(positions, "positions");
        const py::ssize_t n = p.shape(0);
        const Array v = vectors(velocities, "velocities", n);
        const Array r = scalars(radii, "radii", n);
        const Array m = masses.is_none() ? scalars(py::float_(1.0), "masses", n) : scalars(masses, "masses", n);
        std::vector<BallDef> defs(static_cast<std::size_t>(n));
        const double *pp = p.data(), *vp = v.data(), *rp = r.data(), *mp = m.data();
        for (py::ssize_t k = 0; k < n; ++k) {
            BallDef& d = defs[static_cast<std::size_t>(k)];
            d.position = {pp[3 * k], pp[3 * k + 1], pp[3 * k + 2]};
            d.velocity = {vp[3 * k], vp[3 * k + 1], vp[3 * k + 2]};
            d.radius = rp[k];
            d.mass = mp[k];
        }
        std::vector<BallId> ids;
        {
            py::gil_scoped_release free;
            ids = scene_.world.add_balls(defs);
        }
        scene_.balls.insert(scene_.balls.end(), ids.begin(), ids.end());
        py::array_t<std::uint64_t> out(static_cast<py::ssize_t>(ids.size()));
        for (std::size_t k = 0; k < ids.size(); ++k) out.mutable_data()[k] = ids[k].value;
        return out;
    }

    StepResult step(double dt) {
        CatchInterrupt sigint;
        World& w = scene_.world;
        w.set_interrupt(sigint.flag());
        struct Clear {
            World& w;
            ~Clear() { w.set_interrupt(nullptr); }
        } clear{w};
        try {
            py::gil_scoped_release free;
            return scene::step(scene_, dt);
        } catch (const StepInterrupted& e) {
            raise_keyboard_interrupt(e.what());
        }
    }

    py::dict run(double duration, double equilibrate, std::uint64_t event_budget) {
        CatchInterrupt sigint;
        scene::RunControl control;
        control.stop = sigint.flag();
        control.event_budget = event_budget;
        scene::RunStats stats;
        {
            py::gil_scoped_release free;
            stats = scene::run_scene(scene_, duration, control, equilibrate);
        }
        if (stats.interrupted && stats.stop_reason == "signal")
            raise_keyboard_interrupt("World.run: interrupted at time " + std::to_string(stats.time) +
                                     "; the world stands there, consistent");
        return py::module_::import("json").attr("loads")(scene::stats_json(stats));
    }

    py::array column(std::span<const double> (*pick)(const BallView&)) const {
        const BallView view = scene_.world.balls();
        const std::span<const double> c = pick(view);
        py::array_t<double> out(static_cast<py::ssize_t>(c.size()));
        std::memcpy(out.mutable_data(), c.data(), c.size() * sizeof(double));
        return read_only(std::move(out));
    }

    py::array triples(bool velocity) const {
        const BallView view = scene_.world.balls();
        const auto x = velocity ? view.vx : view.x, y = velocity ? view.vy : view.y, z = velocity ? view.vz : view.z;
        py::array_t<double> out({static_cast<py::ssize_t>(x.size()), py::ssize_t{3}});
        double* o = out.mutable_data();
        for (std::size_t k = 0; k < x.size(); ++k) {
            o[3 * k] = x[k];
            o[3 * k + 1] = y[k];
            o[3 * k + 2] = z[k];
        }
        return read_only(std::move(out));
    }

    py::array masses() const {
        const BallView view = scene_.world.balls();
        py::array_t<double> out(static_cast<py::ssize_t>(view.id.size()));
        for (std::size_t k = 0; k < view.id.size(); ++k) out.mutable_data()[k] = scene_.world.ball(view.id[k]).mass;
        return read_only(std::move(out));
    }

    py::array ids() const {
        const BallView view = scene_.world.balls();
        py::array_t<std::uint64_t> out(static_cast<py::ssize_t>(view.id.size()));
        for (std::size_t k = 0; k < view.id.size(); ++k) out.mutable_data()[k] = view.id[k].value;
        return read_only(std::move(out));
    }

    py::array sleeping() const {
        const std::vector<std::uint8_t> flags = scene_.world.sleeping_flags();
        py::array_t<bool> out(static_cast<py::ssize_t>(flags.size()));
        for (std::size_t k = 0; k < flags.size(); ++k) out.mutable_data()[k] = flags[k] != 0;
        return read_only(std::move(out));
    }

    // A checkpoint, as `ballistic run --checkpoint` writes it: the world's snapshot, then its
    // emitters' progress.
    py::bytes checkpoint() const {
        std::ostringstream out;
        scene_.world.save(out);
        out << scene::emitters_json(scene_.world, scene_.emitters);
        return py::bytes(out.str());
    }

private:
    scene::Scene scene_;
    std::shared_ptr<int> views_ = std::make_shared<int>(0);
};

BallId ball_id(std::uint64_t value) { return BallId{value}; }

py::dict ball_dict(const BallState& b) {
    py::dict d;
    d["id"] = b.id.value;
    d["position"] = tuple_of(b.position);
    d["velocity"] = tuple_of(b.velocity);
    d["radius"] = b.radius;
    d["mass"] = b.mass;
    d["sleeping"] = b.sleeping;
    d["user_data"] = b.user_data;
    return d;
}

py::dtype event_dtype() {
    return py::dtype::from_args(py::eval(R"([('time', '<f8'), ('kind', 'u1'), ('ball', '<u8'), ('other', '<u8'),
        ('static_index', '<u4'), ('point', '<f8', (3,)), ('normal', '<f8', (3,)), ('impulse', '<f8')])"));
}

py::dtype hit_dtype() {
    return py::dtype::from_args(py::eval(R"([('hit', '?'), ('target', 'u1'), ('distance', '<f8'), ('point', '<f8', (3,)),
        ('normal', '<f8', (3,)), ('ball', '<u8'), ('static_index', '<u4')])"));
}

#pragma pack(push, 1)
struct EventRow {
    double time;
    std::uint8_t kind;
    std::uint64_t ball, other;
    std::uint32_t static_index;
    double point[3], normal[3];
    double impulse;
};
struct HitRow {
    bool hit;
    std::uint8_t target;
    double distance;
    double point[3], normal[3];
    std::uint64_t ball;
    std::uint32_t static_index;
};
#pragma pack(pop)

std::string restore_bytes(py::handle source) {
    if (py::isinstance<py::bytes>(source) || py::isinstance<py::bytearray>(source) || py::isinstance<py::memoryview>(source))
        return py::module_::import("builtins").attr("bytes")(source).cast<std::string>();
    if (is_path(source)) {
        const std::string path = path_of(source);
        std::ifstream file(path, std::ios::binary);
        if (!file) throw py::value_error("restore: cannot read " + path);
        std::ostringstream text;
        text << file.rdbuf();
        return text.str();
    }
    if (py::hasattr(source, "read")) return py::module_::import("builtins").attr("bytes")(source.attr("read")()).cast<std::string>();
    throw py::type_error("restore: expected bytes, a path or a binary file");
}

// A world from a checkpoint (World.save, `ballistic run --checkpoint`) or a bare snapshot
// (World::save), its balls in the order of their handles, as `ballistic resume` takes them.
PyWorld restore(py::handle source, int threads) {
    const std::string bytes = restore_bytes(source);
    std::istringstream in(bytes);
    RestoreOptions options;
    options.threads = threads;
    scene::Scene s{World::restore(in, options), {}};
    const BallView view = s.world.balls();
    s.balls.assign(view.id.begin(), view.id.end());
    std::sort(s.balls.begin(), s.balls.end(), [](BallId a, BallId b) { return a.index() < b.index(); });
    const auto read = static_cast<std::size_t>(in.tellg());
    if (read < bytes.size()) scene::read_emitters(s, std::string_view(bytes).substr(read));
    return PyWorld(std::move(s));
}

}  // namespace

PYBIND11_MODULE(ballistic, m) {
    m.doc() = "Ballistic: exact event-driven simulation of balls, from Python and NumPy.\n\n"
              "Every collision of every ball, with planes, cylinders, capsules, blocks and each other, is found at "
              "its exact time of impact and processed in time order. Bad input raises ValueError or TypeError naming "
              "the field; Ctrl-C stops a long step with KeyboardInterrupt, the world consistent at the time reached.";

    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const InvalidArgument& e) {
            PyErr_SetString(PyExc_ValueError, e.what());
        } catch (const BudgetExceeded& e) {
            PyErr_SetString(PyExc_RuntimeError, e.what());
        }
    });

    py::class_<ViewGuard>(m, "_ViewGuard", "Keeps a world's column views valid.");

    py::class_<StepResult>(m, "StepResult", "What a step did: its events, collisions, and the balls asleep and awake at its end.")
        .def_readonly("events", &StepResult::events, "events processed, cell crossings included")
        .def_readonly("collisions", &StepResult::collisions, "collisions processed")
        .def_readonly("sleeping", &StepResult::sleeping, "balls asleep at the step's end")
        .def_readonly("awake", &StepResult::awake, "balls awake at the step's end")
        .def_readonly("regions", &StepResult::regions, "regions that processed its events at once (1: serial)")
        .def("__repr__", [](const StepResult& r) {
            return "StepResult(events=" + std::to_string(r.events) + ", collisions=" + std::to_string(r.collisions) +
                   ", sleeping=" + std::to_string(r.sleeping) + ", awake=" + std::to_string(r.awake) + ")";
        });

    py::class_<PyWorld>(m, "World", R"(A world of balls and statics, simulated exactly.

World(**settings) takes WorldDef's fields as keywords, for example
World(gravity=(0, -9.81, 0), restitution=0.8, friction=0.5, threads=2).
Unknown keywords raise TypeError; bad values raise ValueError naming the field.

Arrays read from a world (positions, velocities, radii, masses, sleeping, ids) are
read-only copies taken at the call: the engine keeps its balls in columns of its own,
so a later change of the world never changes or invalidates an array already read.
columns() gives those columns themselves, without a copy.)")
        .def(py::init([](const py::kwargs& kwargs) { return PyWorld(scene::Scene{World(settings(kwargs)), {}}); }))
        .def("add_balls", &PyWorld::add_balls, py::arg("positions"), py::arg("velocities"), py::arg("radii"),
             py::arg("masses") = py::none(),
             R"(Adds balls from arrays, all or nothing; returns their ids (uint64 array).

positions and velocities: shape (N, 3); radii and masses: shape (N,) or one number
(masses default to 1). A ball that overlaps another or a static, or a bad value,
raises ValueError naming it, e.g. "balls[3].radius: must be > 0, got -1", and adds none.)")
        .def("add_plane", [](PyWorld& w, py::handle point, py::handle normal) {
            return w.world().add_plane({vec(point, "point"), vec(normal, "normal")}).value;
        }, py::arg("point"), py::arg("normal"), "Adds the plane through `point` facing `normal`; returns its id.")
        .def("add_cylinder", [](PyWorld& w, py::handle point, py::handle axis, double radius) {
            return w.world().add_cylinder({vec(point, "point"), vec(axis, "axis"), radius}).value;
        }, py::arg("point"), py::arg("axis"), py::arg("radius"), "Adds an infinite column; returns its id.")
        .def("add_capsule", [](PyWorld& w, py::handle a, py::handle b, double radius) {
            return w.world().add_capsule({vec(a, "a"), vec(b, "b"), radius}).value;
        }, py::arg("a"), py::arg("b"), py::arg("radius"), "Adds the capsule of segment a-b and this radius; returns its id.")
        .def("add_block", [](PyWorld& w, py::handle lo, py::handle hi) {
            return w.world().add_block({vec(lo, "min"), vec(hi, "max")}).value;
        }, py::arg("min"), py::arg("max"), "Adds the axis-aligned box min..max; returns its id.")
        .def("remove_plane", [](PyWorld& w, std::uint64_t id) { w.world().remove_plane(PlaneId{id}); }, py::arg("id"))
        .def("remove_cylinder", [](PyWorld& w, std::uint64_t id) { w.world().remove_cylinder(CylinderId{id}); }, py::arg("id"))
        .def("remove_capsule", [](PyWorld& w, std::uint64_t id) { w.world().remove_capsule(CapsuleId{id}); }, py::arg("id"))
        .def("remove_block", [](PyWorld& w, std::uint64_t id) { w.world().remove_block(BlockId{id}); }, py::arg("id"))
        .def("remove_ball", [](PyWorld& w, std::uint64_t id) {
            w.may_move("remove_ball");
            w.world().remove_ball(ball_id(id));
            std::erase(w.scene().balls, ball_id(id));
        }, py::arg("id"), "Removes a ball; its id is never reused.")
        .def("set_velocity", [](PyWorld& w, std::uint64_t id, py::handle v) { w.world().set_velocity(ball_id(id), vec(v, "velocity")); },
             py::arg("id"), py::arg("velocity"), "Gives a ball a new velocity (it wakes).")
        .def("apply_impulse", [](PyWorld& w, std::uint64_t id, py::handle j) { w.world().apply_impulse(ball_id(id), vec(j, "impulse")); },
             py::arg("id"), py::arg("impulse"), "Adds impulse / mass to a ball's velocity (it wakes).")
        .def("set_sleeping", [](PyWorld& w, std::uint64_t id, bool s) { w.world().set_sleeping(ball_id(id), s); },
             py::arg("id"), py::arg("sleeping"), "Puts a ball to sleep where it is, or wakes it.")
        .def("step", &PyWorld::step, py::arg("dt"),
             R"(Advances the world by dt, processing every event in time order; the GIL is released
meanwhile. Ctrl-C raises KeyboardInterrupt with the world consistent at the time reached.
The scene's emitters add their balls when due.)")
        .def("run", &PyWorld::run, py::arg("duration"), py::arg("equilibrate") = 0.0, py::arg("event_budget") = 0,
             R"(Runs `duration` in frames of 1/60 (the last one partial) as `ballistic run` does, emitters
included, and returns its statistics as a dict (the same keys and state hash as the
program's JSON). With `equilibrate`, that much runs first and the measurements restart.)")
        .def_property_readonly("time", [](const PyWorld& w) { return w.world().time(); }, "The world's time.")
        .def_property_readonly("ball_count", [](const PyWorld& w) { return w.world().ball_count(); })
        .def("__len__", [](const PyWorld& w) { return w.world().ball_count(); })
        .def_property_readonly("positions", [](const PyWorld& w) { return w.triples(false); },
                               "(N, 3) float64, read-only copy: every ball's centre at the world's time, in storage order (ids).")
        .def_property_readonly("velocities", [](const PyWorld& w) { return w.triples(true); },
                               "(N, 3) float64, read-only copy: every ball's velocity, in storage order.")
        .def_property_readonly("radii", [](const PyWorld& w) {
            return w.column([](const BallView& v) { return v.radius; });
        }, "(N,) float64, read-only copy, in storage order.")
        .def_property_readonly("masses", &PyWorld::masses, "(N,) float64, read-only copy, in storage order.")
        .def_property_readonly("sleeping", &PyWorld::sleeping, "(N,) bool, read-only copy: True for a ball asleep.")
        .def_property_readonly("ids", &PyWorld::ids, "(N,) uint64, read-only copy: each ball's id, in storage order.")
        .def("columns", [](py::object self) { return self.cast<PyWorld&>().columns(self); },
             R"(The engine's own columns as read-only arrays, without a copy: a dict of x, y, z, vx, vy,
vz and radius, in storage order (ids). They show the world as it is: after a step, its new
state. While any of them is alive, add_balls and remove_ball raise RuntimeError, since they may
move the storage; drop the arrays (del) first. Do not read them from another thread during a
step.)")
        .def("ball", [](const PyWorld& w, std::uint64_t id) { return ball_dict(w.world().ball(ball_id(id))); }, py::arg("id"),
             "One ball as a dict: id, position, velocity, radius, mass, sleeping, user_data.")
        .def("events", [](const PyWorld& w) {
            const auto events = w.world().events();
            py::array out(event_dtype(), std::vector<py::ssize_t>{static_cast<py::ssize_t>(events.size())});
            auto* rows = static_cast<EventRow*>(out.mutable_data());
            for (std::size_t k = 0; k < events.size(); ++k) {
                const CollisionEvent& e = events[k];
                rows[k] = {e.time, static_cast<std::uint8_t>(e.kind), e.ball.value, e.other.value, e.static_index,
                           {e.point.x, e.point.y, e.point.z}, {e.normal.x, e.normal.y, e.normal.z}, e.impulse};
            }
            return out;
        }, R"(The last step's collisions as a structured array: time, kind (0 ball-ball, 1 plane,
2 cylinder, 3 capsule, 4 block), ball, other, static_index, point, normal, impulse.)")
        .def_property_readonly("kinetic_energy", [](const PyWorld& w) { return w.world().kinetic_energy(); })
        .def_property_readonly("temperature", [](const PyWorld& w) { return w.world().temperature(); },
                               "kT = sum m |v - v_cm|^2 / (3 (N - 1)).")
        .def_property_readonly("pressure", [](const PyWorld& w) { return w.world().pressure(); },
                               "Virial pressure since the measurements began (periodic worlds).")
        .def_property_readonly("max_overlap", [](const PyWorld& w) { return w.world().max_overlap(); })
        .def_property_readonly("event_counts", [](const PyWorld& w) {
            const EventCounts c = w.world().event_counts();
            py::dict d;
            d["ball_ball"] = c.ball_ball;
            d["ball_plane"] = c.ball_plane;
            d["ball_cylinder"] = c.ball_cylinder;
            d["ball_capsule"] = c.ball_capsule;
            d["ball_block"] = c.ball_block;
            d["cell_crossings"] = c.cell_crossings;
            d["collisions"] = c.collisions();
            return d;
        })
        .def("state_hash", [](const PyWorld& w) { return w.world().state_hash(); },
             "FNV-1a 64 of every ball's position and velocity bits, as `ballistic run` prints it.")
        .def("save", [](const PyWorld& w, py::handle target) {
            const py::bytes data = w.checkpoint();
            if (is_path(target)) {
                const std::string path = path_of(target);
                std::ofstream file(path, std::ios::binary);
                const std::string bytes = data;
                file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
                if (!file) throw py::value_error("save: cannot write " + path);
            } else {
                target.attr("write")(data);
            }
        }, py::arg("path_or_file"),
           "Writes a checkpoint: the world's snapshot and its emitters, as `ballistic run --checkpoint` does "
           "(World.restore and `ballistic resume` read it back, bit for bit).")
        .def_static("restore", &restore, py::arg("source"), py::arg("threads") = 0,
                    "A world from a checkpoint (World.save, `ballistic run --checkpoint`): bytes, a path or a binary file.")
        .def(py::pickle([](const PyWorld& w) { return py::make_tuple(w.checkpoint(), w.world().concurrency()); },
                        [](py::tuple t) { return restore(t[0], t[1].cast<int>()); }))
        .def("ray_cast", [](const PyWorld& w, py::handle origins, py::handle directions, double max_distance) {
            const Array o = vectors(origins, "origins");
            const Array d = vectors(directions, "directions", o.shape(0));
            const auto n = static_cast<std::size_t>(o.shape(0));
            std::vector<Ray> rays(n);
            for (std::size_t k = 0; k < n; ++k)
                rays[k] = {{o.at(k, 0), o.at(k, 1), o.at(k, 2)}, {d.at(k, 0), d.at(k, 1), d.at(k, 2)}, max_distance};
            std::vector<std::optional<RayHit>> hits(n);
            {
                py::gil_scoped_release free;
                w.world().ray_cast(rays, hits);
            }
            py::array out(hit_dtype(), std::vector<py::ssize_t>{static_cast<py::ssize_t>(n)});
            auto* rows = static_cast<HitRow*>(out.mutable_data());
            for (std::size_t k = 0; k < n; ++k) {
                rows[k] = HitRow{};
                if (!hits[k]) continue;
                const RayHit& h = *hits[k];
                rows[k] = {true, static_cast<std::uint8_t>(h.target), h.distance, {h.point.x, h.point.y, h.point.z},
                           {h.normal.x, h.normal.y, h.normal.z}, h.ball.value, h.static_index};
            }
            return out;
        }, py::arg("origins"), py::arg("directions"), py::arg("max_distance") = std::numeric_limits<double>::infinity(),
           R"(Casts one ray per row: a structured array of hit, target (0 ball, 1 plane, 2 cylinder,
3 capsule, 4 block), distance, point, normal, ball and static_index.)")
#ifdef BALLISTIC_PYTHON_RENDERER
        .def("render_png", [](const PyWorld& w, py::handle path, int width, int height) {
            const std::string file = path_of(path);
            auto gpu = render::Gpu::create();
            if (!gpu) throw std::runtime_error("render_png: no Vulkan rendering: " + gpu.error().message());
            auto renderer = render::OffscreenRenderer::create(*gpu, width, height);
            if (!renderer) throw std::runtime_error("render_png: " + renderer.error().message());
            const render::Framing framing = render::frame_world(w.world(), double(width) / double(height));
            auto image = renderer->render(w.world(), framing.orbit.camera(framing.near, framing.far), render::FrameStyle{});
            if (!image) throw std::runtime_error("render_png: " + image.error().message());
            if (auto s = render::write_png(*image, file); !s) throw std::runtime_error("render_png: " + s.error().message());
        }, py::arg("path"), py::arg("width") = 1280, py::arg("height") = 720,
           "Draws the world with the Vulkan renderer (lavapipe on a CPU) into a PNG file.")
#endif
        .def("__repr__", [](const PyWorld& w) {
            return "<ballistic.World: " + std::to_string(w.world().ball_count()) + " balls at t = " +
                   std::to_string(w.world().time()) + ">";
        });

    m.def("load_scene", [](py::handle source, int threads) {
        if (py::isinstance<py::dict>(source))
            return PyWorld(scene::load_scene_text(py::module_::import("json").attr("dumps")(source).cast<std::string>(), threads));
        if (is_path(source)) return PyWorld(scene::load_scene_file(path_of(source), threads));
        throw py::type_error("load_scene: expected a path or a dict");
    }, py::arg("source"), py::arg("threads") = 0,
       "A world from a scene file (a path) or its JSON as a dict: statics, balls and emitters.");
    m.attr("has_renderer") =
#ifdef BALLISTIC_PYTHON_RENDERER
        true;
#else
        false;
#endif
}
