"""Fixed-step (time-stepping) methods: the shared front end around the one time loop.

A time-stepping method subclasses :class:`TimeStepping`, describes its scheme as an
:class:`impactbench.core.driver.Scheme` (five small functions: start, step, commit, sample, current,
and its buffer layout) and returns, from ``_make_loop(kernels, n_dof, n_constraints, compile,
**options)``, the driver's loop for it: :func:`impactbench.core.driver.make_loop` binds the scheme's
functions to the problem's kernels and to the instance's compile-time options and inlines them
into the one loop of :mod:`impactbench.core.driver`, which owns the buffers, output sampling and
decimation, finite checks, the impact log, counters and statuses. A new scheme is one file (see
methods/moreau_jean.py and methods/paoli_schatzman.py). The same source is compiled by numba for
built-in problems (their kernels are numba functions) and runs as plain Python for a user's
plain-Python problem (its methods wrapped, with every returned value checked, by
:func:`impactbench.core.problem.python_kernels`) or when the method is built with
``compiled=False``. Statuses, counters and the two reporting kernels are in
:mod:`impactbench.core.status_codes`.

Loop signature (arrays preallocated here; the loop allocates nothing)::

    loop(t0, h, n_steps, q0, v0, p, e, mp, every,
         out_t, out_q, out_v, log_t, log_i, log_u, counters, state, growth)

``p`` problem parameters, ``e`` restitution, ``mp`` method
parameters (float64), ``every`` output decimation; ``out_*`` the samples (step 0, every
``every``-th step, the last step); ``log_*`` the impact log (capacity ``len(log_t)``;
``log_u[k] = (normal velocity before, after)``); ``counters`` (int64, see ``COUNTER_*``) and
``state`` (t, q, v at the end or at a failure); ``growth`` the bounds of the state and, at a
divergence, what exceeded them (:mod:`impactbench.core.divergence`). It returns the bytes of
the work arrays it allocated, ``stats["work_bytes"]`` (the driver's loop does; a loop that
returns None leaves it None), to which ``stats["memory_bytes"]`` adds the output arrays and
the impact log.
"""

from __future__ import annotations

import functools
import math
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from . import _checks
from .compilation import compiled_code
from .divergence import check_step, state_bounds
from .method import TIME_STEPPING, Method
from .prepared_loop import MethodRecord, PreparedLoop
from .problem import CheckedCalls, Problem, ProblemKernels, checked_state, python_kernels
from .snapshot import keep, kept
from .status_codes import FAILURE_REASONS
from .trajectory import IMPACT_LOG_CAPACITY, Trajectory

#: Refuse runs whose stored output would exceed this many bytes (use output_every).
MAX_OUTPUT_BYTES = 2 * 1024**3

#: Bytes of one impact-log entry (time, constraint index, two normal velocities).
LOG_ENTRY_BYTES = 32

#: Largest ``log_capacity``: an impact log of at most MAX_OUTPUT_BYTES (67 108 864 entries).
MAX_LOG_CAPACITY = MAX_OUTPUT_BYTES // LOG_ENTRY_BYTES

#: Smallest step, relative to max(|t0|, |t_end|), for which the grid t0 + k h advances.
MIN_RELATIVE_STEP = 4.0 * float(np.finfo(float).eps)


def step_count(t0: float, t_end: float, h: Any) -> tuple[int, float]:
    """Number of steps N and the step actually used, (t_end - t0) / N.

    Rule: h must satisfy 0 < h <= t_end - t0. If (t_end - t0) / h is an integer up to a relative
    1e-9 the step is kept (exactly (t_end - t0) / N); otherwise N = ceil((t_end - t0) / h) and the
    step is reduced to (t_end - t0) / N, the largest step below h that ends exactly at t_end.

    The loops compute the times as t0 + k h in floating point, with a rounding error of at most
    1.5 eps max(|t0|, |t_end|) (eps = 2^-52). Both h and the step used must therefore be at
    least ``MIN_RELATIVE_STEP`` = 4 eps times max(|t0|, |t_end|): then consecutive times differ
    by more than their combined rounding error and the grid strictly increases. This also bounds
    N by 1 / (2 eps) ~ 2.3e15, far inside the int64 counters of the loops.

    Raises
    ------
    ValueError
        If h is missing, not a finite positive number, larger than t_end - t0, or too small for
        the grid t0 + k h to advance; or if t_end - t0 is not a finite positive number.
    """
    if h is None:
        raise ValueError("h is required by time-stepping methods, got h=None")
    h = _checks.positive_scalar(h, "h")
    span = t_end - t0
    if not (math.isfinite(span) and span > 0.0):
        raise ValueError(
            f"t_end - t0 must be a finite positive number, got t0={t0!r}, t_end={t_end!r}"
        )
    if h > span * (1.0 + 1e-12):
        raise ValueError(f"h must be <= t_end - t0 = {span!r}, got h={h!r}")
    smallest = MIN_RELATIVE_STEP * max(abs(t0), abs(t_end))
    if h < smallest:
        raise ValueError(f"{_too_small(smallest, t0, t_end)}, got h={h!r} ({span / h:.3g} steps)")
    ratio = span / h
    nearest = round(ratio)
    n = int(nearest) if abs(ratio - nearest) <= 1e-9 * ratio else math.ceil(ratio)
    n = max(n, 1)
    if span / n < smallest:
        raise ValueError(
            f"{_too_small(smallest, t0, t_end)}, got h={h!r}, reduced to {span / n!r} ({n} steps)"
        )
    return n, span / n


@functools.lru_cache(maxsize=64, typed=True)
def _float_step_count(t0: float, t_end: float, h: float) -> tuple[int, float]:
    """:func:`step_count` for float arguments, kept for the next runs with the same ones."""
    return step_count(t0, t_end, h)


#: Types of h whose runs keep their plan (under float(h): a step count of h depends on its
#: value only).
_STEP_TYPES = frozenset({float, int, np.float64})


def _too_small(smallest: float, t0: float, t_end: float) -> str:
    """The start of :func:`step_count`'s message for a step too small for the grid to advance."""
    return (
        f"h must be >= 4 eps max(|t0|, |t_end|) = {smallest!r} for the times t0 + k h to "
        f"advance on [{t0!r}, {t_end!r}]"
    )


class TimeStepping(Method):
    """Base class of the fixed-step schemes.

    Parameters
    ----------
    compiled : bool
        Run the numba-compiled loop when the problem provides kernels (default). With False, or
        for a plain-Python problem, the same loop runs uncompiled.
    log_capacity : int
        Maximal number of impact-log entries kept (all are counted in ``impacts.total``), at
        most ``MAX_LOG_CAPACITY`` (2^26 entries of 32 bytes: 2 GiB). A run allocates
        min(log_capacity, N m) entries for N steps and m constraints (a step logs at most one
        entry per constraint).
    specialised : bool
        Compile the loop of a scheme written on :mod:`impactbench.core.scheme` for the
        problem's own kernels, inlined (a loop per scheme and problem: a little less per step,
        for long production runs and the performance study), instead of the default
        loop that takes the kernels as run-time values (a loop per scheme, sizes and flags,
        that every problem shares: :mod:`impactbench.core.driver`).
    """

    family: ClassVar[str] = TIME_STEPPING
    requires_step: ClassVar[bool] = True
    #: How the output velocity is obtained: "state" when it is the scheme's own velocity
    #: variable, else a description of its reconstruction (recorded in ``stats``; energy metrics
    #: are not computed from a reconstructed velocity).
    velocity_output: ClassVar[str] = "state"
    #: Message of each failure status (a scheme may add codes >= 100 with their messages).
    failure_reasons: ClassVar[dict[int, str]] = FAILURE_REASONS
    _compiled_loops: ClassVar[dict[tuple[Any, ...], Callable]] = {}

    def __init__(
        self,
        *,
        compiled: bool = True,
        log_capacity: int = IMPACT_LOG_CAPACITY,
        specialised: bool = False,
    ):
        if not isinstance(compiled, bool):
            raise ValueError(f"compiled must be True or False, got {compiled!r}")
        if not isinstance(specialised, bool):
            raise ValueError(f"specialised must be True or False, got {specialised!r}")
        self.compiled = compiled
        self.specialised = specialised
        self.log_capacity = _checks.positive_int(log_capacity, "log_capacity")
        if self.log_capacity > MAX_LOG_CAPACITY:
            raise ValueError(
                f"log_capacity must be <= {MAX_LOG_CAPACITY} (an impact log of at most "
                f"{MAX_OUTPUT_BYTES} bytes), got {log_capacity!r}"
            )

    @staticmethod
    @abstractmethod
    def _make_loop(
        kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool, **options: Any
    ) -> Callable:
        """Build the time loop for a problem (see the module docstring for its signature):
        usually ``impactbench.core.driver.make_loop(SCHEME, bindings, n_dof, n_constraints,
        compile)``.

        The loops bind ``n_dof`` and ``n_constraints`` as compile-time constants: numba then
        unrolls the small linear algebra completely, and single-constraint problems compile
        without the LCP solver.
        From ``impactbench.core.driver.GENERIC_FROM`` DOF the driver's loop reads them at run
        time instead, one compiled loop for every size (see its module docstring).
        ``options`` are the instance's :meth:`_loop_options`.
        """

    def _loop_options(self) -> dict[str, Any]:
        """Compile-time options of this instance's loop (hashable values; none by default).

        They are passed to :meth:`_make_loop` and are part of the key under which a compiled loop
        is kept, so two instances that differ in them never share a loop.
        """
        return {}

    def step_limit(self, problem: Problem) -> float | None:
        """The largest step with which this scheme is stable on ``problem``, or None.

        None (the default) for a scheme without a step limit or whose limit is not stated, and
        for a problem that declares no ``stable_step``. An explicit scheme returns its limit
        in terms of ``problem.stable_step`` = 2 / omega_max; :meth:`_solve_impl` refuses a
        larger step (:func:`impactbench.core.divergence.check_step`).
        """
        return None

    @abstractmethod
    def _method_vector(self) -> np.ndarray:
        """Method parameters as the float64 vector ``mp`` read by the loop."""

    def loop_for(self, problem: Problem) -> tuple[Callable, CheckedCalls | None]:
        """The loop used for ``problem`` (compiled once per class, sizes
        and loop options), and None if it is compiled or
        else the checked calls of the problem it runs
        (:func:`impactbench.core.problem.python_kernels`).
        """
        n, m = problem.n_dof, problem.n_constraints
        key = compiled_code(self, problem)
        if key is None:
            calls = CheckedCalls(problem)
            options = self._loop_options()
            return self._make_loop(python_kernels(problem, calls), n, m, False, **options), calls
        memo = self.__dict__.get("_loop_memo")
        if memo is not None and memo[0] is key:  # compiled_code returned its kept key
            return memo[1], None
        loop = self._compiled_loops.get(key)
        if loop is None:
            loop = self._make_loop(problem.kernels(), n, m, True, **self._loop_options())
            self._compiled_loops[key] = loop
        self.__dict__["_loop_memo"] = (key, loop)
        return loop, None

    def compile_options(self, problem: Problem) -> dict[str, Any] | None:
        """The loop options (:meth:`_loop_options`) when the loop is compiled, else None."""
        return self._loop_options() if self.compiled else None

    def _solve_impl(
        self, problem: Problem, t_end: float, h: float | None, output_every: int
    ) -> Trajectory:
        # the loop and its arguments are kept by the values of this instance and of the
        # problem's checked state, and per (t_end, h, output_every)
        # (impactbench.core.prepared_loop)
        state = checked_state(problem)
        prepared = kept(self, state)
        key = (t_end, float(h), output_every) if type(h) in _STEP_TYPES else None
        plan = None if prepared is None or key is None else prepared.plans.get(key)
        if plan is not None:
            return prepared.run(plan)
        t0 = problem.t0
        if type(h) is float and type(t0) is float and type(t_end) is float:
            n_steps, h = _float_step_count(t0, t_end, h)
        else:
            n_steps, h = step_count(t0, t_end, h)
        check_step(self, problem, h)
        growth = state_bounds(problem, t_end)
        n = problem.n_dof
        n_out = n_steps // output_every + 1 + (1 if n_steps % output_every else 0)
        if n_out * (2 * n + 1) * 8 > MAX_OUTPUT_BYTES:
            raise ValueError(
                f"output_every={output_every} would store {n_out} samples of {2 * n + 1} floats "
                f"(more than {MAX_OUTPUT_BYTES} bytes); increase output_every"
            )
        if prepared is None:
            loop, calls = self.loop_for(problem)
            prepared = PreparedLoop(
                MethodRecord(
                    self.name, self._method_vector(), self.velocity_output, self.failure_reasons
                ),
                problem,
                loop,
                calls,
            )
            if calls is None:  # the plain path's checked calls belong to one run
                keep(self, state, prepared)
        capacity = min(self.log_capacity, n_steps * problem.n_constraints)
        plan = prepared.plan(key, n_steps, h, output_every, n_out, capacity, growth)
        return prepared.run(plan)
