"""The data the trajectory figures draw, apart from the drawing (so that it can be tested).

* :func:`drawn`: a run through its continuous extension -- its dense output where it has one
  (``Trajectory.dense``: the event-driven method's solver interpolants, exact between its steps
  to the solver's accuracy), evaluated at :data:`DRAWN_POINTS` uniform times, its breaks, and at
  each impact both the left limit and the value after it (the jump drawn vertical); otherwise
  its samples, whose polyline is the continuous extension a time-stepping scheme defines.
* :func:`contact_states`: for a frictional problem, each contact's slip velocity W_T,i(q) v
  while it is closed, and its state (open, stick, slip) at each drawn time. A contact counts as
  closed where its gap is at most ``max(CLOSED_FRACTION max_t g_i, CLOSED_FLOOR L)``,
  L = max(1, max |q|) (the run's largest opening of that contact sets the scale; the floor
  absorbs the drift of a closed contact), and as sticking where, closed, its slip speed is at
  most ``STICK_FRACTION max |v|``.
* :func:`run_labels`, :func:`reference_label`: legend entries, each one once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ..analysis.reference import Reference
from ..core.problem import Problem, sample_times
from ..core.trajectory import Trajectory
from .style import variant_label

#: Uniform times at which a run's dense output is drawn (besides its breaks and impacts).
DRAWN_POINTS = 2000
#: A contact is closed where its gap is at most this fraction of its largest gap in the run ...
CLOSED_FRACTION = 1e-3
#: ... or at most this fraction of the run's length scale max(1, max |q|).
CLOSED_FLOOR = 1e-8
#: A closed contact sticks where its slip speed is at most this fraction of max |v|.
STICK_FRACTION = 1e-3
#: Contact states, as :func:`contact_states` codes them.
OPEN, STICK, SLIP = 0, 1, 2
STATE_NAMES = ("open", "stick", "slip")


class Drawn(NamedTuple):
    """A run as drawn: times (N,), positions and velocities (N, n), and which of the N points
    carry an energy to draw (see :func:`drawn`)."""

    t: np.ndarray
    q: np.ndarray
    v: np.ndarray
    energy_shown: np.ndarray


def energy_samples(trajectory: Trajectory) -> np.ndarray:
    """Which samples of ``trajectory`` carry an energy to draw: all, except for a method whose
    output velocity is reconstructed (Paoli-Schatzman's central difference straddles each
    impact: the samples within a step of an impact are no energy and are left out)."""
    t, impacts = trajectory.t, trajectory.impacts
    shown = np.ones(t.shape, dtype=bool)
    reconstructed = trajectory.stats.get("velocity_output", "state") != "state"
    if reconstructed and trajectory.h is not None and len(impacts.t):
        index = np.clip(np.searchsorted(impacts.t, t), 1, len(impacts.t) - 1)
        nearest = np.minimum(np.abs(t - impacts.t[index - 1]), np.abs(impacts.t[index] - t))
        shown = nearest > trajectory.h * (1 + 1e-9)
    return shown


def drawn(trajectory: Trajectory, points: int = DRAWN_POINTS) -> Drawn:
    """``trajectory`` through its continuous extension (see the module docstring).

    Parameters
    ----------
    trajectory : Trajectory
        The run; its dense output is used when it has one.
    points : int
        Uniform times over [t0, T] at which a dense output is evaluated (>= 2).

    Returns
    -------
    Drawn
        Times increasing (an impact time twice: left limit, then the value after it).
    """
    dense = trajectory.dense
    if dense is None:
        return Drawn(trajectory.t, trajectory.q, trajectory.v, energy_samples(trajectory))
    times = np.union1d(np.linspace(dense.t0, dense.t_end, points), dense.breaks)
    q, v = dense(times)
    jumps = np.flatnonzero(np.isin(times, dense.impacts))
    if jumps.size:
        q_left, v_left = dense.left(times[jumps])
        times = np.insert(times, jumps, times[jumps])
        q = np.insert(q, jumps, q_left, axis=0)
        v = np.insert(v, jumps, v_left, axis=0)
    return Drawn(times, q, v, np.ones(times.shape, dtype=bool))


class ContactStates(NamedTuple):
    """Slip velocities (N, m), NaN where the contact is open, and states (N, m) of
    :data:`OPEN`, :data:`STICK`, :data:`SLIP` (see :func:`contact_states`)."""

    slip: np.ndarray
    state: np.ndarray


def contact_states(
    problem: Problem, q: np.ndarray, v: np.ndarray, t: np.ndarray | None = None
) -> ContactStates:
    """Slip velocity W_T,i(q) v and state of each contact of the frictional ``problem`` at the
    points (q, v) of a run, shapes (N, n) (the rule of the module docstring).

    ``t``, shape (N,), the points' times: required for a problem with moving obstacles, whose
    slip is relative to the obstacle, W_T,i(t, q) v + tau_i(t, q); not read otherwise."""
    gaps = np.asarray(problem.gaps(q, t), dtype=float)
    if problem.rheonomic:
        times = sample_times(t, len(gaps))
        slip = np.array(
            [
                np.atleast_2d(problem.tangent_gradient(tk, qk)) @ vk + problem.tangent_rate(tk, qk)
                for tk, qk, vk in zip(times, q, v, strict=True)
            ]
        ).reshape(gaps.shape)
    else:
        rows = [np.atleast_2d(problem.tangent_gradient(qk)) for qk in q]
        slip = np.array([w @ vk for w, vk in zip(rows, v, strict=True)]).reshape(gaps.shape)
    length = max(1.0, float(np.max(np.abs(q)))) if q.size else 1.0
    tolerance = np.maximum(CLOSED_FRACTION * np.max(gaps, axis=0), CLOSED_FLOOR * length)
    closed = gaps <= tolerance
    speed = float(np.max(np.abs(v))) if v.size else 0.0
    sticking = np.abs(slip) <= STICK_FRACTION * speed
    state = np.where(closed, np.where(sticking, STICK, SLIP), OPEN)
    return ContactStates(np.where(closed, slip, np.nan), state)


def run_labels(methods: Sequence[str]) -> list[str]:
    """Legend entries of runs of ``methods`` (their names with parameters): the short
    :func:`impactbench.bench.style.variant_label` where it names one run only, the full name
    where two runs would share it; a name given twice gets its rank ("#2")."""
    short = [variant_label(name) for name in methods]
    labels = [s if short.count(s) == 1 else name for s, name in zip(short, methods, strict=True)]
    seen: dict[str, int] = {}
    unique = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if labels.count(label) == 1 else f"{label} #{seen[label]}")
    return unique


def reference_label(reference: Reference) -> str:
    """Legend entry of the solution drawn dashed: "exact solution", or "reference run
    (Method)" -- never the bare name of a method, which a run of that method also carries."""
    if reference.kind == "exact":
        return "exact solution"
    return f"reference run ({reference.kind.partition('[')[0]})"
