#!/usr/bin/env python3
"""Galton board: balls run through a triangular lattice of pegs into bins; the bin histogram
against the binomial law.

The board is one ball deep (two planes), its pegs are capsules across it, and its bin dividers are
capsules too. A spout (a scene emitter) drops one ball every INTERVAL onto the top peg, from a
place up to SPREAD to its left or right, and each row moves it half
a peg spacing left or right, so after ROWS rows it lands in the bin K of ROWS (counted from the
left) with probability C(ROWS, K) / 2^ROWS if every deflection were a fair coin; real bounces are
not independent coins, and the script prints how far the histogram's mean and spread are from the
binomial's.

    demos/galton.py                    # run demos/scenes/galton.json, print and plot the histogram
    demos/galton.py --write-scene      # (re)write demos/scenes/galton.json from the parameters below
    demos/galton.py --verify-scene     # exit 1 unless demos/scenes/galton.json is what it writes
    demos/galton.py --duration 60 --out /tmp/galton
"""
import argparse
import json
import math
import os
import sys
import time

import lab

SCENE = os.path.join(lab.HERE, "scenes", "galton.json")

# The board (length units; gravity 9.81 down y).
RADIUS = 0.1           # balls
DEPTH = 0.105          # the planes at z = ±DEPTH: one ball deep
SPACING = 0.6          # pegs along a row
ROWS = 30
PEG = 0.06             # peg radius
HALF_WIDTH = 12.0      # side walls at x = ±HALF_WIDTH
BIN_HEIGHT = 18.0      # dividers from the floor (y = 0) up to this
DIVIDER = 0.03         # divider radius
BALLS = 3000
INTERVAL = 0.1         # the spout lets a ball go every INTERVAL
DROP = 1.0             # the spout this high above the top peg
SPEED = 3.0            # balls leave it downwards this fast (the last one is 0.35 below when the next goes)
SPREAD = 0.05          # a ball leaves the spout up to this far left or right of the top peg
SEED = 7


def row_height(j):
    """Height of peg row j (0 at the top)."""
    return BIN_HEIGHT + 1.0 + (ROWS - 1 - j) * SPACING * math.sqrt(3) / 2


def scene():
    capsules = []
    for j in range(ROWS):
        offset = SPACING / 2 if j % 2 else 0.0
        k = math.ceil((-HALF_WIDTH + PEG - offset) / SPACING)
        while offset + k * SPACING < HALF_WIDTH - PEG:
            x = offset + k * SPACING
            capsules.append({"a": [x, row_height(j), -DEPTH], "b": [x, row_height(j), DEPTH], "radius": PEG})
            k += 1
    pegs = len(capsules)
    # Dividers under the last row's pegs (its row is odd: pegs at SPACING/2 + k SPACING), so the
    # bins are centred on the multiples of SPACING where the ball's coin tosses can end.
    last = (ROWS - 1) % 2 * SPACING / 2
    k = math.ceil((-HALF_WIDTH - last) / SPACING) + 1
    while last + k * SPACING < HALF_WIDTH:
        x = last + k * SPACING
        capsules.append({"a": [x, 0, 0], "b": [x, BIN_HEIGHT, 0], "radius": DIVIDER})
        k += 1
    # The spout: one ball every INTERVAL, thrown down onto the top peg.
    spout = {"position": [0, row_height(0) + DROP, 0], "velocity": [0, -SPEED, 0], "spread": [SPREAD, 0, 0], "radius": RADIUS,
             "count": BALLS, "interval": INTERVAL, "seed": SEED}
    return {
        "gravity": [0, -9.81, 0],
        "restitution": 0.5,
        "rest_speed": 0.1,
        "sleep_speed": 0.2,
        "planes": [
            {"point": [0, 0, 0], "normal": [0, 1, 0]},
            {"point": [-HALF_WIDTH, 0, 0], "normal": [1, 0, 0]},
            {"point": [HALF_WIDTH, 0, 0], "normal": [-1, 0, 0]},
            {"point": [0, 0, -DEPTH], "normal": [0, 0, 1]},
            {"point": [0, 0, DEPTH], "normal": [0, 0, -1]},
        ],
        "capsules": capsules,
        "emitters": [spout],
    }, pegs


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scene", default=SCENE)
    parser.add_argument("--write-scene", action="store_true", help="write the board to --scene and stop")
    parser.add_argument("--verify-scene", action="store_true", help="exit 1 unless --scene holds the board written")
    parser.add_argument("--duration", type=lab.positive(float), default=320.0,
                        help="simulated time (default 320: the spout is empty after 300 and the balls are in the bins)")
    parser.add_argument("--threads", type=lab.positive(int), default=1)
    parser.add_argument("--out", default="galton", help="output folder (default ./galton)")
    args = parser.parse_args()
    if args.write_scene or args.verify_scene:
        board, pegs = scene()
        text = json.dumps(board, separators=(",", ":")) + "\n"
        if args.verify_scene:
            with open(args.scene) as f:
                if f.read() != text:
                    sys.exit(f"galton: {args.scene} is not the board this script writes (run --write-scene)")
            print(f"{args.scene}: as written")
            return
        with open(args.scene, "w") as f:
            f.write(text)
        print(f"{args.scene}: {pegs} pegs, {len(board['capsules']) - pegs} dividers, a spout of {BALLS} balls")
        return
    ballistic = lab.ballistic_module("galton")
    os.makedirs(args.out, exist_ok=True)
    started = time.monotonic()
    world = ballistic.load_scene(args.scene, threads=args.threads)
    world.run(args.duration)
    wall = time.monotonic() - started
    positions = world.positions
    balls = [{"position": positions[s]} for s in lab.input_order(world)]

    # Bin K of ROWS is centred on x = (2 K − ROWS) SPACING / 2.
    counts = [0] * (ROWS + 1)
    outside = above = 0
    for ball in balls:
        x, y = ball["position"][0], ball["position"][1]
        if y > BIN_HEIGHT:
            above += 1
            continue
        k = round((2 * x / SPACING + ROWS) / 2)
        if 0 <= k <= ROWS:
            counts[k] += 1
        else:
            outside += 1
    landed = sum(counts)
    if landed == 0:
        sys.exit(f"galton: no ball reached the bins in {args.duration} time units")
    rows = []
    for k in range(ROWS + 1):
        p = math.comb(ROWS, k) / 2 ** ROWS
        rows.append({"bin": k, "x": (2 * k - ROWS) * SPACING / 2, "count": counts[k], "binomial": landed * p})
    mean = sum(k * c for k, c in enumerate(counts)) / landed
    spread = math.sqrt(sum((k - mean) ** 2 * c for k, c in enumerate(counts)) / landed)
    print(f"{landed} of {len(balls)} balls in the bins after {args.duration} time units ({above} still above them, "
          f"{outside} in the outermost bins beyond the binomial's range); the run took {wall:.1f} s")
    for row in rows:
        if row["count"] or row["binomial"] >= 0.5:
            print(f"bin {row['bin']:2d}  x {row['x']:+6.2f}  count {row['count']:5d}  binomial {row['binomial']:8.1f}  "
                  + "#" * round(60 * row["count"] / max(counts)))
    print(f"mean bin {mean:.2f} (binomial {ROWS / 2:.2f}), spread {spread:.2f} bins (binomial {math.sqrt(ROWS) / 2:.2f})")
    table = os.path.join(args.out, "galton.csv")
    lab.write_table(rows, table)
    lab.plot("galton", os.path.join(args.out, "galton.png"), f"""
set xlabel 'bin'
set ylabel 'balls'
set title 'Galton board, {ROWS} rows: Ballistic against the binomial law'
set style fill solid 0.5
set boxwidth 0.8
plot '{table}' using 1:3 every ::1 with boxes title 'Ballistic', \\
     '{table}' using 1:4 every ::1 with linespoints lw 2 pt 7 title 'binomial B({ROWS}, 1/2)'
""")


if __name__ == "__main__":
    main()
