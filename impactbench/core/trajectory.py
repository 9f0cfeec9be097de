"""Results of a run: time-first arrays, the impact log, a status with its message, and stats."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from .dense import DenseOutput

#: Default number of impact-log entries a run keeps (all are counted in ``ImpactLog.total``).
IMPACT_LOG_CAPACITY = 100_000

#: Copied into an empty :class:`ImpactLog` (never handed out).
_EMPTY = np.zeros(0)
_EMPTY_INDICES = np.zeros(0, dtype=np.int64)


class Status(str, Enum):
    """Result code of a run. The trajectory's ``message`` explains it."""

    #: The run reached t_end.
    OK = "ok"
    #: The run reached t_end after detecting an accumulation of impacts (Zeno) and switching to
    #: persistent contact (event-driven only; the thresholds are in ``stats``).
    ZENO_HANDLED = "zeno-handled"
    #: The run stopped early; ``message`` says why and where.
    FAILED = "failed"
    #: The run ended at a terminal event function of ``simulate(events=...)`` before t_end (a
    #: success, as solve_ivp's status 1); ``message`` says which and when.
    TERMINATED = "terminated"


@dataclass
class ImpactLog:
    """Impacts handled during a run, one entry per (impact, constraint).

    For event-driven runs an entry is a located impact. For time-stepping runs an entry is a step
    at which the constraint received a positive impulse (or, for Paoli-Schatzman, a projection);
    during persistent contact that happens at every step. The log keeps at most a fixed number of
    entries (memory stays bounded); ``total`` counts all of them.

    Attributes
    ----------
    t : ndarray, shape (k,)
        Time of the impact (time-stepping: the end of the step).
    constraint : ndarray of int, shape (k,)
        Index i of the constraint.
    normal_velocity_before, normal_velocity_after : ndarray, shape (k,)
        grad g_i . v just before and just after.
    total : int
        Number of entries produced, including those beyond the log's capacity.
    """

    t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    constraint: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    normal_velocity_before: np.ndarray = field(default_factory=lambda: np.zeros(0))
    normal_velocity_after: np.ndarray = field(default_factory=lambda: np.zeros(0))
    total: int = 0

    def __len__(self) -> int:
        return int(self.t.shape[0])

    @property
    def truncated(self) -> bool:
        """True when more entries were produced than stored."""
        return self.total > len(self)

    @classmethod
    def from_buffers(
        cls, t: np.ndarray, constraint: np.ndarray, normal: np.ndarray, logged: int, total: int
    ) -> ImpactLog:
        """The log a compiled loop left in its buffers: the first ``logged`` entries (copied)
        of ``t`` (k,), ``constraint`` (k,) and ``normal`` (k, 2: before, after), of ``total``
        produced."""
        if not logged:  # new empty arrays, as the defaults, without their factories' cost
            return cls(_EMPTY.copy(), _EMPTY_INDICES.copy(), _EMPTY.copy(), _EMPTY.copy(), total)
        return cls(
            t=t[:logged].copy(),
            constraint=constraint[:logged].copy(),
            normal_velocity_before=normal[:logged, 0].copy(),
            normal_velocity_after=normal[:logged, 1].copy(),
            total=total,
        )


@dataclass
class Trajectory:
    """A computed trajectory, time-first.

    Attributes
    ----------
    t : ndarray, shape (N,)
        Output times (every ``output_every``-th step and always the final time).
    q, v : ndarray, shape (N, n)
        Positions and velocities at ``t``.
    impacts : ImpactLog
        The impacts handled.
    status : Status
        Result code; ``message`` explains it.
    message : str
        Human-readable explanation of ``status``.
    stats : dict
        Cost and method-specific information: ``steps``, ``force_evaluations``, ``impacts``,
        ``wall_time`` (seconds, the call of :func:`impactbench.simulate` without its
        compilation), ``compile_time`` (seconds numba spent compiling, or loading compiled code
        from its disk cache, in that call: :mod:`impactbench.core.compile_clock`),
        ``integration_time`` (seconds, the part of it spent in the method's integration loop:
        the compiled loop's call where one runs; the rest is the per-call work of ``simulate``)
        and more per method (time-stepping: ``work_bytes``, the bytes of
        the loop's work buffers, and ``memory_bytes``, those and the output arrays).
    method : str
        Name of the method with its parameters, e.g. ``MoreauJean[theta=0.5]``.
    problem : str
        Name of the problem.
    h : float or None
        Step actually used by a time-stepping method (see :func:`impactbench.simulate`), None for
        adaptive methods.
    dense : DenseOutput or None
        Interpolant of the whole run, evaluable at any time in [t0, t_end]: ``dense(t)`` gives
        the right-continuous (q, v) (post-impact at an impact), ``dense.left(t)`` the left limit
        (see :mod:`impactbench.core.dense`). Only from methods that offer it and were asked for it
        (``EventDriven(dense_output=True)``); None otherwise.
    t_events : list of ndarray or None
        With ``simulate(events=...)``: for each event function, the times (k_i,) at which it
        was located, in increasing order (solve_ivp's ``t_events``); None without events.
    q_events, v_events : list of ndarray or None
        The states there, (k_i, n) each (solve_ivp's ``y_events``, split into q and v;
        right-continuous: post-impact at an impact time).
    """

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    impacts: ImpactLog
    status: Status
    message: str
    stats: dict[str, Any]
    method: str
    problem: str
    h: float | None = None
    dense: DenseOutput | None = None
    t_events: list[np.ndarray] | None = None
    q_events: list[np.ndarray] | None = None
    v_events: list[np.ndarray] | None = None

    @property
    def success(self) -> bool:
        """True when the run reached its final time."""
        return self.status is not Status.FAILED

    def __repr__(self) -> str:
        return (
            f"Trajectory(problem={self.problem!r}, method={self.method!r}, "
            f"samples={self.t.shape[0]}, impacts={self.impacts.total}, "
            f"status={self.status.value!r})"
        )


class SimulationError(RuntimeError):
    """A run that could not continue; carries the time and state where it stopped.

    Attributes
    ----------
    t : float
    q, v : ndarray, shape (n,)
    trajectory : Trajectory or None
        The part computed before the failure, when available.
    """

    def __init__(
        self,
        reason: str,
        t: float,
        q: np.ndarray,
        v: np.ndarray,
        trajectory: Trajectory | None = None,
    ) -> None:
        self.reason = reason
        self.t = float(t)
        self.q = np.array(q, dtype=float)
        self.v = np.array(v, dtype=float)
        self.trajectory = trajectory
        super().__init__(f"{reason} at t={self.t!r}, q={self.q.tolist()}, v={self.v.tolist()}")
