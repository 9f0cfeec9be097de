"""One-line argument checks whose ValueError names the argument and its value."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: Relative tolerance of every symmetry check of a mass matrix: max |M - M^T| <= tol max |M|.
SYMMETRY_TOLERANCE = 1e-12

#: Largest condition number accepted for a mass matrix.
MAX_CONDITION = 1e12


def finite_scalar(value: Any, name: str) -> float:
    """Return ``value`` as a float, or raise ValueError if it is not a finite real number."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return x


def positive_scalar(value: Any, name: str) -> float:
    """Return ``value`` as a float > 0, or raise ValueError."""
    x = finite_scalar(value, name)
    if x <= 0.0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return x


def in_interval(value: Any, name: str, low: float, high: float) -> float:
    """Return ``value`` as a float in the closed interval [low, high], or raise ValueError."""
    x = finite_scalar(value, name)
    if not low <= x <= high:
        raise ValueError(f"{name} must lie in [{low}, {high}], got {value!r}")
    return x


def restitution(value: Any, name: str = "restitution") -> float:
    """Coefficient of restitution e: finite and in [0, 1]."""
    return in_interval(value, name, 0.0, 1.0)


def positive_int(value: Any, name: str) -> int:
    """Return ``value`` as an int >= 1, or raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def vector(value: Any, name: str, size: int | None = None) -> np.ndarray:
    """Return a finite float64 copy of a 1-D array (of length ``size`` if given)."""
    try:
        x = np.array(value, dtype=float, ndmin=1)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a 1-D array of real numbers, got {value!r}") from None
    if x.ndim != 1 or (size is not None and x.shape[0] != size):
        want = f"shape ({size},)" if size is not None else "a 1-D array"
        raise ValueError(f"{name} must have {want}, got shape {x.shape}: {value!r}")
    if not np.all(np.isfinite(x)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return x


def spd_matrix(
    value: Any, name: str, size: int, max_condition: float = MAX_CONDITION
) -> np.ndarray:
    """Return a float64 copy of a symmetric positive definite (size, size) matrix.

    Raises ValueError if the matrix has the wrong shape, is not finite, not symmetric (relative
    tolerance :data:`SYMMETRY_TOLERANCE`), not positive definite, or has a condition number above
    ``max_condition``.
    """
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real matrix, got {value!r}") from None
    if a.shape != (size, size):
        raise ValueError(f"{name} must have shape ({size}, {size}), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite, got {a.tolist()}")
    scale = max(np.abs(a).max(), np.finfo(float).tiny)
    if np.abs(a - a.T).max() > SYMMETRY_TOLERANCE * scale:
        raise ValueError(f"{name} must be symmetric, got {a.tolist()}")
    eig = np.linalg.eigvalsh(0.5 * (a + a.T))
    if eig[0] <= 0.0:
        raise ValueError(f"{name} must be positive definite, got eigenvalues {eig.tolist()}")
    if eig[-1] / eig[0] > max_condition:
        raise ValueError(
            f"{name} is badly conditioned (condition number {eig[-1] / eig[0]:.3g} > "
            f"{max_condition:.0e}): {a.tolist()}"
        )
    return a
