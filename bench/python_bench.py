#!/usr/bin/env python3
"""What the Python module costs on top of the engine, as ratios measured in one run.

1. Stepping the closed box (N = 10^4, speed 5, packing 0.1, one thread) from Python, a step of
   1/60 per call, against the same frames stepped in C++ (World.run, one call): two worlds loaded
   alike, the two ways taking turns.
2. add_balls of the closed box's 10^6 balls from NumPy arrays, against the C++ add_balls of the
   same balls (bench_gas BM_AddBalls/N:1000000/threads:1), one thread each.
3. Reading positions of 10^6 balls after a step: the (N, 3) copy, and columns() without one.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py [--repeat 5]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

import ballistic

HERE = os.path.dirname(os.path.abspath(__file__))


def box(count, threads=1, packing=0.1, speed=5.0, radius=0.5):
    """bench_gas's closed box (scenes::closed_box) as a scene: the same walls, balls and seed."""
    side = (count * 4.0 / 3.0 * math.pi * radius ** 3 / packing) ** (1 / 3)
    planes = [([0, 0, 0], [1, 0, 0]), ([side, 0, 0], [-1, 0, 0]), ([0, 0, 0], [0, 1, 0]),
              ([0, side, 0], [0, -1, 0]), ([0, 0, 0], [0, 0, 1]), ([0, 0, side], [0, 0, -1])]
    scene = {"planes": [{"point": p, "normal": n} for p, n in planes],
             "generate": [{"count": count, "radius": radius, "min": [0, 0, 0], "max": [side] * 3,
                           "speed": speed, "seed": 1}]}
    return ballistic.load_scene(scene, threads=threads), scene


def stepping(repeat, frames=120):
    python_world, _ = box(10_000)
    cpp_world, _ = box(10_000)
    python_world.step(1 / 60)
    cpp_world.run(1 / 60)
    ratios = []
    for _ in range(repeat):
        start = time.perf_counter()
        for _ in range(frames):
            python_world.step(1 / 60)
        python_seconds = time.perf_counter() - start
        start = time.perf_counter()
        cpp_world.run(frames / 60)
        cpp_seconds = time.perf_counter() - start
        ratios.append(python_seconds / cpp_seconds)
    # The same events; the times differ in the last bits (a sum of dt against frame numbers).
    assert python_world.event_counts == cpp_world.event_counts, "the two ways processed the same events"
    print(f"1. stepping N = 10^4 from Python / from C++: {min(ratios):.4f}-{max(ratios):.4f} "
          f"({1e3 * python_seconds / frames:.3f} ms per step)")


def adding(repeat, bench_gas):
    world, scene = box(1_000_000)
    order = np.argsort(world.ids & 0xFFFFFFFF, kind="stable")
    positions, velocities = world.positions[order], world.velocities[order]
    radii = np.full(len(positions), 0.5)
    del world
    walls = dict(scene, generate=[])
    python_ms = []
    cpp_ms = []
    for _ in range(repeat):
        fresh = ballistic.load_scene(walls, threads=1)
        start = time.perf_counter()
        fresh.add_balls(positions, velocities, radii)
        python_ms.append(1e3 * (time.perf_counter() - start))
        del fresh
        out = subprocess.run([bench_gas, "--benchmark_filter=BM_AddBalls/N:1000000/threads:1/",
                              "--benchmark_format=json", "--benchmark_repetitions=1"],
                             check=True, capture_output=True, text=True).stdout
        runs = [b for b in json.loads(out)["benchmarks"] if b.get("run_type") == "iteration"]
        cpp_ms.append(runs[0]["real_time"])
    ratios = [p / c for p, c in zip(python_ms, cpp_ms)]
    print(f"2. add_balls of 10^6 from NumPy / C++ add_balls: {min(ratios):.2f}-{max(ratios):.2f} "
          f"(Python {min(python_ms):.0f}-{max(python_ms):.0f} ms, C++ {min(cpp_ms):.0f}-{max(cpp_ms):.0f} ms)")


def reading(repeat):
    world, _ = box(1_000_000, threads=2)
    world.step(1 / 60)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        world.positions
        times.append(1e3 * (time.perf_counter() - start))
    print(f"3. positions of 10^6 balls: {min(times):.2f}-{max(times):.2f} ms (a copy into an (N, 3) array)")
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        columns = world.columns()
        columns["x"], columns["y"], columns["z"]
        times.append(1e3 * (time.perf_counter() - start))
        del columns
    print(f"   columns() of 10^6 balls: {min(times):.3f}-{max(times):.3f} ms (the engine's own storage, no copy)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--bench-gas", default=os.path.join(HERE, "..", "build", "bench", "bench_gas"))
    args = parser.parse_args()
    stepping(args.repeat)
    adding(args.repeat, args.bench_gas)
    reading(args.repeat)


if __name__ == "__main__":
    sys.exit(main())
