"""``impactbench simulate PROBLEM METHOD [METHOD ...]``: run a problem with one or more methods,
print each run's summary and errors, and optionally write the samples and one figure.

PROBLEM and METHOD are built-in names or ``MODULE:NAME`` specs, both with optional parameters
(:mod:`impactbench.bench.specs`): ``'wavy:WavyFloorBall[a=0.1]'`` is the class (or function
returning a problem) ``WavyFloorBall`` of ``wavy.py`` in the current directory. For each method
the summary gives its costs, its **impact events** (the count of the study tables,
:mod:`impactbench.analysis.impact_events`: Paoli-Schatzman's two log entries per impact, or
Moreau-Jean's entry at every step of a resting contact, are one event) next to the raw log
entries, and its errors against the exact solution, or else against the cached reference run
(DOP853, rtol 1e-12: computed once per problem and horizon, then read from the reference
cache). ``--plot`` draws every run in one figure (:func:`impactbench.plot`), each through its
continuous extension: an event-driven run through its dense output (the same one its errors are
measured through), a time-stepping run through the polyline of its steps.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.impact_events import impact_events
from ..analysis.metrics import METRICS, keeping_dense_output
from ..analysis.reference import MissingReferenceError, Reference
from ..core._files import write_atomic
from ..core.energy import energy
from ..core.method import Method
from ..core.problem import Problem
from ..core.simulate import simulate
from ..core.trajectory import SimulationError, Trajectory
from . import user_errors
from .arguments import csv_file, figure_file, finite_number, positive_number
from .plotting import plot, solution_of
from .results import format_float
from .specs import load_method, load_problem

#: Errors printed for each run, against the exact solution or the reference.
METRICS_SHOWN = ("max_position_error", "l1_velocity_error", "position_error_at_end")


def _trajectory_frame(problem: Problem, trajectory: Trajectory) -> pd.DataFrame:
    columns: dict[str, np.ndarray] = {"t": trajectory.t}
    for i in range(trajectory.q.shape[1]):
        columns[f"q{i}"] = trajectory.q[:, i]
    for i in range(trajectory.v.shape[1]):
        columns[f"v{i}"] = trajectory.v[:, i]
    columns["energy"] = energy(problem, trajectory)
    return pd.DataFrame(columns)


def _summary(problem: Problem, method: Method, trajectory: Trajectory, t_end: float) -> None:
    stats = trajectory.stats
    events = impact_events(trajectory)
    print(f"{problem.name} with {method.name} to t = {t_end:g}: {trajectory.status.value}")
    print(f"  {trajectory.message}")
    if trajectory.h is not None:
        print(f"  step used: {trajectory.h!r}")
    print(
        f"  steps {stats['steps']}, force evaluations {stats['force_evaluations']}, "
        f"impacts {events.impacts} (impact events; {stats['impacts']} log entries, "
        f"{events.contact_phases} contact phases), samples {len(trajectory.t)}, "
        f"wall time {stats['wall_time']:.4g} s, compile time {stats['compile_time']:.4g} s "
        "(numba's compilation or disk-cache loading, not in the wall time)"
    )


def run_simulate(args: argparse.Namespace, usage_error: type[Exception]) -> int:
    """The ``simulate`` subcommand (``args`` as parsed by :func:`add_parser`)."""
    try:
        problem = load_problem(args.problem)
        methods = [load_method(spec) for spec in args.methods]
        problem.check()
    except (TypeError, ValueError) as error:
        raise usage_error(str(error)) from None
    if args.h is not None and not any(method.requires_step for method in methods):
        raise usage_error("--h is only used by time-stepping methods; none is given")
    solution, note = _solution(problem, args.t_end, compute=bool(args.reference or args.plot))
    runs: list[tuple[Method, Trajectory]] = []
    drawn: list[Trajectory] = []  # the runs with their continuous extension, for --plot
    failed = False
    for method in methods:
        h = args.h if method.requires_step else None
        # errors on the grid through the run's own dense output, kept by the timed run itself
        run_method = method if solution is None else keeping_dense_output(method)
        timed = _timed_run(problem, run_method, args, h, usage_error)
        if timed is None:
            failed = True
            continue
        trajectory, warmup = timed
        _summary(problem, method, trajectory, args.t_end)
        if warmup is not None:
            print(
                f"  warm-up run (numba compilation or cache loading, first calls): "
                f"{warmup:.4g} s, not in the wall time"
            )
        print(f"  q(T) = {trajectory.q[-1].tolist()}, v(T) = {trajectory.v[-1].tolist()}")
        if solution is not None:  # on the error grid, through the run's continuous extension
            for name in METRICS_SHOWN:
                value = METRICS[name].function(problem, trajectory, solution)
                print(f"  {name.replace('_', ' ')} ({note}): {value:.6g}")
        failed = failed or not trajectory.success
        runs.append((method, trajectory))
        drawn.append(trajectory)
    if solution is None:
        print(note)
    if args.csv and runs:
        _write_csv(problem, runs, args.csv)
    if args.plot and runs:
        plot(problem, drawn, reference=solution, output=args.plot)
        print(f"figure written to {args.plot} (against the {note})")
    return 1 if failed else 0


def _timed_run(
    problem: Problem,
    method: Method,
    args: argparse.Namespace,
    h: float | None,
    usage_error: type[Exception],
) -> tuple[Trajectory, float | None] | None:
    """The run of ``method`` (after an untimed warm-up run unless ``--no-warmup``) and the
    warm-up's time; None when it failed (said on stderr: the user's message and where it was
    raised, :func:`impactbench.bench.user_errors.describe`; the traceback with ``--debug``)."""
    options = {"h": h, "output_every": args.output_every}
    try:
        warmup = None
        if args.warmup:  # compilation and first-call costs, kept out of the run's wall time
            start = time.perf_counter()
            simulate(problem, method, args.t_end, **options)
            warmup = time.perf_counter() - start
        return simulate(problem, method, args.t_end, **options), warmup
    except SimulationError as error:
        message = str(error)
    except Exception as error:  # noqa: BLE001 - a user's code: this run fails, the others run
        if isinstance(error, (TypeError, ValueError)) and not user_errors.raised_by_user_code(
            error
        ):  # impactbench's checks of the arguments
            raise usage_error(f"{method.name}: {error}") from None
        message = user_errors.describe(error)
        if args.debug:
            user_errors.print_traceback(error)
    print(f"{problem.name} with {method.name}: run failed: {message}", file=sys.stderr)
    return None


def _solution(problem: Problem, t_end: float, compute: bool) -> tuple[Reference | None, str]:
    """The exact solution, else the reference run (from the cache; computed and cached when
    ``compute``), with how to name it; or None and why there is none."""
    if problem.has_exact_solution:
        return Reference.exact(problem, t_end), "exact solution"
    try:
        solution = solution_of(problem, t_end, compute=compute)
    except MissingReferenceError:
        return None, (
            "errors: no exact solution, and no cached reference run for this horizon "
            "(--reference computes it, as --plot does)"
        )
    print(f"errors against the reference run {solution.kind} (from the reference cache)")
    return solution, "reference run"


def _write_csv(problem: Problem, runs: list[tuple[Method, Trajectory]], path: Path) -> None:
    frames = []
    for method, trajectory in runs:
        frame = _trajectory_frame(problem, trajectory)
        if len(runs) > 1:
            frame.insert(0, "method", method.name)
        frames.append(frame)
    table = pd.concat(frames, ignore_index=True)
    write_atomic(path, table.to_csv(index=False, float_format=format_float, lineterminator="\n"))
    print(f"samples written to {path}")


def add_parser(
    commands: Any,
    usage_error: type[Exception],
    positive_int: Callable[[str], int],
) -> None:
    """Add the ``simulate`` subcommand to the ``impactbench`` parser's subcommands
    (``usage_error``: the exception of a bad command line, exit code 2; ``positive_int``: the
    argparse type of ``--output-every``)."""
    sim = commands.add_parser(
        "simulate",
        help="simulate a problem with one or more methods (one figure for all)",
        description="Simulate PROBLEM with each METHOD and print each run's summary: costs, "
        "impact events (as the study tables count them) and log entries, and its errors "
        "against the exact solution (or the cached reference run with --reference or --plot). "
        "PROBLEM and METHOD are names with optional parameters, e.g. "
        "'BouncingBall[restitution=0.5]' 'MoreauJean[theta=0.5]', or MODULE:NAME[...] for a "
        "class or function of a module of the current directory, e.g. "
        "'wavy:WavyFloorBall[a=0.1]'.",
    )
    from .plugins import METHODS, PROBLEMS  # names from the plug-ins' metadata: none imported

    sim.add_argument(
        "problem",
        metavar="PROBLEM",
        help=f"'Name[p=v,...]' (one of {', '.join(PROBLEMS.names())}) or 'module:Name[p=v,...]'",
    )
    sim.add_argument(
        "methods",
        metavar="METHOD",
        nargs="+",
        help=f"one or more methods, 'Name[p=v,...]' (one of {', '.join(METHODS.names())}) or "
        "'module:Class[p=v,...]'",
    )
    sim.add_argument("--t-end", type=finite_number, required=True, help="final time")
    sim.add_argument(
        "--h",
        type=positive_number,
        default=None,
        help="step > 0 (time-stepping methods; the others ignore it)",
    )
    sim.add_argument("--output-every", type=positive_int, default=1, help="keep every K-th step")
    sim.add_argument(
        "--reference",
        action="store_true",
        help="for a problem without an exact solution: print the errors against the reference "
        "run (DOP853, rtol 1e-12; computed once, then cached)",
    )
    sim.add_argument(
        "--plot",
        type=figure_file,
        help="write one figure (.png or .pdf) of every run against the exact solution, "
        "or against the reference run when there is none (then the errors are printed too)",
    )
    sim.add_argument(
        "--csv",
        type=csv_file,
        help="write the samples (t, q, v, energy) as CSV; with several methods one file with a "
        "method column",
    )
    sim.add_argument(
        "--no-warmup",
        dest="warmup",
        action="store_false",
        help="time the first run, compilation included (default: run once untimed first)",
    )
    sim.add_argument(
        "--debug",
        action="store_true",
        help="print the full traceback of a run that raised (default: its message and where)",
    )
    sim.set_defaults(handler=lambda args: run_simulate(args, usage_error), parser=sim)
