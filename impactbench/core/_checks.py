"""One-line argument checks whose ValueError names the argument and its value.

Booleans are not numbers here: ``True`` for a real parameter (or inside a real vector or
matrix) is refused rather than read as 1.0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

#: Relative tolerance of every symmetry check of a mass matrix: max |M - M^T| <= tol max |M|.
SYMMETRY_TOLERANCE = 1e-12

#: Largest condition number accepted for a mass matrix.
MAX_CONDITION = 1e12

#: Largest integer parameter: the compiled loops count in int64.
INT64_MAX = int(np.iinfo(np.int64).max)


def _is_boolean(value: Any) -> bool:
    """True for a bool, a NumPy boolean, a boolean array, or a list/tuple holding one."""
    if isinstance(value, (bool, np.bool_)):
        return True
    if isinstance(value, np.ndarray):
        return value.dtype == np.bool_
    if isinstance(value, (list, tuple)):
        return any(_is_boolean(item) for item in value)
    return False


def finite_scalar(value: Any, name: str) -> float:
    """Return ``value`` as a float, or raise ValueError if it is not a finite real number."""
    if type(value) is float and math.isfinite(value):  # the common case, without the checks below
        return value
    if _is_boolean(value):
        raise ValueError(f"{name} must be a real number, not a boolean, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
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
    """Return ``value`` as an int in 1..2^63 - 1 (the int64 range of the compiled loops), or
    raise ValueError."""
    if type(value) is int and 1 <= value <= INT64_MAX:  # the common case, without the checks below
        return value
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if not 1 <= value <= INT64_MAX:
        raise ValueError(f"{name} must be an integer in 1..{INT64_MAX}, got {value!r}")
    return int(value)


def times(value: Any, t0: float, name: str = "t") -> np.ndarray:
    """Evaluation times as a 1-D float array, all finite and >= t0 (e.g. of an exact solution).

    Parameters
    ----------
    value : float or array_like, shape (k,)
    t0 : float
        The earliest time allowed.
    name : str
        The argument's name in the error message.

    Returns
    -------
    ndarray, shape (k,) (k = 1 for a scalar)

    Raises
    ------
    ValueError
        For a value that is not a scalar or a 1-D array, not finite, or below ``t0``.
    """
    result = np.atleast_1d(np.asarray(value, dtype=float))
    if result.ndim != 1:
        raise ValueError(f"{name} must be a scalar or a 1-D array, got shape {result.shape}")
    if not np.all(np.isfinite(result)):
        bad = result[~np.isfinite(result)][0]
        raise ValueError(f"{name} must be finite, got a value {bad!r}")
    if result.size and result.min() < t0:
        raise ValueError(f"{name} must be >= t0 = {t0!r}, got min({name}) = {result.min()!r}")
    return result


def vector(value: Any, name: str, size: int | None = None) -> np.ndarray:
    """Return a finite float64 copy of a 1-D array (of length ``size`` if given)."""
    if _is_boolean(value):
        raise ValueError(f"{name} must hold real numbers, not booleans, got {value!r}")
    try:
        x = np.array(value, dtype=float, ndmin=1)
    except (TypeError, ValueError, OverflowError):
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
    if _is_boolean(value):
        raise ValueError(f"{name} must hold real numbers, not booleans, got {value!r}")
    try:
        a = np.array(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
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
