"""One definition of an impact event, so that impact counts compare across methods.

The raw impact logs of the methods do not count the same thing: an event-driven run logs each
located impact once, Moreau-Jean logs every step on which a constraint takes an impulse (a
resting contact: every step), Paoli-Schatzman logs the steps on which the projection acts (two
consecutive steps per impact). Counted raw, a ball in a box gives 36 "impacts" with one scheme
and 18 with another. The rule here:

* an **impact event** is a cluster of log entries of one constraint whose consecutive entries
  are at most ``1.5 h`` apart (consecutive steps: no free step between them) -- the contact did
  not open in between; a cluster separated from the next by at least one free step (free flight)
  is a separate event. Event-driven runs locate each impact: every entry is an event;
* a **contact phase** is an event whose cluster spans more than :data:`IMPACT_STEPS` steps
  (longer than any scheme needs to resolve one impact: Paoli-Schatzman acts on two consecutive
  steps), i.e. a persistent (resting or sliding) contact; its duration is
  ``last - first + h``. Contact phases are reported apart (their number and the total time in
  contact); each also counts as one impact event, the impact that closed it. An event-driven run
  reports its persistent contacts itself (``stats["contact_phases"]`` and
  ``stats["contact_duration"]``: the phases of its acceleration-level contact dynamics).

The raw log stays available (``Trajectory.impacts``, and the ``impact_log_entries`` column of
the result tables).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .trajectory import Trajectory

#: Clusters of at most this many consecutive-step entries are impacts, longer ones contact phases.
IMPACT_STEPS = 2
#: Entries at most this many steps apart belong to one cluster (consecutive steps; the factor
#: absorbs the rounding of t0 + k h).
CLUSTER_STEPS = 1.5


class ImpactEvents(NamedTuple):
    """Impact events of a run (see the module docstring).

    Attributes
    ----------
    impacts : int
        Number of impact events (contact phases included, one each).
    contact_phases : int
        Number of persistent-contact phases.
    contact_time : float
        Total duration of the contact phases.
    times : ndarray, shape (impacts,)
        Time of each event (its first entry), increasing.
    """

    impacts: int
    contact_phases: int
    contact_time: float
    times: np.ndarray


def impact_events(trajectory: Trajectory) -> ImpactEvents:
    """Cluster the impact log of ``trajectory`` into impact events and contact phases.

    A time-stepping run (``trajectory.h`` set) is clustered by the rule of the module docstring;
    an event-driven run (``trajectory.h`` None) counts each log entry as an event and takes its
    contact phases from its stats. Entries beyond the log's capacity are not seen: a run whose
    log overflowed (``impacts.total > len(impacts.t)``) is counted from the entries kept.
    """
    log, h = trajectory.impacts, trajectory.h
    t = np.asarray(log.t, dtype=float)
    constraint = np.asarray(log.constraint)
    if h is None:
        stats = trajectory.stats
        return ImpactEvents(
            len(t),
            int(stats.get("contact_phases", 0)),
            float(stats.get("contact_duration", 0.0)),
            np.sort(t),
        )
    if not (math.isfinite(h) and h > 0):
        raise ValueError(f"trajectory.h must be a finite positive number or None, got {h!r}")
    starts, phases, contact_time = [], 0, 0.0
    for index in np.unique(constraint):
        times = np.sort(t[constraint == index])
        breaks = np.flatnonzero(np.diff(times) > CLUSTER_STEPS * h) + 1
        for cluster in np.split(times, breaks):
            starts.append(cluster[0])
            if len(cluster) > IMPACT_STEPS:
                phases += 1
                contact_time += float(cluster[-1] - cluster[0]) + h
    return ImpactEvents(len(starts), phases, contact_time, np.sort(np.asarray(starts, dtype=float)))
