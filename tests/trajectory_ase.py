"""Trajectory.ReadByAse: a trajectory written by `ballistic run --trajectory` read back with ASE
(Debian's python3-ase), a frame compared with a run stopped at that frame's time (--state).

usage: trajectory_ase.py BALLISTIC_EXE
"""
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import ase.io
import numpy as np

SCENES = {
    "periodic": {
        "periodic": {"min": [-5, 0, 0], "max": [5, 8, 6]},
        "generate": [{"count": 120, "radius": 0.4, "min": [-5, 0, 0], "max": [5, 8, 6], "temperature": 1, "seed": 3}],
    },
    "box": {
        "gravity": [0, -9.81, 0],
        "restitution": 0.8,
        "box": {"min": [0, 0, 0], "max": [6, 6, 6]},
        "balls": [{"position": [1, 1, 1], "velocity": [1, 2, 0], "radius": 0.5, "mass": 2}],
        "generate": [{"count": 60, "radius": 0.3, "min": [0, 0, 0], "max": [6, 6, 6], "speed": 2, "seed": 4}],
    },
}


def run(exe, *args):
    subprocess.run([exe, "run", *args], check=True, stdout=subprocess.DEVNULL)


def main():
    exe = sys.argv[1]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, scene in SCENES.items():
            path = tmp / f"{name}.json"
            path.write_text(json.dumps(scene))
            xyz = tmp / f"{name}.xyz"
            run(exe, str(path), "--duration", "0.5", "--every", "0.1", "--trajectory", str(xyz), "--stats", str(tmp / "s.json"))
            frames = ase.io.read(str(xyz), index=":", format="extxyz")
            assert len(frames) == 6, f"{name}: {len(frames)} frames, expected t = 0, 0.1, ..., 0.5"
            times = [f.info["Time"] for f in frames]
            assert np.allclose(times, [0, 0.1, 0.2, 0.3, 0.4, 0.5], rtol=0, atol=1e-12), times

            state_path = tmp / f"{name}-state.json"
            run(exe, str(path), "--duration", "0.3", "--state", str(state_path), "--stats", str(tmp / "s.json"))
            state = json.loads(state_path.read_text())
            frame = frames[3]
            assert frame.info["Time"] == state["time"], (frame.info["Time"], state["time"])
            balls = state["balls"]
            assert len(frame) == len(balls)
            # The same bits: the trajectory and the state print every number to round trip.
            assert np.array_equal(frame.positions, np.array([b["position"] for b in balls])), name
            assert np.array_equal(frame.arrays["velo"], np.array([b["velocity"] for b in balls])), name
            assert np.array_equal(frame.arrays["radius"], np.array([b["radius"] for b in balls])), name
            periodic = "periodic" in scene
            assert list(frame.pbc) == [periodic] * 3, frame.pbc
            if periodic:
                lengths = np.array(scene["periodic"]["max"]) - np.array(scene["periodic"]["min"])
                assert np.array_equal(frame.cell.lengths(), lengths), frame.cell
            print(f"{name}: {len(frames)} frames of {len(frame)} balls read by ASE {ase.__version__}; t = 0.3 matches --state")


if __name__ == "__main__":
    main()
