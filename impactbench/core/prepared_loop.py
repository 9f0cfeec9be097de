"""The arguments of a time-stepping method's loop on one problem, prepared once for many runs.

A run of :class:`impactbench.TimeStepping` calls its loop with the arguments listed in
:mod:`impactbench.core.timestepping`. All of them but the output arrays depend on the method,
the problem and ``(t_end, h, output_every)`` alone: :class:`PreparedLoop` converts and checks
the method's and the problem's parts once, :class:`Plan` those of one ``(t_end, h,
output_every)``, and the time-stepping front end keeps them by the values of the method and of
the problem's checked state (:func:`impactbench.core.snapshot.keep`: a new method and problem
of equal parameters reuse them; the prepared loop holds copies of the problem's arrays only).

Each run takes a set of argument arrays from its plan's pool (or a new one) and sets what the
loop reads before it writes: the initial state, the two parameter vectors and the growth bounds
(one copy into the set's float buffer) and the counters (zeroed), as freshly allocated arrays
would have them. The set goes back to the pool when the run's results are read; a concurrent
run takes another (``list.pop`` and ``list.append`` are atomic). The output arrays are new at
each run: the trajectory keeps them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from .divergence import GROWTH_SIZE, divergence_error
from .problem import CheckedCalls, Problem
from .status_codes import (
    COUNTER_FORCE_EVALUATIONS,
    COUNTER_IMPACTS,
    COUNTER_LOGGED,
    COUNTER_SAMPLES,
    COUNTER_SOLVER_ITERATIONS,
    COUNTER_STATUS,
    COUNTER_STEPS,
    N_COUNTERS,
    STATUS_DIVERGED,
    STATUS_OK,
)
from .trajectory import ImpactLog, SimulationError, Status, Trajectory

#: Impact logs of at most this many entries are kept with a plan's argument sets (64 KiB);
#: a run that may log more allocates its log (its loop costs far more than the allocation).
POOLED_LOG_ENTRIES = 2048

#: Plans kept per prepared loop: a new one beyond them forgets the others.
MAX_PLANS = 64


def vector(value: Any, name: str) -> np.ndarray:
    """A C-contiguous, writeable float64 copy of the 1-D array ``value`` (ValueError naming
    ``name`` otherwise): the loops' vector arguments always have this one numba type."""
    array = np.array(value, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array, got shape {array.shape}")
    return array


class Plan:
    """The arguments of the runs of one ``(t_end, h, output_every)``: the number of steps, the
    step used, the samples and impact-log entries a run allocates, and the initial values of
    an argument set (the prepared vectors, then the growth bounds)."""

    __slots__ = ("n_steps", "h", "every", "n_out", "capacity", "initial", "pool")

    def __init__(
        self, n_steps: int, h: float, every: int, n_out: int, capacity: int, initial: np.ndarray
    ) -> None:
        self.n_steps = n_steps
        self.h = h
        self.every = every
        self.n_out = n_out
        self.capacity = capacity
        self.initial = initial
        self.pool: list[tuple[Any, ...]] = []


class MethodRecord(NamedTuple):
    """What a prepared loop reads of its time-stepping method: its name, its parameter vector
    (``TimeStepping._method_vector()``), the output its velocities are (``velocity_output``) and
    its loop's failure statuses by code (``failure_reasons``)."""

    name: str
    vector: np.ndarray
    velocity_output: str
    failure_reasons: dict[int, str]


class PreparedLoop:
    """What the runs of ``method`` on ``problem`` share: the loop (and the checked calls of
    the plain-Python path, None when it is compiled), the names, ``t0`` and the restitution,
    the vectors (q0, v0, kernel parameters, method parameters) and the plans by ``(t_end,
    float(h), output_every)``.

    Raises
    ------
    ValueError
        If ``kernel_parameters()`` or ``_method_vector()`` is not a 1-D array.
    """

    def __init__(
        self,
        method: MethodRecord,
        problem: Problem,
        loop: Callable,
        calls: CheckedCalls | None,
    ) -> None:
        self.loop = loop
        self.calls = calls
        #: whether the loop reports the impact law's energy record (the driver's loop does)
        self.reports_law = getattr(loop, "reports_law", False)
        self.n = n = problem.n_dof
        self.t0 = float(problem.t0)
        self.restitution = float(problem.restitution)
        self.method = method.name
        self.problem = problem.name
        self.velocity_output = method.velocity_output
        self.failure_reasons = method.failure_reasons
        vectors = (
            vector(problem.q0, "q0"),
            vector(problem.v0, "v0"),
            vector(problem.kernel_parameters(), "kernel_parameters()"),
            vector(method.vector, "_method_vector()"),
        )
        self.vectors = np.concatenate(vectors)
        self.ends = np.cumsum([0, *(len(array) for array in vectors), GROWTH_SIZE, 1 + 2 * n])
        self.plans: dict[tuple[float, float, int], Plan] = {}

    def plan(
        self,
        key: tuple[float, float, int] | None,
        n_steps: int,
        h: float,
        every: int,
        n_out: int,
        capacity: int,
        growth: np.ndarray,
    ) -> Plan:
        """The plan of a run (kept under ``key`` unless it is None)."""
        initial = np.concatenate([self.vectors, growth])
        plan = Plan(n_steps, float(h), every, n_out, capacity, initial)
        if key is not None:
            if len(self.plans) >= MAX_PLANS:
                self.plans.clear()
            self.plans[key] = plan
        return plan

    def _arguments(self, capacity: int) -> tuple[Any, ...]:
        """A new argument set: the part of the float buffer a plan's ``initial`` sets, its
        views (q0, v0, p, mp, growth, state), the counters, the impact log when it is
        pooled (None otherwise) and the impact law's energy record (2)."""
        flat = np.empty(self.ends[-1])
        views = tuple(flat[a:b] for a, b in zip(self.ends[:-1], self.ends[1:], strict=True))
        logs = _logs(capacity) if capacity <= POOLED_LOG_ENTRIES else None
        initial = flat[: self.ends[-2]]  # all but the state, written by the loop
        return (initial, *views, np.empty(N_COUNTERS, dtype=np.int64), logs, np.zeros(2))

    def run(self, plan: Plan) -> Trajectory:
        """Run the loop with the arguments of ``plan`` (the module docstring)."""
        try:
            arguments = plan.pool.pop()
        except IndexError:
            arguments = self._arguments(plan.capacity)
        initial, q0, v0, p, mp, growth, state, counters, logs, law = arguments
        initial[...] = plan.initial
        counters.fill(0)
        law.fill(0.0)
        record = {"law": law} if self.reports_law else {}
        log_t, log_i, log_u = _logs(plan.capacity) if logs is None else logs
        n, n_out = self.n, plan.n_out
        out_t = np.empty(n_out)
        out_q = np.empty((n_out, n))
        out_v = np.empty((n_out, n))
        try:
            start = time.perf_counter()
            work_bytes = self.loop(
                self.t0, plan.h, plan.n_steps, q0, v0, p, self.restitution, mp, plan.every,
                out_t, out_q, out_v, log_t, log_i, log_u, counters, state, growth, **record,
            )  # fmt: skip
            integration_time = time.perf_counter() - start
        except SimulationError as error:  # a checked call of the plain-Python path
            raise SimulationError(
                f"{self.method} on {self.problem}: {error.reason}", error.t, error.q, error.v
            ) from None
        count = counters.tolist()
        samples = count[COUNTER_SAMPLES]
        logged = count[COUNTER_LOGGED]
        # out_t, out_q, out_v; log_t, log_i, log_u (2 entries); counters; state: 8-byte items
        capacity = plan.capacity
        output_bytes = 8 * (n_out * (1 + 2 * n) + 4 * capacity + N_COUNTERS + 1 + 2 * n)
        impacts = ImpactLog.from_buffers(log_t, log_i, log_u, logged, count[COUNTER_IMPACTS])
        stats = {
            "steps": count[COUNTER_STEPS],
            "force_evaluations": count[COUNTER_FORCE_EVALUATIONS],
            "impacts": count[COUNTER_IMPACTS],
            "solver_iterations": count[COUNTER_SOLVER_ITERATIONS],
            "compiled": self.calls is None,
            "velocity_output": self.velocity_output,
            # the loop's work buffers (their size is returned by the driver's loop; None from a
            # loop that does not say), and with the output arrays all the run allocated
            "work_bytes": None if work_bytes is None else int(work_bytes),
            "memory_bytes": None if work_bytes is None else int(work_bytes) + output_bytes,
            "integration_time": integration_time,
            # the impact law's energy record (impactbench.core.friction.law_energy_change):
            # None from a loop that does not keep it
            "energy_creating_impacts": int(law[0]) if self.reports_law else None,
            "largest_impact_energy_gain": float(law[1]) if self.reports_law else None,
        }
        status = count[COUNTER_STATUS]
        reason = "reached t_end"
        if status != STATUS_OK:  # the plain path says which bad M(q) or F(t, q, v) stopped it
            deferred = self.calls.deferred if self.calls is not None else ""
            reason = deferred or self.failure_reasons[status]
        if samples != n_out:
            out_t, out_q, out_v = out_t[:samples], out_q[:samples], out_v[:samples]
        run_status = Status.OK if status == STATUS_OK else Status.FAILED
        # t, q, v, impacts, status, message, stats, method, problem, h (by position: faster)
        trajectory = Trajectory(
            out_t, out_q, out_v, impacts, run_status, reason, stats, self.method, self.problem,
            plan.h,
        )  # fmt: skip
        error = None
        if status == STATUS_DIVERGED:
            error = divergence_error(
                f"{self.method} on {self.problem}",
                growth,
                state[0],
                state[1 : 1 + n],
                state[1 + n :],
                trajectory,
            )
        elif status != STATUS_OK:
            error = SimulationError(
                f"{self.method} on {self.problem}: {reason}",
                state[0],
                state[1 : 1 + n],
                state[1 + n :],
                trajectory,
            )
        plan.pool.append(arguments)  # the trajectory and the error hold copies only
        if error is not None:
            raise error
        return trajectory


def _logs(capacity: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An impact log of ``capacity`` entries: times, constraints, normal velocities (k, 2)."""
    return np.empty(capacity), np.empty(capacity, dtype=np.int64), np.empty((capacity, 2))
