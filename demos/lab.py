"""What the lab scripts (gaslab.py, barometric.py, galton.py) share: option parsing, finding the program,
running it, and writing a table and its gnuplot plot."""
import argparse
import csv
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_BALLISTIC = os.path.join(HERE, "..", "build", "demos", "ballistic")


def positive(kind):
    """An argparse type: `kind` of the text, which must be > 0."""
    def parse(text):
        value = kind(text)
        if not value > 0:
            raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
        return value
    return parse


def require_program(path, script):
    if not os.access(path, os.X_OK):
        sys.exit(f"{script}: --ballistic {path} is not an executable program (build it first: scripts/test.sh)")


def run(script, command):
    """Runs `ballistic` with these arguments; exits naming the failure."""
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{script}: {' '.join(command[:3])} failed (exit {done.returncode}): {done.stderr.strip()}")


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
