"""Error metrics against an exact solution, and the fitted observed order (DESIGN.md section 7)."""

from __future__ import annotations

import numpy as np

from .problem import Problem
from .trajectory import Trajectory


def _exact_at_samples(problem: Problem, trajectory: Trajectory) -> tuple[np.ndarray, np.ndarray]:
    if not problem.has_exact_solution:
        raise ValueError(f"problem {problem.name!r} has no exact solution")
    return problem.exact_solution(trajectory.t)


def max_position_error(problem: Problem, trajectory: Trajectory) -> float:
    """max over the samples of max_i |q_i - q_exact,i| (for a full-output run: over all steps)."""
    q_exact, _ = _exact_at_samples(problem, trajectory)
    return float(np.max(np.abs(trajectory.q - q_exact)))


def l1_velocity_error(problem: Problem, trajectory: Trajectory) -> float:
    """Integral over [t0, T] of max_i |v_i - v_exact,i| (trapezoidal rule on the samples).

    Unlike the max norm of the velocity error, which stays O(1) near impacts for every
    time-stepping scheme, this norm converges.
    """
    _, v_exact = _exact_at_samples(problem, trajectory)
    err = np.max(np.abs(trajectory.v - v_exact), axis=1)
    return float(np.sum(0.5 * (err[1:] + err[:-1]) * np.diff(trajectory.t)))


def penetration_depths(problem: Problem, q: np.ndarray) -> np.ndarray:
    """Depth below the constraints at each sample, max(0, -min_i g_i(q)); q (N, n), result (N,)."""
    q = np.atleast_2d(q)
    if q.shape[0] == 0:
        return np.zeros(0)
    gaps = np.array([problem.gap(qi) for qi in q])
    return np.maximum(0.0, -gaps.min(axis=1))


def max_penetration(problem: Problem, trajectory: Trajectory) -> float:
    """max(0, -min over samples and constraints of g_i(q))."""
    return float(penetration_depths(problem, trajectory.q).max())


def observed_order(step: np.ndarray, error: np.ndarray) -> tuple[float, float]:
    """Least-squares slope of log(error) against log(step), and the fit's residual.

    Parameters
    ----------
    step, error : ndarray, shape (k,)
        Step sizes (or tolerances) and the errors measured with them; k >= 3, all > 0.

    Returns
    -------
    order : float
        The fitted slope p of log(error) = p log(step) + c.
    residual : float
        Root-mean-square residual of the fit in log10 units (0.1 means errors scatter by about
        25 % around the fitted line).
    """
    step = np.asarray(step, dtype=float)
    error = np.asarray(error, dtype=float)
    if step.shape != error.shape or step.ndim != 1 or step.size < 3:
        raise ValueError(
            f"step and error must be 1-D of equal length >= 3, got {step.shape}, {error.shape}"
        )
    if np.any(step <= 0) or np.any(error <= 0) or not np.all(np.isfinite(error)):
        raise ValueError(f"step and error must be finite and > 0, got {step}, {error}")
    x = np.log10(step)
    y = np.log10(error)
    slope, intercept = np.polyfit(x, y, 1)
    residual = float(np.sqrt(np.mean((y - (slope * x + intercept)) ** 2)))
    return float(slope), residual
