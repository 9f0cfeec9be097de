"""Stall detection of an adaptive integration: progress too small for too many steps.

An adaptive solver facing a right-hand side that is discontinuous along the trajectory (a gap
with a kink, where its gradient jumps: a V-shaped floor at its apex) can keep accepting steps
far above round-off yet far too short to reach t_end in any time (the probe: steps of 2e-13 at
t = 1.29 on a V-shaped floor, 200 steps per second, for ever). :class:`StallGuard` counts the
consecutive advances of the integration (accepted steps and events alike) shorter than

    h_short = max(STALL_ROUNDOFF eps max(|t0|, |t_end|), interval (t_end - t0)),

``interval`` the method's smallest meaningful time interval (the event-driven method's
``min_impact_interval``, 1e-12 by default: impacts closer than that are already an
accumulation), and stops the run after ``STALL_STEPS`` of them with a
:class:`impactbench.SimulationError` that gives t, q, v, the step length and, when a
constraint's gradient jumps near q along v (probed at q +- ``KINK_PROBE`` L v / |v|), the
constraint and the size of the jump (the contract requires C^1 gaps:
:class:`impactbench.core.problem.Problem`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .trajectory import SimulationError

#: Consecutive short advances after which a run has stalled.
STALL_STEPS = 100

#: A step shorter than this many eps max(|t0|, |t_end|) is short whatever the horizon.
STALL_ROUNDOFF = 8.0

#: The kink probe: the gradient is compared at q and at q +- KINK_PROBE L v / |v| (L the run's
#: length scale); a relative change above KINK_JUMP names a kink (a C^1 gap of curvature radius R
#: changes by KINK_PROBE L / R there, above KINK_JUMP only for R < 2e-3 L).
KINK_PROBE = 1e-3
KINK_JUMP = 0.5


class StallGuard:
    """Counts short advances and raises when the run has stalled (module docstring).

    Parameters
    ----------
    t0, t_end : float
        The run's interval.
    interval : float
        Smallest meaningful interval, relative to t_end - t0.
    gradient : callable
        ``gradient(t, q, v) -> (m, n)`` of the problem (checked calls), read at a stall only,
        to name a kink.
    length : float
        The run's length scale L (of the kink probe).
    """

    def __init__(
        self,
        t0: float,
        t_end: float,
        interval: float,
        gradient: Callable[..., np.ndarray],
        length: float,
    ) -> None:
        eps = float(np.finfo(float).eps)
        self.short_step = max(
            STALL_ROUNDOFF * eps * max(abs(t0), abs(t_end)), interval * (t_end - t0)
        )
        self.gradient = gradient
        self.length = length
        self.count = 0

    def advance(self, t_old: float, t: float, q: np.ndarray, v: np.ndarray) -> None:
        """Record an advance from ``t_old`` to ``t`` ending at (q, v); raise if stalled.

        Raises
        ------
        SimulationError
            After ``STALL_STEPS`` consecutive advances shorter than ``short_step``.
        """
        if t - t_old >= self.short_step:
            self.count = 0
            return
        self.count += 1
        if self.count < STALL_STEPS:
            return
        reason = (
            f"stalled: {self.count} consecutive steps shorter than {self.short_step:.3g} (the "
            f"last {t - t_old:.3g})"
        )
        kink = self.kink(t, q, v)
        if kink:
            reason += kink
        raise SimulationError(reason, t, q, v)

    def kink(self, t: float, q: np.ndarray, v: np.ndarray) -> str:
        """The largest relative change of a gradient row between q and q +- KINK_PROBE L v/|v|,
        described if above KINK_JUMP, else ""."""
        speed = float(np.abs(v).max())
        if not speed > 0.0:
            return ""
        G = self.gradient(t, q, v)  # noqa: N806
        norms = np.maximum(np.abs(G).max(axis=1), np.finfo(float).tiny)
        worst, row = 0.0, -1
        for sign in (1.0, -1.0):
            probe = q + sign * KINK_PROBE * self.length * v / speed
            change = np.abs(self.gradient(t, probe, v) - G).max(axis=1) / norms
            i = int(np.argmax(change))
            if change[i] > worst:
                worst, row = float(change[i]), i
        if worst <= KINK_JUMP:
            return ""
        return (
            f"; the gradient of constraint {row} changes by {worst:.3g} (relative) within "
            f"{KINK_PROBE:g} L of q along v: its gap has a kink there (the contract requires "
            "C^1 gaps)"
        )
