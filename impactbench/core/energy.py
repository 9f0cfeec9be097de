"""Energy of a trajectory, sample by sample."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from numpy import ndarray

from ._jit import kernel
from .problem import Problem
from .trajectory import SimulationError, Trajectory


def kinetic_energy(problem: Problem, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Kinetic energy v^T M(q) v / 2 of each sample; q, v of shape (N, n), result (N,)."""
    return problem.kinetic_energies(q, v)


def potential_energy(problem: Problem, q: np.ndarray) -> np.ndarray:
    """Potential energy of each sample; q of shape (N, n), result (N,)."""
    return problem.potential_energies(q)


def energy(problem: Problem, trajectory: Trajectory) -> np.ndarray:
    """Total mechanical energy (kinetic + potential) at each sample of a trajectory, shape (N,)."""
    return kinetic_energy(problem, trajectory.q, trajectory.v) + potential_energy(
        problem, trajectory.q
    )


#: The energy gate of a conservative problem (:func:`check_energy_gain`): a run fails when its
#: energy E_k = T_k + V_k rises above E_0 by more than this fraction of the kinetic-energy
#: scale S = E_0 - min V(q_k) over the admissible samples (g(q_k) >= 0, and k = 0): the largest
#: kinetic energy the exact motion can have at the positions of K the run visited (a sample
#: inside the obstacle, where a scheme's position may lie by O(h |v|) at an impact, would let a
#: run whose velocities grow widen its own scale). A scheme converging in energy stays within
#: it as h -> 0: its energy error is O(h^p) relative to S in smooth phases (p the scheme's
#: order) and O(h) per impact through the impacts; a sample across an impact step (a
#: central-difference velocity, a position inside the obstacle) lowers E, it does not raise it.
#: Above half the kinetic scale the run is no approximation of the conservative motion
#: whatever h: its velocities are off by O(1) (a Paoli-Schatzman ball with e = 1 whose bounces
#: of height O(h) pump its energy up).
ENERGY_GAIN_BOUND = 0.5

#: Round-off allowance of the gate, in ulps of the energies' magnitude: max(|E_0|, max_k |V_k|,
#: |F(t0, q0, v0)| max(1, max_k |q_k|)), the last the change of V by a position off by its
#: round-off (positions of unit scale at least, as the divergence bounds take them): a body at
#: rest on an obstacle at V = 0 (E_0 = 0, S = 0) sits there to the round-off of its position.
ENERGY_ROUNDOFF_ULPS = 64.0


_EPS = float(np.finfo(float).eps)


def energy_gain(problem: Problem, trajectory: Trajectory) -> tuple[float, float, int]:
    """The largest rise of the energy above its initial value, over the samples of a run.

    Parameters
    ----------
    problem : Problem
    trajectory : Trajectory
        A run of ``problem`` with N >= 1 samples.

    Returns
    -------
    gain : float
        max_k (E_k - E_0) (>= 0: k = 0 counts).
    scale : float
        S = E_0 - min V(q_k) over the admissible samples (g(q_k) >= 0; g(t_k, q_k) >= 0 for
        moving obstacles) and k = 0 (>= 0): the kinetic-energy scale of the run.
    index : int
        The sample k where the gain is largest.
    """
    gain, scale, index, _, _ = _gain(problem, trajectory)
    return gain, scale, index


def _gain(problem: Problem, trajectory: Trajectory) -> tuple[float, float, int, float, ndarray]:
    """:func:`energy_gain`'s gain, scale and index, with E_0 and the figures of
    :func:`_gate_figures` (max |V_k|, max |q|, max |v| at [2], [3], [4])."""
    q, v = trajectory.q, trajectory.v
    potential = np.ascontiguousarray(potential_energy(problem, q), dtype=float)
    kinetic = np.ascontiguousarray(kinetic_energy(problem, q, v), dtype=float)
    gaps = np.ascontiguousarray(problem.gaps(q, trajectory.t), dtype=float)
    figures = np.empty(7)
    _gate_figures(
        kinetic,
        potential,
        gaps,
        np.ascontiguousarray(q, dtype=float),
        np.ascontiguousarray(v, dtype=float),
        figures,
    )
    initial = float(figures[6])
    gain, scale = float(figures[5]) - initial, initial - float(figures[1])
    return gain, scale, int(figures[0]), initial, figures


@kernel
def _nan_max(value, best):
    """max(best, value), NaN once either is NaN (numpy's max over the values seen)."""
    if best != best or value != value:
        return math.nan
    return value if value > best else best


@kernel
def _gate_figures(kinetic, potential, gaps, q, v, out):
    """The figures of the energy gate over the N >= 1 samples, E_k = T_k + V_k (``kinetic``
    T_k, ``potential`` V_k, ``gaps`` g(q_k) of shape (N, m), ``q``, ``v`` of shape (N, n)):
    out[0] the first k of largest E_k (of the first NaN, as numpy's argmax), out[1] the least
    V_k over k = 0 and the admissible samples (every g_i(q_k) >= 0), out[2] max |V_k|, out[3]
    max |q|, out[4] max |v| (each NaN when a value it reads is), out[5] E at out[0], out[6] E_0.
    """
    n_samples = kinetic.shape[0]
    index = 0
    top = kinetic[0] + potential[0]
    lowest = potential[0]
    largest = abs(potential[0])
    for k in range(n_samples):
        total = kinetic[k] + potential[k]
        if top == top and (total != total or total > top):
            index, top = k, total
        admissible = True
        for i in range(gaps.shape[1]):
            if not gaps[k, i] >= 0.0:
                admissible = False
        if admissible or k == 0:
            lowest = -_nan_max(-potential[k], -lowest)
        largest = _nan_max(abs(potential[k]), largest)
    position = 0.0
    for x in q.ravel():
        position = _nan_max(abs(x), position)
    velocity = 0.0
    for x in v.ravel():
        velocity = _nan_max(abs(x), velocity)
    out[0] = index
    out[1] = lowest
    out[2] = largest
    out[3] = position
    out[4] = velocity
    out[5] = top
    out[6] = kinetic[0] + potential[0]


def is_conservative(problem: Problem) -> bool:
    """``problem.conservative`` checked (read at every run: a built-in problem's check is
    skipped while its contract is unchanged); ValueError unless it is True or False."""
    declared = problem.conservative
    if type(declared) is not bool:
        raise ValueError(f"conservative must be True or False, got {declared!r}")
    return declared


def _step_allowance(force: float, trajectory: Trajectory, largest_v: float) -> float:
    """h n max|F(t0, q0, v0)| max_k |v_k|_inf (0 for a run without a step): the oscillation of the
    mechanical energy of a first-order scheme, O(h |F^T v|) (catching-up conserves E - (h/2)
    F^T v for constant M and F), which S does not bound on a start from rest (after k steps
    S ~ (k h |F|)^2 / 2 while the oscillation is ~ k h^2 |F|^2 / 2: their ratio 1/k)."""
    h = trajectory.h
    if h is None or trajectory.v.size == 0:
        return 0.0
    n = trajectory.v.shape[1]
    return float(h) * n * force * largest_v


def check_energy_gain(
    problem: Problem, trajectory: Trajectory, name: str | Callable[[], str]
) -> None:
    """The energy gate of a run of a conservative problem (``problem.conservative``): records
    ``trajectory.stats["energy_gain"]``, (max_k E_k - E_0) / S (:func:`energy_gain`; 0 when S
    is 0 and no energy was gained), and raises when it exceeds :data:`ENERGY_GAIN_BOUND`.

    Raises
    ------
    SimulationError
        If max_k E_k - E_0 > ENERGY_GAIN_BOUND S plus the round-off allowance
        (:data:`ENERGY_ROUNDOFF_ULPS`) plus, for a time-stepping run, the O(h) oscillation of a
        first-order scheme's energy (:func:`_step_allowance`): the message names ``name`` (the
        method on the problem; or a callable returning it, called for the message only), the
        gain, the bound and the sample where it is largest; the error carries the trajectory.
    """
    gain, scale, index, initial, figures = _gain(problem, trajectory)
    # max |F(t0, q0, v0)|, as Problem.check kept it for the divergence bounds: the gate makes
    # no call of the problem's forces of its own (stats["force_evaluations"] counts them all)
    scales = getattr(problem, "_initial_scales", None)
    if scales is None:
        q0, v0 = trajectory.q[0], trajectory.v[0]
        scales = (0.0, 0.0, float(np.abs(problem.forces(float(trajectory.t[0]), q0, v0)).max()))
    force = float(scales[2])
    largest_potential, largest_q, largest_v = figures[2:5].tolist()
    magnitude = max(abs(initial), largest_potential, force * max(1.0, largest_q))
    roundoff = ENERGY_ROUNDOFF_ULPS * _EPS * magnitude
    allowed = ENERGY_GAIN_BOUND * scale + roundoff + _step_allowance(force, trajectory, largest_v)
    trajectory.stats["energy_gain"] = gain / scale if scale > 0.0 else float(gain > roundoff)
    if gain > allowed:
        if callable(name):
            name = name()
        raise SimulationError(
            f"{name}: the energy of a conservative problem grew by {gain:.6g} above its initial "
            f"value {initial:.6g}, more than {ENERGY_GAIN_BOUND} times its kinetic-energy scale "
            f"E(t0) - min V over K = {scale:.6g} (an impact law or scheme that creates energy)",
            trajectory.t[index],
            trajectory.q[index],
            trajectory.v[index],
            trajectory,
        )
