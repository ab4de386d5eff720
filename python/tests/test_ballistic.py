"""The Python module against the program, NumPy round trips, errors, the GIL, Ctrl-C, persistence."""
import io
import json
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import ballistic

EXE = os.environ.get("BALLISTIC_EXE", os.path.join(os.path.dirname(__file__), "..", "..", "build", "demos", "ballistic"))
SCENES = os.environ.get("BALLISTIC_SCENES", os.path.join(os.path.dirname(__file__), "..", "..", "demos", "scenes"))


def cli_run(scene, duration, threads=1):
    out = subprocess.run([EXE, "run", scene, "--duration", str(duration), "--threads", str(threads), "--quiet"],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def lattice(n, spacing=2.1, origin=1.0):
    side = int(np.ceil(n ** (1 / 3)))
    g = np.stack(np.meshgrid(*[np.arange(side)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
    return g * spacing + origin


def gas(n=2000, threads=1, seed=1, **settings):
    side = 2.1 * int(np.ceil(n ** (1 / 3))) + 2.0
    w = ballistic.World(periodic=((0, 0, 0), (side, side, side)), threads=threads, **settings)
    w.add_balls(lattice(n), np.random.default_rng(seed).normal(0, 1, (n, 3)), 0.5)
    return w


# --- the same results as the program ------------------------------------------------------------

@pytest.mark.parametrize("name, duration", [("pile.json", 1.0), ("galton.json", 3.0), ("gas.json", 0.5)])
def test_run_gives_the_programs_state_hash(name, duration):
    scene = os.path.join(SCENES, name)
    stats = ballistic.load_scene(scene, threads=1).run(duration)
    cli = cli_run(scene, duration)
    assert stats["state_hash"] == cli["state_hash"]
    assert stats["events"] == cli["events"]
    assert stats["balls"] == cli["balls"]


def test_regions_always_or_when_faster_give_the_same_bits():
    worlds = [gas(threads=1), gas(threads=2, parallel_events_min_balls=0, regions_when_faster=False),
              gas(threads=2, parallel_events_min_balls=0, regions_when_faster=True)]
    for w in worlds:
        for _ in range(20):
            w.step(1 / 60)
    assert worlds[1].state_hash() == worlds[0].state_hash()
    assert worlds[2].state_hash() == worlds[0].state_hash()


def test_load_scene_takes_a_dict():
    scene = {"gravity": [0, -9.81, 0], "restitution": 0.5, "planes": [{"point": [0, 0, 0], "normal": [0, 1, 0]}],
             "balls": [{"position": [0, 2, 0], "velocity": [0, 0, 0], "radius": 0.5}]}
    w = ballistic.load_scene(scene)
    w.run(2.0)
    assert len(w) == 1
    assert abs(w.positions[0, 1] - 0.5) < 1e-3


def test_a_checkpoint_resumes_in_the_program_and_in_python(tmp_path):
    galton = os.path.join(SCENES, "galton.json")
    whole = ballistic.load_scene(galton, threads=1)
    whole.run(2.0)
    half = ballistic.load_scene(galton, threads=1)
    half.run(1.0)
    half.save(tmp_path / "half.ckpt")
    resumed = ballistic.World.restore(tmp_path / "half.ckpt", threads=2)
    resumed.run(1.0)
    assert resumed.state_hash() == whole.state_hash()
    out = subprocess.run([EXE, "resume", str(tmp_path / "half.ckpt"), "--duration", "1", "--quiet"],
                         check=True, capture_output=True, text=True).stdout
    assert json.loads(out)["state_hash"] == f"0x{whole.state_hash():016x}"


# --- NumPy in and out ---------------------------------------------------------------------------

def test_balls_round_trip_through_numpy():
    w = ballistic.World(gravity=(0, -9.81, 0))
    p = lattice(100)
    v = np.random.default_rng(2).normal(0, 1, (100, 3))
    r = np.full(100, 0.4)
    m = np.linspace(1, 2, 100)
    ids = w.add_balls(p, v, r, m)
    assert ids.dtype == np.uint64 and len(np.unique(ids)) == 100
    assert np.array_equal(w.ids, ids)
    assert np.array_equal(w.positions, p) and np.array_equal(w.velocities, v)
    assert np.array_equal(w.radii, r) and np.allclose(w.masses, m, rtol=1e-15)
    assert not w.sleeping.any()
    ball = w.ball(int(ids[7]))
    assert ball["position"] == tuple(p[7]) and ball["mass"] == pytest.approx(m[7], rel=1e-15)
    for a in (w.positions, w.radii, w.sleeping, w.ids):
        assert not a.flags.writeable
    # Integer arrays and float32 are taken as the numbers they hold; one radius fills every ball.
    w2 = ballistic.World()
    w2.add_balls(np.array([[0, 0, 0], [3, 0, 0]], dtype=np.int32), np.zeros((2, 3), dtype=np.float32), 1)
    assert np.array_equal(w2.positions, [[0, 0, 0], [3, 0, 0]])


def test_events_are_a_structured_array_in_time_order():
    w = ballistic.World(restitution=1.0)
    w.add_plane((0, 0, 0), (0, 1, 0))
    w.add_balls([[0, 5, 0], [0, 1, 0]], [[0, -10, 0], [0, 0, 0]], 0.5)
    w.step(1.0)
    e = w.events()
    assert e.dtype.names == ("time", "kind", "ball", "other", "static_index", "point", "normal", "impulse")
    assert len(e) >= 2 and np.all(np.diff(e["time"]) >= 0)
    assert set(e["kind"]) <= {0, 1}
    assert np.allclose(np.linalg.norm(e["normal"], axis=1), 1.0)
    assert w.event_counts["collisions"] == len(e)


def test_measurements_and_ray_casts():
    w = gas(500)
    assert w.kinetic_energy == pytest.approx(0.5 * np.sum(w.velocities ** 2))
    w.step(0.5)
    assert w.temperature > 0 and w.pressure > 0 and w.max_overlap < 1e-9
    hits = w.ray_cast(w.positions[:3] + [[0, 0, -5]], np.tile([0.0, 0.0, 1.0], (3, 1)))
    assert hits["hit"].all() and np.all(hits["target"] == 0)


@pytest.mark.skipif(not ballistic.has_renderer, reason="built without the renderer")
def test_render_png(tmp_path):
    w = ballistic.load_scene(os.path.join(SCENES, "lesson.json"))
    try:
        w.render_png(tmp_path / "lesson.png", 320, 180)
    except RuntimeError as e:  # no Vulkan device on this machine
        pytest.skip(str(e))
    assert (tmp_path / "lesson.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# --- errors -------------------------------------------------------------------------------------

def test_bad_input_names_the_field():
    w = ballistic.World()
    with pytest.raises(ValueError, match=r"balls\[3\]\.radius: must be > 0, got -1"):
        w.add_balls(lattice(4), np.zeros((4, 3)), [0.5, 0.5, 0.5, -1])
    assert len(w) == 0  # all or nothing
    with pytest.raises(ValueError, match=r"balls\[1\]\.position"):
        w.add_balls([[0, 0, 0], [0.1, 0, 0]], np.zeros((2, 3)), 0.5)
    with pytest.raises(ValueError, match=r"world\.restitution"):
        ballistic.World(restitution=2.0)
    with pytest.raises(TypeError, match="unknown setting 'gravty'"):
        ballistic.World(gravty=(0, 0, 0))
    with pytest.raises(TypeError, match="setting 'restitution' cannot be str"):
        ballistic.World(restitution="high")
    with pytest.raises(ValueError, match=r"gravity: expected three numbers, got \(0, 1\)"):
        ballistic.World(gravity=(0, 1))
    with pytest.raises(ValueError, match="normal: expected three numbers"):
        w.add_plane((0, 0, 0), (0, 1))
    with pytest.raises(ValueError, match=r"balls\[0\]\.radius"):
        ballistic.load_scene({"balls": [{"position": [0, 0, 0], "velocity": [0, 0, 0], "radius": -1}]})
    with pytest.raises(ValueError):
        w.step(-1.0)
    with pytest.raises(ValueError, match="no such ball"):
        w.ball(12345)


def test_arrays_of_the_wrong_shape_or_type_are_refused():
    w = ballistic.World()
    with pytest.raises(ValueError, match=r"positions: expected shape \(N, 3\), got \(4, 2\)"):
        w.add_balls(np.zeros((4, 2)), np.zeros((4, 3)), 1)
    with pytest.raises(ValueError, match=r"velocities: expected shape \(2, 3\), got \(3, 3\)"):
        w.add_balls(lattice(2), np.zeros((3, 3)), 0.5)
    with pytest.raises(ValueError, match=r"radii: expected shape \(2,\), got \(3,\)"):
        w.add_balls(lattice(2), np.zeros((2, 3)), [0.5, 0.5, 0.5])
    with pytest.raises(TypeError, match="dtype complex128"):
        w.add_balls(lattice(2) + 0j, np.zeros((2, 3)), 0.5)
    with pytest.raises(TypeError, match="positions"):
        w.add_balls([["a", "b", "c"]], np.zeros((1, 3)), 0.5)
    assert len(w) == 0


def test_out_of_memory_raises_memory_error():
    # In a child limited to 1.5 GB of address space, the engine's storage for 5·10⁶ balls does
    # not fit (their arrays do).
    code = textwrap.dedent("""
        import resource, numpy as np, ballistic
        n = 5_000_000
        p = np.zeros((n, 3)); p[:, 0] = np.arange(n) * 2.5
        v = np.zeros((n, 3)); r = np.full(n, 0.5)
        resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, 1_500_000_000))
        w = ballistic.World(threads=1)
        try:
            w.add_balls(p, v, r)
        except MemoryError:
            print("MemoryError", len(w))
    """)
    env = dict(os.environ, ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    if "LD_PRELOAD" in os.environ and "libasan" in os.environ["LD_PRELOAD"]:
        pytest.skip("under AddressSanitizer the address space is the sanitizer's")
    assert out.stdout.strip() == "MemoryError 0", out.stderr[-2000:]


# --- the GIL and Ctrl-C -------------------------------------------------------------------------

def test_a_step_releases_the_gil():
    w = gas(20000)
    counted = [0]
    stop = threading.Event()

    def count():
        while not stop.is_set():
            counted[0] += 1

    t = threading.Thread(target=count)
    t.start()
    time.sleep(0.05)
    before = counted[0]
    w.step(1.0)
    during = counted[0] - before
    stop.set()
    t.join()
    assert during > 1000  # the other thread ran while the step did


@pytest.mark.parametrize("call", ["step", "run"])
def test_ctrl_c_stops_a_long_step_or_run_consistently(call):
    w = gas(20000)
    timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt, match="interrupted at time"):
        getattr(w, call)(1e4)
    timer.join()
    assert 0 < w.time < 1e4
    assert w.max_overlap < 1e-9
    getattr(w, call)(0.1)  # it goes on
    # Python's own handler is back: a later Ctrl-C outside a step is an ordinary KeyboardInterrupt.
    with pytest.raises(KeyboardInterrupt):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(1)


# --- persistence and the arrays' lifetime -------------------------------------------------------

def test_save_restore_and_pickle_continue_bit_for_bit():
    w = gas(3000)
    w.step(0.5)
    buffer = io.BytesIO()
    w.save(buffer)
    restored = ballistic.World.restore(buffer.getvalue(), threads=2)
    pickled = pickle.loads(pickle.dumps(w))
    assert restored.state_hash() == w.state_hash() == pickled.state_hash()
    for world in (w, restored, pickled):
        world.step(0.5)
    assert restored.state_hash() == w.state_hash() == pickled.state_hash()
    with pytest.raises(ValueError, match="snapshot"):
        ballistic.World.restore(b"not a snapshot")


def test_arrays_read_stay_valid_after_the_world_changes():
    w = ballistic.World()
    ids = w.add_balls(lattice(1000), np.random.default_rng(3).normal(0, 1, (1000, 3)), 0.5)
    p, v, r, read_ids = w.positions, w.velocities, w.radii, w.ids
    kept = p.copy()
    # Ten times as many balls (the storage grows and moves), a step, a removal, and no world.
    w.add_balls(lattice(10000, origin=100.0), np.zeros((10000, 3)), 0.5)
    w.step(0.5)
    w.remove_ball(int(ids[0]))
    del w
    # The arrays are the world's state when they were read, whatever came after.
    assert np.array_equal(p, kept) and r.sum() == 500.0 and np.array_equal(read_ids, ids)
    assert np.isfinite(v).all()


def test_columns_are_the_engines_own_storage_and_guard_it():
    w = ballistic.World()
    w.add_balls(lattice(1000), np.random.default_rng(4).normal(0, 1, (1000, 3)), 0.5)
    c = w.columns()
    assert set(c) == {"x", "y", "z", "vx", "vy", "vz", "radius"}
    assert np.array_equal(np.stack([c["x"], c["y"], c["z"]], axis=1), w.positions)
    assert np.shares_memory(c["x"], w.columns()["x"])  # no copy
    assert not c["x"].flags.writeable
    x = c["x"]
    w.step(0.5)
    assert np.array_equal(x, w.positions[:, 0])  # it shows the world as it is
    with pytest.raises(RuntimeError, match="columns"):
        w.add_balls(lattice(10, origin=100.0), np.zeros((10, 3)), 0.5)
    with pytest.raises(RuntimeError, match="columns"):
        w.remove_ball(int(w.ids[0]))
    assert len(w) == 1000
    del c, x
    w.add_balls(lattice(10000, origin=100.0), np.zeros((10000, 3)), 0.5)  # the storage grows and moves
    assert len(w.columns()["x"]) == 11000


def test_help_reads_well():
    assert "WorldDef's fields" in ballistic.World.__doc__
    for name in ("add_balls", "step", "run", "save", "restore", "events", "ray_cast", "columns"):
        assert getattr(ballistic.World, name).__doc__, name
    stub = os.path.join(os.path.dirname(ballistic.__file__), "ballistic.pyi")
    assert os.path.exists(stub)


def test_the_docs_example_runs(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")
    text = open(docs).read()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 30
    monkeypatch.chdir(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.abspath(ballistic.__file__)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "2000 of 2000 balls asleep" in out.stdout
    assert (tmp_path / "heights.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
