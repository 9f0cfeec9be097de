"""The exponent p of a cost that grows as n^p: least squares on log-log, with its interval."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import stats


class CostExponent(NamedTuple):
    """Fitted cost ~ C n^p over the sizes used.

    Attributes
    ----------
    exponent : float
        The least-squares slope p of log(cost) against log(n).
    low, high : float
        The two-sided confidence interval of p (Student t with k - 2 degrees of freedom, from
        the scatter of the k points about the line); NaN for k = 2, where a line through two
        points has no scatter to estimate it from.
    sizes : int
        The number k of sizes in the fit.
    """

    exponent: float
    low: float
    high: float
    sizes: int


def fit_cost_exponent(
    n: np.ndarray | list[float], cost: np.ndarray | list[float], confidence: float = 0.95
) -> CostExponent:
    """Least-squares exponent p of cost ~ C n^p and its confidence interval.

    Parameters
    ----------
    n : array_like, shape (k,)
        Problem sizes, > 0, k >= 2, not all equal.
    cost : array_like, shape (k,)
        Cost at each size (e.g. seconds per step), finite and > 0.
    confidence : float
        Level of the interval, in (0, 1).

    Returns
    -------
    CostExponent

    Raises
    ------
    ValueError
        Naming ``n``, ``cost`` or ``confidence`` and the offending value.
    """
    n = np.asarray(n, dtype=float)
    cost = np.asarray(cost, dtype=float)
    if n.ndim != 1 or n.shape != cost.shape or n.size < 2:
        raise ValueError(
            f"n and cost must be 1-D of equal length >= 2, got shapes {n.shape} and {cost.shape}"
        )
    if not (np.all(np.isfinite(n)) and np.all(n > 0) and np.ptp(n) > 0):
        raise ValueError(f"n must be finite, > 0 and not all equal, got {n.tolist()}")
    if not (np.all(np.isfinite(cost)) and np.all(cost > 0)):
        raise ValueError(f"cost must be finite and > 0, got {cost.tolist()}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    x, y = np.log(n), np.log(cost)
    sxx = float(np.sum((x - x.mean()) ** 2))
    slope = float(np.sum((x - x.mean()) * (y - y.mean())) / sxx)
    k = n.size
    if k == 2:
        return CostExponent(slope, np.nan, np.nan, k)
    residuals = y - (y.mean() + slope * (x - x.mean()))
    stderr = float(np.sqrt(np.sum(residuals**2) / (k - 2) / sxx))
    half = float(stats.t.ppf(0.5 + confidence / 2.0, k - 2)) * stderr
    return CostExponent(slope, slope - half, slope + half, k)
