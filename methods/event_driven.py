"""Event-driven integration: located impacts, Newton's law, accumulation and persistent contact.

:class:`EventDriven` integrates the smooth dynamics ``M(q) v' = F(t, q, v)`` with one of scipy's
ODE solvers (state ``y = (q, v)``), stepping the solver by hand as
:func:`scipy.integrate.solve_ivp` does, so that every accepted step comes with its dense output.
It locates each impact, applies Newton's law in the kinetic metric through the shared
:func:`impactbench.core.contact.impact_velocity`, and restarts the solver. An accumulation of
impacts (Zeno) is cut by thresholds and continued as persistent contact.

Design rules (each is covered by ``tests/test_event_driven.py``)
-----------------------------------------------------------------
Dense-output check (grazing, two crossings in one step, round-off below zero).
    Every accepted step is split into ``4`` equal sub-intervals. On each, g_i and its rate
    dg_i/dt = grad g_i(q) . v are evaluated from the dense output; a crossing is a sign change of
    g_i - level, and a dip inside a sub-interval (g above the level at both ends) is found as an
    interior minimum (rate changing sign from - to +, located by Brent's method), whose value
    decides. So a grazing contact, or a gap that closes and reopens within one step, is found
    without limiting the step; ``max_step`` is only needed when a gap oscillates faster along the
    trajectory than the solution itself (more than one extremum per sub-interval, e.g. a wavy
    wall crossed by a straight flight). Event times are located to 4 eps relative.
Re-arming.
    At a restart, a constraint whose gap is below the contact tolerance (see below) is disarmed:
    its event level is lowered to -tol (an offset), so the restart on g = 0 (or a round-off below
    it) does not fire again. It is re-armed (level 0) at the first point of the dense output where
    g > 0: a sub-interval end or an interior maximum of g. The interior maximum is what keeps a
    step that starts a round-off below zero and spans the whole next flight from missing the next
    impact; no flight-time cap on the step is needed.
Impacts and several contacts.
    At an event, the active set is the event's constraint, the persistent contacts and every
    constraint with g_i <= tol and normal velocity grad g_i . v < 0; all of them are resolved
    together by the velocity-level LCP of ``impact_velocity`` (one entry per approaching
    constraint is logged). The contact tolerance is
    ``tol_i = 10 (atol + rtol L) |grad g_i|``, with the length scale ``L = max(1, |q0|_inf)``.
Accumulation (Zeno).
    After an impact, a near constraint is *at rest* when its normal velocity is at most the rest
    speed ``rest_velocity * sqrt(2 max(|a_i|, |b_i|) |grad g_i| L)``, where b_i is its free
    normal acceleration (g_i'' without contact forces) and a_i the one under the forces of the
    persistent contacts that stay closed (a bead falling onto a bead that rests on the floor has
    a_i = -g although b_i = 0, and its bounces would never be at rest with b_i alone; a held
    contact's own a_i is round-off): with the default ``rest_velocity = 1e-6`` the next
    flight would rise at most 1e-12 L, 1e4 times above the round-off of g, and the position error
    of cutting the accumulation there is below 1e-12 L. Impacts of one constraint closer in time
    than ``min_impact_interval * (t_end - t0)`` also count as an accumulation (default 1e-12, which
    keeps the spacing 1e4 above the round-off of t). The contacts at rest enter persistent
    contact if the acceleration-level LCP gives them a positive force (below); the run then has
    status ``ZENO_HANDLED`` (for e = 0 the contact is reached at once and the status stays OK).
    The thresholds in absolute units, the time of the switch and the triggering values are in
    ``Trajectory.stats`` and ``message``.
Persistent contact.
    On the closed set C the dynamics are ``M v' = F + G_C^T lambda`` with ``g_C'' = 0``, i.e.
    ``W lambda = -(G_C M^-1 F + (dG_C/dt) v)``, ``W = G_C M^-1 G_C^T`` (index-1 formulation); which
    contacts close is decided by the LCP ``0 <= lambda _|_ W lambda + b >= 0`` (the shared
    ``solve_lcp``). The curvature term ``(dG/dt) v = grad^2 g (v, v)`` is a central difference of
    ``gap_gradient`` along v with the step ``s = eps^(1/3) L`` in q: exact up to round-off for
    affine and quadratic gaps, O((s/R)^2) relative for a curvature radius R. Drift: no
    stabilisation term; q is projected onto g_C = 0 and v onto G_C v = 0 (in the metric of M)
    at every segment end -- each event, t_end, and any accepted step after which |g_C| or
    |G_C v| exceeds the solver's error scale (atol + rtol L) |grad g| or
    (atol + rtol |v|) |grad g|; the solver then restarts with its last step size (counted in
    ``stats["projections"]``). A contact opens at the root of lambda_i (dense-output check, as
    for g): the acceleration LCP is re-solved without it and it restarts as a disarmed free
    constraint.
Admissibility.
    At each restart q is projected onto g_i = 0 for every g_i < 0 (a move of at most tol), so
    every segment starts admissible. A run whose final state has g_i < -2 tol_i, or that produces
    non-finite values, raises :class:`impactbench.SimulationError` with t, q and v (and the part
    of the trajectory computed so far).

Cost: on this path (scipy's solvers, a plain-Python problem) it is Python overhead per
right-hand side, dozens of force evaluations per impact; the ``performance`` study measures it
beside the compiled engine's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
from scipy import integrate, optimize

from impactbench.core import _checks
from impactbench.core.contact import CURVATURE_FD_STEP, impact_velocity, make_workspace, solve_lcp
from impactbench.core.dense import DenseOutputBuilder
from impactbench.core.divergence import divergence_error, exceeds, state_bounds
from impactbench.core.method import EVENT_DRIVEN, Method
from impactbench.core.problem import CheckedCalls, Problem, checked_state
from impactbench.core.snapshot import keep, kept
from impactbench.core.stall import StallGuard
from impactbench.core.trajectory import (
    IMPACT_LOG_CAPACITY,
    ImpactLog,
    SimulationError,
    Status,
    Trajectory,
)
from impactbench.methods.compiled_event_driven import PreparedEngine
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
#: Sub-intervals per accepted step in the dense-output check.
_SUBINTERVALS = 4
#: Contact tolerance in units of the solver's error scale atol + rtol L.
_CONTACT_TOLERANCE_FACTOR = 10.0
#: A contact closes when its force is above this fraction of the free normal accelerations.
_CLOSING_THRESHOLD = 1e-12
_PROJECTION_ITERATIONS = 20
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
        Run the compiled event loop (:mod:`impactbench.methods.compiled_event_driven`: the same
        algorithm in numba, scipy-identical RK45/DOP853) where it applies: a problem with
        compiled kernels, integrator "RK45" or "DOP853", no dense output. Elsewhere, and with
        ``compiled=False``, the scipy path below runs. ``stats["engine"]`` says which ran
        ("compiled" or "scipy"). Always part of the name, so that tables and charts say which
        engine a run asked for.

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

    For a problem with compiled kernels the free-flight right-hand side is compiled
    (:mod:`impactbench.methods.free_flight`, LDL^T of M); contact phases and the problems without
    kernels use the Python methods of the problem.

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
        # unchanged (methods.compiled_event_driven.PreparedEngine)
        state = checked_state(problem)
        engine = kept(self, state)
        if engine is None and self.uses_compiled_engine(problem):
            engine = PreparedEngine(  # the arguments validated by __init__
                problem,
                self.rtol,
                self.atol,
                self.integrator,
                self.max_step,
                self.rest_velocity,
                self.min_impact_interval,
                name=self.name,
            )
            keep(self, state, engine)
        if engine is not None:
            return self._solve_compiled(engine, problem, t_end, output_every)
        run = _Run(self, problem, t_end, output_every)
        try:
            start = time.perf_counter()
            trajectory = run.execute()
            trajectory.stats["integration_time"] = time.perf_counter() - start
            return trajectory
        except SimulationError as err:
            if err.trajectory is None:
                err.trajectory = run.record.trajectory(Status.FAILED, err.reason, run.stats())
            raise

    def _solve_compiled(
        self, engine: PreparedEngine, problem: Problem, t_end: float, output_every: int
    ) -> Trajectory:
        trajectory = engine.run(t_end, output_every)  # t_end, output_every checked by solve
        trajectory.stats["engine"] = "compiled"
        if trajectory.status is Status.FAILED:
            n = int(problem.n_dof)
            state = trajectory.stats["state_stop"]
            # the engine's message ends with " at t=..."; SimulationError appends t, q and v
            reason = trajectory.message.rsplit(" at t=", 1)[0]
            raise SimulationError(
                f"{self.name} on {problem.name}: {reason}",
                trajectory.stats["t_stop"],
                state[:n],
                state[n:],
                trajectory,
            )
        return trajectory


# --------------------------------------------------------------------------------------------
# Mechanics from the problem contract


class _Model:
    """The problem's mechanics in the form the integrator needs, counting force evaluations.

    Every value the problem returns is checked (:class:`impactbench.core.problem.CheckedCalls`:
    shape, real and finite, M symmetric positive definite, no vanishing gradient in contact); a bad
    one raises :class:`impactbench.SimulationError` with the t, q, v of the call.
    """

    def __init__(self, problem: Problem, length: float) -> None:
        self.problem = problem
        self.calls = CheckedCalls(problem)
        self.n = int(problem.n_dof)
        self.m = int(problem.n_constraints)
        self.length = length
        self.fd_step = CURVATURE_FD_STEP * length
        self.force_evaluations = 0
        kernels = problem.kernels()
        self.free_flight = None if kernels is None else free_flight_rhs(kernels, self.n)
        if self.free_flight is not None:
            self.parameters = np.ascontiguousarray(problem.kernel_parameters(), dtype=float)

    def gap(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return self.calls.gap(t, q, v)

    def gradient(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return self.calls.gap_gradient(t, q, v)

    def mass_matrix(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return self.calls.mass_matrix(t, q, v)

    def curvature(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(dG/dt) v = grad^2 g_i (v, v), shape (m,), by a central difference along v."""
        speed = float(np.abs(v).max())
        if speed == 0.0:
            return np.zeros(self.m)
        d = self.fd_step / speed
        ahead = self.gradient(t, q + d * v, v)
        return (ahead - self.gradient(t, q - d * v, v)) @ v / (2.0 * d)

    def _solve(
        self, t: float, q: np.ndarray, v: np.ndarray, matrix: np.ndarray, rhs: np.ndarray, what: str
    ) -> np.ndarray:
        try:
            x = np.linalg.solve(matrix, rhs)
        except np.linalg.LinAlgError:
            raise SimulationError(f"singular {what}", t, q, v) from None
        if not np.isfinite(x).all():
            raise SimulationError(f"non-finite solution with the {what}", t, q, v)
        return x

    def forces(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        self.force_evaluations += 1
        return self.calls.forces(t, q, v)

    def contact_terms(
        self, t: float, q: np.ndarray, v: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """G (m, n), Y = M^-1 G^T (n, m) and the free normal accelerations b = G M^-1 F + (dG/dt) v
        (m,) of all constraints; W = G Y is the Delassus matrix."""
        G = self.gradient(t, q, v)
        X = self._solve(
            t,
            q,
            v,
            self.mass_matrix(t, q, v),
            np.column_stack((self.forces(t, q, v), G.T)),
            "mass matrix",
        )
        return G, X[:, 1:], G @ X[:, 0] + self.curvature(t, q, v)

    def acceleration(
        self, t: float, q: np.ndarray, v: np.ndarray, closed: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """v' (n,) and the contact forces lambda (k,) that keep the contacts ``closed`` closed.

        Solves the KKT system [[M, -G_C^T], [G_C, 0]] [v'; lambda] = [F; -(dG_C/dt) v].
        """
        F = self.forces(t, q, v)
        M = self.mass_matrix(t, q, v)
        if not closed.size:
            return self._solve(t, q, v, M, F, "mass matrix"), np.zeros(0)
        n, k = self.n, closed.shape[0]
        G = self.gradient(t, q, v)[closed]
        kkt = np.zeros((n + k, n + k))
        kkt[:n, :n] = M
        kkt[:n, n:] = -G.T
        kkt[n:, :n] = G
        rhs = np.concatenate((F, -self.curvature(t, q, v)[closed]))
        x = self._solve(t, q, v, kkt, rhs, "contact (KKT) matrix")
        return x[:n], x[n:]

    def rhs(self, closed: np.ndarray) -> Callable[[float, np.ndarray], np.ndarray]:
        """y' for y = (q, v) with the contacts ``closed`` kept closed: compiled for free flight
        of a problem with kernels (:mod:`impactbench.methods.free_flight`), else the Python
        path. A failure of the compiled one raises a SimulationError: the Python path's (its
        checked calls name a bad force or mass matrix), else "mass matrix not positive
        definite"."""
        n = self.n

        def fun(t: float, y: np.ndarray) -> np.ndarray:
            return np.concatenate((y[n:], self.acceleration(t, y[:n], y[n:], closed)[0]))

        if closed.size or self.free_flight is None:
            return fun
        compiled, p = self.free_flight, self.parameters
        M, L, a = np.empty((n, n)), np.empty((n, n)), np.empty(n)

        def compiled_fun(t: float, y: np.ndarray) -> np.ndarray:
            out = np.empty(2 * n)
            if compiled(float(t), y, p, M, L, a, out):
                self.force_evaluations += 1
                return out
            fun(t, y)  # raises the SimulationError of a bad force, mass matrix or solution
            raise SimulationError("mass matrix not positive definite", t, y[:n], y[n:])

        return compiled_fun

    def project_position(
        self, t: float, q: np.ndarray, v: np.ndarray, rows: np.ndarray
    ) -> np.ndarray:
        """Closest q in the metric of M with g_rows(q) = 0 (Gauss-Newton iterations, until
        |g_i| <= 8 eps max(L, |q|_inf) |grad g_i|: the gap at q is known to eps |q| only)."""
        for _ in range(_PROJECTION_ITERATIONS):
            g = self.gap(t, q, v)[rows]
            G = self.gradient(t, q, v)[rows]
            scale = max(self.length, float(np.abs(q).max()))
            if np.all(np.abs(g) <= 8.0 * _EPS * scale * np.linalg.norm(G, axis=1)):
                return q
            Y = self._solve(t, q, v, self.mass_matrix(t, q, v), G.T, "mass matrix")
            q = q - Y @ self._solve(t, q, v, G @ Y, g, "Delassus matrix in the projection")
        raise SimulationError(
            f"projection onto the contact manifold of constraints {rows.tolist()} did not "
            f"converge (gap {self.gap(t, q, v)[rows].tolist()})",
            t,
            q,
            v,
        )

    def project_velocity(
        self, t: float, q: np.ndarray, v: np.ndarray, rows: np.ndarray
    ) -> np.ndarray:
        """Closest v in the metric of M with G_rows v = 0."""
        G = self.gradient(t, q, v)[rows]
        Y = self._solve(t, q, v, self.mass_matrix(t, q, v), G.T, "mass matrix")
        return v - Y @ self._solve(t, q, v, G @ Y, G @ v, "Delassus matrix in the projection")


def _contact_forces(W: np.ndarray, b: np.ndarray) -> np.ndarray | None:
    """Solve 0 <= lambda _|_ W lambda + b >= 0 with the shared LCP; None on failure."""
    k = b.shape[0]
    lam = np.empty(k)
    ws = make_workspace(W.shape[0], k)
    if solve_lcp(np.ascontiguousarray(W), np.ascontiguousarray(b), k, lam, ws, False, False) < 0:
        return None
    return lam


# --------------------------------------------------------------------------------------------
# Event location on the dense output


def _root(f: Callable[[float], float], a: float, b: float) -> float:
    """Root of ``f`` in [a, b] (bracketing by sign; the endpoint of smaller |f| if round-off
    destroyed the bracket), to 4 eps relative."""
    fa, fb = f(a), f(b)
    if fa == 0.0:
        return a
    if fb == 0.0 or (fa > 0.0) == (fb > 0.0):
        return b if abs(fb) <= abs(fa) else a
    return optimize.brentq(f, a, b, xtol=4.0 * _EPS * max(abs(a), abs(b)), rtol=4.0 * _EPS)


def _crossing(gap: Callable[[float], float], level: float, a: float, b: float) -> float:
    """Time in [a, b] where ``gap`` falls to ``level``."""
    return _root(lambda s: gap(s) - level, a, b)


def _gap_crossing(
    gap: Callable[[float], float],
    rate: Callable[[float], float],
    tau: np.ndarray,
    g: np.ndarray,
    r: np.ndarray,
    armed: bool,
    floor: float,
    start: float,
) -> tuple[float | None, bool]:
    """First time in one step where a gap reaches its event level, and its armed flag after it.

    Parameters
    ----------
    gap, rate : callable
        g_i(t) and dg_i/dt on the step's dense output.
    tau : ndarray, shape (k + 1,)
        Sub-interval ends of the step; ``g``, ``r`` (k + 1,) are gap and rate there.
    armed : bool
        Whether the event level is 0 (armed) or ``floor`` < 0 (disarmed after a restart at
        ``start``; re-armed where the dense output first shows g > 0 after ``start``).
    """
    for k in range(tau.shape[0] - 1):
        if not armed and tau[k] > start and g[k] > 0.0:
            armed = True
        lo, hi, g_lo, r_lo = tau[k], tau[k + 1], g[k], r[k]
        if not armed and g[k + 1] <= 0.0 and r_lo > 0.0 > r[k + 1]:
            t_max = _root(rate, lo, hi)
            g_max = gap(t_max)
            if g_max > 0.0:
                armed = True
                lo, g_lo, r_lo = t_max, g_max, 0.0
        level = 0.0 if armed else floor
        if g_lo > level >= g[k + 1]:
            return _crossing(gap, level, lo, hi), armed
        if g_lo > level and g[k + 1] > level and r_lo < 0.0 < r[k + 1]:
            t_min = _root(rate, lo, hi)
            if gap(t_min) <= level:
                return _crossing(gap, level, lo, t_min), armed
    if not armed and tau[-1] > start and g[-1] > 0.0:
        armed = True
    return None, armed


# --------------------------------------------------------------------------------------------
# One run


@dataclass
class _Segment:
    """Integration segment between two events: closed contacts and the gap event levels."""

    closed: np.ndarray  # (k,) int, constraints in persistent contact
    armed: np.ndarray  # (m,) bool
    floor: np.ndarray  # (m,) event level of a disarmed gap
    start: float


@dataclass
class _Resolution:
    """Outcome of the contact logic at an event."""

    q: np.ndarray
    v: np.ndarray
    closed: np.ndarray
    impacts: list[tuple[int, float, float]]  # (constraint, u before, u after)
    zeno: str | None  # why an accumulation was cut, if it was
    rest_speed: float | None


class _Recorder:
    """Output samples (decimated accepted steps, events, final state), the impact log and the
    dense output (None when not asked for)."""

    def __init__(
        self, output_every: int, method: str, problem: str, dense: DenseOutputBuilder | None
    ) -> None:
        self.output_every = output_every
        self.dense = dense
        self.method = method
        self.problem = problem
        self.t: list[float] = []
        self.q: list[np.ndarray] = []
        self.v: list[np.ndarray] = []
        self.steps = 0
        self.log: list[tuple[float, int, float, float]] = []
        self.total = 0

    def add(self, t: float, q: np.ndarray, v: np.ndarray) -> None:
        """Append a sample unless it repeats the last one."""
        if self.t and self.t[-1] == t and np.array_equal(self.q[-1], q):
            if np.array_equal(self.v[-1], v):
                return
        self.t.append(float(t))
        self.q.append(np.array(q, dtype=float))
        self.v.append(np.array(v, dtype=float))

    def keep_step(self, t: float, q: np.ndarray, v: np.ndarray) -> None:
        """Sample at the end of an accepted step, if it is an ``output_every``-th one."""
        if self.steps % self.output_every == 0:
            self.add(t, q, v)

    def impacts(self, t: float, entries: list[tuple[int, float, float]]) -> None:
        if self.dense is not None and entries:
            self.dense.add_impact(t)
        for i, before, after in entries:
            self.total += 1
            if len(self.log) < IMPACT_LOG_CAPACITY:
                self.log.append((t, i, before, after))

    def trajectory(self, status: Status, message: str, stats: dict[str, Any]) -> Trajectory:
        log = np.array(self.log, dtype=float).reshape(-1, 4)
        impacts = ImpactLog(
            t=log[:, 0].copy(),
            constraint=log[:, 1].astype(np.int64),
            normal_velocity_before=log[:, 2].copy(),
            normal_velocity_after=log[:, 3].copy(),
            total=self.total,
        )
        return Trajectory(
            t=np.array(self.t),
            q=np.array(self.q).reshape(len(self.t), -1),
            v=np.array(self.v).reshape(len(self.t), -1),
            impacts=impacts,
            status=status,
            message=message,
            stats=stats,
            method=self.method,
            problem=self.problem,
            h=None,
            dense=self.dense.build() if self.dense is not None and len(self.dense) else None,
        )


class _Run:
    """State and loop of one event-driven run."""

    def __init__(self, method: EventDriven, problem: Problem, t_end: float, every: int) -> None:
        self.method = method
        self.problem = problem
        self.t0 = float(problem.t0)
        self.t_end = t_end
        self.q0 = np.array(problem.q0, dtype=float)
        self.v0 = np.array(problem.v0, dtype=float)
        self.model = _Model(problem, max(1.0, float(np.abs(self.q0).max())))
        self.tolerance = _CONTACT_TOLERANCE_FACTOR * (method.atol + method.rtol * self.model.length)
        self.impact_interval = method.min_impact_interval * (t_end - self.t0)
        dense = None
        if method.dense_output:
            dense = DenseOutputBuilder(self.model.n, DENSE_DEGREE[method.integrator])
        self.record = _Recorder(every, method.name, problem.name, dense)
        self.segments = 0
        self.projections = 0
        self.last_impact = np.full(self.model.m, -math.inf)  # per constraint
        self.zeno: str | None = None
        self.zeno_time: float | None = None
        self.rest_speed: float | None = None
        self.contact_time: float | None = None
        self.phase_start = np.full(self.model.m, math.nan)  # per constraint in persistent contact
        self.contact_phases = 0
        self.contact_duration = 0.0

    # -- bookkeeping ---------------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        return {
            "engine": "scipy",
            "steps": self.record.steps,
            "force_evaluations": self.model.force_evaluations,
            "impacts": self.record.total,
            "segments": self.segments,
            "projections": self.projections,
            "rest_velocity": self.method.rest_velocity,
            "min_impact_interval": self.method.min_impact_interval,
            "rest_speed": self.rest_speed,
            "impact_interval": self.impact_interval,
            "contact_tolerance": self.tolerance,
            "length_scale": self.model.length,
            "zeno_time": self.zeno_time,
            "contact_time": self.contact_time,
            "contact_phases": self.contact_phases,
            "contact_duration": self.contact_duration,
        }

    def track_phases(self, t: float, before: np.ndarray, after: np.ndarray) -> None:
        """Open and close the persistent-contact phases of the constraints whose state changed."""
        for i in np.setdiff1d(after, before):
            self.phase_start[i] = t
            self.contact_phases += 1
        for i in np.setdiff1d(before, after):
            self.contact_duration += t - self.phase_start[i]
            self.phase_start[i] = math.nan

    def tolerances(self, G: np.ndarray) -> np.ndarray:
        """Contact tolerance of each gap (m,), in the units of g."""
        return self.tolerance * np.linalg.norm(G, axis=1)

    # -- the loop ------------------------------------------------------------------------------

    def execute(self) -> Trajectory:
        model, n = self.model, self.model.n
        t, q, v = self.t0, self.q0, self.v0
        self.record.add(t, q, v)
        segment, q, v = self.restart(t, q, v, np.zeros(0, dtype=np.int64), [], [])
        solver_class = INTEGRATORS[self.method.integrator]
        first_step = None
        stalled = 0
        growth = state_bounds(self.problem, self.t_end)
        guard = StallGuard(
            self.t0, self.t_end, self.method.min_impact_interval, model.gradient, model.length
        )
        dense = self.record.dense
        while t < self.t_end:
            y_start = np.concatenate((q, v))  # the state at the start of the next step
            solver = solver_class(
                model.rhs(segment.closed),
                t,
                y_start.copy(),
                self.t_end,
                first_step=first_step,
                rtol=self.method.rtol,
                atol=self.method.atol,
                max_step=self.method.max_step,
            )
            if first_step is None:
                self.segments += 1
            while True:
                message = solver.step()
                y = solver.y
                if solver.status == "failed":
                    raise SimulationError(
                        f"{self.method.integrator} failed: {message}", solver.t, y[:n], y[n:]
                    )
                if not np.isfinite(y).all():
                    raise SimulationError("non-finite state", solver.t, y[:n], y[n:])
                if exceeds(growth, solver.t, y[:n], y[n:]):
                    name = f"{self.method.name} on {self.problem.name}"
                    raise divergence_error(name, growth, solver.t, y[:n], y[n:], None)
                self.record.steps += 1
                sol = solver.dense_output()
                event = self.scan(segment, sol, solver.t_old, solver.t)
                if event is not None:
                    t_event, kind, i = event
                    stalled = stalled + 1 if t_event == t else 0
                    if stalled > 2 * model.m + 2:
                        raise SimulationError("events repeat without progress", t, q, v)
                    y = sol(t_event)
                    guard.advance(t, t_event, y[:n], y[n:])
                    if dense is not None:
                        dense.add(solver.t_old, t_event, sol, y_start, y)
                    t = t_event
                    event_rows, released = ([i], []) if kind == "gap" else ([], [i])
                    segment, q, v = self.restart(
                        t, y[:n], y[n:], segment.closed, event_rows, released
                    )
                    first_step = None
                    break
                if dense is not None:
                    dense.add(solver.t_old, solver.t, sol, y_start, y)
                    y_start = y.copy()
                guard.advance(t, solver.t, y[:n], y[n:])
                t, q, v = solver.t, y[:n], y[n:]
                if solver.status == "finished":
                    break
                if segment.closed.size and self.drifted(t, q, v, segment.closed):
                    q = model.project_position(t, q, v, segment.closed)
                    v = model.project_velocity(t, q, v, segment.closed)
                    self.projections += 1
                    self.record.keep_step(t, q, v)
                    first_step = min(solver.step_size, self.t_end - t)
                    break
                self.record.keep_step(t, q, v)
        return self.finish(q, v, segment.closed)

    def drifted(self, t: float, q: np.ndarray, v: np.ndarray, closed: np.ndarray) -> bool:
        """Whether g_C or G_C v has drifted beyond the solver's error scale."""
        G = self.model.gradient(t, q, v)[closed]
        norms = np.linalg.norm(G, axis=1)
        atol, rtol = self.method.atol, self.method.rtol
        g = self.model.gap(t, q, v)[closed]
        return bool(
            np.any(np.abs(g) > (atol + rtol * self.model.length) * norms)
            or np.any(np.abs(G @ v) > (atol + rtol * np.abs(v).max()) * norms)
        )

    def finish(self, q: np.ndarray, v: np.ndarray, closed: np.ndarray) -> Trajectory:
        t, model = self.t_end, self.model
        self.track_phases(t, closed, np.zeros(0, dtype=closed.dtype))
        if closed.size:
            q = model.project_position(t, q, v, closed)
            v = model.project_velocity(t, q, v, closed)
        g = model.gap(t, q, v)
        depth = -g / self.tolerances(model.gradient(t, q, v))
        if np.any(depth > 2.0):
            i = int(np.argmax(depth))
            raise SimulationError(
                f"run ended inside the obstacle: gap {i} = {g[i]:.3g} < -2 x contact tolerance",
                t,
                q,
                v,
            )
        rec = self.record
        rec.add(t, q, v)
        if rec.dense is not None:
            rec.dense.set_end_state(np.concatenate((q, v)))
        if self.zeno is not None:
            status = Status.ZENO_HANDLED
            message = f"{self.zeno}; reached t_end={t!r} with {rec.total} impacts"
        else:
            status = Status.OK
            message = f"reached t_end={t!r} with {rec.total} impacts"
            if self.contact_time is not None:
                message += f"; persistent contact from t={self.contact_time!r}"
        return rec.trajectory(status, message, self.stats())

    # -- event detection -----------------------------------------------------------------------

    def scan(
        self, segment: _Segment, sol: integrate.DenseOutput, t_old: float, t_new: float
    ) -> tuple[float, str, int] | None:
        """Earliest event in the step [t_old, t_new]: ("gap", i) or ("release", i)."""
        model, n = self.model, self.model.n
        tau = np.linspace(t_old, t_new, _SUBINTERVALS + 1)
        Y = sol(tau)
        best: tuple[float, str, int] | None = None
        is_open = np.ones(model.m, dtype=bool)
        is_open[segment.closed] = False
        armed = segment.armed.copy()
        if np.any(is_open):
            g = np.array([model.gap(s, Y[:n, k], Y[n:, k]) for k, s in enumerate(tau)])
            r = np.array(
                [model.gradient(s, Y[:n, k], Y[n:, k]) @ Y[n:, k] for k, s in enumerate(tau)]
            )
            for i in np.flatnonzero(is_open):

                def gap(s: float, i: int = i) -> float:
                    y = sol(s)
                    return float(model.gap(s, y[:n], y[n:])[i])

                def rate(s: float, i: int = i) -> float:
                    y = sol(s)
                    return float(model.gradient(s, y[:n], y[n:])[i] @ y[n:])

                t_hit, armed[i] = _gap_crossing(
                    gap, rate, tau, g[:, i], r[:, i], armed[i], segment.floor[i], segment.start
                )
                if t_hit is not None and (best is None or t_hit < best[0]):
                    best = (t_hit, "gap", int(i))
        if segment.closed.size:
            lam = np.array(
                [
                    model.acceleration(s, Y[:n, k], Y[n:, k], segment.closed)[1]
                    for k, s in enumerate(tau)
                ]
            )
            for j, i in enumerate(segment.closed):
                drops = np.flatnonzero(lam[:, j] <= 0.0)
                if not drops.size:
                    continue
                k = int(drops[0])

                def force(s: float, j: int = j) -> float:
                    y = sol(s)
                    return float(model.acceleration(s, y[:n], y[n:], segment.closed)[1][j])

                t_hit = tau[0] if k == 0 else _root(force, tau[k - 1], tau[k])
                if best is None or t_hit < best[0]:
                    best = (t_hit, "release", int(i))
        if best is None:
            segment.armed = armed
        return best

    # -- contact logic at an event -------------------------------------------------------------

    def restart(
        self,
        t: float,
        q: np.ndarray,
        v: np.ndarray,
        closed: np.ndarray,
        event: list[int],
        released: list[int],
    ) -> tuple[_Segment, np.ndarray, np.ndarray]:
        """Resolve the contacts at an event, record it and set up the next segment."""
        res = self.resolve(t, q, v, closed, event, released)
        self.record_impacts(t, q, v, res.impacts)
        self.record.add(t, res.q, res.v)
        if res.zeno is not None and self.zeno is None:
            self.zeno, self.zeno_time, self.rest_speed = res.zeno, t, res.rest_speed
        if res.closed.size and self.contact_time is None:
            self.contact_time = t
        self.track_phases(t, closed, res.closed)
        model = self.model
        g = model.gap(t, res.q, res.v)
        tol = self.tolerances(model.gradient(t, res.q, res.v))
        armed = g > tol
        armed[res.closed] = False
        segment = _Segment(closed=res.closed, armed=armed, floor=-tol, start=t)
        return segment, res.q, res.v

    def resolve(
        self,
        t: float,
        q: np.ndarray,
        v: np.ndarray,
        closed: np.ndarray,
        event: list[int],
        released: list[int],
    ) -> _Resolution:
        """Impact law on the active set, Zeno test, closing of contacts and projections."""
        model, problem = self.model, self.problem
        v_before = v
        g = model.gap(t, q, v)
        G = model.gradient(t, q, v)
        u = G @ v
        tol = self.tolerances(G)
        near = g <= tol
        active = near & (u < 0.0)
        active[closed] = True
        active[event] = True
        is_closed = np.zeros(model.m, dtype=bool)
        is_closed[closed] = True
        impacting = np.flatnonzero(active & ~is_closed & (u < 0.0))
        impacts: list[tuple[int, float, float]] = []
        spaced = np.zeros(0, dtype=np.int64)  # impacting rows too close to their previous impact
        if impacting.size:
            rows = np.flatnonzero(active)
            try:
                v, _ = impact_velocity(
                    model.mass_matrix(t, q, v), G, v, float(problem.restitution), rows
                )
            except (RuntimeError, ValueError) as err:
                raise SimulationError(f"impact law failed: {err}", t, q, v) from None
            u_after = G @ v
            impacts = [(int(i), float(u[i]), float(u_after[i])) for i in impacting]
            spaced = impacting[t - self.last_impact[impacting] < self.impact_interval]
            self.last_impact[impacting] = t
            u = u_after
        G, Y, b = model.contact_terms(t, q, v)
        # Normal accelerations under the forces of the contacts that stay closed (a bead resting
        # on a bead held by the floor falls onto it at g, although their free relative
        # acceleration is 0): the rest speed of the next flight.
        a = b
        held = np.setdiff1d(closed, released)
        if held.size:
            _, lam_held = self.acceleration_lcp(t, q, v, G, Y, b, held)
            a = b + (G @ Y[:, held]) @ lam_held
        # The larger of |a_i| and |b_i|: a held contact's own a_i is round-off.
        scale = np.maximum(np.abs(a), np.abs(b))
        rest = self.method.rest_velocity * np.sqrt(
            2.0 * scale * np.linalg.norm(G, axis=1) * model.length
        )
        slow = near & (np.abs(u) <= rest)
        slow[spaced] = True
        slow[released] = False
        rows = np.flatnonzero(slow)
        new_closed = np.zeros(0, dtype=np.int64)
        if rows.size:
            W, lam = self.acceleration_lcp(t, q, v, G, Y, b, rows)
            scale = _CLOSING_THRESHOLD * float(np.abs(b[rows]).max())
            new_closed = rows[lam * np.diag(W) > scale]
        zeno, rest_speed = None, None
        switched = np.intersect1d(new_closed, impacting)
        if switched.size and problem.restitution > 0.0:
            zeno, rest_speed = self.describe_zeno(t, switched, u, rest, spaced, impacts)
        projected = np.union1d(new_closed, np.flatnonzero(g < 0.0))
        try:
            if projected.size:
                q = model.project_position(t, q, v, projected)
            if new_closed.size:
                v = model.project_velocity(t, q, v, new_closed)
        except SimulationError:
            # The impact law was applied (the error reports the velocity after it): its entries
            # are kept in the log of the output up to the failure, as the compiled engine keeps
            # them.
            self.record_impacts(t, q, v_before, impacts)
            raise
        return _Resolution(q, v, new_closed, impacts, zeno, rest_speed)

    def record_impacts(
        self, t: float, q: np.ndarray, v: np.ndarray, impacts: list[tuple[int, float, float]]
    ) -> None:
        """Log the ``impacts`` of the event at ``t``, after a sample of the state (q, v) before
        them."""
        if impacts:
            self.record.add(t, q, v)
            self.record.impacts(t, impacts)

    @staticmethod
    def acceleration_lcp(
        t: float,
        q: np.ndarray,
        v: np.ndarray,
        G: np.ndarray,  # noqa: N803
        Y: np.ndarray,  # noqa: N803
        b: np.ndarray,
        rows: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """W = G_R M^-1 G_R^T and the forces of 0 <= lambda _|_ W lambda + b_R >= 0 on ``rows``
        (``Y`` = M^-1 G^T); SimulationError naming the rows when the LCP fails."""
        W = G[rows] @ Y[:, rows]
        lam = _contact_forces(W, b[rows])
        if lam is None:
            raise SimulationError(f"contact LCP failed on constraints {rows.tolist()}", t, q, v)
        return W, lam

    def describe_zeno(
        self,
        t: float,
        rows: np.ndarray,
        u: np.ndarray,
        rest: np.ndarray,
        spaced: np.ndarray,
        impacts: list[tuple[int, float, float]],
    ) -> tuple[str, float]:
        """Message and rest speed of a switch to persistent contact after an accumulation."""
        i = int(rows[0])
        if i in spaced and abs(u[i]) > rest[i]:
            why = (
                f"impacts closer than {self.impact_interval:.3g} "
                f"(min_impact_interval={self.method.min_impact_interval:g} x (t_end - t0))"
            )
        else:
            why = (
                f"rebound normal velocity {u[i]:.3g} below the rest speed {rest[i]:.3g} "
                f"(rest_velocity={self.method.rest_velocity:g} x sqrt(2 |g''| |grad g| L), "
                f"L={self.model.length:g})"
            )
        before = next(b for j, b, _ in impacts if j == i)
        return (
            f"accumulation of impacts on constraint(s) {rows.tolist()} cut at t={t!r} "
            f"(impact normal velocity {before:.3g}): {why}; switched to persistent contact",
            float(rest[i]),
        )
