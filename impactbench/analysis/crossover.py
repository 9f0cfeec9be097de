"""Where the cost curves of two families cross: the crossover accuracy, with its interval.

A family's cost curve is the lower envelope (Pareto front) of its runs' points (error, median
wall time): a run is on it when no other run of the family has both a smaller or equal error and
a smaller or equal median time. Sorted by error, the front's times decrease; between its points
the curve is the piecewise linear interpolation of log(cost) against log(error). It is defined
over the family's error range [e_min, e_max], from its most to its least accurate run: above the
front's loosest point (runs of larger error that cost more, dominated) the curve is flat at that
point's cost, which is the least cost of a run of the family reaching any error up to e_max.

Two families are compared over the overlap [a, b] of their error ranges. The difference
d(e) = log C_1(e) - log C_2(e) is piecewise linear in log(e) between the union of both fronts'
knots, so its sign changes are located exactly on those segments: the crossover accuracy is the
error e* where d changes sign (family 1 cheaper on one side, family 2 on the other). When d keeps
its sign the fronts do not cross in [a, b] and the crossover is "outside [a, b]", with the family
that is cheaper over the whole overlap. An overlap under :data:`MIN_DECADES` decades is flagged:
the sweeps, not the methods, decide such a comparison.

Interval: percentile bootstrap (:data:`impactbench.analysis.timing.CONFIDENCE`). Each run's
timed repeats (``wall_time_repeats``) are resampled with replacement, apart from the other runs,
the medians give new costs, the fronts and their crossing are recomputed (errors unchanged), and
the quantiles of the crossing errors over the resamples that cross give the interval; the share
of resamples without a crossing is reported with it (:data:`impactbench.analysis.timing.SEED`:
the same table gives the same interval). A run with fewer than
:data:`impactbench.analysis.timing.MIN_REPEATS` repeats leaves the pair without an interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import numpy as np
import pandas as pd

from .timing import COMPARED_FAMILIES, CONFIDENCE, MIN_REPEATS, RESAMPLES, SEED, row_timing

#: Least overlap of two families' error ranges (decades) for a comparison the sweeps support.
MIN_DECADES = 2.0

#: Log-cost differences up to this are equal costs: the rounding of the interpolation, far
#: below any difference the timing resolves.
EQUAL_LOG_COST = 1e-9


@dataclass(frozen=True)
class Front:
    """A family's lower envelope of (error, cost) points, errors increasing, costs decreasing
    (:func:`pareto_front`)."""

    errors: np.ndarray
    costs: np.ndarray
    #: The largest error of the family's points (at least the front's last error).
    reach: float

    @property
    def span(self) -> tuple[float, float]:
        """The family's error range: the front's smallest error and :attr:`reach`."""
        return float(self.errors[0]), float(self.reach)

    def log_cost(self, log_errors: np.ndarray) -> np.ndarray:
        """log(cost) at ``log_errors`` (natural logarithms, inside :attr:`span`): the piecewise
        linear interpolation of log(cost) against log(error) between the front's points, flat
        above its last point."""
        return np.interp(log_errors, np.log(self.errors), np.log(self.costs))


def pareto_front(errors: Sequence[float], costs: Sequence[float]) -> np.ndarray:
    """The indices of the points on the lower envelope of (error, cost), by increasing error.

    A point is kept when every point of smaller or equal error costs more (ties in error: the
    cheaper one); points with a non-finite or non-positive error or cost are left out (the
    envelope is drawn in log-log).

    Examples
    --------
    >>> pareto_front([1e-3, 1e-2, 1e-1, 5e-2], [4.0, 2.0, 1.0, 3.0]).tolist()
    [0, 1, 2]
    """
    e = np.asarray(errors, dtype=float)
    c = np.asarray(costs, dtype=float)
    if e.shape != c.shape or e.ndim != 1:
        raise ValueError(f"errors and costs must be 1-D of one length, got {e.shape}, {c.shape}")
    valid = np.flatnonzero(np.isfinite(e) & np.isfinite(c) & (e > 0) & (c > 0))
    order = valid[np.lexsort((c[valid], e[valid]))]
    kept: list[int] = []
    for index in order:
        if not kept or c[index] < c[kept[-1]]:
            kept.append(int(index))
    return np.asarray(kept, dtype=int)


def front(errors: Sequence[float], costs: Sequence[float]) -> Front | None:
    """The :class:`Front` of the points, its reach the largest error of the valid points (None
    when none is valid, :func:`pareto_front`)."""
    kept = pareto_front(errors, costs)
    if kept.size == 0:
        return None
    e, c = np.asarray(errors, float), np.asarray(costs, float)
    reach = np.max(e[np.isfinite(e) & np.isfinite(c) & (e > 0) & (c > 0)])
    return Front(e[kept], c[kept], float(reach))


@dataclass(frozen=True)
class Crossing:
    """Where two fronts cross inside the overlap of their error ranges (:func:`crossing`).

    ``overlap`` is the error range searched (None when the ranges do not overlap), ``errors``
    the crossing errors (increasing; empty when the fronts do not cross), ``cheaper_tight`` and
    ``cheaper_loose`` which front (0: the first, 1: the second, None: equal costs) is cheaper at
    the small-error end and at the large-error end of the overlap.
    """

    overlap: tuple[float, float] | None
    errors: tuple[float, ...]
    cheaper_tight: int | None
    cheaper_loose: int | None


def crossing(first: Front, second: Front) -> Crossing:
    """The sign changes of log C_1(e) - log C_2(e) over the overlap of the fronts' spans.

    The difference is linear in log(e) between consecutive knots of either front, so a sign
    change between knots x_i, x_{i+1} with values d_i, d_{i+1} of opposite signs is at
    x_i - d_i (x_{i+1} - x_i) / (d_{i+1} - d_i); a stretch where d = 0 between opposite signs
    crosses at its first knot, one between equal signs (the curves touch) does not; differences
    up to :data:`EQUAL_LOG_COST` count as 0.
    """
    low = max(first.span[0], second.span[0])
    high = min(first.span[1], second.span[1])
    if not low < high:
        return Crossing(None, (), None, None)
    knots = np.concatenate([first.errors, second.errors, [low, high]])
    x = np.unique(np.log(knots[(knots >= low) & (knots <= high)]))
    d = first.log_cost(x) - second.log_cost(x)
    signs = np.sign(np.where(np.abs(d) <= EQUAL_LOG_COST, 0.0, d))
    nonzero = np.flatnonzero(signs)
    found = []
    for i, j in zip(nonzero[:-1], nonzero[1:], strict=True):
        if signs[i] == signs[j]:
            continue
        if j == i + 1:
            found.append(x[i] - d[i] * (x[j] - x[i]) / (d[j] - d[i]))
        else:
            found.append(x[i + 1])
    cheaper = {-1.0: 0, 1.0: 1}
    tight = cheaper[signs[nonzero[0]]] if nonzero.size else None
    loose = cheaper[signs[nonzero[-1]]] if nonzero.size else None
    return Crossing((low, high), tuple(float(np.exp(v)) for v in found), tight, loose)


@dataclass(frozen=True)
class Crossover:
    """The crossover of two families' cost curves on one problem (:func:`crossover_of`).

    Attributes
    ----------
    problem, first, second : str
        The problem and the two families.
    ranges : tuple of (float, float)
        Each family's error range (:attr:`Front.span`).
    crossing : Crossing
        The crossing of the fronts of the measured medians.
    low, high : float
        The bootstrap interval of the crossover error (the loosest crossing when the fronts
        cross more than once): quantiles over every resample, one whose fronts do not cross
        counted at the end of the overlap its crossing left by (the accurate end when the
        measured loose-end family stays cheaper over all of it, else the loose end); NaN when
        the fronts do not cross or with too few repeats.
    resamples : int
        Bootstrap resamples drawn (0: too few repeats for an interval).
    without : int
        Resamples whose fronts do not cross in the overlap (with a crossing), or that cross
        (without one).
    """

    problem: str
    first: str
    second: str
    ranges: tuple[tuple[float, float], tuple[float, float]]
    crossing: Crossing
    low: float
    high: float
    resamples: int
    without: int

    @property
    def decades(self) -> float:
        """The width of the overlap in decades (0 without one)."""
        if self.crossing.overlap is None:
            return 0.0
        low, high = self.crossing.overlap
        return math.log10(high / low)

    @property
    def error(self) -> float:
        """The crossover error: the loosest crossing (NaN when the fronts do not cross)."""
        return self.crossing.errors[-1] if self.crossing.errors else math.nan

    def family(self, index: int | None) -> str:
        """The family of a :class:`Crossing` index (0: ``first``, 1: ``second``)."""
        return "neither (equal costs)" if index is None else (self.first, self.second)[index]

    @property
    def text(self) -> str:
        """The statement of the crossover, of the forms ``"A vs B: cross at error e [l, u] (A
        cheaper above, B just below; searched [a, b], n decades; k of R resamples do not
        cross)"`` (l written ``<= a`` and u ``>= b`` where the interval reaches an end of the
        overlap: censored resamples), ``"A vs B: outside [a, b]: B cheaper over all of it (n
        decades); k of R resamples cross"`` or ``"A vs B: the error ranges share no interval
        (...)"``; an overlap under :data:`MIN_DECADES` decades is said to be one."""
        pair = f"{self.first} vs {self.second}: "
        if self.crossing.overlap is None:
            spans = ", ".join(
                f"{family} [{_g(a)}, {_g(b)}]"
                for family, (a, b) in zip((self.first, self.second), self.ranges, strict=True)
            )
            return pair + f"the error ranges share no interval ({spans}): no crossover located"
        low, high = self.crossing.overlap
        searched = f"[{_g(low)}, {_g(high)}]"
        width = f"{self.decades:.3g} decades"
        if self.decades < MIN_DECADES:
            width += f", under the {MIN_DECADES:g} decades a comparison needs"
        if not self.crossing.errors:
            text = (
                f"outside {searched}: {self.family(self.crossing.cheaper_loose)} cheaper over "
                f"all of it ({width})"
            )
            if self.resamples:
                text += f"; {self.without} of {self.resamples} resamples cross"
            return pair + text
        text = f"cross at error {_g(self.error)}"
        if self.resamples:
            # an end of the interval at an end of the overlap is a censored bound (resamples
            # whose crossing left the overlap there)
            lower = f"<= {_g(low)}" if self.low <= low else _g(self.low)
            upper = f">= {_g(high)}" if self.high >= high else _g(self.high)
            text += f" [{lower}, {upper}]"
        else:
            text += f" [no interval: fewer than {MIN_REPEATS} repeats]"
        loose = self.crossing.cheaper_loose
        below = None if loose is None else 1 - loose  # just below the loosest crossing
        text += (
            f" ({self.family(loose)} cheaper above, {self.family(below)} just below; "
            f"searched {searched}, {width}"
        )
        if len(self.crossing.errors) > 1:
            others = ", ".join(_g(e) for e in self.crossing.errors[:-1])
            text += f"; also crossing at {others}"
        if self.resamples:
            text += f"; {self.without} of {self.resamples} resamples do not cross"
        return pair + text + ")"


def _g(value: float) -> str:
    return f"{value:.2g}"


def crossover_of(
    problem: str,
    runs: pd.DataFrame,
    metric: str,
    first: str,
    second: str,
    resamples: int = RESAMPLES,
) -> Crossover | None:
    """The crossover of families ``first`` and ``second`` among ``runs`` (one problem).

    Parameters
    ----------
    problem : str
        The problem's name (for the statement).
    runs : DataFrame
        One row per point: ``family``, ``metric`` (the error) and ``wall_time_repeats`` (the
        timed repeats, a JSON list; the cost is their median). Rows without an error or repeats
        are left out.
    metric : str
        The error column.
    first, second : str
        The two families.
    resamples : int
        Bootstrap resamples (at least 1).

    Returns
    -------
    Crossover or None
        None when either family has no point.
    """
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    if metric not in runs:
        raise ValueError(f"metric {metric!r} is not a column of runs")
    points = []
    for family in (first, second):
        rows = runs[runs["family"] == family]
        times = [row_timing(row).repeats for _, row in rows.iterrows()]
        errors = rows[metric].to_numpy(dtype=float)
        keep = [i for i, t in enumerate(times) if t and np.isfinite(errors[i]) and errors[i] > 0]
        if not keep:
            return None
        points.append((errors[keep], [np.asarray(times[i], dtype=float) for i in keep]))
    fronts = [front(e, [np.median(t) for t in times]) for e, times in points]
    if fronts[0] is None or fronts[1] is None:
        return None
    measured = crossing(fronts[0], fronts[1])
    ranges = (fronts[0].span, fronts[1].span)
    enough = all(t.size >= MIN_REPEATS for _, times in points for t in times)
    if measured.overlap is None or not enough:
        return Crossover(problem, first, second, ranges, measured, math.nan, math.nan, 0, 0)
    rng = np.random.default_rng(SEED)
    costs = [
        np.stack([np.median(rng.choice(t, (resamples, t.size)), axis=1) for t in times], axis=1)
        for _, times in points
    ]
    low_end, high_end = measured.overlap
    grid = np.concatenate([points[0][0], points[1][0], [low_end, high_end]])
    x = np.unique(np.log(grid[(grid >= low_end) & (grid <= high_end)]))
    d = _log_fronts(points[0][0], costs[0], x) - _log_fronts(points[1][0], costs[1], x)
    loosest = _loosest_crossings(x, d)
    crosses = np.isfinite(loosest)
    tail = (1 - CONFIDENCE) / 2
    low = high = math.nan
    if measured.errors:
        # a resample whose fronts do not cross has its crossing outside the overlap: beyond its
        # accurate end when the measured loose-end family stays cheaper over all of it, beyond
        # its loose end when the other one does (censored at that end, counted in the interval)
        first_cheaper = d.mean(axis=1) < 0.0
        same = first_cheaper == (measured.cheaper_loose == 0)
        censored = np.where(same, low_end, high_end)
        every = np.where(crosses, loosest, censored)
        low, high = (float(q) for q in np.exp(np.quantile(np.log(every), [tail, 1 - tail])))
        low, high = max(low, low_end), min(high, high_end)  # exp(log(.)) is not exact
    without = resamples - int(crosses.sum()) if measured.errors else int(crosses.sum())
    return Crossover(problem, first, second, ranges, measured, low, high, resamples, without)


def _log_fronts(errors: np.ndarray, costs: np.ndarray, x: np.ndarray) -> np.ndarray:
    """log C(x) of the front of each row of ``costs`` (resamples x points, the points' errors
    ``errors``) at the log-errors ``x`` (at least the smallest error): :meth:`Front.log_cost`
    of :func:`front` for every row at once. Points of equal error are merged (the cheaper
    one); a point is on the front when it costs less than every more accurate one; between the
    front's points log C is linear in log(error), flat above the last."""
    order = np.argsort(errors, kind="stable")
    unique, starts = np.unique(errors[order], return_index=True)
    lc = np.log(np.minimum.reduceat(costs[:, order], starts, axis=1))
    le = np.log(unique)
    m = le.size
    index = np.arange(m)
    on = np.ones(lc.shape, dtype=bool)
    on[:, 1:] = lc[:, 1:] < np.minimum.accumulate(lc, axis=1)[:, :-1]
    before = np.maximum.accumulate(np.where(on, index, -1), axis=1)
    after = np.minimum.accumulate(np.where(on, index, m)[:, ::-1], axis=1)[:, ::-1]
    p = np.searchsorted(le, x, side="right") - 1  # the last point of error <= x
    rows = np.arange(lc.shape[0])[:, None]
    a = before[:, p]
    b = np.where(p + 1 < m, after[:, np.minimum(p + 1, m - 1)], m)
    flat = b == m
    b = np.where(flat, a, b)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = (lc[rows, b] - lc[rows, a]) / (le[b] - le[a])
    return np.where(flat, lc[rows, a], lc[rows, a] + slope * (x - le[a]))


def _loosest_crossings(x: np.ndarray, d: np.ndarray) -> np.ndarray:
    """The loosest crossing error of each row of ``d`` (log-cost differences at the
    log-errors ``x``) by the rule of :func:`crossing`, NaN for a row without one: after the
    last knot whose sign is opposite to the last nonzero sign, the root of the segment when the
    next nonzero knot follows it, else the first (zero) knot after it."""
    signs = np.sign(np.where(np.abs(d) <= EQUAL_LOG_COST, 0.0, d))
    count, knots = signs.shape
    index = np.arange(knots)
    rows = np.arange(count)
    nonzero = signs != 0
    last = np.max(np.where(nonzero, index, -1), axis=1)
    final = signs[rows, np.maximum(last, 0)]
    opposite = (signs == -final[:, None]) & (last >= 0)[:, None]
    i = np.max(np.where(opposite, index, -1), axis=1)
    crosses = i >= 0
    i = np.where(crosses, i, 0)
    following = np.minimum.accumulate(np.where(nonzero, index, knots)[:, ::-1], axis=1)[:, ::-1]
    nxt = np.minimum(i + 1, knots - 1)
    j = np.minimum(following[rows, nxt], knots - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        root = x[i] - d[rows, i] * (x[j] - x[i]) / (d[rows, j] - d[rows, i])
    root = np.where(crosses, np.where(j == i + 1, root, x[nxt]), np.nan)
    return np.exp(root)


def crossovers(
    runs: pd.DataFrame,
    metric: str,
    families: Sequence[str] = COMPARED_FAMILIES,
    resamples: int = RESAMPLES,
) -> list[Crossover]:
    """:func:`crossover_of` per problem (``problem`` column, in order of appearance) and per
    pair of ``families`` that both have points on it (in the order of ``families``)."""
    result = []
    for problem, group in runs.groupby("problem", sort=False):
        present = [family for family in families if (group["family"] == family).any()]
        for first, second in combinations(present, 2):
            found = crossover_of(str(problem), group, metric, first, second, resamples)
            if found is not None:
                result.append(found)
    return result


def crossover_table(found: Sequence[Crossover], unit: str) -> pd.DataFrame:
    """One row per :class:`Crossover`: problem, families, the error range searched and its
    width in decades, the crossover error and its interval (NaN when the fronts do not cross),
    the share of resamples against it (without a crossing, or with one when the fronts do not
    cross) and the families cheaper at the loose and tight ends of the overlap. Errors in
    ``unit``."""
    rows = []
    for item in found:
        low, high = item.crossing.overlap or (math.nan, math.nan)
        rows.append(
            {
                "problem": item.problem,
                "families": f"{item.first} vs {item.second}",
                f"searched from [{unit}]": low,
                f"searched to [{unit}]": high,
                "overlap [decades]": item.decades,
                f"crossover error [{unit}]": item.error,
                f"interval low [{unit}]": item.low,
                f"interval high [{unit}]": item.high,
                "resamples against [%]": (
                    100.0 * item.without / item.resamples if item.resamples else math.nan
                ),
                "cheaper at loose errors": (
                    item.family(item.crossing.cheaper_loose) if item.crossing.overlap else "-"
                ),
                "cheaper at tight errors": (
                    item.family(item.crossing.cheaper_tight) if item.crossing.overlap else "-"
                ),
            }
        )
    return pd.DataFrame(rows)
