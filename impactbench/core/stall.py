"""Stall detection of an event-driven integration: steps that no longer advance t.

An adaptive solver facing a right-hand side that is discontinuous along the trajectory (a gap
with a kink, where its gradient jumps: a V-shaped floor at its apex) can keep accepting steps
far above round-off yet far too short to reach t_end in any time, of a length set by the
tolerances. The event loop
(:mod:`impactbench.core.events.loop`), compiled or run by scipy's solvers, counts its advances
(accepted steps and located events alike) in blocks of :data:`STALL_STEPS`; a block that
advanced t by less than

    STALL_STEPS max(STALL_ROUNDOFF eps max(|t0|, |t_end|), STALL_FRACTION (t_end - t_b))

(t_b the time at the block's start) stops the run: at that pace it would need more than
1 / :data:`STALL_FRACTION` further advances to reach t_end. The test is relative to the time
left, not to a tolerance or to ``min_impact_interval``: whatever the solver's settings, a run
cannot go on for ever. The mean over a block, not each step, is compared, so that an
accumulation of impacts (intervals shrinking geometrically, their sum that of the first few)
is left to the accumulation cut. The stop names t, q, v, the block's advance and, when a
constraint's gradient jumps near q along v (probed at q +- ``KINK_PROBE`` L v / |v|), the
constraint and the size of the jump (the contract requires C^1 gaps:
:class:`impactbench.core.problem.Problem`; :func:`kink`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._jit import kernel

#: Advances per block of the stall test.
STALL_STEPS = 1000

#: A block whose mean advance is below this fraction of the time left has stalled.
STALL_FRACTION = 1e-8

#: A mean advance below this many eps max(|t0|, |t_end|) is a stall whatever the time left.
STALL_ROUNDOFF = 8.0

#: Machine epsilon of float64 (a constant of the compiled loop).
EPS = float(np.finfo(float).eps)

#: The kink probe: the gradient is compared at q and at q +- KINK_PROBE L v / |v| (L the run's
#: length scale); a relative change above KINK_JUMP names a kink (a C^1 gap of curvature radius R
#: changes by KINK_PROBE L / R there, above KINK_JUMP only for R < 2e-3 L).
KINK_PROBE = 1e-3
KINK_JUMP = 0.5


@kernel
def stalled_block(t_start: float, t_now: float, t0: float, t_end: float) -> bool:
    """Whether a block of :data:`STALL_STEPS` advances from ``t_start`` to ``t_now`` has
    stalled (module docstring); numba compiles it into the event loop."""
    floor = STALL_ROUNDOFF * EPS * max(abs(t0), abs(t_end))
    pace = max(floor, STALL_FRACTION * (t_end - t_start))
    return t_now - t_start < STALL_STEPS * pace


def stall_reason(t_start: float, t_now: float) -> str:
    """The reason of a run stopped by :func:`stalled_block` (t, q, v are added by the
    :class:`impactbench.SimulationError`)."""
    return (
        f"stalled: {STALL_STEPS} consecutive steps advanced t by {t_now - t_start:.3g} from "
        f"t={t_start!r}, less than {STALL_FRACTION:g} of the time left to t_end each"
    )


def kink(
    gradient: Callable[[np.ndarray], np.ndarray], q: np.ndarray, v: np.ndarray, length: float
) -> str:
    """The largest relative change of a gradient row between q and q +- KINK_PROBE L v/|v|,
    described if above KINK_JUMP, else "".

    Parameters
    ----------
    gradient : callable
        ``gradient(q) -> (m, n)`` of the problem.
    q, v : ndarray, shape (n,)
        Where the run stalled.
    length : float
        The run's length scale L.
    """
    speed = float(np.abs(v).max())
    if not speed > 0.0:
        return ""
    G = np.asarray(gradient(q), dtype=float)  # noqa: N806
    norms = np.maximum(np.abs(G).max(axis=1), np.finfo(float).tiny)
    worst, row = 0.0, -1
    for sign in (1.0, -1.0):
        probe = q + sign * KINK_PROBE * length * v / speed
        change = np.abs(np.asarray(gradient(probe), dtype=float) - G).max(axis=1) / norms
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
