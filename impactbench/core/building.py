"""A method's result from plain arrays: :func:`make_trajectory` builds the :class:`Trajectory`
and its :class:`ImpactLog`, so that a new method's ``_solve_impl`` returns arrays and never
fills the result types field by field (docs/adding-a-method.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .method import Method
from .problem import Problem, timed_gap, timed_gradient
from .trajectory import ImpactLog, Status, Trajectory


def _samples(value: Any, name: str, count: int, n_dof: int) -> np.ndarray:
    array = np.array(value, dtype=float)
    if array.ndim == 1 and n_dof == 1:
        array = array[:, None]
    if array.shape != (count, n_dof):
        raise ValueError(
            f"{name} must have shape ({count}, {n_dof}) (one row per time, one column per "
            f"degree of freedom), got {array.shape}"
        )
    if not np.all(np.isfinite(array)):
        row = int(np.flatnonzero(~np.all(np.isfinite(array), axis=1))[0])
        raise ValueError(f"{name} must be finite, got {array[row].tolist()} at row {row}")
    return array


def _optional(value: Any, name: str, count: int, dtype: type) -> np.ndarray | None:
    if value is None:
        return None
    array = np.array(value, dtype=dtype).reshape(-1)
    if array.shape != (count,):
        raise ValueError(f"{name} must have one entry per impact time ({count}), got {array.shape}")
    return array


def make_trajectory(
    problem: Problem,
    method: Method,
    t: Sequence[float] | np.ndarray,
    q: Sequence[Any] | np.ndarray,
    v: Sequence[Any] | np.ndarray,
    *,
    steps: int,
    force_evaluations: int,
    h: float | None = None,
    impact_times: Sequence[float] | np.ndarray = (),
    impact_constraints: Sequence[int] | np.ndarray | None = None,
    normal_velocity_before: Sequence[float] | np.ndarray | None = None,
    normal_velocity_after: Sequence[float] | np.ndarray | None = None,
    stats: Mapping[str, Any] | None = None,
    message: str = "reached t_end",
) -> Trajectory:
    """The :class:`Trajectory` of a finished run of ``method`` on ``problem``, from arrays.

    Parameters
    ----------
    problem : Problem
        The problem solved (its ``n_dof``, ``gap`` and ``gap_gradient`` are used; for moving
        obstacles at the samples' times, and its ``gap_rate``).
    method : Method
        The method that produced the run (its :attr:`Method.name` labels the trajectory).
    t : array_like, shape (N,)
        Output times, non-decreasing (an event-driven method may repeat an impact time: the
        states just before and after it), the first at ``problem.t0`` and the last at the
        run's ``t_end``.
    q, v : array_like, shape (N, n_dof)
        Positions and velocities at ``t`` (shape (N,) accepted when ``n_dof`` is 1), finite.
    steps : int
        Steps taken (accepted steps of an adaptive method): the ``steps`` cost of the tables.
    force_evaluations : int
        Calls of ``problem.forces`` made: the cost of the work-precision charts.
    h : float, optional
        The step used by a time-stepping method; None for an adaptive (event-driven) one.
        The impact events of the tables (:mod:`impactbench.analysis.impact_events`) cluster a
        time-stepper's log entries on consecutive steps of length ``h`` into one impact.
    impact_times : array_like, shape (k,)
        One entry per impact and constraint (a time-stepper: per step on which a constraint
        took an impulse), within [t[0], t[-1]], non-decreasing.
    impact_constraints : array_like of int, shape (k,), optional
        Index of the constraint of each entry; default: the constraint with the smallest gap
        at the first sample at or after the impact time.
    normal_velocity_before, normal_velocity_after : array_like, shape (k,), optional
        grad g_i . v just before and just after each impact (for a moving obstacle the
        relative velocity grad g_i . v + dg_i/dt); default: evaluated from the samples, with
        the gradient at the first sample at or after the impact time (index j) and the
        velocities of samples j - 1 (before) and j (after) (the obstacle's rate at the times
        of those samples, at q_j).
    stats : mapping, optional
        More method-specific information kept in ``Trajectory.stats`` (the keys ``steps``,
        ``force_evaluations`` and ``impacts`` are set here).
    message : str
        Explanation of the status (``Status.OK``: the run reached its final time). A run that
        cannot continue raises :class:`impactbench.SimulationError` with t, q, v instead.

    Returns
    -------
    Trajectory

    Raises
    ------
    ValueError
        For arrays of the wrong shape, non-finite samples, decreasing times or a first time
        other than ``problem.t0``, impact times
        outside the run or constraint indices out of range (the message names the argument).
    """
    if not isinstance(problem, Problem):
        raise ValueError(f"problem must be an impactbench.Problem, got {problem!r}")
    if not isinstance(method, Method):
        raise ValueError(f"method must be an impactbench.Method, got {method!r}")
    times = np.array(t, dtype=float).reshape(-1)
    if times.size == 0 or not np.all(np.isfinite(times)) or np.any(np.diff(times) < 0):
        raise ValueError(f"t must be a non-empty, finite, non-decreasing 1-D array, got {t!r:.200}")
    if times[0] != problem.t0:
        raise ValueError(f"t must start at problem.t0 = {problem.t0!r}, got t[0] = {times[0]!r}")
    n_dof = int(np.size(problem.q0))
    q = _samples(q, "q", times.size, n_dof)
    v = _samples(v, "v", times.size, n_dof)
    for name, value in (("steps", steps), ("force_evaluations", force_evaluations)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    if h is not None and not (np.isfinite(h) and h > 0):
        raise ValueError(f"h must be a finite positive number or None, got {h!r}")
    at = np.array(impact_times, dtype=float).reshape(-1)
    count = at.size
    if count and (
        not np.all(np.isfinite(at))
        or np.any(np.diff(at) < 0)
        or at[0] < times[0]
        or at[-1] > times[-1]
    ):
        raise ValueError(
            f"impact_times must be finite, non-decreasing and within [{times[0]!r}, "
            f"{times[-1]!r}], got {impact_times!r:.200}"
        )
    sample = np.minimum(np.searchsorted(times, at, side="left"), times.size - 1)
    constraint = _optional(impact_constraints, "impact_constraints", count, np.int64)
    if constraint is None:
        constraint = np.array(
            [int(np.argmin(np.atleast_1d(timed_gap(problem, times[j], q[j])))) for j in sample],
            dtype=np.int64,
        )
    constraints = int(np.size(timed_gap(problem, times[0], q[0])))
    if count and (constraint.min() < 0 or constraint.max() >= constraints):
        raise ValueError(
            f"impact_constraints must lie in 0..{constraints - 1}, got {constraint.tolist()}"
        )
    previous = np.maximum(sample - 1, 0)
    before = _optional(normal_velocity_before, "normal_velocity_before", count, float)
    if before is None:
        before = _normal_velocities(problem, times, q, v, sample, constraint, previous)
    after = _optional(normal_velocity_after, "normal_velocity_after", count, float)
    if after is None:
        after = _normal_velocities(problem, times, q, v, sample, constraint, sample)
    log = ImpactLog(at, constraint, before.reshape(-1), after.reshape(-1), total=count)
    info = dict(stats or {})
    info.update(steps=int(steps), force_evaluations=int(force_evaluations), impacts=count)
    return Trajectory(times, q, v, log, Status.OK, message, info, method.name, problem.name, h)


def _normal_velocities(
    problem: Problem,
    times: np.ndarray,
    q: np.ndarray,
    v: np.ndarray,
    sample: np.ndarray,
    constraint: np.ndarray,
    velocity: np.ndarray,
) -> np.ndarray:
    """U_i = G_i(t_j, q_j) v_k (+ r_i(t_k, q_j) for a moving obstacle) for each impact: i its
    constraint, j its ``sample`` (the gradient's) and k its ``velocity`` sample (j - 1 before,
    j after; the obstacle's rate at the time of that velocity, as the schemes' impact law takes
    r- and r+ at one position)."""
    values = np.empty(len(sample))
    for entry, (j, i, k) in enumerate(zip(sample, constraint, velocity, strict=True)):
        row = np.atleast_2d(timed_gradient(problem, times[j], q[j]))[i]
        values[entry] = row @ v[k]
        if problem.rheonomic:
            values[entry] += np.atleast_1d(problem.gap_rate(times[k], q[j]))[i]
    return values
