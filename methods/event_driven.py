"""Event-driven integration: located impacts, Newton's law, accumulation and persistent contact.

:class:`EventDriven` integrates the smooth dynamics ``M(q) v' = F(t, q, v)`` (state
``y = (q, v)``) between located events and restarts at each of them; the algorithm (crossing
detection on the dense output, root search, impact law, accumulation (Zeno) test, persistent
contact, restart) is :mod:`impactbench.core.events`, written once. Two steppers drive it: the
compiled engine's scipy-identical RK45 / DOP853 pairs (the event loop compiled with numba), and
on the scipy path (``compiled=False``, the other integrators, a problem without kernels, dense
output) one of scipy's ODE solvers stepped by hand as :func:`scipy.integrate.solve_ivp` does,
each accepted step with its dense output, the event loop running as plain Python. This module
holds the method and the scipy stepper; a run on the scipy path also stops with
:class:`impactbench.SimulationError` when its steps stall (:class:`impactbench.core.stall.
StallGuard`).

The scipy path costs Python overhead per right-hand side and per step, dozens of force
evaluations per impact; the ``performance`` study measures it beside the compiled engine's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from scipy import integrate

from impactbench.core import _checks
from impactbench.core.compiled_rk import STEP_ACCEPTED
from impactbench.core.dense import DenseOutputBuilder
from impactbench.core.divergence import divergence_error
from impactbench.core.events.buffers import STATUS_OUTPUT_FULL, Buffers, Run, Work
from impactbench.core.events.engine import (
    PreparedEngine,
    bind,
    kernel_bindings,
    run_settings,
    start_state,
    trajectory,
)
from impactbench.core.events.location import SUBINTERVALS
from impactbench.core.method import EVENT_DRIVEN, Method
from impactbench.core.problem import CheckedCalls, Problem, ProblemKernels, checked_state
from impactbench.core.snapshot import keep, kept
from impactbench.core.stall import StallGuard
from impactbench.core.status_codes import (
    COUNTER_STATUS,
    FAILURE_REASONS,
    STATUS_DIVERGED,
    STATUS_OK,
    STATUS_PAINLEVE_SINGULAR,
)
from impactbench.core.trajectory import SimulationError, Status, Trajectory
from impactbench.methods.free_flight import free_flight_rhs

#: Whether ``EventDriven()`` runs the compiled event loop where it applies.
COMPILED_BY_DEFAULT = True
#: The integrators of the compiled event loop.
COMPILED_INTEGRATORS = ("RK45", "DOP853")

#: scipy ODE solvers accepted as ``integrator``.
INTEGRATORS: dict[str, type[integrate.OdeSolver]] = {
    "RK23": integrate.RK23,
    "RK45": integrate.RK45,
    "DOP853": integrate.DOP853,
    "Radau": integrate.Radau,
    "BDF": integrate.BDF,
    "LSODA": integrate.LSODA,
}

_EPS = float(np.finfo(float).eps)
#: Degree of each solver's step interpolant (``dense_output``): the dense output stores that many
#: + 1 node values per step, which reproduce the interpolant up to round-off. RK23, RK45, DOP853
#: and Radau have a fixed degree, BDF's is its order (<= 5) and LSODA's its order (<= 12).
DENSE_DEGREE: dict[str, int] = {
    "RK23": 3,
    "RK45": 4,
    "DOP853": 7,
    "Radau": 3,
    "BDF": 5,
    "LSODA": 12,
}


class EventDriven(Method):
    """Event-driven method: adaptive ODE solver between located impacts (see the module notes).

    Parameters
    ----------
    integrator : str
        scipy ODE solver: "DOP853" (default), "RK45", "RK23", "Radau", "BDF" or "LSODA".
    rtol, atol : float
        Relative and absolute tolerances of the solver (rtol >= 100 eps, atol > 0).
    max_step : float
        Largest solver step (default inf; only needed for gaps that oscillate within a step).
    rest_velocity : float
        Rebound speed, relative to ``sqrt(2 |g''| |grad g| L)``, below which a contact is at rest
        (Zeno threshold; 0 disables it).
    min_impact_interval : float
        Spacing of consecutive impacts, relative to ``t_end - t0``, below which the impacts count
        as an accumulation (0 disables it).
    dense_output : bool
        Attach the solver's interpolants of the whole run as ``Trajectory.dense`` (default
        False; see "Dense output" below). Part of ``parameters()`` and of the name only when
        True, to keep names short.
    compiled : bool
        Run the event loop compiled, stepped by scipy-identical RK45/DOP853 pairs
        (:mod:`impactbench.core.events`), where it applies: a problem with compiled kernels,
        integrator "RK45" or "DOP853", no dense output. Elsewhere, and with ``compiled=False``,
        the same event loop runs as plain Python, stepped by scipy's solver.
        ``stats["engine"]`` says which ran ("compiled" or "scipy"). Always part of the name, so
        that tables and charts say which engine a run asked for.

    Notes
    -----
    ``h`` is rejected: the method is adaptive. Its output holds the accepted solver steps
    (decimated by ``output_every``), the states just before and just after every impact (two
    samples with the same t), the state after each contact change and the final state at
    ``t_end``. ``stats`` holds ``steps`` (accepted solver steps), ``force_evaluations`` (all
    calls of ``problem.forces``), ``impacts``, ``segments`` (solver restarts at events),
    ``projections`` (drift corrections of persistent contacts), the thresholds
    (``rest_velocity``, ``min_impact_interval`` as given; ``rest_speed`` and ``impact_interval``
    in absolute units, ``contact_tolerance`` = 10 (atol + rtol L), ``length_scale`` L),
    ``zeno_time`` (first switch to persistent contact after an accumulation) and
    ``contact_time`` (first time a persistent contact closed), None when it did not happen,
    ``contact_phases`` (persistent contacts closed, per constraint) and ``contact_duration``
    (their total duration up to ``t_end``).

    A frictional problem (planar Coulomb friction, docs/friction.md) is integrated on every
    engine with stick and slip phases between located transitions, decided by the
    acceleration-level contact problem, and frictional impacts by the Newton-Coulomb law
    (:mod:`impactbench.core.events.coulomb`); a Painleve situation stops the run with a
    :class:`impactbench.SimulationError` that names it.

    On the scipy path the problem's methods are called with their results checked
    (:class:`impactbench.core.problem.CheckedCalls`: a bad value raises
    :class:`impactbench.SimulationError` with t, q and v); for a problem with compiled kernels
    the free-flight right-hand side is compiled (:mod:`impactbench.methods.free_flight`).

    Dense output
        With ``dense_output=True`` every accepted solver step becomes a piece of an
        :class:`impactbench.DenseOutput` (``Trajectory.dense``), cut at the events: ``dense(t)``
        is the solver's own interpolant at any t in [t0, t_end] (right-continuous: the
        post-impact state at an impact time), ``dense.left(t)`` the left limit (the pre-impact
        state), ``dense.impacts`` the impact times. Each piece stores the interpolant at
        ``DENSE_DEGREE[integrator] + 1`` Chebyshev-Lobatto nodes (exact up to round-off), its end
        nodes being the run's states (so ``dense`` reproduces every output sample: at an impact,
        ``left`` the pre-impact and ``dense`` the post-impact sample). Memory:
        ``8 + 16 n (d + 1)`` bytes per accepted step, 136 bytes (n = 1) and 264 bytes (n = 2) for
        DOP853 (d = 7), independent of ``output_every``. In persistent contact the pieces are the
        solver's interpolants of the index-1 contact dynamics too, not projected: between two
        projections the positions (velocities) leave the contact manifold by up to the drift
        tolerance (atol + rtol L) |grad g| in g ((atol + rtol |v|) |grad g| in G v) at step
        ends -- the run projects at the first step end beyond it, so the state before that
        projection exceeds it by one step's drift -- plus, inside a step, the interpolant's own
        error, of the order of the solver tolerance (measured: |g| <= 2.4 x the drift tolerance
        on a pendulum sliding in a circle, rtol = 1e-10). At a projection the state jumps by that
        much (``dense`` gives the projected state, ``left`` the solver's); the last node holds
        the final (projected) state. A failed run's trajectory carries the dense output up to
        where it stopped.
    """

    family = EVENT_DRIVEN
    requires_step = False
    friction_law = True
    name_omits: ClassVar[dict[str, Any]] = {"max_step": math.inf, "dense_output": False}

    def __init__(
        self,
        integrator: str = "DOP853",
        rtol: float = 1e-10,
        atol: float = 1e-12,
        max_step: float = math.inf,
        rest_velocity: float = 1e-6,
        min_impact_interval: float = 1e-12,
        dense_output: bool = False,
        compiled: bool = COMPILED_BY_DEFAULT,
    ) -> None:
        if not isinstance(integrator, str) or integrator not in INTEGRATORS:
            raise ValueError(f"integrator must be one of {sorted(INTEGRATORS)}, got {integrator!r}")
        self.integrator = integrator
        self.rtol = _checks.positive_scalar(rtol, "rtol")
        if self.rtol < 100 * _EPS:
            raise ValueError(f"rtol must be >= 100 eps = {100 * _EPS:.3g}, got {rtol!r}")
        self.atol = _checks.positive_scalar(atol, "atol")
        try:
            self.max_step = float(max_step)
        except (TypeError, ValueError):
            raise ValueError(f"max_step must be a real number, got {max_step!r}") from None
        if not self.max_step > 0.0:
            raise ValueError(f"max_step must be > 0 (inf allowed), got {max_step!r}")
        self.rest_velocity = _checks.in_interval(rest_velocity, "rest_velocity", 0.0, 1.0)
        self.min_impact_interval = _checks.in_interval(
            min_impact_interval, "min_impact_interval", 0.0, 1.0
        )
        if not isinstance(dense_output, (bool, np.bool_)):
            raise ValueError(f"dense_output must be True or False, got {dense_output!r}")
        self.dense_output = bool(dense_output)
        if not isinstance(compiled, (bool, np.bool_)):
            raise ValueError(f"compiled must be True or False, got {compiled!r}")
        self.compiled = bool(compiled)

    def uses_compiled_engine(self, problem: Problem) -> bool:
        """Whether :meth:`solve` runs the compiled event loop on ``problem`` (see ``compiled``)."""
        return (
            self.compiled
            and not self.dense_output
            and self.integrator in COMPILED_INTEGRATORS
            and problem.kernels() is not None
        )

    def compile_options(self, problem: Problem) -> dict[str, Any] | None:
        """The compiled engine's option (the Runge-Kutta pair) when :meth:`uses_compiled_engine`,
        else None (the scipy path)."""
        if not self.uses_compiled_engine(problem):
            return None
        return {"integrator": self.integrator}

    def _solve_impl(
        self, problem: Problem, t_end: float, h: float | None, output_every: int
    ) -> Trajectory:
        if h is not None:
            raise ValueError(
                f"EventDriven is adaptive: h must be None; use rtol/atol/max_step, got h={h!r}"
            )
        # the compiled engine's preparation is kept per problem state while this instance is
        # unchanged (impactbench.core.events.engine.PreparedEngine)
        checked = checked_state(problem)
        engine = kept(self, checked)
        if engine is None and self.uses_compiled_engine(problem):
            engine = PreparedEngine(  # the arguments validated by __init__
                problem, self.rtol, self.atol, self.integrator, self.max_step,
                self.rest_velocity, self.min_impact_interval, True, self.name,
            )  # fmt: skip
            keep(self, checked, engine)
        if engine is not None:
            trajectory = engine.run(problem, t_end, output_every)  # both checked by solve
            trajectory.stats["engine"] = "compiled"
        else:
            run = run_settings(
                problem, t_end, self.rtol, self.atol, self.max_step, output_every,
                self.rest_velocity, self.min_impact_interval,
            )  # fmt: skip
            trajectory = _ScipyRun(self, problem, run).execute()
        if trajectory.status is Status.FAILED:
            n = int(problem.n_dof)
            state = trajectory.stats["state_stop"]
            # the message ends with " at t=..."; SimulationError appends t, q and v
            reason = trajectory.message.rsplit(" at t=", 1)[0]
            where = (trajectory.stats["t_stop"], state[:n], state[n:], trajectory)
            name = f"{self.name} on {problem.name}"
            if trajectory.stats["status_code"] == STATUS_DIVERGED:
                raise divergence_error(name, trajectory.stats["growth"], *where)
            raise SimulationError(f"{name}: {reason}", *where)
        return trajectory


def _checked_kernels(calls: CheckedCalls, where: list[Any]) -> ProblemKernels:
    """The problem's methods in the kernel calling convention, each result checked (a bad one
    raises SimulationError); ``where`` = [t, v] of the last state the run evaluated, which locate
    an error of a function of q alone. Results go into the first n (m) entries or columns of ``out``
    (the event loop's workspace rows may be wider)."""
    n = calls.n

    def mass_matrix(q: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        out[:, :n] = calls.mass_matrix(where[0], q, where[1])

    def forces(t: float, q: np.ndarray, v: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        where[0], where[1] = t, v
        out[:n] = calls.forces(t, q, v)

    def gap(q: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        out[: calls.m] = calls.gap(where[0], q, where[1])

    def gap_gradient(q: np.ndarray, p: np.ndarray, out: np.ndarray) -> None:
        out[:, :n] = calls.gap_gradient(where[0], q, where[1])

    kernels = ProblemKernels(mass_matrix, forces, gap, gap_gradient)
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


class _ScipyRun:
    """One run on the scipy path: the shared event loop as plain Python, stepped by scipy's
    solver (the stepper interface of :mod:`impactbench.core.events.stepping`)."""

    def __init__(self, method: EventDriven, problem: Problem, run: Run) -> None:
        self.method, self.problem, self.run = method, problem, run
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
        self.guard = StallGuard(
            run.t0, run.t_end, method.min_impact_interval, self.calls.gap_gradient, run.length
        )
        self.dense = None
        if method.dense_output:
            self.dense = DenseOutputBuilder(self.n, DENSE_DEGREE[method.integrator])
        self.solver: integrate.OdeSolver | None = None
        self.sol: Callable | None = None
        self.probes: dict[float, np.ndarray] = {}
        self.friction = bool(problem.has_friction)
        buffers = Buffers(
            (1, 2 * self.n), (1, 2 * self.n), self.n, self.m, 4096, friction=self.friction
        )
        self.out, self.w = buffers.fresh()
        self.loop = bind(self._kernel_bindings(), self._bind_stepper, compile=False)

    def _kernel_bindings(self) -> dict[str, Any]:
        checked = _checked_kernels(self.calls, self.where)
        forces = checked.forces

        def counted_forces(
            t: float, q: np.ndarray, v: np.ndarray, p: np.ndarray, out: np.ndarray
        ) -> None:
            self.force_evaluations += 1
            forces(t, q, v, p, out)

        return kernel_bindings(checked._replace(forces=counted_forces), self.n, self.m, False)

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
        trajectory = self._trajectory(None)
        trajectory.stats["integration_time"] = time.perf_counter() - start
        return trajectory

    def _grown_loop(self) -> None:
        """The loop, run again with twice the output room while it fills up."""
        while True:
            self.loop(self.run, self.out, self.w)
            if self.out.counters[COUNTER_STATUS] != STATUS_OUTPUT_FULL:
                return
            self._grow()

    def _grow(self) -> None:
        capacity = 2 * self.out.t.shape[0]
        buffers = Buffers(
            (1, 2 * self.n), (1, 2 * self.n), self.n, self.m, capacity, friction=self.friction
        )
        self.out, self.w = buffers.fresh()
        start_state(self.problem, self.run, self.out, self.w)
        self.force_evaluations = 0
        if self.dense is not None:
            self.dense = DenseOutputBuilder(self.n, DENSE_DEGREE[self.method.integrator])
        self.guard = StallGuard(
            self.run.t0, self.run.t_end, self.method.min_impact_interval,
            self.calls.gap_gradient, self.run.length,
        )  # fmt: skip

    def _trajectory(self, failure: str | None) -> Trajectory:
        out = self.out
        result = trajectory(self.problem, self.run, out, self.method.name, failure)
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

    # -- the stepper ---------------------------------------------------------------------------

    def fun(self, t: float, y: np.ndarray) -> np.ndarray:
        """y' with the contacts listed in the workspace closed (scipy's right-hand side)."""
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
        self.solver = INTEGRATORS[self.method.integrator](
            self.fun, t, w.y.copy(), run.t_end, first_step=first_step or None,
            rtol=run.rtol, atol=run.atol, max_step=run.max_step,
        )  # fmt: skip
        return 0.0, 0

    def take_step(
        self, t: float, h_abs: float, run: Run, w: Work
    ) -> tuple[int, float, float, float, int]:
        solver, n = self.solver, self.n
        message = solver.step()
        y = solver.y
        if solver.status == "failed":
            raise SimulationError(
                f"{self.method.integrator} failed: {message}", solver.t, y[:n], y[n:]
            )
        if not np.isfinite(y).all():
            raise SimulationError("non-finite state", solver.t, y[:n], y[n:])
        w.y_new[:] = y
        self.where[0], self.where[1] = solver.t, y[n:].copy()
        return STEP_ACCEPTED, solver.t, solver.t - solver.t_old, 0.0, 0

    def prepare_dense(self, t: float, h: float, run: Run, w: Work) -> int:
        """The step's interpolant, evaluated at once at the probes of the event check."""
        self.sol = self.solver.dense_output()
        tau = [t + k * (h / SUBINTERVALS) for k in range(SUBINTERVALS)] + [self.solver.t]
        self.probes = dict(zip(tau, self.sol(np.array(tau)).T, strict=True))
        return 0

    def dense_evaluate(
        self, s: float, t_old: float, h: float, y_old: np.ndarray, dense: Any, out: np.ndarray
    ) -> None:
        y = self.probes.get(s)
        out[:] = self.sol(s) if y is None else y
        self.where[0], self.where[1] = s, out[self.n :].copy()

    def record_piece(self, t_old: float, t_new: float, y_end: np.ndarray, w: Work) -> None:
        n = self.n
        self.guard.advance(t_old, t_new, y_end[:n], y_end[n:])
        if self.dense is not None:
            self.dense.add(t_old, t_new, self.sol, w.y.copy(), y_end.copy())
