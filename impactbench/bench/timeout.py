"""A per-run time limit: the run executed in a forked child process, killed at its limit.

A run can spend unbounded time in code that no Python-level signal or exception reaches: a
numba-compiled loop, a C routine, a solver that stalls. The only interruption that works for all
of them is the end of the process. With a limit, :func:`perform_within` forks the process (the
worker, or the launching process with one job), performs the run in the child (its warm-up,
timed repeats and metrics: what :func:`impactbench.bench.runner.perform` does) and receives the
outcome through a pipe; if none has come when the limit expires, the child is killed and the
run is a failed outcome whose error names the limit. The process that forked is untouched, so
nothing else is lost: the other runs go on, and the finished ones are cached as usual.

The fork keeps everything the process has loaded (the study's classes, the compiled code it
has already loaded), so a run neither pickles nor recompiles anything to be limited: the runner
loads a run's compiled loop in the forking process first, by a run of a few steps
(``_compile_within`` in :mod:`impactbench.bench.runner`), and every child starts with it loaded
and warmed up. That compilation run is within the limit too: it is first made in a child of its
own, stopped at the limit, which fills numba's disk cache; the forking process makes it only
when the child finished, loading that code, and the run's child gets what is left of the
limit. What a child loads itself (the numba helpers of a plain-Python run) is lost with it and
loaded again by the next child, within its limit. Forking needs the ``fork`` start
method (POSIX); :func:`check_run_timeout` refuses a limit where it is missing.
"""

from __future__ import annotations

import math
import multiprocessing
import os
from collections.abc import Callable
from typing import Any

#: Start method of the child process of a limited run.
START_METHOD = "fork"


def check_run_timeout(value: Any, name: str = "run_timeout") -> float | None:
    """``value`` as a limit in seconds: None, or a finite positive number.

    Raises
    ------
    ValueError
        Naming ``name`` and the value; also when the platform cannot fork.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be None or a positive number of seconds, got {value!r}")
    limit = float(value)
    if not (math.isfinite(limit) and limit > 0.0):
        raise ValueError(f"{name} must be None or a positive number of seconds, got {value!r}")
    if START_METHOD not in multiprocessing.get_all_start_methods():
        raise ValueError(
            f"{name} needs the {START_METHOD!r} start method of multiprocessing, which this "
            f"platform lacks, got {name}={value!r}"
        )
    return limit


def _child(perform: Callable[..., Any], run: Any, sender: Any) -> None:
    """Perform the run and send its outcome; leave without the parent's exit handlers."""
    code = 0
    try:
        sender.send(perform(run, interruptible=False))
    except BaseException:  # noqa: BLE001 - the parent reports a child that sent nothing
        code = 1
    finally:
        sender.close()
        os._exit(code)


def perform_within(
    perform: Callable[..., Any],
    failure: Callable[[str], Any],
    run: Any,
    limit: float | None,
    interruptible: bool,
    budget: float | None = None,
) -> Any:
    """``perform(run, interruptible=...)``, stopped after ``limit`` seconds (module docstring).

    Parameters
    ----------
    perform : callable
        :func:`impactbench.bench.runner.perform`.
    failure : callable
        ``failure(error) -> Outcome``: the failed outcome of the run with this error.
    run : Run
    limit : float or None
        Seconds; None performs the run here, without a limit.
    interruptible : bool
        As for ``perform``: a KeyboardInterrupt while waiting kills the child and propagates.
    budget : float or None
        Seconds left of ``limit`` (default: all of it), when part of it was spent before (on
        the run's compilation run): the child is stopped after ``budget`` seconds, and the
        failure names ``limit``.

    Returns
    -------
    Outcome
        The child's outcome; a failure naming the limit when it expired, naming the exit
        code when the child died without an outcome, or saying why the child could not start
        (a daemonic process, such as a Dask worker's, may not have children).
    """
    if limit is None:
        return perform(run, interruptible=interruptible)
    budget = limit if budget is None else budget
    if budget <= 0.0:
        return failure(_over_the_limit(limit))
    context = multiprocessing.get_context(START_METHOD)
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(perform, run, sender), daemon=True)
    try:
        child.start()
    except (AssertionError, OSError) as error:  # a daemonic worker (Dask's), no resources
        receiver.close()
        sender.close()
        return failure(
            f"RuntimeError: run_timeout could not start the run's process here "
            f"({type(error).__name__}: {error})"
        )
    sender.close()
    try:
        if not receiver.poll(budget):
            return failure(_over_the_limit(limit))
        try:
            return receiver.recv()
        except EOFError:
            child.join()
            return failure(
                f"ChildProcessError: the process of the run ended without an outcome (exit "
                f"code {child.exitcode})"
            )
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receiver.close()


def _over_the_limit(limit: float) -> str:
    """The error of a run stopped at its time limit ``limit`` (seconds)."""
    return (
        f"TimeoutError: the run exceeded its time limit of {limit:g} s (run_timeout) and was "
        "stopped"
    )
