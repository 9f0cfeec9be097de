"""Fixed-step (time-stepping) methods: the shared driver around a compiled or plain-Python loop.

A time-stepping method subclasses :class:`TimeStepping` and provides a *loop factory*: a function
``make_loop(kernels, compile)`` that returns the whole time loop written against the kernel
calling convention of :class:`impactbench.ProblemKernels`. The same source is compiled by numba
for built-in problems (their kernels are numba functions) and runs as plain Python for a user's
plain-Python problem (its methods wrapped by :func:`impactbench.problem.python_kernels`) or when
the method is built with ``compiled=False``.

Loop signature (all arrays preallocated by the driver; the loop allocates only its work
buffers, once, before the first step)::

    loop(t0, h, n_steps, q0, v0, p, e, mp, every,
         out_t, out_q, out_v, log_t, log_i, log_u, counters, state)

``p`` problem parameters, ``e`` restitution, ``mp`` method
parameters (float64), ``every`` output decimation; ``out_*`` the samples (step 0, every
``every``-th step, the last step); ``log_*`` the impact log (capacity ``len(log_t)``;
``log_u[k] = (normal velocity before, after)``); ``counters`` (int64, see ``COUNTER_*``) and
``state`` (t, q, v at the end or at a failure).
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np

from . import _checks
from ._jit import hot_kernel
from .method import Method
from .problem import Problem, ProblemKernels, python_kernels
from .trajectory import IMPACT_LOG_CAPACITY, ImpactLog, SimulationError, Status, Trajectory

COUNTER_STATUS = 0
COUNTER_STEPS = 1
COUNTER_FORCE_EVALUATIONS = 2
COUNTER_IMPACTS = 3
COUNTER_LOGGED = 4
COUNTER_SAMPLES = 5
COUNTER_SOLVER_ITERATIONS = 6
N_COUNTERS = 8

STATUS_OK = 0
STATUS_NOT_FINITE = 1
STATUS_CONTACT_SOLVE_FAILED = 2
STATUS_PROJECTION_NOT_CONVERGED = 3
STATUS_MASS_NOT_SPD = 4

FAILURE_REASONS = {
    STATUS_NOT_FINITE: "non-finite state or force",
    STATUS_CONTACT_SOLVE_FAILED: "the impact LCP failed (singular Delassus matrix?)",
    STATUS_PROJECTION_NOT_CONVERGED: "the metric projection onto K did not converge",
    STATUS_MASS_NOT_SPD: "the mass matrix is not positive definite",
}

#: Refuse runs whose stored output would exceed this many bytes (use output_every).
MAX_OUTPUT_BYTES = 2 * 1024**3

#: Bytes of one impact-log entry (time, constraint index, two normal velocities).
LOG_ENTRY_BYTES = 32

#: Largest ``log_capacity``: an impact log of at most MAX_OUTPUT_BYTES (67 108 864 entries).
MAX_LOG_CAPACITY = MAX_OUTPUT_BYTES // LOG_ENTRY_BYTES

#: Smallest step, relative to max(|t0|, |t_end|), for which the grid t0 + k h advances.
MIN_RELATIVE_STEP = 4.0 * float(np.finfo(float).eps)


@hot_kernel
def log_impact(log_t, log_i, log_u, logged, t, i, before, after):
    """Write impact ``logged`` (time, constraint, normal velocity before and after) into the
    loop's impact log; returns the new count. The caller checks the log's capacity."""
    log_t[logged] = t
    log_i[logged] = i
    log_u[logged, 0] = before
    log_u[logged, 1] = after
    return logged + 1


@hot_kernel
def store_counters(counters, status, steps, force_evaluations, impacts, logged, samples, solves):
    """The loop's closing counts, read by :meth:`TimeStepping._solve_impl`."""
    counters[COUNTER_STATUS] = status
    counters[COUNTER_STEPS] = steps
    counters[COUNTER_FORCE_EVALUATIONS] = force_evaluations
    counters[COUNTER_IMPACTS] = impacts
    counters[COUNTER_LOGGED] = logged
    counters[COUNTER_SAMPLES] = samples
    counters[COUNTER_SOLVER_ITERATIONS] = solves


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
    too_small = (
        f"h must be >= 4 eps max(|t0|, |t_end|) = {smallest!r} for the times t0 + k h to "
        f"advance on [{t0!r}, {t_end!r}]"
    )
    if h < smallest:
        raise ValueError(f"{too_small}, got h={h!r} ({span / h:.3g} steps)")
    ratio = span / h
    nearest = round(ratio)
    n = int(nearest) if abs(ratio - nearest) <= 1e-9 * ratio else math.ceil(ratio)
    n = max(n, 1)
    if span / n < smallest:
        raise ValueError(f"{too_small}, got h={h!r}, reduced to {span / n!r} ({n} steps)")
    return n, span / n


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
    """

    family: ClassVar[str] = "time-stepping"
    requires_step: ClassVar[bool] = True
    _compiled_loops: ClassVar[dict[tuple[type, ProblemKernels, int, int], Callable]] = {}

    def __init__(self, *, compiled: bool = True, log_capacity: int = IMPACT_LOG_CAPACITY):
        if not isinstance(compiled, bool):
            raise ValueError(f"compiled must be True or False, got {compiled!r}")
        self.compiled = compiled
        self.log_capacity = _checks.positive_int(log_capacity, "log_capacity")
        if self.log_capacity > MAX_LOG_CAPACITY:
            raise ValueError(
                f"log_capacity must be <= {MAX_LOG_CAPACITY} (an impact log of at most "
                f"{MAX_OUTPUT_BYTES} bytes), got {log_capacity!r}"
            )

    @staticmethod
    @abstractmethod
    def _make_loop(
        kernels: ProblemKernels, n_dof: int, n_constraints: int, compile: bool
    ) -> Callable:
        """Build the time loop for a problem (see the module docstring for its signature).

        The loops bind ``n_dof`` and ``n_constraints`` as compile-time constants: numba then
        unrolls the small linear algebra completely (measured: a 1 x 1 solve in a loop goes from
        16 ns to 1 ns per call), and single-constraint problems compile without the LCP solver.
        """

    @abstractmethod
    def _method_vector(self) -> np.ndarray:
        """Method parameters as the float64 vector ``mp`` read by the loop."""

    def loop_for(self, problem: Problem) -> tuple[Callable, bool]:
        """The loop used for ``problem`` and whether it is compiled (compiled once per class)."""
        kernels = problem.kernels()
        n, m = problem.n_dof, problem.n_constraints
        if not self.compiled or kernels is None:
            return self._make_loop(python_kernels(problem), n, m, False), False
        key = (type(self), kernels, n, m)
        loop = self._compiled_loops.get(key)
        if loop is None:
            loop = self._make_loop(kernels, n, m, True)
            self._compiled_loops[key] = loop
        return loop, True

    def _solve_impl(
        self, problem: Problem, t_end: float, h: float | None, output_every: int
    ) -> Trajectory:
        n_steps, h = step_count(problem.t0, t_end, h)
        n = problem.n_dof
        n_out = n_steps // output_every + 1 + (1 if n_steps % output_every else 0)
        if n_out * (2 * n + 1) * 8 > MAX_OUTPUT_BYTES:
            raise ValueError(
                f"output_every={output_every} would store {n_out} samples of {2 * n + 1} floats "
                f"(more than {MAX_OUTPUT_BYTES} bytes); increase output_every"
            )
        loop, compiled = self.loop_for(problem)
        out_t = np.empty(n_out)
        out_q = np.empty((n_out, n))
        out_v = np.empty((n_out, n))
        capacity = min(self.log_capacity, n_steps * problem.n_constraints)
        log_t = np.empty(capacity)
        log_i = np.empty(capacity, dtype=np.int64)
        log_u = np.empty((capacity, 2))
        counters = np.zeros(N_COUNTERS, dtype=np.int64)
        state = np.empty(1 + 2 * n)
        loop(
            float(problem.t0),
            float(h),
            n_steps,
            np.ascontiguousarray(problem.q0, dtype=float),
            np.ascontiguousarray(problem.v0, dtype=float),
            np.ascontiguousarray(problem.kernel_parameters(), dtype=float),
            float(problem.restitution),
            self._method_vector(),
            output_every,
            out_t,
            out_q,
            out_v,
            log_t,
            log_i,
            log_u,
            counters,
            state,
        )
        samples = int(counters[COUNTER_SAMPLES])
        logged = int(counters[COUNTER_LOGGED])
        impacts = ImpactLog(
            t=log_t[:logged].copy(),
            constraint=log_i[:logged].copy(),
            normal_velocity_before=log_u[:logged, 0].copy(),
            normal_velocity_after=log_u[:logged, 1].copy(),
            total=int(counters[COUNTER_IMPACTS]),
        )
        stats = {
            "steps": int(counters[COUNTER_STEPS]),
            "force_evaluations": int(counters[COUNTER_FORCE_EVALUATIONS]),
            "impacts": int(counters[COUNTER_IMPACTS]),
            "solver_iterations": int(counters[COUNTER_SOLVER_ITERATIONS]),
            "compiled": compiled,
        }
        status = int(counters[COUNTER_STATUS])
        trajectory = Trajectory(
            t=out_t[:samples],
            q=out_q[:samples],
            v=out_v[:samples],
            impacts=impacts,
            status=Status.OK if status == STATUS_OK else Status.FAILED,
            message="reached t_end" if status == STATUS_OK else FAILURE_REASONS[status],
            stats=stats,
            method=self.name,
            problem=problem.name,
            h=h,
        )
        if status != STATUS_OK:
            raise SimulationError(
                f"{self.name} on {problem.name}: {FAILURE_REASONS[status]}",
                state[0],
                state[1 : 1 + n],
                state[1 + n :],
                trajectory,
            )
        return trajectory
