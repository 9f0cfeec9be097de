"""Compile cost as a new user meets it: each figure measured in a fresh process on an empty cache.

    python benchmarks/compile_cost.py [--specialised | --event-driven] [--simulate-only]
        [--quick-job] [--main-job] [--json out.json]

Every measurement runs in a new Python process whose numba cache (``NUMBA_CACHE_DIR``), run cache
(``IMPACTBENCH_CACHE_DIR``) and reference cache (``IMPACTBENCH_REFERENCE_DIR``) are fresh
temporary folders, so nothing compiled or computed before is reused:

* ``first simulate``: ``simulate(BouncingBall(), MoreauJean(), 1.0, h=1e-3)``, the first call of
  a scheme and a problem (compiling the loop, the problem's kernels and what they call);
* ``second problem``, ``third problem``: in the same process, the same scheme on the impacting
  oscillator (the ball's sizes and flags: it shares the ball's loop and compiles its own
  kernels only), then on the double pendulum (two DOF and a configuration-dependent mass: a
  loop of its own, the helpers the first loop compiled reused); ``--specialised``: the same with
  ``MoreauJean(specialised=True)`` (the kernels inlined: a loop per problem);
  ``--event-driven``: the same three with ``EventDriven()`` (the compiled engine, DOP853,
  to t0 + 1): the oscillator shares the ball's engine (the kernels are run-time values of
  one engine per pair, sizes, constant mass and friction), the pendulum compiles one of its
  own; ``--simulate-only``: these three figures only;
* ``validate MoreauJean``: ``impactbench validate MoreauJean`` (the conformance battery, quick);
* ``quick main job`` (``--quick-job``) and ``main job`` (``--main-job``): ``impactbench run
  --quick`` and ``impactbench run`` into a temporary output folder (long: the full job takes tens
  of minutes).

Each figure is the wall time of one cold run (a compile cost is paid once per machine: repeating
it would measure a warm cache), with the CPU time beside it (user + system of the process, or of
the child and its workers), which says how much of the wall time a loaded machine took.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

SIMULATE = """
import resource
import sys
import time
from impactbench import simulate
from impactbench.methods import EventDriven, MoreauJean
from impactbench.problems import BouncingBall, DoublePendulum, ImpactingOscillator

build = sys.argv[1]
for label, problem in (
    ("first simulate", BouncingBall()),
    ("second problem", ImpactingOscillator()),
    ("third problem", DoublePendulum()),
):
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    if build == "event-driven":
        simulate(problem, EventDriven(), problem.t0 + 1.0)
    else:
        method = MoreauJean(specialised=build == "specialised")
        simulate(problem, method, problem.t0 + 1.0, h=1e-3)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    print(label, wall, cpu, flush=True)
"""


def _fresh_environment(folder: str) -> dict[str, str]:
    environment = dict(os.environ)
    for variable, name in (
        ("NUMBA_CACHE_DIR", "numba"),
        ("IMPACTBENCH_CACHE_DIR", "runs"),
        ("IMPACTBENCH_REFERENCE_DIR", "references"),
    ):
        environment[variable] = os.path.join(folder, name)
    return environment


def _run(command: list[str], folder: str) -> tuple[float, float, str]:
    """Wall time, CPU time of the children and standard output of ``command``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        command, env=_fresh_environment(folder), cwd=folder, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} failed:\n{done.stdout[-2000:]}{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def measure(
    quick_job: bool, main_job: bool, build: str = "default", simulate_only: bool = False
) -> list[dict]:
    """The rows (what, wall_s, cpu_s); ``build``: "default", "specialised" (MoreauJean) or
    "event-driven" (EventDriven's compiled engine)."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        wall, cpu, out = _run([sys.executable, "-c", SIMULATE, build], folder)
        for line in out.splitlines():
            *words, seconds, cpu_seconds = line.split()
            what = " ".join(words) + ("" if build == "default" else f" ({build})")
            rows.append({"what": what, "wall_s": float(seconds), "cpu_s": float(cpu_seconds)})
        rows.append({"what": "simulate process (all three)", "wall_s": wall, "cpu_s": cpu})
    if simulate_only:
        return rows
    commands = [("validate MoreauJean", ["-m", "impactbench", "validate", "MoreauJean"])]
    if quick_job:
        commands.append(("quick main job", ["-m", "impactbench", "run", "--quick"]))
    if main_job:
        commands.append(("main job", ["-m", "impactbench", "run"]))
    for label, arguments in commands:
        with tempfile.TemporaryDirectory() as folder:
            extra = ["--output", os.path.join(folder, "reports")] if "run" in arguments else []
            wall, cpu, _ = _run([sys.executable, *arguments, *extra], folder)
            rows.append({"what": label, "wall_s": wall, "cpu_s": cpu})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick-job", action="store_true", help="also time `run --quick`")
    parser.add_argument("--main-job", action="store_true", help="also time the full `run`")
    builds = parser.add_mutually_exclusive_group()
    builds.add_argument(
        "--specialised",
        action="store_true",
        help="simulate with MoreauJean(specialised=True): the kernels inlined, a loop per problem",
    )
    builds.add_argument(
        "--event-driven",
        action="store_true",
        help="simulate with EventDriven() (the compiled event-driven engine)",
    )
    parser.add_argument(
        "--simulate-only", action="store_true", help="only the three simulate figures"
    )
    parser.add_argument("--json", default=None, help="also write the rows to this JSON file")
    args = parser.parse_args()
    build = "specialised" if args.specialised else "default"
    if args.event_driven:
        build = "event-driven"
    rows = measure(args.quick_job, args.main_job, build, args.simulate_only)
    print(f"{'cold, empty caches':32s} {'wall [s]':>9s} {'CPU [s]':>9s}")
    for row in rows:
        print(f"{row['what']:32s} {row['wall_s']:9.1f} {row['cpu_s']:9.1f}")
    if args.json:
        with open(args.json, "w") as stream:
            json.dump(rows, stream, indent=2)


if __name__ == "__main__":
    main()
