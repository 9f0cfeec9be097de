"""Cost per step against the number of DOF n of every time-stepping method (issue 14, item 4).

    python benchmarks/scaling.py [--methods MoreauJean,...] [--json out.json]

* ImpactingBar (diagonal M, one contact node) at n = 10 ... 10^4 DOF: every method runs the same
  physical window, from t0 through the whole contact to the release (t_end = t1 + 2L/c), at CFL
  number 0.5 (h = h_e / (2c)), or with a smaller step where that gives fewer than 20 000 steps
  (n < ~5000), so that the fixed cost of a run is negligible: each n does the same
  flight/contact mix (the cost of a step does not depend on h). MoreauJean also runs with the
  dense declaration (n <= 300) for comparison.
* ColumnOfBeads (diagonal M, n beads and n constraints) at a few sizes: the default start over
  [0, 1] s with h = 1e-4 (the fall and the cascade of simultaneous impacts), and the settled
  stack: started at rest on the floor (q_i = (2 i - 1) r, v = 0, r = 0.1), where round-off
  leaves some gaps open, it settles within about 6.5 n steps (measured for n = 10 ... 300 at
  h = 1e-4 and 1e-5: after that every contact is closed at every step and the LCP neither
  pivots nor changes its active set); its cost per step is timed after ``SETTLE_STEPS_PER_BEAD``
  n steps, as the difference of the best wall times of a run of settle + SETTLED_STEPS steps
  and of a run of the settle steps alone (``iterations/step`` is the solver's count over the
  timed steps: 1 for the velocity schemes, one LCP basis per step).

ns/step is the best of the timed runs (``stats["wall_time"]``, which excludes the problem check)
less the fixed cost of a run (a one-step run), divided by the steps, after one warm-up run
(compilation or numba's disk cache). The exponent p
of cost ~ n^p is fitted by least squares on log-log over the sizes n >= ``--fit-from``, with a
95 % Student interval (:func:`impactbench.analysis.cost_scaling.fit_cost_exponent`).

Targets (issue 14): MoreauJean's time per step on ImpactingBar at n = 10^4 at most 15x its time
at n = 10^3; ColumnOfBeads with 100 beads running 10^5 steps of MoreauJean in under 2 s (run here
with h = 1e-5 from the default start, i.e. over [0, 1] s, and for the settled column: 10^5 steps
after it has settled, the difference of two runs as above).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from impactbench import SimulationError, TimeStepping
from impactbench.analysis.cost_scaling import fit_cost_exponent
from impactbench.methods import METHODS
from impactbench.problems import ColumnOfBeads, ImpactingBar
from impactbench.studies.scaling import resting_column

BAR_SIZES = (10, 30, 100, 300, 1000, 3000, 10000)
BEAD_SIZES = (10, 30, 100)
SETTLED_SIZES = (10, 30, 100, 300)
DENSE_BAR_SIZES = (10, 30, 100, 300)
CFL = 0.5
BEADS_STEP = 1e-4
BEADS_WINDOW = 1.0
#: Steps of the resting stack before it is timed, per bead (it settles within ~6.5 n steps).
SETTLE_STEPS_PER_BEAD = 10
#: Steps timed on the settled stack.
SETTLED_STEPS = 20_000
#: Fewest steps of a bar run: a smaller bar takes a smaller step than CFL 0.5 (same window).
MIN_STEPS = 20_000
#: Minimal timed seconds per point (runs are repeated up to MAX_RUNS until reached).
MIN_TIME = 0.5
MAX_RUNS = 5


def time_per_step(method: TimeStepping, problem, t_end: float, h: float) -> tuple[float, int]:
    """Best seconds per step over the timed runs, and the steps of one run.

    The fixed cost of a run (its buffers and output, the best of three one-step runs) is
    subtracted, so that short runs (the small bars) time their steps only.
    """
    fixed = min(
        method.solve(problem, problem.t0 + h, h=h).stats["wall_time"] for _ in range(3)
    )  # the first is the warm-up: compile or load numba's disk cache
    best, total, runs, steps = np.inf, 0.0, 0, 1
    while runs < MAX_RUNS and (runs == 0 or total < MIN_TIME):
        trajectory = method.solve(problem, t_end, h=h, output_every=1_000_000)
        steps = trajectory.stats["steps"]
        wall = trajectory.stats["wall_time"]
        best = min(best, max(wall - fixed, 0.0) / (steps - 1))
        total += wall
        runs += 1
    return best, steps


def bar(n_dof: int, structure: str) -> tuple[ImpactingBar, float, float]:
    """The bar with n_dof nodes, its step and the end of its window (module docstring)."""
    problem = ImpactingBar(n_dof - 1, mass_structure=structure)
    t_end = problem.contact_time + problem.contact_duration
    h = min(CFL * problem.stable_step, (t_end - problem.t0) / MIN_STEPS)
    return problem, h, t_end


def failed(label: str, error: SimulationError) -> None:
    """Say which run failed and why (the run is left out of the table and the fit)."""
    print(f"  {label}: failed: {error.reason.split(' at t=')[0][-160:]}", flush=True)


def settled_time_per_step(method: TimeStepping, n_beads: int, h: float, steps: int) -> dict:
    """Seconds per step of the settled stack (module docstring), and the solver's count per
    step over the timed steps; the best of 2 to MAX_RUNS pairs of runs."""
    problem = resting_column(n_beads)
    settle = SETTLE_STEPS_PER_BEAD * n_beads
    method.solve(problem, problem.t0 + 2 * h, h=h)  # compile or load numba's disk cache

    def run(count: int) -> dict:
        return method.solve(problem, problem.t0 + count * h, h=h, output_every=1_000_000).stats

    best, total, runs = {}, 0.0, 0
    while runs < MAX_RUNS and (runs < 2 or total < MIN_TIME):
        for count in (settle, settle + steps):
            stats = run(count)
            total += stats["wall_time"]
            if count not in best or stats["wall_time"] < best[count]["wall_time"]:
                best[count] = stats
        runs += 1
    short, long = best[settle], best[settle + steps]
    timed = long["steps"] - short["steps"]
    return {
        "seconds_per_step": (long["wall_time"] - short["wall_time"]) / timed,
        "iterations_per_step": (long["solver_iterations"] - short["solver_iterations"]) / timed,
        "steps": timed,
    }


def fitted(rows: list[dict], key: str, fit_from: int) -> dict:
    """Exponent of the rows' cost against n over n >= fit_from."""
    points = [(r["n"], r["ns_per_step"]) for r in rows if r["n"] >= fit_from]
    if len(points) < 2:
        return {}
    n, cost = zip(*points, strict=True)
    fit = fit_cost_exponent(n, cost)
    return {"key": key, "p": fit.exponent, "low": fit.low, "high": fit.high, "sizes": list(n)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steppers = [k for k, v in METHODS.items() if issubclass(v, TimeStepping)]
    parser.add_argument("--methods", default=",".join(steppers))
    parser.add_argument("--bar-sizes", default=",".join(map(str, BAR_SIZES)))
    parser.add_argument("--bead-sizes", default=",".join(map(str, BEAD_SIZES)))
    parser.add_argument("--settled-sizes", default=",".join(map(str, SETTLED_SIZES)))
    parser.add_argument("--dense-bar-sizes", default=",".join(map(str, DENSE_BAR_SIZES)))
    parser.add_argument("--settled-steps", type=int, default=SETTLED_STEPS)
    parser.add_argument(
        "--target-steps", type=int, default=100_000, help="settled 100-bead target (0: skip)"
    )
    parser.add_argument("--fit-from", type=int, default=300, help="smallest bar n in the fits")
    parser.add_argument("--json", help="write the table and the fits to this file")
    args = parser.parse_args()
    methods = args.methods.split(",")
    bar_sizes, bead_sizes, settled_sizes, dense_bar_sizes = (
        [int(x) for x in sizes.split(",") if x]
        for sizes in (args.bar_sizes, args.bead_sizes, args.settled_sizes, args.dense_bar_sizes)
    )
    rows: list[dict] = []
    fits: list[dict] = []

    def record(**row) -> None:
        rows.append(row)
        per_step = row.get("iterations_per_step")
        print(
            f"{row['problem']:>21} {row['method']:>26} {row['structure']:>8} n={row['n']:>6} "
            f"steps={row['steps']:>7} {row['ns_per_step']:>12.0f} ns/step"
            + ("" if per_step is None else f"  {per_step:.3f} iterations/step"),
            flush=True,
        )

    for name in methods:
        method = METHODS[name]()
        for structure, sizes in (("diagonal", bar_sizes), ("dense", dense_bar_sizes)):
            if structure == "dense" and name != "MoreauJean":
                continue
            series = []
            for n in sizes:
                problem, h, t_end = bar(n, structure)
                try:
                    cost, steps = time_per_step(method, problem, t_end, h)
                except SimulationError as error:
                    failed(f"ImpactingBar {name} {structure} n={n} h={h:.3g}", error)
                    continue
                row = dict(
                    problem="ImpactingBar", method=name, structure=structure, n=n, steps=steps,
                    ns_per_step=1e9 * cost,
                )  # fmt: skip
                record(**row)
                series.append(row)
            fit_from = args.fit_from if structure == "diagonal" else 30
            fits.append(fitted(series, f"ImpactingBar/{name}/{structure}", fit_from))
        series = []
        for n in bead_sizes:
            problem = ColumnOfBeads(n)
            try:
                cost, steps = time_per_step(method, problem, BEADS_WINDOW, BEADS_STEP)
            except SimulationError as error:
                failed(f"ColumnOfBeads/falling {name} n={n}", error)
                continue
            row = dict(
                problem="ColumnOfBeads/falling", method=name, structure="diagonal", n=n,
                steps=steps, ns_per_step=1e9 * cost,
            )  # fmt: skip
            record(**row)
            series.append(row)
        fits.append(fitted(series, f"ColumnOfBeads/falling/{name}", min(bead_sizes, default=0)))
        series = []
        for n in settled_sizes:
            try:
                settled = settled_time_per_step(method, n, BEADS_STEP, args.settled_steps)
            except SimulationError as error:
                failed(f"ColumnOfBeads/settled {name} n={n}", error)
                continue
            row = dict(
                problem="ColumnOfBeads/settled", method=name, structure="diagonal", n=n,
                steps=settled["steps"], ns_per_step=1e9 * settled["seconds_per_step"],
                iterations_per_step=settled["iterations_per_step"],
            )  # fmt: skip
            record(**row)
            series.append(row)
        fits.append(fitted(series, f"ColumnOfBeads/settled/{name}", min(settled_sizes, default=0)))

    print("\nfitted exponents p (cost ~ n^p), 95 % interval:")
    for fit in fits:
        if fit:
            print(
                f"  {fit['key']:>48}: p = {fit['p']:.2f} [{fit['low']:.2f}, {fit['high']:.2f}] "
                f"over n = {fit['sizes']}"
            )
    targets = {}
    mj = {r["n"]: r["ns_per_step"] for r in rows if r["method"] == "MoreauJean"
          and r["problem"] == "ImpactingBar" and r["structure"] == "diagonal"}  # fmt: skip
    if 1000 in mj and 10000 in mj:
        targets["bar_ratio_1e4_over_1e3"] = mj[10000] / mj[1000]
        print(f"\ntarget 1: MoreauJean bar t(1e4) / t(1e3) = {mj[10000] / mj[1000]:.1f} (<= 15)")
    if "MoreauJean" in methods:
        method = METHODS["MoreauJean"]()
        problem = ColumnOfBeads(100)
        h = 1e-5
        method.solve(problem, 2 * h, h=h)
        elapsed = np.inf
        for _ in range(2):
            start = time.perf_counter()
            trajectory = method.solve(problem, 1e5 * h, h=h, output_every=1_000_000)
            elapsed = min(elapsed, time.perf_counter() - start)
        targets["beads100_1e5_steps_h1e-5_s"] = elapsed
        print(
            f"target 2: ColumnOfBeads(100), MoreauJean, 1e5 steps of h = 1e-5 from the default "
            f"start: {elapsed:.2f} s (< 2 s), {trajectory.stats['impacts']} impacts"
        )
        if args.target_steps > 0:  # timed over target_steps, given for 1e5 steps
            settled = settled_time_per_step(method, 100, h, args.target_steps)
            targets["beads100_settled_1e5_steps_h1e-5_s"] = settled["seconds_per_step"] * 1e5
            targets["beads100_settled_iterations_per_step"] = settled["iterations_per_step"]
            print(
                f"          settled column, 1e5 steps of h = 1e-5 after "
                f"{SETTLE_STEPS_PER_BEAD * 100} steps of settling: "
                f"{settled['seconds_per_step'] * 1e5:.2f} s (< 2 s; timed over "
                f"{settled['steps']} steps), {settled['iterations_per_step']:.3f} LCP bases "
                f"per step"
            )
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"rows": rows, "fits": [f for f in fits if f], "targets": targets}, handle,
                      indent=1)  # fmt: skip


if __name__ == "__main__":
    main()
