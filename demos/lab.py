"""What the lab scripts (gaslab.py, barometric.py, galton.py) share: option parsing, the ballistic
module, and writing a table and its gnuplot plot."""
import argparse
import csv
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD_PYTHON = os.path.join(HERE, "..", "build", "python")


def positive(kind):
    """An argparse type: `kind` of the text, which must be > 0."""
    def parse(text):
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
    return parse


def ballistic_module(script):
    """The ballistic module: installed, or else the build tree's (build/python); exits naming what is missing."""
    try:
        import ballistic
    except ImportError:
        sys.path.insert(0, BUILD_PYTHON)
        try:
            import ballistic
        except ImportError as error:
            sys.exit(f"{script}: cannot import ballistic ({error}): build it with scripts/test.sh, and run this "
                     f"script with /usr/bin/python3 (its pybind11 and NumPy)")
    return ballistic


def input_order(world):
    """The storage slots of a world's balls in the order they were added (their ids' order); the
    storage is re-sorted as the world runs, so this holds until its next step."""
    ids = [int(i) & 0xFFFFFFFF for i in world.ids]
    return sorted(range(len(ids)), key=ids.__getitem__)


def write_table(rows, path):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        writer.writeheader()
        writer.writerows(rows)
    print(f"table: {path}")


def plot(script, png, commands):
    """Draws `png` with gnuplot: a pngcairo terminal, CSV input, then `commands`."""
    if shutil.which("gnuplot") is None:
        print("gnuplot is not installed (Debian: gnuplot-nox): no plot")
        return
    text = f"set terminal pngcairo size 800,560\nset output '{png}'\nset datafile separator ','\n{commands}"
    done = subprocess.run(["gnuplot"], input=text, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{script}: gnuplot failed: {done.stderr.strip()}")
    print(f"plot: {png}")
