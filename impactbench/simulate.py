"""The single entry point that runs a method on a problem."""

from __future__ import annotations

from .method import Method
from .problem import Problem
from .trajectory import Trajectory


def simulate(
    problem: Problem,
    method: Method,
    t_end: float,
    *,
    h: float | None = None,
    output_every: int = 1,
) -> Trajectory:
    """Integrate ``problem`` with ``method`` from ``problem.t0`` to ``t_end``.

    Parameters
    ----------
    problem : Problem
        The mechanical system; validated by ``problem.check()`` first.
    method : Method
        An instance such as ``MoreauJean(theta=0.5)`` or ``EventDriven(rtol=1e-10)``.
    t_end : float
        Final time, > problem.t0. The trajectory's last sample is at ``t_end``.
    h : float, optional
        Step of a time-stepping method (required there, with 0 < h <= t_end - t0). When h does
        not divide t_end - t0 the method uses the largest step below h that does (the step used
        is ``Trajectory.h``). Event-driven methods are adaptive and reject h (ValueError).
    output_every : int
        Keep every ``output_every``-th step (always the first and the last), so long runs keep
        bounded memory. For event-driven runs it decimates the solver's accepted steps; the
        states just before and after each impact are always kept.

    Returns
    -------
    Trajectory

    Raises
    ------
    ValueError
        On invalid arguments (the message names the argument and its value).
    SimulationError
        When the run cannot continue (a non-finite state, a failed contact solve); it carries the
        time t and the state q, v where it stopped.
    """
    if not isinstance(method, Method):
        raise ValueError(f"method must be an impactbench.Method instance, got {method!r}")
    return method.solve(problem, t_end, h=h, output_every=output_every)
