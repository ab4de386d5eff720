#!/usr/bin/env python3
"""Gas lab: the pressure of the hard-sphere gas against its packing fraction, beside the
Carnahan–Starling equation of state.

For each packing fraction phi it builds a scene (a periodic box holding --balls balls of radius
0.5 at kT = 1), runs it in the ballistic module as `ballistic run` would (--equilibrate, then
--duration measured), and reads the pressure and temperature from the statistics. The compressibility factor
Z = P V / (N kT) is compared with Carnahan–Starling, Z = (1 + phi + phi^2 - phi^3) / (1 - phi)^3.
Writes OUT/gaslab.csv and, with gnuplot, OUT/gaslab.png; prints the table.

    demos/gaslab.py                        # 4000 balls, phi 0.05 .. 0.45
    demos/gaslab.py --balls 20000 --duration 10 --out /tmp/gaslab
"""
import argparse
import math
import os
import sys
import time

import lab

RADIUS = 0.5


def carnahan_starling(phi):
    return (1 + phi + phi * phi - phi ** 3) / (1 - phi) ** 3


def fractions(text):
    try:
        values = [float(x) for x in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"a comma-separated list of numbers, got {text!r}")
    for phi in values:
        if not 0 < phi < 0.5:
            raise argparse.ArgumentTypeError(f"each packing fraction must lie in (0, 0.5), got {phi}")
    return values


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--balls", type=lab.positive(int), default=4000, help="balls per run (default 4000)")
    parser.add_argument("--phi", type=fractions, default=[0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45],
                        help="packing fractions, comma-separated (default 0.05,0.1,...,0.45)")
    parser.add_argument("--equilibrate", type=lab.positive(float), default=2.0, help="time before measuring (default 2)")
    parser.add_argument("--duration", type=lab.positive(float), default=5.0, help="time measured (default 5)")
    parser.add_argument("--threads", type=int, default=0, help="worker threads, 0 = all (default 0)")
    parser.add_argument("--out", default="gaslab", help="output folder (default ./gaslab)")
    parser.add_argument("--check", type=lab.positive(float), metavar="PERCENT",
                        help="exit 1 when any Z differs from Carnahan-Starling by more than PERCENT")
    args = parser.parse_args()
    ballistic = lab.ballistic_module("gaslab")
    os.makedirs(args.out, exist_ok=True)

    rows = []
    for phi in args.phi:
        volume = args.balls * 4.0 / 3.0 * math.pi * RADIUS ** 3 / phi
        side = volume ** (1.0 / 3.0)
        scene = {
            "periodic": {"min": [0, 0, 0], "max": [side, side, side]},
            "generate": [{"count": args.balls, "radius": RADIUS, "min": [0, 0, 0], "max": [side, side, side],
                          "temperature": 1.0, "zero_momentum": True, "seed": 1}],
        }
        started = time.monotonic()
        stats = ballistic.load_scene(scene, threads=args.threads).run(args.duration, equilibrate=args.equilibrate)
        wall = time.monotonic() - started
        z = stats["pressure"] * volume / (stats["balls"] * stats["temperature"])
        z_cs = carnahan_starling(phi)
        rows.append({"phi": phi, "Z": z, "Z_CS": z_cs, "difference": z / z_cs - 1.0,
                     "collisions": stats["events"]["ball_ball"], "wall_seconds": wall})
        print(f"phi {phi:.3f}  Z {z:8.4f}  Carnahan-Starling {z_cs:8.4f}  difference {100 * (z / z_cs - 1):+6.2f} %"
              f"  ({stats['events']['ball_ball']} collisions, {wall:.1f} s)", flush=True)

    table = os.path.join(args.out, "gaslab.csv")
    lab.write_table(rows, table)
    if args.check is not None:
        worst = max(rows, key=lambda row: abs(row["difference"]))
        if abs(worst["difference"]) * 100 > args.check:
            sys.exit(f"gaslab: at phi {worst['phi']} Z differs from Carnahan-Starling by "
                     f"{100 * worst['difference']:+.2f} %, more than --check {args.check} %")
    lab.plot("gaslab", os.path.join(args.out, "gaslab.png"), f"""
set key top left
set xlabel 'packing fraction {{/Symbol f}}'
set ylabel 'Z = PV / NkT'
set title 'Hard-sphere gas, {args.balls} balls: Ballistic against Carnahan-Starling'
cs(x) = (1 + x + x**2 - x**3) / (1 - x)**3
plot [0:0.5] cs(x) with lines lw 2 title 'Carnahan-Starling', \\
     '{table}' using 1:2 every ::1 with points pt 7 ps 1.5 title 'Ballistic'
""")


if __name__ == "__main__":
    main()
