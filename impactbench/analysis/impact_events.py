"""One definition of an impact event, so that impact counts compare across methods.

The raw impact logs of the methods do not count the same thing: an event-driven run logs each
located impact once, Moreau-Jean logs every step on which a constraint takes an impulse (a
resting contact: every step), Paoli-Schatzman logs the steps on which the projection acts (two
consecutive steps per impact). Counted raw, a ball in a box gives 36 "impacts" with one scheme
and 18 with another. The rule here:

* an **impact** is a velocity jump of a contact that was approaching, normal velocity
  u^- = grad g_i . v < 0 before it -- one definition for both families. Event-driven runs
  locate each impact and log nothing else: every entry is an impact event. A time-stepping
  run's log entries are grouped into **clusters**: entries of one constraint whose consecutive
  entries are at most ``1.5 h`` apart (consecutive steps: no free step between them) -- the
  contact did not open in between; a cluster separated from the next by at least one free step
  (free flight) is a separate one. A cluster is an **impact event** when its first entry
  approaches (logged u^- < 0): the impact that closed it. A cluster whose first entry does not
  approach (u^- >= 0: an impulse that holds a contact already closed at rest, e.g. a block
  resting or sliding on its support from t0) is no impact, as the event-driven method, which
  closes such a contact without an impact, counts it;
* a **contact phase** is a cluster that spans more than :data:`IMPACT_STEPS` steps (longer
  than any scheme needs to resolve one impact: Paoli-Schatzman acts on two consecutive steps),
  i.e. a persistent (resting or sliding) contact; its duration is ``last - first + h``.
  Contact phases are reported apart (their number and the total time in contact), whether or
  not an impact closed them. An event-driven run reports its persistent contacts itself
  (``stats["contact_phases"]`` and ``stats["contact_duration"]``: the phases of its
  acceleration-level contact dynamics).

A persistent contact therefore counts one impact in both families when an approach closed it
and none when it was closed from the start. What still differs: a scheme whose resting contact
is inactive for one step (the step before left its gap positive) and closes again with the
speed one step of free flight gives (u^- of order h |g''|) logs a new approaching cluster, an
impact event that the event-driven run, whose contact stays closed, does not have.

The raw log stays available (``Trajectory.impacts``, and the ``impact_log_entries`` column of
the result tables).

Matching impacts of a run with reference impacts (:mod:`impactbench.analysis.metrics`, the studies)
uses the helpers here and nothing else: the window :func:`matching_window`
``w = max(WINDOW_STEPS h, WINDOW_FRACTION (T - t0))`` (the impact times of a first-order scheme
drift by a few h over a few impacts), the nearest impact :func:`nearest_impacts`, and the
reference impacts that can be matched one by one, :func:`isolated_impacts` (farther than
``2 w`` from both neighbours: not part of an accumulation).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..core.trajectory import Trajectory

#: Clusters of at most this many consecutive-step entries are impacts, longer ones contact phases.
IMPACT_STEPS = 2
#: Entries at most this many steps apart belong to one cluster (consecutive steps; the factor
#: absorbs the rounding of t0 + k h).
CLUSTER_STEPS = 1.5

#: Impact-matching window: ``WINDOW_STEPS`` steps of the run ...
WINDOW_STEPS = 10.0
#: ... and at least this fraction of the horizon T - t0.
WINDOW_FRACTION = 2e-2


class ImpactEvents(NamedTuple):
    """Impact events of a run (see the module docstring).

    Attributes
    ----------
    impacts : int
        Number of impact events (the contact phases closed by an approach included, one each).
    contact_phases : int
        Number of persistent-contact phases.
    contact_time : float
        Total duration of the contact phases.
    times : ndarray, shape (impacts,)
        Time of each event (its first entry), increasing.
    ends : ndarray, shape (impacts,)
        Time of the last entry of each event, in the order of ``times`` (equal to it for an
        event of one entry and for every event-driven event).
    first_entries : ndarray of int, shape (impacts,)
        Index in the impact log of the first entry of each event, in the order of ``times``.
    """

    impacts: int
    contact_phases: int
    contact_time: float
    times: np.ndarray
    ends: np.ndarray
    first_entries: np.ndarray


def impact_events(trajectory: Trajectory) -> ImpactEvents:
    """Cluster the impact log of ``trajectory`` into impact events and contact phases.

    A time-stepping run (``trajectory.h`` set) is clustered by the rule of the module docstring
    (a cluster opened by an entry that does not approach, u^- >= 0, is no impact event);
    an event-driven run (``trajectory.h`` None) counts each log entry as an event and takes its
    contact phases from its stats. Entries beyond the log's capacity are not seen: a run whose
    log overflowed (``impacts.total > len(impacts.t)``) is counted from the entries kept.
    """
    log, h = trajectory.impacts, trajectory.h
    t = np.asarray(log.t, dtype=float)
    constraint = np.asarray(log.constraint)
    if h is None:
        stats = trajectory.stats
        order = np.argsort(t, kind="stable")
        return ImpactEvents(
            len(t),
            int(stats.get("contact_phases", 0)),
            float(stats.get("contact_duration", 0.0)),
            t[order],
            t[order],
            order,
        )
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"trajectory.h must be a finite positive number or None, got {h!r}")
    # Entries ordered by constraint, then time (stable): a cluster is a run of entries of one
    # constraint whose consecutive times are at most CLUSTER_STEPS h apart.
    rows = np.lexsort((t, constraint))
    times, owners = t[rows], constraint[rows]
    opens = np.ones(len(rows), dtype=bool)
    opens[1:] = (owners[1:] != owners[:-1]) | (np.diff(times) > CLUSTER_STEPS * h)
    firsts = np.flatnonzero(opens)
    lasts = np.append(firsts[1:] - 1, len(rows) - 1)[: len(firsts)]
    starts, ends = times[firsts], times[lasts]
    phases = (lasts - firsts + 1) > IMPACT_STEPS
    contact_time = 0.0
    for duration in (ends - starts)[phases]:
        contact_time += float(duration) + h
    before = np.asarray(log.normal_velocity_before, dtype=float)
    if before.shape[0] == len(t):
        approaching = before[rows[firsts]] < 0.0
    else:  # a log kept without its normal velocities: no cluster can be told apart
        approaching = np.ones(len(firsts), dtype=bool)
    order = np.argsort(starts, kind="stable")
    order = order[approaching[order]]
    return ImpactEvents(
        len(order),
        int(phases.sum()),
        contact_time,
        starts[order],
        ends[order],
        rows[firsts][order].astype(np.int64),
    )


def matching_window(h: float | None, span: float) -> float:
    """Distance within which a run impact and a reference impact match.

    Parameters
    ----------
    h : float or None
        Step of a time-stepping run, None (or 0) for an adaptive run.
    span : float
        Horizon T - t0 of the run, >= 0.

    Returns
    -------
    float
        ``max(WINDOW_STEPS h, WINDOW_FRACTION span)``.
    """
    if not (math.isfinite(span) and span >= 0):
        raise ValueError(f"span must be finite and >= 0, got {span!r}")
    step = 0.0 if h is None or math.isnan(h) else float(h)
    return max(WINDOW_STEPS * step, WINDOW_FRACTION * span)


def nearest_impacts(impacts: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """For each target, the nearest element of the sorted, non-empty array ``impacts``.

    Parameters
    ----------
    impacts : ndarray, shape (k,)
        Increasing times, k >= 1.
    targets : ndarray, shape (m,)

    Returns
    -------
    ndarray, shape (m,)
        The nearest impact time of each target (the earlier one at a tie).
    """
    impacts = np.asarray(impacts, dtype=float)
    targets = np.asarray(targets, dtype=float)
    if impacts.size == 0:
        raise ValueError("impacts must not be empty")
    index = np.searchsorted(impacts, targets)
    left = impacts[np.clip(index - 1, 0, len(impacts) - 1)]
    right = impacts[np.clip(index, 0, len(impacts) - 1)]
    return np.where(np.abs(targets - left) <= np.abs(right - targets), left, right)


def isolated_impacts(times: np.ndarray, window: float) -> np.ndarray:
    """Mask of the sorted ``times`` farther than ``2 window`` from both neighbours, shape (k,)."""
    times = np.asarray(times, dtype=float)
    if times.size == 0:
        return np.zeros(0, dtype=bool)
    far = np.diff(times) > 2.0 * window
    return np.concatenate([[True], far]) & np.concatenate([far, [True]])
