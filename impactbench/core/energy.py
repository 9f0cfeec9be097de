"""Energy of a trajectory, sample by sample."""

from __future__ import annotations

import numpy as np

from .problem import Problem
from .trajectory import Trajectory


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
