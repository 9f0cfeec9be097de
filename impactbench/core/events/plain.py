"""The event loop as plain Python, stepped by a one-step ODE solver given as a Python object.

:class:`PlainRun` binds the templates of :mod:`impactbench.core.events` as plain Python
(:func:`impactbench.core.events.engine.bind`) with the problem's methods, each result checked
(:func:`checked_kernels`), and a :class:`Stepper` in place of the compiled Runge-Kutta pair
(the stepper interface of :mod:`impactbench.core.events.stepping`). It owns what a run of that
loop needs around the stepper: the right-hand side the stepper integrates (the compiled free
flight of :mod:`impactbench.core.events.free_flight` when the problem has kernels and no
contact is closed, else the contact dynamics of :mod:`impactbench.core.events.dynamics`), the
probes of the event check evaluated at once on the step's interpolant, the count of force
evaluations (the stall test is the loop's own, :mod:`impactbench.core.stall`), the dense output
of the run (:class:`impactbench.core.dense.DenseOutputBuilder`) and the output buffers, grown
while they fill up. A failure inside the run raises :class:`impactbench.SimulationError` with
t, q, v and the trajectory up to there.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import numpy as np

from impactbench.core.compiled_rk import STEP_ACCEPTED
from impactbench.core.dense import DenseOutputBuilder
from impactbench.core.problem import CheckedCalls, Problem, ProblemKernels
from impactbench.core.status_codes import (
    COUNTER_STATUS,
    FAILURE_REASONS,
    STATUS_OK,
    STATUS_PAINLEVE_SINGULAR,
)
from impactbench.core.trajectory import SimulationError, Trajectory

from .buffers import STATUS_OUTPUT_FULL, Buffers, Run, Work
from .engine import bind, kernel_bindings, start_state, trajectory
from .free_flight import free_flight_rhs
from .kernels import no_drift, no_rate
from .location import SUBINTERVALS


class Stepper(Protocol):
    """A one-step ODE solver with step-size control and dense output, stepped by hand (as
    :func:`scipy.integrate.solve_ivp` steps scipy's ``OdeSolver``).

    Attributes
    ----------
    name : str
        The solver's name, in failure messages.
    dense_degree : int
        The degree of the step's interpolant: the run's dense output stores that many + 1 node
        values per step.
    """

    name: str
    dense_degree: int

    def start(
        self,
        fun: Callable[[float, np.ndarray], np.ndarray],
        t: float,
        y: np.ndarray,
        t_end: float,
        first_step: float | None,
        rtol: float,
        atol: float,
        max_step: float,
    ) -> None:
        """Start a segment of y' = fun(t, y) at (t, y) towards ``t_end``, with the first step
        ``first_step`` (None: the solver's own choice), the tolerances and the largest step."""

    def step(self) -> tuple[float, float, np.ndarray, str | None]:
        """One accepted step: (t_old, t_new, y_new, None), or (t, t, y, the failure's reason)."""

    def interpolant(self) -> Callable[[Any], np.ndarray]:
        """The last step's interpolant: y at a time, or at an array of times (columns)."""


def checked_kernels(calls: CheckedCalls, where: list[Any]) -> ProblemKernels:
    """The problem's methods in the kernel calling convention of the event loop, each result
    checked (a bad one raises SimulationError); ``where`` = [t, v] of the last state the run
    evaluated, which locate an error of a function of q alone. Results go into the first n (m)
    entries or columns of ``out`` (the event loop's workspace rows may be wider). ``gap`` and
    ``gap_gradient`` take t first (a scleronomic problem's ignore it); a rheonomic problem's
    ``gap_rate`` and ``gap_drift`` are its methods, a scleronomic one's the stand-ins of
    :mod:`impactbench.core.events.kernels` (never called)."""
    n = calls.n

    def mass_matrix(q: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        out[:, :n] = calls.mass_matrix(where[0], q, where[1])

    def forces(t: float, q: np.ndarray, v: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        where[0], where[1] = t, v
        out[:n] = calls.forces(t, q, v)

    def gap(t: float, q: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        out[: calls.m] = calls.gap(where[0], q, where[1])

    def gap_gradient(t: float, q: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        out[:, :n] = calls.gap_gradient(where[0], q, where[1])

    kernels = ProblemKernels(
        mass_matrix, forces, gap, gap_gradient, gap_rate=no_rate, gap_drift=no_drift
    )
    if calls.problem.rheonomic:  # frictionless (EventDriven refuses friction with it)
        return _timed_geometry(calls, where, kernels)
    if not calls.problem.has_friction:
        return kernels
    m = calls.m

    def tangent_gradient(q: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        value = calls.problem.tangent_gradient(q)
        out[:, :n] = calls.accept(value, "tangent_gradient(q)", (m, n), where[0], q, where[1])

    def friction(q: np.ndarray, p: np.ndarray, mu: np.ndarray, e_t: np.ndarray) -> None:
        values = calls.problem.friction(q)
        mu[:m] = calls.accept(values[0], "friction(q)[0] (mu)", (m,), where[0], q, where[1])
        e_t[:m] = calls.accept(values[1], "friction(q)[1] (e_T)", (m,), where[0], q, where[1])

    return kernels._replace(tangent_gradient=tangent_gradient, friction=friction)


def _timed_geometry(
    calls: CheckedCalls, where: list[Any], kernels: ProblemKernels
) -> ProblemKernels:
    """``kernels`` (:func:`checked_kernels`) with the geometry of a rheonomic problem: g(t, q),
    G(t, q), r(t, q) and c(t, q, v) from its methods, checked (``where[1]``, the velocity of the
    last state evaluated, locates an error of a function of (t, q))."""
    n, m, problem, accept = calls.n, calls.m, calls.problem, calls.accept

    def gap(t: float, q: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        out[:m] = accept(problem.gap(t, q), "gap(t, q)", (m,), t, q, where[1])

    def gap_gradient(t: float, q: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        value = problem.gap_gradient(t, q)
        out[:, :n] = accept(value, "gap_gradient(t, q)", (m, n), t, q, where[1])

    def gap_rate(t: float, q: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        out[:m] = accept(problem.gap_rate(t, q), "gap_rate(t, q)", (m,), t, q, where[1])

    def gap_drift(t: float, q: np.ndarray, v: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        out[:m] = accept(problem.gap_drift(t, q, v), "gap_drift(t, q, v)", (m,), t, q, v)

    return kernels._replace(
        gap=gap, gap_gradient=gap_gradient, rheonomic=True, gap_rate=gap_rate, gap_drift=gap_drift
    )


class PlainRun:
    """One run of the event loop as plain Python, stepped by ``stepper``.

    Parameters
    ----------
    problem : Problem
        The problem (checked).
    run : Run
        The run's settings (:func:`impactbench.core.events.engine.run_settings`).
    stepper : Stepper
        The ODE solver between events.
    name : str
        The trajectory's ``method``.
    dense_output : bool
        Attach the stepper's interpolants of the whole run as ``Trajectory.dense``.
    """

    def __init__(
        self, problem: Problem, run: Run, stepper: Stepper, name: str, dense_output: bool
    ) -> None:
        self.problem, self.run, self.stepper, self.name = problem, run, stepper, name
        self.dense_output = dense_output
        self.n, self.m = int(problem.n_dof), int(problem.n_constraints)
        self.calls = CheckedCalls(problem)
        self.where: list[Any] = [run.t0, np.array(problem.v0, dtype=float)]
        self.force_evaluations = 0
        kernels = problem.kernels()
        self.free_flight = None if kernels is None else free_flight_rhs(kernels, self.n)
        self.free_flight_scratch = (
            np.empty((self.n, self.n)),
            np.empty((self.n, self.n)),
            np.empty(self.n),
        )
        self.sol: Callable | None = None
        self.t_new = run.t0
        self.probes: dict[float, np.ndarray] = {}
        self.friction = bool(problem.has_friction)
        self._fresh(4096)
        self.loop = bind(self._kernel_bindings(), self._bind_stepper, compile=False)

    def _fresh(self, capacity: int) -> None:
        """Fresh buffers of ``capacity`` samples and dense output."""
        buffers = Buffers(
            (1, 2 * self.n), (1, 2 * self.n), self.n, self.m, capacity, friction=self.friction
        )
        self.out, self.w = buffers.fresh()
        self.dense = None
        if self.dense_output:
            self.dense = DenseOutputBuilder(self.n, self.stepper.dense_degree)

    def _kernel_bindings(self) -> dict[str, Any]:
        checked = checked_kernels(self.calls, self.where)
        forces = checked.forces

        def counted_forces(
            t: float, q: np.ndarray, v: np.ndarray, p: np.ndarray, out: np.ndarray
        ) -> None:
            self.force_evaluations += 1
            forces(t, q, v, p, out)

        return kernel_bindings(
            checked._replace(forces=counted_forces), self.n, self.m, False, checked.rheonomic
        )

    def _bind_stepper(self, bindings: dict[str, Any], add: Callable) -> None:
        self.rhs = bindings["rhs"]
        bindings.update(
            start_segment=self.start_segment,
            take_step=self.take_step,
            prepare_dense=self.prepare_dense,
            dense_evaluate=self.dense_evaluate,
            record_piece=self.record_piece,
        )

    def execute(self) -> Trajectory:
        """The run; a SimulationError raised inside it carries the trajectory up to there."""
        start_state(self.problem, self.run, self.out, self.w)
        start = time.perf_counter()
        try:
            self._grown_loop()
        except SimulationError as err:
            self.out.state[0] = err.t
            self.out.state[1:] = np.concatenate((err.q, err.v))
            if err.trajectory is None:
                err.trajectory = self._trajectory(err.reason)
            raise
        result = self._trajectory(None)
        result.stats["integration_time"] = time.perf_counter() - start
        return result

    def _grown_loop(self) -> None:
        """The loop, run again with twice the output room while it fills up."""
        while True:
            self.loop(self.run, self.out, self.w)
            if self.out.counters[COUNTER_STATUS] != STATUS_OUTPUT_FULL:
                return
            self._fresh(2 * self.out.t.shape[0])
            start_state(self.problem, self.run, self.out, self.w)
            self.force_evaluations = 0

    def _trajectory(self, failure: str | None) -> Trajectory:
        out = self.out
        result = trajectory(self.problem, self.run, out, self.name, failure)
        result.stats["engine"] = "scipy"
        result.stats["force_evaluations"] = self.force_evaluations
        dense = self.dense
        if dense is not None and len(dense):
            if failure is None and out.counters[COUNTER_STATUS] == STATUS_OK:
                dense.set_end_state(out.state[1:].copy())
            for t in np.unique(result.impacts.t):
                dense.add_impact(float(t))
            result.dense = dense.build()
        return result

    # -- the stepper interface of the loop (impactbench.core.events.stepping) -------------------

    def fun(self, t: float, y: np.ndarray) -> np.ndarray:
        """y' with the contacts listed in the workspace closed (the stepper's right-hand side)."""
        n, rws = self.n, self.w.rws
        self.where[0], self.where[1] = t, y[n:]
        out = np.empty(2 * n)
        if self.free_flight is not None and rws[2 * n + 1, 1] == 0.0:
            M, L, a = self.free_flight_scratch
            if self.free_flight(float(t), y, self.run.p, M, L, a, out):
                self.force_evaluations += 1
                return out
        self.rhs(t, y, self.run.p, out, rws)  # checked calls: a bad force or M raises here
        if rws[2 * n + 1, 0] == 3.0:
            raise SimulationError(FAILURE_REASONS[STATUS_PAINLEVE_SINGULAR], t, y[:n], y[n:])
        if rws[2 * n + 1, 0] != 0.0:
            what = "mass matrix" if rws[2 * n + 1, 0] == 1.0 else "contact (Delassus) matrix"
            raise SimulationError(f"singular or indefinite {what}", t, y[:n], y[n:])
        return out

    def start_segment(self, t: float, first_step: float, run: Run, w: Work) -> tuple[float, int]:
        """Start the stepper at (t, w.y) (``first_step`` 0: its own choice)."""
        self.stepper.start(
            self.fun, t, w.y.copy(), run.t_end, first_step or None, run.rtol, run.atol,
            run.max_step,
        )  # fmt: skip
        return 0.0, 0

    def take_step(
        self, t: float, h_abs: float, run: Run, w: Work
    ) -> tuple[int, float, float, float, int]:
        """One accepted step of the stepper into ``w.y_new``."""
        t_old, t_new, y, failure = self.stepper.step()
        n = self.n
        if failure is not None:
            raise SimulationError(failure, t_new, y[:n], y[n:])
        if not np.isfinite(y).all():
            raise SimulationError("non-finite state", t_new, y[:n], y[n:])
        w.y_new[:] = y
        self.t_new = t_new
        self.where[0], self.where[1] = t_new, y[n:].copy()
        return STEP_ACCEPTED, t_new, t_new - t_old, 0.0, 0

    def prepare_dense(self, t: float, h: float, run: Run, w: Work) -> int:
        """The step's interpolant, evaluated at once at the probes of the event check."""
        self.sol = self.stepper.interpolant()
        tau = [t + k * (h / SUBINTERVALS) for k in range(SUBINTERVALS)] + [self.t_new]
        self.probes = dict(zip(tau, self.sol(np.array(tau)).T, strict=True))
        return 0

    def dense_evaluate(
        self, s: float, t_old: float, h: float, y_old: np.ndarray, dense: Any, out: np.ndarray
    ) -> None:
        """y at ``s`` in the last step (a probe's value if ``s`` is one)."""
        y = self.probes.get(s)
        out[:] = self.sol(s) if y is None else y
        self.where[0], self.where[1] = s, out[self.n :].copy()

    def record_piece(
        self, t_old: float, h: float, t_stop: float, y_end: np.ndarray, out: Any, w: Work
    ) -> bool:
        """The piece [t_old, t_stop] of the dense output (the builder grows: never full)."""
        if self.dense is not None:
            self.dense.add(t_old, t_stop, self.sol, w.y.copy(), y_end.copy())
        return True
