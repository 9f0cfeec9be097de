"""Event-driven integration: located impacts, Newton's law, accumulation and persistent contact.

:class:`EventDriven` integrates the smooth dynamics ``M(q) v' = F(t, q, v)`` (state
``y = (q, v)``) between located events and restarts at each of them; the algorithm (crossing
detection on the dense output, root search, impact law, accumulation (Zeno) test, persistent
contact, restart) is :mod:`impactbench.core.events`, written once. This module holds the method
(its parameters) and its two steppers: the compiled engine's scipy-identical RK45 / DOP853 pairs
(the event loop compiled with numba), and on the scipy path (``compiled=False``, the other
integrators, a problem without kernels) one of scipy's ODE solvers stepped by
hand as :func:`scipy.integrate.solve_ivp` does (:class:`ScipyStepper`), the event loop running
as plain Python (:mod:`impactbench.core.events.plain`); a run on either path stops with
:class:`impactbench.SimulationError` when its steps stall (:mod:`impactbench.core.stall`).

The scipy path costs Python overhead per right-hand side and per step, dozens of force
evaluations per impact; the ``performance`` study measures it beside the compiled engine's.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import numpy as np
from scipy import integrate

from impactbench.core.events import (
    EventMethod,
    Problem,
    Settings,
    Stepper,
    in_interval,
    positive_scalar,
)

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


class EventDriven(EventMethod):
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
        integrator "RK45" or "DOP853". Elsewhere, and with ``compiled=False``,
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

    Moving obstacles (a rheonomic problem, gaps g(t, q); frictionless): the event function is
    g(t, q(t)) with the rate U = G v + r (r = dg/dt at fixed q, the problem's ``gap_rate``),
    Newton's law acts on the relative normal velocity (U+ = -e U-), a persistent contact holds
    d2g/dt2 = G a + kappa + c = 0 with the declared drift c (``gap_drift``) and lifts off when
    its force, now explicitly time-dependent, vanishes; projections keep g(t, q) = 0 at fixed t
    and U = 0; the law's energy record is on the relative normal velocities
    (:mod:`impactbench.core.events.resolution`). A frictional rheonomic problem is refused.

    On the scipy path the problem's methods are called with their results checked
    (:class:`impactbench.core.problem.CheckedCalls`: a bad value raises
    :class:`impactbench.SimulationError` with t, q and v); for a problem with compiled kernels
    the free-flight right-hand side is compiled (:mod:`impactbench.core.events.free_flight`).

    Dense output
        With ``dense_output=True`` every accepted solver step becomes a piece of an
        :class:`impactbench.DenseOutput` (``Trajectory.dense``), cut at the events, in the run
        itself (on either engine: its samples, counts and dense output are one trajectory; the
        compiled engine keeps each step's interpolant coefficients, which its event location
        computes anyway, and turns them into nodes after the loop): ``dense(t)``
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
        error, of the order of the solver tolerance (tests/test_event_driven.py bounds |g| by a
        small multiple of the drift tolerance on a pendulum sliding in a circle). At a
        projection the state jumps by that much (``dense`` gives the projected state, ``left``
        the solver's); the last node holds the final (projected) state. A failed run's
        trajectory carries the dense output up to where it stopped.
    """

    friction_law = True
    moving_obstacles = True
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
        self.rtol = positive_scalar(rtol, "rtol")
        if self.rtol < 100 * _EPS:
            raise ValueError(f"rtol must be >= 100 eps = {100 * _EPS:.3g}, got {rtol!r}")
        self.atol = positive_scalar(atol, "atol")
        try:
            self.max_step = float(max_step)
        except (TypeError, ValueError):
            raise ValueError(f"max_step must be a real number, got {max_step!r}") from None
        if not self.max_step > 0.0:
            raise ValueError(f"max_step must be > 0 (inf allowed), got {max_step!r}")
        self.rest_velocity = in_interval(rest_velocity, "rest_velocity", 0.0, 1.0)
        self.min_impact_interval = in_interval(min_impact_interval, "min_impact_interval", 0.0, 1.0)
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
            and self.integrator in COMPILED_INTEGRATORS
            and problem.kernels() is not None
        )

    def compile_options(self, problem: Problem) -> dict[str, Any] | None:
        """The compiled engine's option (the Runge-Kutta pair) when :meth:`uses_compiled_engine`,
        else None (the scipy path)."""
        if not self.uses_compiled_engine(problem):
            return None
        return {"integrator": self.integrator}

    def settings(self) -> Settings:
        """The tolerances, largest step and accumulation thresholds of a run."""
        return Settings(
            self.rtol, self.atol, self.max_step, self.rest_velocity, self.min_impact_interval
        )

    def compiled_pair(self, problem: Problem) -> str | None:
        """The integrator when :meth:`uses_compiled_engine`, else None (the scipy path)."""
        return self.integrator if self.uses_compiled_engine(problem) else None

    def stepper(self) -> Stepper:
        """scipy's solver ``integrator``, stepped by hand (the scipy path)."""
        return ScipyStepper(self.integrator)


class ScipyStepper:
    """scipy's ODE solver ``integrator`` (a key of :data:`INTEGRATORS`) stepped by hand, as
    :func:`scipy.integrate.solve_ivp` steps it: the stepper of the scipy path
    (:class:`impactbench.core.events.Stepper`)."""

    def __init__(self, integrator: str) -> None:
        self.name = integrator
        self.dense_degree = DENSE_DEGREE[integrator]
        self.solver: integrate.OdeSolver | None = None

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
        """A new solver from (t, y) towards ``t_end``."""
        self.solver = INTEGRATORS[self.name](
            fun, t, y, t_end, first_step=first_step, rtol=rtol, atol=atol, max_step=max_step
        )

    def step(self) -> tuple[float, float, np.ndarray, str | None]:
        """One accepted step: (t_old, t_new, y_new, None), or the solver's failure."""
        solver = self.solver
        message = solver.step()
        if solver.status == "failed":
            return solver.t, solver.t, solver.y, f"{self.name} failed: {message}"
        return solver.t_old, solver.t, solver.y, None

    def interpolant(self) -> Callable[[Any], np.ndarray]:
        """The last step's interpolant (scipy's ``dense_output``)."""
        return self.solver.dense_output()
