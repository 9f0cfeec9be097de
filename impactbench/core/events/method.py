"""The base class of an event-driven method: a run on the compiled engine or the plain loop.

:class:`EventMethod` runs the event loop with a compiled Runge-Kutta pair (the engine's
preparation kept by the values of the method and of the problem's checked state,
:class:`impactbench.core.events.engine.PreparedEngine`) or as plain Python stepped by a
:class:`impactbench.core.events.plain.Stepper`, and turns a failed run into a
:class:`impactbench.SimulationError` with t, q, v and the trajectory up to there. A subclass
gives its parameters and its steppers. A frictional problem with more constraints than degrees
of freedom is refused, as by the time-stepping schemes
(:func:`impactbench.core.friction.check_friction_sizes`).
"""

from __future__ import annotations

from abc import abstractmethod
from typing import ClassVar, NamedTuple

from impactbench.core.divergence import divergence_error
from impactbench.core.friction import check_friction_sizes
from impactbench.core.method import EVENT_DRIVEN, Method
from impactbench.core.problem import Problem, checked_state
from impactbench.core.snapshot import keep, kept
from impactbench.core.status_codes import STATUS_DIVERGED
from impactbench.core.trajectory import SimulationError, Status, Trajectory

from .engine import PreparedEngine, run_settings
from .plain import PlainRun, Stepper


class Settings(NamedTuple):
    """An event-driven method's settings, validated: the solver's tolerances and largest step
    and the accumulation (Zeno) thresholds (see ``EventDriven``)."""

    rtol: float
    atol: float
    max_step: float
    rest_velocity: float
    min_impact_interval: float


class EventMethod(Method):
    """An event-driven method: the event loop of :mod:`impactbench.core.events`, stepped by a
    compiled Runge-Kutta pair or by a :class:`~impactbench.core.events.plain.Stepper`.

    A subclass stores its parameters (as every :class:`impactbench.Method`) and gives
    :meth:`settings`, :meth:`stepper` and, to run the compiled engine where it applies,
    :meth:`compiled_pair`; with ``dense_output`` True a run attaches its interpolants as
    ``Trajectory.dense`` (on the compiled engine the pair's, on the plain loop the stepper's).
    ``h`` is rejected: the method is adaptive. A run's ``stats["engine"]`` says which engine
    ran ("compiled" or "scipy").
    """

    family: ClassVar[str] = EVENT_DRIVEN
    requires_step: ClassVar[bool] = False
    dense_output: bool = False

    @abstractmethod
    def settings(self) -> Settings:
        """The run's tolerances, largest step and accumulation thresholds."""

    @abstractmethod
    def stepper(self) -> Stepper:
        """A new stepper for a run on the plain loop."""

    def compiled_pair(self, problem: Problem) -> str | None:
        """The Runge-Kutta pair ("RK45" or "DOP853") of the compiled engine on ``problem``, or
        None for the plain loop (the default)."""
        return None

    def _solve_impl(
        self, problem: Problem, t_end: float, h: float | None, output_every: int
    ) -> Trajectory:
        if h is not None:
            raise ValueError(
                f"{type(self).__name__} is adaptive: h must be None; use rtol/atol/max_step, "
                f"got h={h!r}"
            )
        if problem.has_friction:  # as the time-stepping schemes (their frictional loop)
            check_friction_sizes(problem.n_dof, problem.n_constraints)
            if problem.rheonomic:
                raise ValueError(
                    f"method {self.name} integrates moving obstacles without friction only, "
                    f"and problem {problem.name} is frictional and rheonomic (its gap depends on "
                    "time, g(t, q))"
                )
        # the compiled engine's preparation is kept by the values of this instance and of the
        # problem's checked state (PreparedEngine)
        checked = checked_state(problem)
        engine = kept(self, checked)
        if engine is None:
            pair = self.compiled_pair(problem)
            if pair is not None:
                rtol, atol, max_step, rest_velocity, min_impact_interval = self.settings()
                engine = PreparedEngine(
                    problem, rtol, atol, pair, max_step, rest_velocity, min_impact_interval,
                    True, self.name, self.dense_output,
                )  # fmt: skip
                keep(self, checked, engine)
        if engine is not None:
            trajectory = engine.run(problem, t_end, output_every)  # both checked by solve
            trajectory.stats["engine"] = "compiled"
        else:
            rtol, atol, max_step, rest_velocity, min_impact_interval = self.settings()
            run = run_settings(
                problem, t_end, rtol, atol, max_step, output_every, rest_velocity,
                min_impact_interval,
            )  # fmt: skip
            plain = PlainRun(problem, run, self.stepper(), self.name, self.dense_output)
            trajectory = plain.execute()
        if trajectory.status is Status.FAILED:
            _raise_failure(trajectory, f"{self.name} on {problem.name}", int(problem.n_dof))
        return trajectory


def _raise_failure(trajectory: Trajectory, name: str, n: int) -> None:
    """Raise the SimulationError of a failed run's trajectory (``name``: method on problem)."""
    state = trajectory.stats["state_stop"]
    # the message ends with " at t=..."; SimulationError appends t, q and v
    reason = trajectory.message.rsplit(" at t=", 1)[0]
    where = (trajectory.stats["t_stop"], state[:n], state[n:], trajectory)
    if trajectory.stats["status_code"] == STATUS_DIVERGED:
        raise divergence_error(name, trajectory.stats["growth"], *where)
    raise SimulationError(f"{name}: {reason}", *where)
