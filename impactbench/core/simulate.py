"""The single entry point that runs a method on a problem."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from numpy.typing import ArrayLike

from .method import Method
from .problem import Problem
from .trajectory import Trajectory
from .user_events import simulate_continuous


def simulate(
    problem: Problem,
    method: Method,
    t_end: float,
    *,
    h: float | None = None,
    output_every: int = 1,
    t_eval: ArrayLike | None = None,
    events: Callable | Sequence[Callable] | None = None,
) -> Trajectory:
    """Integrate ``problem`` with ``method`` from ``problem.t0`` to ``t_end``.

    Parameters
    ----------
    problem : Problem
        The mechanical system; validated by ``problem.check()`` first, at every call. This is
        the rule for attributes changed after construction: the attributes of the contract
        (``n_dof``, ``n_constraints``, ``restitution``, ``t0``, ``q0``, ``v0``, and the mass
        matrix, gap and forces at q0) are checked again here, so a mutated invalid value is a
        ValueError naming it (a built-in problem's check is skipped while these attributes are
        unchanged since its last check passed, or hold the values of a contract that passed:
        :meth:`CompiledProblem.check`). A built-in problem's model parameters (a mass, a
        length, the gravity) are checked by its constructor only: build a new problem rather
        than mutate them. What a run derives from the problem and the method is kept by their
        values (a new problem and method of equal parameters reuse it; any attribute
        reassigned, or an array attribute changed in place, prepares it again:
        :mod:`impactbench.core.snapshot`).
    method : Method
        An instance such as ``MoreauJean(theta=0.5)`` or ``EventDriven(rtol=1e-10)``.
    t_end : float
        Final time, > problem.t0. The trajectory's last sample is at ``t_end``.
    h : float, optional
        Step of a time-stepping method (required there, with 0 < h <= t_end - t0, and h at
        least 4 eps max(|t0|, |t_end|) so that the times t0 + k h advance; see
        :func:`impactbench.core.timestepping.step_count`). When h does not divide t_end - t0 the
        method uses the largest step below h that does (the step used is ``Trajectory.h``).
        Event-driven methods are adaptive and reject h (ValueError).
    output_every : int
        Keep every ``output_every``-th step (always the first and the last), so long runs keep
        bounded memory; a value at least the number of steps keeps the first and the last only.
        A time-stepping run whose samples would exceed
        ``impactbench.core.timestepping.MAX_OUTPUT_BYTES`` (2 GiB) is refused (ValueError). For
        event-driven runs it decimates the solver's accepted steps; the states just before and
        after each impact are always kept.

    t_eval : array_like, shape (K,), optional
        Times at which to store the state, strictly increasing in [t0, t_end] (solve_ivp's
        ``t_eval``): the trajectory's samples are then the continuous state at these times,
        right-continuous (post-impact at an impact time). An event-driven method gives it from
        its dense output (a method given without ``dense_output=True`` is run with it, on its
        own engine), exact to the solver's tolerance; a time-stepping method from its
        continuous extension (:mod:`impactbench.core.extension`: q linear between steps, v
        linear in a step without impulse and held at the step's start value up to the logged
        impact time in a step with one), which needs ``output_every=1``.
    events : callable or sequence of callables, optional
        Event functions ``event(t, q, v) -> float`` with solve_ivp's optional ``terminal`` and
        ``direction`` attributes, located on the same continuous state
        (:mod:`impactbench.core.user_events`): their zeros are returned in
        ``Trajectory.t_events``, ``q_events``, ``v_events``; a terminal one ends the trajectory
        there (status :attr:`Status.TERMINATED`).

    Returns
    -------
    Trajectory

    Raises
    ------
    ValueError
        On invalid arguments, including sizes beyond their limits (the message names the
        argument and its value).
    SimulationError
        When the run cannot continue (a non-finite state, a failed contact solve); it carries the
        time t and the state q, v where it stopped.
    """
    if Method not in type(method).__mro__ and not isinstance(method, Method):  # MRO first: faster
        raise ValueError(f"method must be an impactbench.Method instance, got {method!r}")
    if t_eval is None and events is None:
        return method.solve(problem, t_end, h=h, output_every=output_every)
    return simulate_continuous(problem, method, t_end, h, output_every, t_eval, events)
