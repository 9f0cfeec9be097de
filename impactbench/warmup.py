"""Compile once, then fan out: build each distinct compiled loop before a study's runs.

Every distinct (method, loop options, problem class, sizes) combination needs its numba loop
compiled once per machine (seconds to tens of seconds); afterwards any process loads it from
numba's disk cache in milliseconds. Without this step, parallel workers that start runs of the
same combination compile the same loop at the same time, each paying the full cost.
:func:`impactbench.runner.execute` therefore first runs :func:`compile_run` (a one-step
simulation) for one run of each combination (:func:`distinct_loops`), one combination per
worker, and only then the study's runs.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import joblib

from .simulate import simulate
from .timestepping import TimeStepping


def _qualified(obj: Any) -> str:
    return f"{type(obj).__module__}.{type(obj).__qualname__}"


def loop_key(run: Any) -> Hashable | None:
    """What selects the compiled code a run uses; None when it uses none (a plain-Python
    problem, ``compiled=False``) or cannot be built (the run itself will report why)."""
    try:
        problem = run.problem(**run.problem_kwargs)
        method = run.method(**run.method_kwargs)
    except Exception:
        return None
    if problem.kernels() is None or not getattr(method, "compiled", True):
        return None
    options = method._loop_options() if isinstance(method, TimeStepping) else {}
    return (
        _qualified(method),
        tuple(sorted(options.items())),
        _qualified(problem),
        problem.n_dof,
        problem.n_constraints,
    )


def distinct_loops(runs: Sequence[Any]) -> list[Any]:
    """The first run of each distinct :func:`loop_key` (runs without compiled code left out)."""
    seen: set[Hashable] = set()
    chosen = []
    for run in runs:
        key = loop_key(run)
        if key is not None and key not in seen:
            seen.add(key)
            chosen.append(run)
    return chosen


def compile_run(run: Any) -> bool:
    """Simulate one step of ``run`` (which compiles its loop into numba's disk cache); any
    failure is ignored here: the run itself reports it. Returns whether the step ran."""
    try:
        problem = run.problem(**run.problem_kwargs)
        method = run.method(**run.method_kwargs)
        span = run.t_end - problem.t0
        step = run.h if run.h is not None else min(1e-3, span)
        simulate(problem, method, problem.t0 + min(step, span), h=run.h and min(run.h, span))
    except BaseException:  # noqa: BLE001 - user code may raise anything; the run reports it
        return False
    return True


def compile_loops(runs: Sequence[Any], jobs: int) -> int:
    """Compile the loops of ``runs`` in parallel local workers (loky), one per distinct
    :func:`loop_key`; returns how many. Nothing here can fail a study: a worker lost while
    compiling only means its runs compile their loop themselves."""
    chosen = distinct_loops(runs)
    if chosen:
        try:
            joblib.Parallel(n_jobs=jobs, backend="loky")(
                joblib.delayed(compile_run)(run) for run in chosen
            )
        except Exception:  # noqa: BLE001 - e.g. a worker killed by user code; the runs report it
            pass
    return len(chosen)
