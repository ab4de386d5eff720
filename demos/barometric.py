#!/usr/bin/env python3
"""Barometric column: the density of a gas under gravity against height, beside the exponential
law n(y) ~ exp(-m g y / kT).

Runs demos/scenes/barometric.json (periodic along x and z, a floor and a ceiling along y,
gravity g) in the ballistic module, frame by frame as `ballistic run` would, histograms the
heights of every ball at every --every after --equilibrate, measures kT from the same frames' velocities (m <v^2> / 3), and compares each bin
with the exponential law for that kT (normalised to the balls counted, centres at least one
radius above the floor). Writes OUT/barometric.csv and, with gnuplot, OUT/barometric.png; prints
the table and the largest relative difference over the bins holding at least 1 % of the balls.

    demos/barometric.py                                 # 1000 time units measured
    demos/barometric.py --duration 5000 --out /tmp/baro
"""
import argparse
import json
import math
import os
import sys
import time

import lab


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scene", default=os.path.join(lab.HERE, "scenes", "barometric.json"))
    parser.add_argument("--equilibrate", type=lab.positive(float), default=20.0, help="time before measuring (default 20)")
    parser.add_argument("--duration", type=lab.positive(float), default=1000.0, help="time measured (default 1000)")
    parser.add_argument("--every", type=lab.positive(float), default=0.5, help="frame interval (default 0.5)")
    parser.add_argument("--bin", type=lab.positive(float), default=0.5, help="height bin (default 0.5)")
    parser.add_argument("--out", default="barometric", help="output folder (default ./barometric)")
    parser.add_argument("--check", type=lab.positive(float), metavar="PERCENT",
                        help="exit 1 when a bin holding at least 1 %% of the balls differs from the law by more")
    args = parser.parse_args()
    ballistic = lab.ballistic_module("barometric")
    with open(args.scene) as f:
        scene = json.load(f)
    g = -scene["gravity"][1]
    floor = scene["periodic"]["min"][1]
    mass = scene["generate"][0].get("mass", 1.0)
    os.makedirs(args.out, exist_ok=True)
    started = time.monotonic()
    world = ballistic.load_scene(args.scene)
    heights, twice_kinetic, radius = [], 0.0, None
    # Samples every --every, from the start, as `ballistic run --trajectory` takes them; those
    # before --equilibrate are left out.
    samples = round((args.equilibrate + args.duration) / args.every)
    for k in range(samples + 1):
        if k > 0:
            world.run(args.every)
        if world.time < args.equilibrate - 1e-9:
            continue
        positions, velocities, radii = world.positions.tolist(), world.velocities.tolist(), world.radii.tolist()
        for s in lab.input_order(world):
            vx, vy, vz = velocities[s]
            heights.append(positions[s][1])
            twice_kinetic += mass * (vx * vx + vy * vy + vz * vz)
            radius = radii[s]
    wall = time.monotonic() - started
    if not heights:
        sys.exit("barometric: no frame after --equilibrate")
    kT = twice_kinetic / (3 * len(heights))
    scale = kT / (mass * g)
    lowest = floor + radius
    top = max(heights)
    rows = []
    bins = int(math.ceil((top - lowest) / args.bin))
    for k in range(bins):
        a, b = lowest + k * args.bin, lowest + (k + 1) * args.bin
        counted = sum(1 for y in heights if a <= y < b)
        law = len(heights) * (math.exp(-(a - lowest) / scale) - math.exp(-(b - lowest) / scale))
        rows.append({"height": 0.5 * (a + b), "density": counted / len(heights) / args.bin,
                     "law": law / len(heights) / args.bin, "counted": counted, "expected": law})
    print(f"kT {kT:.4f} from the velocities, scale height kT/mg {scale:.4f}; {len(heights)} samples; "
          f"the run took {wall:.1f} s")
    worst = 0.0
    for row in rows:
        difference = row["counted"] / row["expected"] - 1 if row["expected"] > 0 else float("inf")
        if row["expected"] >= 0.01 * len(heights):
            worst = max(worst, abs(difference))
        if row["expected"] >= 0.001 * len(heights):
            print(f"y {row['height']:6.2f}  density {row['density']:.5f}  law {row['law']:.5f}  difference {100 * difference:+6.1f} %")
    print(f"largest difference over the bins holding at least 1 % of the balls: {100 * worst:.1f} %")

    table = os.path.join(args.out, "barometric.csv")
    lab.write_table(rows, table)
    if args.check is not None and 100 * worst > args.check:
        sys.exit(f"barometric: a bin differs from the exponential law by {100 * worst:.1f} %, more than --check {args.check} %")
    lab.plot("barometric", os.path.join(args.out, "barometric.png"), f"""
set logscale y
set xlabel 'height y'
set ylabel 'fraction of the balls per unit height'
set title 'Barometric column: Ballistic against exp(-mgy/kT), kT = {kT:.3f}'
plot '{table}' using 1:3 every ::1 with lines lw 2 title 'exponential law', \\
     '{table}' using 1:2 every ::1 with points pt 7 ps 1.2 title 'Ballistic'
""")


if __name__ == "__main__":
    main()
