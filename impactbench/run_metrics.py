"""Metrics of one run against a reference, by name, for the study runner (docs/design.md section 7).

A metric is a function ``(problem, trajectory, reference) -> float``. The reference is a
:class:`Reference`: the problem's closed form (:meth:`Reference.exact`) or a reference
trajectory, e.g. a high-accuracy event-driven run (:meth:`Reference.from_trajectory`).

Where errors are measured
-------------------------
Every error is measured on the run's own samples: for a time-stepping run with
``output_every=1`` that is every step, for an event-driven run its accepted solver steps and the
states just before and after each impact. The reference is evaluated at those times (a
reference trajectory through its dense output, or by linear interpolation when it has none). At
an event-driven impact the run holds two samples with the same time: the one before the impact
is compared with the reference just before its own nearest impact and the one after with the
reference just after it, so an impact located slightly early or late is counted by
``impact_time_error``, not as an O(1) velocity error over the preceding step.

Impact matching
---------------
The run's impacts are the times in its impact log (time-stepping: the end of each step with a
positive impulse, so a persistent contact logs every step). A run impact and a reference impact
match when they are at most ``w = max(10 h, 2e-2 (T - t0))`` apart (h the step used, 0 for
adaptive runs; the impact times of a first-order scheme drift by a few h over a few impacts).
Reference impacts closer than ``2 w`` to a neighbour (an accumulation) are not counted as
missed; run impacts are merged into clusters of entries less than ``w`` apart (so a persistent
contact is one cluster) and a cluster is spurious when no reference impact lies within ``w`` of
any of its entries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from . import fitting, metrics
from .energy import energy
from .problem import Problem
from .reference import Reference
from .trajectory import Trajectory

#: Number of leading reference impacts whose time error ``impact_time_error`` reports.
FIRST_IMPACTS = 5

#: Impact-matching window: ``WINDOW_STEPS`` steps of the run ...
WINDOW_STEPS = 10.0
#: ... and at least this fraction of the horizon T - t0.
WINDOW_FRACTION = 2e-2

#: Offset, relative to max(1, |t|), at which a reference is evaluated just before or after an
#: impact: a few ulps, so that the offset itself adds no error above round-off (an offset of
#: 1e-9 put a floor of |v| 1e-9 on every position error and |a| 1e-9 on velocity errors).
_SIDE_OFFSET = 16 * np.finfo(float).eps


class Metric(NamedTuple):
    """A named metric: ``function(problem, trajectory, reference) -> float``.

    ``needs_reference`` is False for metrics of the run alone (they ignore ``reference``, which
    may then be None).
    """

    function: Callable[[Problem, Trajectory, Reference | None], float]
    needs_reference: bool
    description: str


def _window(problem: Problem, trajectory: Trajectory) -> float:
    span = float(trajectory.t[-1] - problem.t0)
    return max(WINDOW_STEPS * (trajectory.h or 0.0), WINDOW_FRACTION * span)


def _nearest(times: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """For each target, the element of the sorted array ``times`` nearest to it."""
    index = np.searchsorted(times, targets)
    left = times[np.clip(index - 1, 0, len(times) - 1)]
    right = times[np.clip(index, 0, len(times) - 1)]
    return np.where(np.abs(targets - left) <= np.abs(right - targets), left, right)


def _reference_state(
    problem: Problem, trajectory: Trajectory, reference: Reference
) -> tuple[np.ndarray, np.ndarray]:
    """Reference (q, v) at the run's samples, impact-instant pairs matched side by side."""
    t = np.array(trajectory.t, dtype=float)
    pre = np.flatnonzero(t[1:] == t[:-1])
    impacts = reference.impact_times
    if pre.size and impacts is not None and impacts.size:
        nearest = _nearest(np.sort(impacts), t[pre])
        matched = np.abs(nearest - t[pre]) <= _window(problem, trajectory)
        pre, nearest = pre[matched], nearest[matched]
        offset = _SIDE_OFFSET * np.maximum(1.0, np.abs(nearest))
        t[pre] = np.minimum(t[pre], nearest) - offset
        t[pre + 1] = np.maximum(t[pre + 1], nearest) + offset
    return reference.state(np.clip(t, trajectory.t[0], trajectory.t[-1]))


def max_position_error(problem: Problem, trajectory: Trajectory, reference: Reference) -> float:
    """max over the samples of max_i |q_i - q_ref,i|.

    For the exact reference this equals :func:`impactbench.metrics.max_position_error`.
    """
    q_ref, _ = _reference_state(problem, trajectory, reference)
    return float(np.max(np.abs(trajectory.q - q_ref)))


def l1_velocity_error(problem: Problem, trajectory: Trajectory, reference: Reference) -> float:
    """Integral over [t0, T] of max_i |v_i - v_ref,i| (trapezoidal rule on the samples).

    Converges for time-stepping schemes, unlike the max norm of the velocity error.
    """
    _, v_ref = _reference_state(problem, trajectory, reference)
    err = np.max(np.abs(trajectory.v - v_ref), axis=1)
    return float(np.sum(0.5 * (err[1:] + err[:-1]) * np.diff(trajectory.t)))


def _velocity_graph(trajectory: Trajectory, reference: Reference) -> tuple[np.ndarray, np.ndarray]:
    """The reference velocity's graph at the run's sample times, jumps as vertical segments.

    Its vertices: the reference at the distinct sample times of the run, and at every
    reference impact t* in (t0, T] the two vertices (t*, v(t*-)) and (t*, v(t*+)).
    """
    t0, t_end = float(trajectory.t[0]), float(trajectory.t[-1])
    samples = np.unique(trajectory.t)
    impacts = np.empty(0) if reference.impact_times is None else np.sort(reference.impact_times)
    impacts = impacts[(impacts > t0) & (impacts <= t_end)]
    before = impacts - _SIDE_OFFSET * np.maximum(1.0, np.abs(impacts))
    times = np.concatenate([np.maximum(before, t0), impacts, samples])
    _, v = reference.state(times)
    rank = np.concatenate([np.zeros(impacts.size), np.ones(impacts.size), np.full(samples.size, 2)])
    order = np.lexsort((rank, np.concatenate([impacts, impacts, samples])))
    return np.concatenate([impacts, impacts, samples])[order], v[order]


def hausdorff_velocity_distance(
    problem: Problem, trajectory: Trajectory, reference: Reference
) -> float:
    """Hausdorff distance between the graphs of the run's and the reference's velocity.

    Scaled units: time divided by the horizon T - t0 and velocity by V, the largest
    |v_ref,i| on the reference graph (1 if that is 0), so a velocity jump located a time d
    late costs d / (T - t0). The run's graph is the polyline through its samples (its jumps
    are the segments across the steps where they happen, vertical for the before/after pairs
    of an event-driven run), the reference's is :func:`_velocity_graph`, and the distance is
    :func:`impactbench.metrics.graph_distance` (max norm in the (t, v_i) plane, largest over
    the components v_i). Unlike the max norm of the velocity error it converges through
    impacts.
    """
    t_ref, v_ref = _velocity_graph(trajectory, reference)
    t0 = float(trajectory.t[0])
    span = float(trajectory.t[-1]) - t0
    if span <= 0:
        return 0.0
    speed = float(np.max(np.abs(v_ref))) or 1.0
    return metrics.graph_distance(
        (trajectory.t - t0) / span, trajectory.v / speed, (t_ref - t0) / span, v_ref / speed
    )


def position_error_at_end(problem: Problem, trajectory: Trajectory, reference: Reference) -> float:
    """max_i |q_i(T) - q_ref,i(T)| at the final time T."""
    q_ref, _ = reference.state(trajectory.t[-1:])
    return float(np.max(np.abs(trajectory.q[-1] - q_ref[0])))


def velocity_error_at_end(problem: Problem, trajectory: Trajectory, reference: Reference) -> float:
    """max_i |v_i(T) - v_ref,i(T)| at the final time T."""
    _, v_ref = reference.state(trajectory.t[-1:])
    return float(np.max(np.abs(trajectory.v[-1] - v_ref[0])))


def energy_error_at_end(problem: Problem, trajectory: Trajectory, reference: Reference) -> float:
    """|E(T) - E_ref(T)|, E the mechanical energy (kinetic plus potential)."""
    q_ref, v_ref = reference.state(trajectory.t[-1:])
    run = problem.energy(trajectory.q[-1], trajectory.v[-1])
    return abs(run - problem.energy(q_ref[0], v_ref[0]))


def max_energy_increase(
    problem: Problem, trajectory: Trajectory, reference: Reference | None
) -> float:
    """max(0, largest increase of the mechanical energy from one sample to the next).

    NaN (not applicable) for a run whose output velocity the scheme does not define as part of
    its state (``trajectory.stats["velocity_output"]`` other than ``"state"``): Paoli-Schatzman's
    central difference (q^{k+1} - q^{k-1}) / (2h) straddles an impact at one sample, where it is
    O(1) wrong, so an "energy" computed from it is not the energy of anything.
    """
    if trajectory.stats.get("velocity_output", "state") != "state":
        return float("nan")
    e = energy(problem, trajectory)
    return float(max(0.0, np.max(np.diff(e), initial=0.0)))


def energy_at_end(problem: Problem, trajectory: Trajectory, reference: Reference | None) -> float:
    """Mechanical energy E(T) = v^T M v / 2 + potential at the last sample (NaN where the
    output velocity is not part of the scheme's state, as for :func:`max_energy_increase`)."""
    if trajectory.stats.get("velocity_output", "state") != "state":
        return float("nan")
    return float(problem.energy(trajectory.q[-1], trajectory.v[-1]))


def max_penetration(problem: Problem, trajectory: Trajectory, reference: Reference | None) -> float:
    """max(0, -min g_i(q)) over the samples (:func:`impactbench.metrics.max_penetration`)."""
    return metrics.max_penetration(problem, trajectory)


def late_penetration(
    problem: Problem, trajectory: Trajectory, reference: Reference | None
) -> float:
    """max(0, -min g_i(q)) over the samples of the second half of the run, t >= (t0 + T)/2.

    The depth a resting or sliding contact settles to (or drifts to), without the transient
    penetrations of the impacts before it.
    """
    t = trajectory.t
    late = t >= 0.5 * (t[0] + t[-1])
    return float(np.max(metrics.penetration_depths(problem, trajectory.q[late]), initial=0.0))


def _isolated(times: np.ndarray, window: float) -> np.ndarray:
    """Mask of the sorted ``times`` farther than 2 window from both neighbours."""
    gaps = np.diff(times)
    far = gaps > 2.0 * window
    return np.concatenate([[True], far]) & np.concatenate([far, [True]])


def impact_time_error(problem: Problem, trajectory: Trajectory, reference: Reference) -> float:
    """Largest distance from the first isolated reference impacts to the nearest run impact.

    Over the first ``FIRST_IMPACTS`` isolated reference impacts; NaN when there are none or the
    run has no impact.
    """
    ref = _reference_impacts(reference)
    run = np.sort(trajectory.impacts.t)
    if ref.size == 0 or run.size == 0:
        return float("nan")
    first = ref[_isolated(ref, _window(problem, trajectory))][:FIRST_IMPACTS]
    if first.size == 0:
        return float("nan")
    return float(np.max(np.abs(_nearest(run, first) - first)))


def missed_impacts(problem: Problem, trajectory: Trajectory, reference: Reference) -> float:
    """Number of isolated reference impacts with no run impact within the window."""
    ref = _reference_impacts(reference)
    window = _window(problem, trajectory)
    ref = ref[_isolated(ref, window)]
    run = np.sort(trajectory.impacts.t)
    if ref.size == 0:
        return 0.0
    if run.size == 0:
        return float(ref.size)
    distance = np.abs(_nearest(run, ref) - ref)
    return float(np.count_nonzero(distance > window))


def spurious_impacts(problem: Problem, trajectory: Trajectory, reference: Reference) -> float:
    """Number of clusters of run impacts with no reference impact within the window."""
    ref = _reference_impacts(reference)
    run = np.sort(trajectory.impacts.t)
    if run.size == 0:
        return 0.0
    if ref.size == 0:
        ref = np.array([np.inf])
    window = _window(problem, trajectory)
    matched = np.abs(_nearest(ref, run) - run) <= window
    cluster = np.concatenate([[0], np.cumsum(np.diff(run) >= window)])
    found = np.zeros(cluster[-1] + 1, dtype=bool)
    np.logical_or.at(found, cluster, matched)
    return float(np.count_nonzero(~found))


def _reference_impacts(reference: Reference) -> np.ndarray:
    if reference.impact_times is None:
        raise ValueError(f"the {reference.kind} reference does not know its impact times")
    return np.sort(reference.impact_times)


#: The metrics a run can ask for, by name (the column names of the result tables).
METRICS: dict[str, Metric] = {
    "max_position_error": Metric(
        max_position_error, True, "max over the samples of the position error (max norm)"
    ),
    "l1_velocity_error": Metric(
        l1_velocity_error, True, "integral over [t0, T] of the velocity error (max norm)"
    ),
    "position_error_at_end": Metric(
        position_error_at_end, True, "position error at the final time T"
    ),
    "velocity_error_at_end": Metric(
        velocity_error_at_end, True, "velocity error at the final time T"
    ),
    "energy_error_at_end": Metric(
        energy_error_at_end, True, "mechanical energy error at the final time T"
    ),
    "impact_time_error": Metric(
        impact_time_error, True, f"largest error in the first {FIRST_IMPACTS} impact times"
    ),
    "missed_impacts": Metric(
        missed_impacts, True, "isolated reference impacts the run did not reproduce"
    ),
    "spurious_impacts": Metric(
        spurious_impacts, True, "run impacts (clusters) with no reference impact nearby"
    ),
    "max_penetration": Metric(max_penetration, False, "max(0, -min g(q)) over the samples"),
    "late_penetration": Metric(
        late_penetration, False, "max(0, -min g(q)) over the second half of the run"
    ),
    "max_energy_increase": Metric(
        max_energy_increase,
        False,
        "largest energy increase between consecutive samples (NaN: velocity not a state)",
    ),
    "energy_at_end": Metric(
        energy_at_end, False, "mechanical energy at the final time T (NaN: velocity not a state)"
    ),
    "hausdorff_velocity_distance": Metric(
        hausdorff_velocity_distance,
        True,
        "Hausdorff distance between the velocity graphs (t / (T - t0), v / max |v_ref|)",
    ),
}

#: The unit of each error metric, which sets its floor (:func:`error_floor`).
ERROR_UNITS = {
    "max_position_error": "position",
    "position_error_at_end": "position",
    "velocity_error_at_end": "velocity",
    "l1_velocity_error": "velocity x time",
    "impact_time_error": "time",
    "hausdorff_velocity_distance": "scaled",
}

#: Samples of the reference (uniform in time, plus its impacts) that measure its scales.
SCALE_SAMPLES = 2001


def error_floor(metric: str, problem: Problem, reference: Reference, t_end: float) -> float:
    """Smallest value of an error metric that says something about a run.

    :func:`impactbench.fitting.error_floor` (max(100 eps S, 10 A)) with the metric's scale S
    and the reference's claimed accuracy A (:attr:`Reference.accuracy`, absolute in q and v;
    NaN counts as 0) in the metric's unit. With Q and V the largest |q_i| and |v_i| of the
    reference on [t0, t_end] (sampled at :data:`SCALE_SAMPLES` times and its impacts) and
    tau = t_end - t0: position S = Q, accuracy A; velocity S = V, A; velocity x time (L1)
    S = V tau, A tau; time S = max(|t0|, |t_end|), A / V (an impact located from states
    accurate to A, crossed at speed about V); scaled (the Hausdorff distance, see
    :func:`hausdorff_velocity_distance`) S = max(1, |t_end| / tau), A / V.

    Raises
    ------
    ValueError
        For a metric that is not an error against the reference (not in :data:`ERROR_UNITS`).
    """
    if metric not in ERROR_UNITS:
        raise ValueError(f"metric must be one of {sorted(ERROR_UNITS)}, got {metric!r}")
    t0 = float(problem.t0)
    times = np.linspace(t0, t_end, SCALE_SAMPLES)
    if reference.impact_times is not None:
        impacts = np.asarray(reference.impact_times, dtype=float)
        times = np.union1d(times, impacts[(impacts >= t0) & (impacts <= t_end)])
    q, v = reference.state(times)
    size, speed, tau = float(np.max(np.abs(q))), float(np.max(np.abs(v))), t_end - t0
    accuracy = 0.0 if np.isnan(reference.accuracy) else float(reference.accuracy)
    per_speed = accuracy / speed if speed > 0 else 0.0
    scale, claimed = {
        "position": (size, accuracy),
        "velocity": (speed, accuracy),
        "velocity x time": (speed * tau, accuracy * tau),
        "time": (max(abs(t0), abs(t_end)), per_speed),
        "scaled": (max(1.0, abs(t_end) / tau), per_speed),
    }[ERROR_UNITS[metric]]
    return fitting.error_floor(scale, claimed)
