"""Cost per step of the compiled time-stepping loops: ns/step and steps/s, min/median/max.

    python benchmarks/loops.py [--steps 1000000] [--repeats 7] [--specialised]
                               [--problems A,B] [--methods C,D] [--json out.json]

Each (method, problem) runs ``steps`` steps of h = 1e-3 (output decimated by 1000, so the loop,
not the output, is timed) once as a warm-up (compilation, or loading numba's disk cache), then
``repeats`` times; the table gives the min, median and max ns/step over the repeats, and the
warm-up time (the compile time on a cold numba cache); ``--specialised`` times the specialised
loops (the problem's kernels inlined) instead of the default ones. Used to compare loop
implementations: run it on both trees, interleaved, on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import time

from impactbench import simulate
from impactbench.methods import METHODS as REGISTERED
from impactbench.problems import (
    BouncingBall,
    DoublePendulum,
    ForcedImpactOscillator,
    ImpactingOscillator,
    SlantedWall,
    TightJoint,
)

H = 1e-3
PROBLEMS = {
    "BouncingBall[e=1]": lambda: BouncingBall(restitution=1.0),
    "ImpactingOscillator[e=1]": lambda: ImpactingOscillator(restitution=1.0),
    "ForcedImpactOscillator": lambda: ForcedImpactOscillator(
        omega=2.5, sigma=0.05, restitution=0.8
    ),
    "SlantedWall[e=1]": lambda: SlantedWall(restitution=1.0),
    "BouncingBall[e=0.8,resting]": lambda: BouncingBall(restitution=0.8),
    "TightJoint": lambda: TightJoint(),
    "DoublePendulum": lambda: DoublePendulum(),
}
#: Every registered time-stepping method (plug-ins included).
METHODS = {name: cls for name, cls in REGISTERED.items() if cls.requires_step}


def measure(
    problem_name: str, method_name: str, steps: int, repeats: int, specialised: bool = False
) -> dict:
    problem = PROBLEMS[problem_name]()
    method = METHODS[method_name](specialised=specialised)
    t_end = problem.t0 + steps * H
    start = time.perf_counter()
    simulate(problem, method, t_end, h=H, output_every=1000)
    warmup = time.perf_counter() - start
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        simulate(problem, method, t_end, h=H, output_every=1000)
        times.append(time.perf_counter() - start)
    times.sort()
    ns = [1e9 * t / steps for t in times]
    return {
        "problem": problem_name,
        "method": method_name,
        "min_ns": ns[0],
        "median_ns": ns[len(ns) // 2],
        "max_ns": ns[-1],
        "steps_per_s": steps / times[0],
        "warmup_s": warmup,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument(
        "--specialised",
        action="store_true",
        help="time the specialised loops (TimeStepping(specialised=True): the kernels inlined)",
    )
    parser.add_argument("--problems", default=None, help="comma-separated subset of PROBLEMS")
    parser.add_argument("--methods", default=None, help="comma-separated subset of the methods")
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = parser.parse_args()
    problems = args.problems.split(",") if args.problems else list(PROBLEMS)
    methods = args.methods.split(",") if args.methods else list(METHODS)
    rows = []
    print(f"{'problem':30s} {'method':26s} {'min':>8s} {'median':>8s} {'max':>8s} warmup")
    for problem_name in problems:
        for method_name in methods:
            row = measure(problem_name, method_name, args.steps, args.repeats, args.specialised)
            rows.append(row)
            print(
                f"{problem_name:30s} {method_name:26s} {row['min_ns']:8.2f} "
                f"{row['median_ns']:8.2f} {row['max_ns']:8.2f} {row['warmup_s']:.2f} s",
                flush=True,
            )
    if args.json:
        with open(args.json, "w") as file:
            json.dump(rows, file, indent=1)


if __name__ == "__main__":
    main()
