"""Observed orders: phase-averaged errors, least-squares slopes with 95 % intervals, floors.

An error measured at one step h depends on where the impacts fall on the grid: error / h varies
several-fold from one h to the next. A study therefore runs, for each nominal step h, a small
deterministic family of perturbed steps h (1 + delta_j) (:func:`perturbed_steps`), keeps every
run in its table, and fits the order on the median error of each family
(:func:`phase_medians`).

:func:`fit_order` classifies a sweep (step sizes or tolerances and their errors) before it fits
anything:

1. points with a non-finite or non-positive error are dropped; points below the *floor*
   (:func:`error_floor`: round-off, about 100 eps times the problem's scale, or ten times the
   reference's claimed accuracy) are excluded and counted. If every point is at the floor the
   sweep is reported as such (``FLOOR``) with its largest error.
2. fewer than ``min_points`` points (6) or less than ``min_decades`` (1) decades of the parameter
   left: ``UNRESOLVED``, with the reason.
3. errors within a factor ``flat_ratio`` (2) of each other, or a fitted slope whose 95 %
   interval contains 0: ``FLAT`` -- the error is not controlled by the parameter -- with the
   median error as its level.
4. a slope whose interval lies below 0 (the error grows as the parameter decreases, e.g.
   round-off accumulating over more steps): ``GROWS``, never an order.
5. otherwise ``ORDER``: the least-squares slope of log10(error) against log10(parameter) with
   its 95 % confidence interval, the t-interval of the regression slope (Student t with n - 2
   degrees of freedom times the slope's standard error), the root-mean-square residual in
   decades, the number of points and the decades they span.

The t-interval assumes independent residuals of equal variance around the line; the scatter of
phase-averaged medians is close to that (the grid phase of the impacts changes irregularly from
one h to the next), and the interval's coverage on synthetic data is checked by the tests.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from ..core.trajectory import Status

#: Statuses of a fitted sweep (:attr:`OrderFit.status`).
ORDER = "order"
FLOOR = "floor"
FLAT = "flat"
GROWS = "grows"
UNRESOLVED = "not resolved"

#: Fewest points, and fewest decades of the parameter, for a fitted order.
MIN_POINTS = 6
MIN_DECADES = 1.0
#: A sweep whose errors all lie within this factor of each other is flat.
FLAT_RATIO = 2.0
#: Confidence level of the interval of the order.
CONFIDENCE = 0.95

#: Round-off floor: errors below ROUND_OFF_FACTOR eps times the problem's scale.
ROUND_OFF_FACTOR = 100.0
#: Reference floor: errors below REFERENCE_FACTOR times the reference's claimed accuracy.
REFERENCE_FACTOR = 10.0

#: Relative perturbations delta_j of the steps h (1 + delta_j) of a phase family: the first is
#: 0 (the nominal step), the others are drawn once per family size, one in each of equal strata
#: of [-PHASE_SPREAD, PHASE_SPREAD], from a generator seeded with PHASE_SEED.
PHASE_SPREAD = 0.1
PHASE_SEED = 11


def phase_offsets(copies: int) -> np.ndarray:
    """The relative perturbations delta_j, j = 0..copies-1, of a family of ``copies`` steps.

    delta_0 = 0; delta_1..delta_{copies-1} are stratified draws on [-0.1, 0.1] from a fixed seed
    (the same values every time, so the runs, and their cache keys, are reproducible). A
    perturbation of 10 % moves an impact at time t* by 0.1 t* / h steps, many steps for every
    step of the studies, so the copies sample the grid phase of the impacts.

    Returns
    -------
    ndarray, shape (copies,)
    """
    if isinstance(copies, bool) or not isinstance(copies, (int, np.integer)) or copies < 1:
        raise ValueError(f"copies must be a positive integer, got {copies!r}")
    strata = np.linspace(-PHASE_SPREAD, PHASE_SPREAD, copies)  # copies - 1 equal strata
    draws = np.random.default_rng(PHASE_SEED).uniform(size=copies - 1)
    return np.concatenate([[0.0], strata[:-1] + draws * np.diff(strata)])


def perturbed_steps(steps: np.ndarray | list[float], copies: int) -> np.ndarray:
    """The phase family h (1 + delta_j) of every nominal step h.

    Parameters
    ----------
    steps : array_like, shape (k,)
        Nominal steps, all > 0.
    copies : int
        Family size J (1: the nominal steps alone).

    Returns
    -------
    ndarray, shape (k, copies)
        Row i holds the family of ``steps[i]``; column 0 is the nominal step itself.
    """
    steps = np.asarray(steps, dtype=float)
    if steps.ndim != 1 or np.any(~np.isfinite(steps)) or np.any(steps <= 0):
        raise ValueError(f"steps must be a 1-D array of finite values > 0, got {steps!r}")
    return steps[:, None] * (1.0 + phase_offsets(copies))[None, :]


def phase_medians(
    table: pd.DataFrame, values: list[str] | tuple[str, ...], keys: tuple[str, ...] = ()
) -> pd.DataFrame:
    """One row per phase family: the median, smallest and largest value of each column.

    Parameters
    ----------
    table : DataFrame
        Run rows with the columns ``problem``, ``method``, ``h_nominal`` (the family's nominal
        step; NaN for adaptive runs, which form one family per ``tolerance``), ``tolerance``,
        the ``keys`` and the ``values``. Failed runs (``status == "failed"``) are left out.
    values : sequence of str
        Columns to aggregate (NaN values are ignored).
    keys : sequence of str
        Further columns identifying a family (e.g. ``family``).

    Returns
    -------
    DataFrame
        Columns ``problem``, ``method``, the ``keys``, ``h`` (the nominal step), ``tolerance``,
        ``runs`` (finished runs in the family), then for each value column ``<name>`` (median),
        ``<name>_min`` and ``<name>_max``; rows in order of first appearance. When ``table``
        has ``wall_time_repeats`` (the timed repeats of each run, JSON lists), the last column
        ``wall_time_repeats`` pools those of the family's runs (JSON), so that a family's time
        is compared with another's (:func:`impactbench.analysis.timing.compare`) over the
        phases and the repeats of its runs.
    """
    done = table[table["status"] != Status.FAILED.value] if "status" in table else table
    done = done.assign(
        _h=done["h_nominal"].fillna(-1.0), _tol=done["tolerance"].fillna(-1.0)
    )  # NaN group keys would be dropped
    group_keys = ["problem", "method", *keys, "_h", "_tol"]
    rows = []
    for (problem, method, *rest), group in done.groupby(group_keys, sort=False):
        h, tolerance = rest[-2], rest[-1]
        row = {"problem": problem, "method": method}
        row.update(zip(keys, rest[:-2], strict=True))
        row.update(
            h=math.nan if h < 0 else h,
            tolerance=math.nan if tolerance < 0 else tolerance,
            runs=len(group),
        )
        for name in values:
            column = pd.to_numeric(group[name], errors="coerce")
            row[name] = column.median()
            row[f"{name}_min"] = column.min()
            row[f"{name}_max"] = column.max()
        if "wall_time_repeats" in group:
            pooled = [json.loads(t) for t in group["wall_time_repeats"] if isinstance(t, str)]
            row["wall_time_repeats"] = json.dumps([t for times in pooled for t in times])
        rows.append(row)
    columns = ["problem", "method", *keys, "h", "tolerance", "runs"]
    for name in values:
        columns += [name, f"{name}_min", f"{name}_max"]
    if "wall_time_repeats" in done:
        columns.append("wall_time_repeats")
    return pd.DataFrame(rows, columns=columns)


def error_floor(scale: float, accuracy: float = 0.0) -> float:
    """Smallest error that says something about a run: max(100 eps scale, 10 accuracy).

    Parameters
    ----------
    scale : float
        The size of the quantity whose error is measured (e.g. max |q| over the horizon):
        round-off in it is about eps times this, accumulated over many operations.
    accuracy : float
        The error the reference claims in the same units (0 for a closed form).
    """
    for name, value in (("scale", scale), ("accuracy", accuracy)):
        if not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be finite and >= 0, got {value!r}")
    eps = float(np.finfo(float).eps)
    return max(ROUND_OFF_FACTOR * eps * scale, REFERENCE_FACTOR * accuracy)


@dataclass(frozen=True)
class OrderFit:
    """The classified fit of a sweep (see the module docstring).

    Attributes
    ----------
    status : str
        ``ORDER``, ``FLOOR``, ``FLAT``, ``GROWS`` or ``UNRESOLVED``.
    order, low, high : float
        The slope and its confidence interval (``ORDER`` only; NaN otherwise).
    residual : float
        Root-mean-square residual of the fit in decades (NaN when nothing was fitted).
    points : int
        Points used (above the floor).
    decades : float
        log10 of the ratio of the largest to the smallest parameter used (NaN without points).
    excluded : int
        Points excluded at the floor.
    floor : float
        The floor applied.
    level : float
        ``FLAT``: the median error; ``FLOOR``: the largest error; ``GROWS``: the error at the
        smallest parameter; NaN otherwise.
    reason : str
        Why an order is not resolved (``UNRESOLVED`` only).
    intercept, x_mean, sxx, sigma, t_quantile : float
        The regression in log10 units (for :meth:`line`): log10(error) = intercept + order
        log10(parameter), mean and sum of squared deviations of log10(parameter), residual
        standard deviation and the Student quantile of the interval.
    """

    status: str
    order: float = math.nan
    low: float = math.nan
    high: float = math.nan
    residual: float = math.nan
    points: int = 0
    decades: float = math.nan
    excluded: int = 0
    floor: float = 0.0
    level: float = math.nan
    reason: str = ""
    intercept: float = math.nan
    x_mean: float = math.nan
    sxx: float = math.nan
    sigma: float = math.nan
    t_quantile: float = math.nan

    def line(self, parameter: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The fitted line and its pointwise 95 % confidence band at ``parameter``.

        Returns
        -------
        center, low, high : ndarray, shape of ``parameter``
            Errors on the fitted line and the band of the mean response (t-interval).
        """
        if self.status != ORDER:
            raise ValueError(f"only a fitted order has a line, this sweep is {self.status!r}")
        x = np.log10(np.asarray(parameter, dtype=float))
        center = self.intercept + self.order * x
        half = (
            self.t_quantile
            * self.sigma
            * np.sqrt(1.0 / self.points + (x - self.x_mean) ** 2 / self.sxx)
        )
        return 10.0**center, 10.0 ** (center - half), 10.0 ** (center + half)

    def text(self, parameter: str = "h") -> str:
        """The fit as a table cell: ``0.98 [0.95, 1.01]``, or what the sweep is instead."""
        excluded = f"; {self.excluded} at the floor" if self.excluded else ""
        if self.status == ORDER:
            return f"{self.order:.2f} [{self.low:.2f}, {self.high:.2f}]"
        if self.status == FLAT:
            return f"flat at {self.level:.3g}: not controlled by {parameter}{excluded}"
        if self.status == FLOOR:
            return f"at the floor (all {self.excluded} errors < {self.floor:.2g})"
        if self.status == GROWS:
            return f"grows as {parameter} decreases (to {self.level:.3g}): no order{excluded}"
        return f"not resolved: {self.reason}"


def _regression(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float, np.ndarray]:
    """Least squares of log10 y on log10 x: slope, intercept, mean and sum of squared
    deviations of log10 x, and the residuals (log10 units)."""
    lx, ly = np.log10(x), np.log10(y)
    x_mean = float(lx.mean())
    sxx = float(np.sum((lx - x_mean) ** 2))
    slope = float(np.sum((lx - x_mean) * (ly - ly.mean())) / sxx)
    intercept = float(ly.mean() - slope * x_mean)
    return slope, intercept, x_mean, sxx, ly - (intercept + slope * lx)


def observed_order(step: np.ndarray, error: np.ndarray) -> tuple[float, float]:
    """The bare least-squares slope of log(error) against log(step), and the fit's residual.

    No floor, flatness or interval (use :func:`fit_order` for a reported order): for checks on
    sweeps known to converge.

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
    slope, _, _, _, residuals = _regression(step, error)
    return slope, float(np.sqrt(np.mean(residuals**2)))


def fit_order(
    parameter: np.ndarray | list[float],
    error: np.ndarray | list[float],
    *,
    floor: float = 0.0,
    min_points: int = MIN_POINTS,
    min_decades: float = MIN_DECADES,
    flat_ratio: float = FLAT_RATIO,
    confidence: float = CONFIDENCE,
) -> OrderFit:
    """Classify a sweep and fit its order (see the module docstring for the rules).

    Parameters
    ----------
    parameter : array_like, shape (k,)
        Step sizes or tolerances, all finite and > 0.
    error : array_like, shape (k,)
        The errors measured with them (phase-averaged medians for time-steppers); NaN or
        non-positive values are left out.
    floor : float
        Errors below this are excluded and counted (:func:`error_floor`).
    min_points, min_decades, flat_ratio, confidence
        The thresholds of the rules.

    Returns
    -------
    OrderFit
    """
    x = np.asarray(parameter, dtype=float)
    y = np.asarray(error, dtype=float)
    if x.ndim != 1 or x.shape != y.shape:
        raise ValueError(
            f"parameter and error must be 1-D of equal length, got {x.shape}, {y.shape}"
        )
    if np.any(~np.isfinite(x)) or np.any(x <= 0):
        raise ValueError(f"parameter must be finite and > 0, got {x!r}")
    if not math.isfinite(floor) or floor < 0:
        raise ValueError(f"floor must be finite and >= 0, got {floor!r}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    valid = np.isfinite(y) & (y > 0)
    x, y = x[valid], y[valid]
    if y.size == 0:
        return OrderFit(UNRESOLVED, floor=floor, reason="no finite positive error")
    low = y < floor
    excluded = int(np.count_nonzero(low))
    if excluded == y.size:
        return OrderFit(FLOOR, excluded=excluded, floor=floor, level=float(y.max()))
    x, y = x[~low], y[~low]
    decades = float(np.log10(x.max() / x.min()))
    common = {"points": int(y.size), "decades": decades, "excluded": excluded, "floor": floor}
    at_floor = f", {excluded} more at the floor" if excluded else ""
    if y.size < min_points:
        plural = "s" if y.size > 1 else ""
        reason = f"{y.size} point{plural} (< {min_points}){at_floor}"
        return OrderFit(UNRESOLVED, reason=reason, **common)
    if decades < min_decades:
        reason = f"{decades:.2f} decades (< {min_decades:g}){at_floor}"
        return OrderFit(UNRESOLVED, reason=reason, **common)
    slope, intercept, x_mean, sxx, residuals = _regression(x, y)
    rms = float(np.sqrt(np.mean(residuals**2)))
    sigma = float(np.sqrt(np.sum(residuals**2) / (y.size - 2)))
    quantile = float(stats.t.ppf(0.5 + 0.5 * confidence, y.size - 2))
    half = quantile * sigma / math.sqrt(sxx)
    common.update(residual=rms)
    if y.max() < flat_ratio * y.min() or slope - half <= 0.0 <= slope + half:
        return OrderFit(FLAT, level=float(np.median(y)), **common)
    if slope + half < 0.0:
        return OrderFit(GROWS, level=float(y[np.argmin(x)]), **common)
    return OrderFit(
        ORDER,
        order=slope,
        low=slope - half,
        high=slope + half,
        intercept=intercept,
        x_mean=x_mean,
        sxx=sxx,
        sigma=sigma,
        t_quantile=quantile,
        **common,
    )


#: Columns of :func:`fit_table` besides the group keys.
FIT_COLUMNS = [
    "status",
    "order",
    "low",
    "high",
    "residual",
    "points",
    "decades",
    "excluded",
    "floor",
    "level",
    "reason",
    "text",
]


def fit_row(fit: OrderFit, parameter: str = "h") -> dict[str, object]:
    """The stored form of a fit (the :data:`FIT_COLUMNS`)."""
    return {
        "status": fit.status,
        "order": fit.order,
        "low": fit.low,
        "high": fit.high,
        "residual": fit.residual,
        "points": fit.points,
        "decades": fit.decades,
        "excluded": fit.excluded,
        "floor": fit.floor,
        "level": fit.level,
        "reason": fit.reason,
        "text": fit.text(parameter),
    }
