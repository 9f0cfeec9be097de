"""Metrics of a run against a reference, by name, and the graph distance (docs/design.md s. 7).

A metric is a function ``(problem, trajectory, reference) -> float``. The reference is a
:class:`Reference`: the problem's closed form (:meth:`Reference.exact`) or a reference
trajectory, e.g. a high-accuracy event-driven run (:meth:`Reference.from_trajectory`).

Where errors are measured
-------------------------
Every error over time (:func:`max_position_error`, :func:`l1_velocity_error`,
:func:`hausdorff_velocity_distance`) is measured on one grid for every method: the
:data:`ERROR_GRID_POINTS` uniform times over [t0, T] (:func:`error_grid`, 10^4 intervals),
joined with the run's own sample times and the impact times of the run and of the reference
(:func:`error_nodes`), through each run's own continuous extension (:func:`run_state`):

* a run with a dense output (``Trajectory.dense``, e.g. ``EventDriven(dense_output=True)``) is
  evaluated through it: the event-driven method's solver interpolants across its restarts and
  impacts, kept by the run itself (:func:`keeping_dense_output`), so its error between accepted
  steps is seen;
* any other run through the polyline of its samples: for a time-stepping scheme the
  piecewise-linear interpolant of (t_k, q_k, v_k), the continuous extension the scheme defines
  (a velocity jump inside a step is the ramp between the two samples around it); at a pair of
  samples with the same time (an event-driven impact) the left and right limits are the two
  samples.

At an impact time (of the run or of the reference) both sides are evaluated: the error just
before from the left limits of the run and of the reference, just after from their right
limits. An impact located a time d late therefore costs its jump times d in the L1 velocity
error (the trapezoidal rule on these nodes integrates exactly across the mismatch), and the max
position error, position being continuous, is not affected by the side. The dense output and
the samples are one run's (:func:`impactbench.bench.runner.perform` times the run that keeps
its dense output and measures that run), so the dense output reproduces the samples.

Impact matching
---------------
The run's impacts are the times in its impact log (time-stepping: the end of each step with a
positive impulse, so a persistent contact logs every step). A run impact and a reference impact
match when they are at most ``w = max(10 h, 2e-2 (T - t0))`` apart
(:func:`impactbench.analysis.impact_events.matching_window`; h the step used, 0 for adaptive runs).
Reference impacts closer than ``2 w`` to a neighbour (an accumulation) are not counted as
missed; the run's impacts are its impact events
(:func:`impactbench.analysis.impact_events.impact_events`: a persistent contact is one event) and
an event is spurious when no reference impact lies within ``w`` of it. The window and the
nearest-impact search are those of
:mod:`impactbench.analysis.impact_events`.

Graph distance
--------------
:func:`graph_distance` is the Hausdorff distance between the graphs of two piecewise-linear
functions of time, the velocity error that converges through impacts: a time-stepping velocity
jumps one step late or early, which costs O(1) in the max norm for any h but only the time
shift in the graph distance (Monteiro Marques 1987; Acary 2012, Appl. Numer. Math. 62, for
event-capturing schemes).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ..core._jit import kernel
from ..core.dense import DenseOutput
from ..core.energy import energy
from ..core.method import Method
from ..core.problem import Problem
from ..core.trajectory import Trajectory
from . import fitting
from .impact_events import impact_events, isolated_impacts, matching_window, nearest_impacts
from .reference import Reference

#: Relative accuracy to which :func:`graph_distance` resolves the supremum along segments.
GRAPH_RTOL = 1e-3

#: Number of leading reference impacts whose time error ``impact_time_error`` reports.
FIRST_IMPACTS = 5

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
    return matching_window(trajectory.h, float(trajectory.t[-1] - problem.t0))


#: Points of the uniform error grid over [t0, T] (:func:`error_grid`): 10^4 intervals.
ERROR_GRID_POINTS = 10_001


def error_grid(t0: float, t_end: float, points: int = ERROR_GRID_POINTS) -> np.ndarray:
    """The uniform error grid: ``points`` times from t0 to t_end, both included."""
    if not (math.isfinite(t0) and math.isfinite(t_end) and t_end >= t0):
        raise ValueError(f"t_end must be finite and >= t0 = {t0!r}, got {t_end!r}")
    if points < 2:
        raise ValueError(f"points must be >= 2, got {points!r}")
    grid = np.linspace(t0, t_end, points)
    grid[-1] = t_end
    return grid


def _run_impacts(trajectory: Trajectory) -> np.ndarray:
    """Times where the run's extension may jump: its dense output's impacts, or the times of
    pairs of samples."""
    if trajectory.dense is not None:
        return np.asarray(trajectory.dense.impacts, dtype=float)
    t = trajectory.t
    return np.unique(t[1:][t[1:] == t[:-1]])


def error_nodes(trajectory: Trajectory, reference: Reference) -> tuple[np.ndarray, np.ndarray]:
    """The times errors are measured at, and which of them are impact times.

    Returns
    -------
    nodes : ndarray, shape (k,)
        Sorted distinct times in [t0, T] (t0, T the run's first and last sample): the
        :func:`error_grid`, the run's samples and the impact times of the run and the reference.
    jump : ndarray of bool, shape (k,)
        True at an impact time of the run or the reference, where both sides are evaluated.
    """
    t0, t_end = float(trajectory.t[0]), float(trajectory.t[-1])
    impacts = _run_impacts(trajectory)
    if reference.impact_times is not None:
        impacts = np.concatenate([impacts, np.asarray(reference.impact_times, dtype=float)])
    impacts = np.unique(impacts[(impacts > t0) & (impacts <= t_end)])
    nodes = np.unique(np.concatenate([error_grid(t0, t_end), trajectory.t, impacts]))
    return nodes, np.isin(nodes, impacts)


def _polyline(t: np.ndarray, y: np.ndarray, times: np.ndarray, side: str) -> np.ndarray:
    """The polyline through (t_k, y_k) at ``times`` (within [t_0, t_-1]); at a pair of samples
    with one time, the first is the left limit and the last the right value."""
    if t.size == 1:
        return np.repeat(y[:1], times.size, axis=0)
    if side == "right":
        k = np.clip(np.searchsorted(t, times, side="right") - 1, 0, t.size - 2)
    else:
        k = np.clip(np.searchsorted(t, times, side="left") - 1, 0, t.size - 2)
    span = t[k + 1] - t[k]
    weight = np.divide(times - t[k], span, out=np.ones_like(times), where=span > 0)
    weight = np.clip(weight, 0.0, 1.0)[:, None]
    return (1.0 - weight) * y[k] + weight * y[k + 1]


def run_state(
    trajectory: Trajectory, times: np.ndarray, side: str = "right"
) -> tuple[np.ndarray, np.ndarray]:
    """The run's continuous extension (q, v) at ``times``: its dense output when it has one,
    else the polyline of its samples; ``side`` "right" (the value after an impact) or "left"
    (the left limit). Shapes (len(times), n)."""
    if side not in ("right", "left"):
        raise ValueError(f"side must be 'right' or 'left', got {side!r}")
    times = np.asarray(times, dtype=float)
    if trajectory.dense is not None:
        return trajectory.dense(times) if side == "right" else trajectory.dense.left(times)
    return (
        _polyline(trajectory.t, trajectory.q, times, side),
        _polyline(trajectory.t, trajectory.v, times, side),
    )


def _reference_left(reference: Reference, times: np.ndarray, t0: float) -> np.ndarray:
    """Left limits (q, v) of the reference at ``times``: its dense output's, else its state a few
    ulps before (not before t0)."""
    if isinstance(reference.state, DenseOutput):
        return reference.state.left(times)
    before = times - _SIDE_OFFSET * np.maximum(1.0, np.abs(times))
    return reference.state(np.maximum(before, t0))


class _Sides(NamedTuple):
    """Run and reference at the error nodes: right values and left limits (left = right away
    from the impact times)."""

    nodes: np.ndarray
    jump: np.ndarray
    run_right: tuple[np.ndarray, np.ndarray]
    run_left: tuple[np.ndarray, np.ndarray]
    ref_right: tuple[np.ndarray, np.ndarray]
    ref_left: tuple[np.ndarray, np.ndarray]


def _sides(trajectory: Trajectory, reference: Reference) -> _Sides:
    nodes, jump = error_nodes(trajectory, reference)
    t0, t_end = float(trajectory.t[0]), float(trajectory.t[-1])
    run_right = run_state(trajectory, nodes, "right")
    ref_right = reference.state(np.clip(nodes, t0, t_end))
    run_left = tuple(np.copy(a) for a in run_right)
    ref_left = tuple(np.copy(a) for a in ref_right)
    if jump.any():
        at = nodes[jump]
        for left, values in (
            (run_left, run_state(trajectory, at, "left")),
            (ref_left, _reference_left(reference, at, t0)),
        ):
            left[0][jump], left[1][jump] = values
    return _Sides(nodes, jump, run_right, run_left, ref_right, ref_left)


#: How the errors over time are measured, as the studies' reports state it.
ERROR_GRID_TEXT = (
    f"Errors over time (max position error, L1 velocity error, Hausdorff velocity distance) "
    f"are measured on one grid for every method: {ERROR_GRID_POINTS} uniform times over "
    "[t0, T], joined with the run's own samples and the impact times of the run and of the "
    "reference, through each method's continuous extension -- the event-driven method's dense "
    "output (its solver interpolants across restarts and impacts, kept by the timed run "
    "itself: errors, costs and counts come from one trajectory), the time-steppers' "
    "piecewise-linear interpolant of their steps."
)


#: The metrics measured over time on the error grid (:func:`error_nodes`): the ones that see a
#: run between its samples, through its continuous extension.
GRID_METRICS = frozenset({"max_position_error", "l1_velocity_error", "hausdorff_velocity_distance"})


def keeping_dense_output(method: Method) -> Method:
    """``method`` set to keep its dense output in its own run, for the error metrics.

    A method that offers a dense output (a ``dense_output`` parameter, as
    :class:`impactbench.methods.EventDriven`) set to False is returned as a new instance with
    ``dense_output=True`` and the same other parameters: the same algorithm on the same engine,
    whose run is the same trajectory (samples, impacts, counts) with its interpolants kept as
    ``Trajectory.dense``. Measure and time that run, so that the errors, the cost and the counts
    are one trajectory's. Any other method is returned as it is (a time-stepping run's
    continuous extension is the polyline of its samples).
    """
    parameters = method.parameters()
    if parameters.get("dense_output", True) is not False:
        return method
    return type(method)(**{**parameters, "dense_output": True})


def _or_exact(problem: Problem, trajectory: Trajectory, reference: Reference | None) -> Reference:
    """``reference``, or the closed form of ``problem`` when it is None (ValueError if none)."""
    if reference is not None:
        return reference
    return Reference.exact(problem, float(trajectory.t[-1]))


def max_position_error(
    problem: Problem, trajectory: Trajectory, reference: Reference | None = None
) -> float:
    """max over the error nodes of max_i |q_i - q_ref,i| (default reference: the closed form).

    The run through its continuous extension on the nodes of :func:`error_nodes` (see the module
    notes); with a dense output, its own samples count too.
    """
    reference = _or_exact(problem, trajectory, reference)
    sides = _sides(trajectory, reference)
    error = max(
        float(np.max(np.abs(sides.run_right[0] - sides.ref_right[0]))),
        float(np.max(np.abs(sides.run_left[0] - sides.ref_left[0]))),
    )
    if trajectory.dense is not None:
        t0, t_end = float(trajectory.t[0]), float(trajectory.t[-1])
        q_ref, _ = reference.state(np.clip(trajectory.t, t0, t_end))
        error = max(error, float(np.max(np.abs(trajectory.q - q_ref))))
    return error


def l1_velocity_error(
    problem: Problem, trajectory: Trajectory, reference: Reference | None = None
) -> float:
    """Integral over [t0, T] of max_i |v_i - v_ref,i| (trapezoidal rule on the error nodes).

    The run through its continuous extension on the nodes of :func:`error_nodes`; on each
    interval between nodes the rule takes the right values at its start and the left limits at
    its end, so an impact located a time d away from the reference's costs |jump| d. Default
    reference: the closed form. Converges for time-stepping schemes, unlike the max norm of the
    velocity error.
    """
    sides = _sides(trajectory, _or_exact(problem, trajectory, reference))
    after = np.max(np.abs(sides.run_right[1] - sides.ref_right[1]), axis=1)
    before = np.max(np.abs(sides.run_left[1] - sides.ref_left[1]), axis=1)
    return float(np.sum(0.5 * (after[:-1] + before[1:]) * np.diff(sides.nodes)))


def _graph(nodes: np.ndarray, jump: np.ndarray, right: np.ndarray, left: np.ndarray):
    """Vertices of a velocity graph: the values at the nodes, the left limit first at a jump."""
    times = np.concatenate([nodes[jump], nodes])
    values = np.concatenate([left[jump], right])
    rank = np.concatenate([np.zeros(int(jump.sum())), np.ones(nodes.size)])
    order = np.lexsort((rank, times))
    return times[order], values[order]


def hausdorff_velocity_distance(
    problem: Problem, trajectory: Trajectory, reference: Reference
) -> float:
    """Hausdorff distance between the graphs of the run's and the reference's velocity.

    Scaled units: time divided by the horizon T - t0 and velocity by V, the largest
    |v_ref,i| on the reference graph (1 if that is 0), so a velocity jump located a time d
    late costs d / (T - t0). Each graph is the polyline through its values at the nodes of
    :func:`error_nodes` (the run through its continuous extension), with a vertical segment
    from the left limit to the right value at each impact time; the distance is
    :func:`graph_distance` (max norm in the (t, v_i) plane, largest over the components v_i).
    Unlike the max norm of the velocity error it converges through impacts.
    """
    t0 = float(trajectory.t[0])
    span = float(trajectory.t[-1]) - t0
    if span <= 0:
        return 0.0
    sides = _sides(trajectory, reference)
    t_run, v_run = _graph(sides.nodes, sides.jump, sides.run_right[1], sides.run_left[1])
    t_ref, v_ref = _graph(sides.nodes, sides.jump, sides.ref_right[1], sides.ref_left[1])
    speed = float(np.max(np.abs(v_ref))) or 1.0
    return graph_distance((t_run - t0) / span, v_run / speed, (t_ref - t0) / span, v_ref / speed)


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


def penetration_depths(problem: Problem, q: np.ndarray, t: np.ndarray | None = None) -> np.ndarray:
    """Depth below the constraints at each sample, max(0, -min_i g_i(q)); q (N, n), result (N,).

    ``t``, shape (N,), the samples' times: required for a problem with moving obstacles, whose
    depth is max(0, -min_i g_i(t_k, q_k)); not read otherwise."""
    q = np.atleast_2d(q)
    if q.shape[0] == 0:
        return np.zeros(0)
    return np.maximum(0.0, -problem.gaps(q, t).min(axis=1))


def max_penetration(
    problem: Problem, trajectory: Trajectory, reference: Reference | None = None
) -> float:
    """max(0, -min g_i(q)) over the samples (``reference`` is ignored)."""
    return float(penetration_depths(problem, trajectory.q, trajectory.t).max())


def late_penetration(
    problem: Problem, trajectory: Trajectory, reference: Reference | None
) -> float:
    """max(0, -min g_i(q)) over the samples of the second half of the run, t >= (t0 + T)/2.

    The depth a resting or sliding contact settles to (or drifts to), without the transient
    penetrations of the impacts before it.
    """
    t = trajectory.t
    late = t >= 0.5 * (t[0] + t[-1])
    depths = penetration_depths(problem, trajectory.q[late], t[late])
    return float(np.max(depths, initial=0.0))


def impact_time_error(problem: Problem, trajectory: Trajectory, reference: Reference) -> float:
    """Largest distance from the first isolated reference impacts to the nearest run impact.

    Over the first ``FIRST_IMPACTS`` isolated reference impacts; NaN when there are none or the
    run has no impact.
    """
    ref = _reference_impacts(reference)
    run = np.sort(trajectory.impacts.t)
    if ref.size == 0 or run.size == 0:
        return float("nan")
    first = ref[isolated_impacts(ref, _window(problem, trajectory))][:FIRST_IMPACTS]
    if first.size == 0:
        return float("nan")
    return float(np.max(np.abs(nearest_impacts(run, first) - first)))


def missed_impacts(problem: Problem, trajectory: Trajectory, reference: Reference) -> float:
    """Number of isolated reference impacts with no run impact within the window."""
    ref = _reference_impacts(reference)
    window = _window(problem, trajectory)
    ref = ref[isolated_impacts(ref, window)]
    run = np.sort(trajectory.impacts.t)
    if ref.size == 0:
        return 0.0
    if run.size == 0:
        return float(ref.size)
    distance = np.abs(nearest_impacts(run, ref) - ref)
    return float(np.count_nonzero(distance > window))


def spurious_impacts(problem: Problem, trajectory: Trajectory, reference: Reference) -> float:
    """Number of impact events of the run with no reference impact within the window.

    The events are those of :func:`impactbench.analysis.impact_events.impact_events` (a persistent
    contact is one event); an event from ``first`` to ``last`` entry matches when a reference
    impact lies in [first - w, last + w].
    """
    ref = _reference_impacts(reference)
    events = impact_events(trajectory)
    if events.impacts == 0:
        return 0.0
    if ref.size == 0:
        return float(events.impacts)
    window = _window(problem, trajectory)
    # the first reference impact at or after first - w must not lie beyond last + w
    index = np.searchsorted(ref, events.times - window, side="left")
    candidate = ref[np.minimum(index, ref.size - 1)]
    matched = (index < ref.size) & (candidate <= events.ends + window)
    return float(np.count_nonzero(~matched))


def work_bytes(problem: Problem, trajectory: Trajectory, reference: Reference | None) -> float:
    """Bytes of the work buffers of a time-stepping run's loop (``stats["work_bytes"]``; the
    output arrays, which grow with the horizon, are left out), NaN where the method does not
    report them (``reference`` is ignored)."""
    value = trajectory.stats.get("work_bytes")
    return float("nan") if value is None else float(value)


def energy_creating_impacts(
    problem: Problem, trajectory: Trajectory, reference: Reference | None
) -> float:
    """Impacts whose law created kinetic energy (``stats["energy_creating_impacts"]``: the
    Newton-Coulomb law with e_N != e_T on a coupled Delassus matrix, docs/friction.md), NaN
    where the method does not report them (``reference`` is ignored)."""
    value = trajectory.stats.get("energy_creating_impacts")
    return float("nan") if value is None else float(value)


def largest_impact_energy_gain(
    problem: Problem, trajectory: Trajectory, reference: Reference | None
) -> float:
    """The largest kinetic energy created by one impact's law
    (``stats["largest_impact_energy_gain"]``, 0 when none created any), NaN where the method
    does not report it (``reference`` is ignored)."""
    value = trajectory.stats.get("largest_impact_energy_gain")
    return float("nan") if value is None else float(value)


def _reference_impacts(reference: Reference) -> np.ndarray:
    if reference.impact_times is None:
        raise ValueError(f"the {reference.kind} reference does not know its impact times")
    return np.sort(reference.impact_times)


#: The metrics a run can ask for, by name (the column names of the result tables).
METRICS: dict[str, Metric] = {
    "max_position_error": Metric(
        max_position_error, True, "max over the error grid of the position error (max norm)"
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
    "work_bytes": Metric(
        work_bytes, False, "bytes of the work buffers of the run's loop (output excluded)"
    ),
    "energy_creating_impacts": Metric(
        energy_creating_impacts, False, "impacts whose law created kinetic energy"
    ),
    "largest_impact_energy_gain": Metric(
        largest_impact_energy_gain, False, "largest kinetic energy created by one impact's law"
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

    :func:`impactbench.analysis.fitting.error_floor` (max(100 eps S, 10 A)) with the metric's scale
    S and the reference's claimed accuracy A (:attr:`Reference.accuracy`, absolute in q and v;
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


@kernel
def _segment_distance(px: float, py: float, x0: float, y0: float, x1: float, y1: float) -> float:
    """Max-norm distance from the point (px, py) to the segment from (x0, y0) to (x1, y1).

    max(|ax + s dx|, |ay + s dy|) is convex and piecewise linear in s in [0, 1]: its minimum is
    at an end or at a kink (a term is zero, or the two terms are equal in absolute value).
    """
    ax, ay = x0 - px, y0 - py
    dx, dy = x1 - x0, y1 - y0
    best = min(max(abs(ax), abs(ay)), max(abs(ax + dx), abs(ay + dy)))
    for k in range(4):
        if k == 0:
            num, den = -ax, dx
        elif k == 1:
            num, den = -ay, dy
        elif k == 2:
            num, den = ay - ax, dx - dy
        else:
            num, den = -(ax + ay), dx + dy
        if den != 0.0:
            s = num / den
            if 0.0 < s < 1.0:
                best = min(best, max(abs(ax + s * dx), abs(ay + s * dy)))
    return best


#: Segments per block of the polyline index of :func:`_point_distance`.
_BLOCK = 16


@kernel
def _blocks(by: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Smallest and largest value of each block of ``_BLOCK`` segments of a polyline."""
    segments = by.size - 1
    count = (segments + _BLOCK - 1) // _BLOCK
    low, high = np.empty(max(count, 1)), np.empty(max(count, 1))
    for k in range(count):
        first, last = k * _BLOCK, min((k + 1) * _BLOCK, segments)
        low[k], high[k] = by[first], by[first]
        for i in range(first + 1, last + 1):
            low[k] = min(low[k], by[i])
            high[k] = max(high[k], by[i])
    return low, high


@kernel
def _scan_block(
    px: float, py: float, bx: np.ndarray, by: np.ndarray, block: int, best: float
) -> float:
    """``best`` lowered to the distance to the segments of one block, if nearer."""
    first, last = block * _BLOCK, min((block + 1) * _BLOCK, bx.size - 1)
    for j in range(first, last):
        # a segment farther than best in time or in value cannot be nearer
        if bx[j] - px > best or px - bx[j + 1] > best:
            continue
        if min(by[j], by[j + 1]) - py > best or py - max(by[j], by[j + 1]) > best:
            continue
        best = min(best, _segment_distance(px, py, bx[j], by[j], bx[j + 1], by[j + 1]))
    return best


@kernel
def _point_distance(
    px: float,
    py: float,
    bx: np.ndarray,
    by: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    segment: int,
) -> float:
    """Max-norm distance from (px, py) to the polyline through (bx, by), bx non-decreasing.

    ``low``, ``high``: :func:`_blocks` of ``by``; ``segment``: a segment near px (any index
    is correct, a near one is fast). The blocks of segments are scanned outwards from it; a
    block whose value range lies farther than the best distance found is skipped, and the scan
    stops where the time distance alone exceeds it.
    """
    n = bx.size
    if n == 1:
        return max(abs(bx[0] - px), abs(by[0] - py))
    start = min(max(segment, 0), n - 2) // _BLOCK
    count = low.size
    best = np.inf
    k = start
    while k < count and bx[k * _BLOCK] - px <= best:
        if low[k] - py <= best and py - high[k] <= best:
            best = _scan_block(px, py, bx, by, k, best)
        k += 1
    k = start - 1
    while k >= 0 and px - bx[min((k + 1) * _BLOCK, n - 1)] <= best:
        if low[k] - py <= best and py - high[k] <= best:
            best = _scan_block(px, py, bx, by, k, best)
        k -= 1
    return best


@kernel
def _segment_bound(
    x0: float, y0: float, x1: float, y1: float, radius: float, bx: np.ndarray, by: np.ndarray
) -> float:
    """An upper bound of the distance from any point of a segment to the polyline (bx, by).

    The distance to one convex piece (a segment S_j) is convex along the segment, so it is at
    most its larger end value: the bound is the least of these over the pieces whose time range
    meets [x0 - radius, x1 + radius].
    """
    n = bx.size
    if n == 1:
        first = max(abs(bx[0] - x0), abs(by[0] - y0))
        return max(first, max(abs(bx[0] - x1), abs(by[0] - y1)))
    best = np.inf
    j = min(max(np.searchsorted(bx, x0 - radius) - 1, 0), n - 2)
    while j < n - 1 and bx[j] <= x1 + radius:
        first = _segment_distance(x0, y0, bx[j], by[j], bx[j + 1], by[j + 1])
        second = _segment_distance(x1, y1, bx[j], by[j], bx[j + 1], by[j + 1])
        best = min(best, max(first, second))
        j += 1
    return best


@kernel
def _directed_distance(
    ax: np.ndarray, ay: np.ndarray, bx: np.ndarray, by: np.ndarray, rtol: float
) -> float:
    """sup over the polyline A of the distance to the polyline B (both time-monotone).

    At the vertices of A the distance is exact. Along a segment of A from p0 to p1 it is at most
    max(d(p0), d(p1)) + (x1 - x0): for a fixed time the points within r of B form an interval
    (B restricted to a time window is connected), so the distance is quasi-convex on vertical
    lines, and it is 1-Lipschitz in time. A segment whose bound (that one, or
    :func:`_segment_bound`) exceeds (1 + rtol) times the largest distance found so far is
    bisected, so the result is within that factor of the supremum.
    """
    n = ax.size
    low, high = _blocks(by)
    phi = np.empty(n)
    best = 0.0
    segment = 0
    for i in range(n):
        while segment < bx.size - 2 and bx[segment + 1] < ax[i]:
            segment += 1
        phi[i] = _point_distance(ax[i], ay[i], bx, by, low, high, segment)
        best = max(best, phi[i])
    slack = 4.0 * np.finfo(np.float64).eps
    depth = 60
    stack = np.empty((2 * depth + 2, 4))
    for k in range(n - 1):
        x0, y0, x1, y1 = ax[k], ay[k], ax[k + 1], ay[k + 1]
        if max(phi[k], phi[k + 1]) + (x1 - x0) <= best * (1.0 + rtol) + slack:
            continue
        stack[0, 0], stack[0, 1], stack[0, 2], stack[0, 3] = 0.0, 1.0, phi[k], phi[k + 1]
        top = 1
        while top > 0:
            top -= 1
            u0, u1, f0, f1 = stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3]
            limit = best * (1.0 + rtol) + slack
            if max(f0, f1) + (u1 - u0) * (x1 - x0) <= limit:
                continue
            sx0, sy0 = x0 + u0 * (x1 - x0), y0 + u0 * (y1 - y0)
            sx1, sy1 = x0 + u1 * (x1 - x0), y0 + u1 * (y1 - y0)
            if _segment_bound(sx0, sy0, sx1, sy1, max(f0, f1), bx, by) <= limit:
                continue
            if u1 - u0 < 2.0**-depth:
                continue
            um = 0.5 * (u0 + u1)
            xm, ym = x0 + um * (x1 - x0), y0 + um * (y1 - y0)
            fm = _point_distance(xm, ym, bx, by, low, high, np.searchsorted(bx, xm) - 1)
            best = max(best, fm)
            stack[top, 0], stack[top, 1], stack[top, 2], stack[top, 3] = u0, um, f0, fm
            stack[top + 1, 0], stack[top + 1, 1] = um, u1
            stack[top + 1, 2], stack[top + 1, 3] = fm, f1
            top += 2
    return best


def graph_distance(
    t_a: np.ndarray, v_a: np.ndarray, t_b: np.ndarray, v_b: np.ndarray, rtol: float = GRAPH_RTOL
) -> float:
    """Hausdorff distance between the graphs of two piecewise-linear functions of time.

    Each graph is the polyline through its samples (t_k, v_k) in order; equal consecutive times
    give a vertical segment, which is how a jump enters a graph. The distance between points
    is the max norm max(|t - s|, |v - w|), and the Hausdorff distance is the larger of the two
    directed distances sup over one graph of the distance to the other. For vector values the
    result is the largest over the components of the distance between that component's
    graphs. Pass scaled coordinates (e.g. t / (T - t0), v / max |v|) so that the two terms of
    the norm are comparable.

    Parameters
    ----------
    t_a : ndarray, shape (k,)
        Non-decreasing sample times of the first function.
    v_a : ndarray, shape (k,) or (k, n)
        Its values.
    t_b : ndarray, shape (m,)
        Non-decreasing sample times of the second function.
    v_b : ndarray, shape (m,) or (m, n)
        Its values.
    rtol : float
        Relative accuracy of the result: the suprema along segments are resolved to within
        a factor 1 + rtol (values at the samples are exact).

    Returns
    -------
    float
        The distance, in the units of the coordinates given.
    """
    t_a, t_b = np.asarray(t_a, dtype=float), np.asarray(t_b, dtype=float)
    v_a = np.asarray(v_a, dtype=float).reshape(len(t_a), -1)
    v_b = np.asarray(v_b, dtype=float).reshape(len(t_b), -1)
    for name, t, v in (("t_a", t_a, v_a), ("t_b", t_b, v_b)):
        if t.ndim != 1 or t.size == 0:
            raise ValueError(f"{name} must be a non-empty 1-D array, got shape {t.shape}")
        if not (np.all(np.isfinite(t)) and np.all(np.isfinite(v))):
            raise ValueError(f"{name} and its values must be finite")
        if np.any(np.diff(t) < 0):
            raise ValueError(f"{name} must be non-decreasing")
    if v_a.shape[1] != v_b.shape[1]:
        raise ValueError(f"v_a and v_b must have as many components, got {v_a.shape}, {v_b.shape}")
    if not (math.isfinite(rtol) and rtol > 0):
        raise ValueError(f"rtol must be finite and > 0, got {rtol!r}")
    distance = 0.0
    for i in range(v_a.shape[1]):
        a, b = np.ascontiguousarray(v_a[:, i]), np.ascontiguousarray(v_b[:, i])
        distance = max(
            distance,
            _directed_distance(t_a, a, t_b, b, rtol),
            _directed_distance(t_b, b, t_a, a, rtol),
        )
    return float(distance)
