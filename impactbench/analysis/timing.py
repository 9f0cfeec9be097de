"""Timing verdicts on the ratio of median times, with a bootstrap interval.

A run is timed in repeats (:mod:`impactbench.bench.runner`): each repeat times enough
simulations of the run to cover :data:`MIN_TIMED_SECONDS` and records
the time per simulation; the repeats go on until there are at least ``repeats`` of them and the
95 % order-statistic interval of their median lies within :data:`MEDIAN_PRECISION` of it
(:func:`median_interval`), or until ``max_repeats``. The table keeps the minimum
(``wall_time``), the median, the maximum and every repeat (``wall_time_repeats``, JSON).

Two runs are compared by the ratio of their median times, with a percentile bootstrap interval
(each run's repeats resampled apart, :data:`RESAMPLES` times, seeded: the same tables give the
same verdicts): a run is faster when the interval lies above 1, and "tie" only when it contains 1
(:func:`compare`). A run with fewer than :data:`MIN_REPEATS` repeats gives no verdict (a tie).
The spread (maximum minus minimum) of the repeats is shown in tables next to the times; no
verdict rests on it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from impactbench.core.method import EVENT_DRIVEN, TIME_STEPPING

#: The verdicts of :func:`verdict`.
FASTER = "faster"
SLOWER = "slower"
TIE = "tie"

#: Confidence of the intervals of the median (:func:`median_interval`) and of the ratio of
#: medians (:func:`compare`).
CONFIDENCE = 0.95

#: Least time a timed repeat covers (seconds): a shorter run is simulated several times in it
#: (:mod:`impactbench.bench.runner`).
MIN_TIMED_SECONDS = 0.01

#: Relative half-width the interval of a run's median time must reach before its repeats stop.
MEDIAN_PRECISION = 0.05

#: Fewest repeats per run for a verdict (:func:`compare`).
MIN_REPEATS = 5

#: Bootstrap resamples of :func:`compare`, and the seed of its generator.
RESAMPLES = 4000
SEED = 20261207


#: Timed repeats (``repeats``, ``max_repeats`` of :class:`impactbench.bench.runner.Run`) of the
#: timing studies' runs, on their full and quick grids.
STUDY_REPEATS = {
    "full": {"repeats": 10, "max_repeats": 20},
    "quick": {"repeats": MIN_REPEATS, "max_repeats": MIN_REPEATS},
}

#: Timed repeats of the studies whose runs take seconds (each repeat then spans many of the
#: scheduler's time slices): 10, or fewer once the median is precise. Their precision test
#: starts at 6 repeats, the fewest whose order-statistic interval of the median is finite at
#: 95 % (j = 1: P(1 <= B <= 5) = 62/64 for n = 6; :func:`median_interval`), so that it can stop
#: them; a fixed count below 6 would leave that test unable to trigger.
LONG_RUN_REPEATS = {
    "full": {"repeats": 6, "max_repeats": 10},
    "quick": {"repeats": MIN_REPEATS, "max_repeats": MIN_REPEATS},
}


def protocol_text(repeats: dict[str, dict[str, int]]) -> str:
    """What a timing study's description says of its wall times and verdicts, for its
    ``repeats`` (:data:`STUDY_REPEATS` or :data:`LONG_RUN_REPEATS`)."""
    full, quick = repeats["full"], repeats["quick"]
    counts = f"{full['repeats']} repeats"
    if full["max_repeats"] > full["repeats"]:
        counts = f"at least {counts}" + (
            f", more until the 95 % interval of their median is within "
            f"{MEDIAN_PRECISION * 100:g} % of it, at most {full['max_repeats']}"
        )
    counts += f" ({quick['max_repeats']} on the quick grid)"
    return (
        f"Wall time: after a warm-up run, each timed repeat covers at least "
        f"{MIN_TIMED_SECONDS * 1e3:g} ms (a shorter run is simulated several times in it and "
        f"the time per simulation kept); {counts}; the runs execute one at a time, timed "
        "round-robin (one repeat of each per round). The table keeps the minimum (wall_time), "
        "median and maximum of the repeats and every repeat. Two runs are compared by the "
        'ratio of their median times with its 95 % bootstrap interval: "faster by X [a, b]" '
        "when the interval excludes 1, a tie only when it holds 1."
    )


#: :func:`protocol_text` of :data:`STUDY_REPEATS`.
PROTOCOL_TEXT = protocol_text(STUDY_REPEATS)

#: The verdict rule, as the studies' findings state it.
VERDICT_TEXT = (
    "ratio of median wall times with its 95 % bootstrap interval; a tie only where it holds 1"
)


class Timing(NamedTuple):
    """A run's repeated times (seconds per simulation, one per timed repeat)."""

    repeats: tuple[float, ...]

    @property
    def median(self) -> float:
        """The median of the repeats (NaN without any)."""
        return float(np.median(self.repeats)) if self.repeats else math.nan


class Comparison(NamedTuple):
    """The comparison of run ``a`` with run ``b`` (:func:`compare`).

    ``ratio`` is median(b) / median(a) (how many times ``a`` is faster), ``low`` and ``high``
    the bounds of its bootstrap interval (NaN without a verdict: too few repeats).
    """

    verdict: str
    ratio: float
    low: float
    high: float

    @property
    def text(self) -> str:
        """``"faster by 28.1 [20.3, 35.2]"``, ``"slower by 1.52 [1.31, 1.77]"`` (the factors
        by which ``a`` is faster or slower, with the interval), ``"tie (ratio 1.02 [0.96,
        1.09])"`` or ``"tie (fewer than 5 repeats)"``."""
        if not math.isfinite(self.low):
            return f"{TIE} (fewer than {MIN_REPEATS} repeats)"
        if self.verdict == SLOWER:
            return f"{SLOWER} by {_interval(1 / self.ratio, 1 / self.high, 1 / self.low)}"
        if self.verdict == FASTER:
            return f"{FASTER} by {_interval(self.ratio, self.low, self.high)}"
        return f"{TIE} (ratio {_interval(self.ratio, self.low, self.high)})"


def _interval(value: float, low: float, high: float) -> str:
    return f"{value:.3g} [{low:.3g}, {high:.3g}]"


def median_interval(times: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The distribution-free interval of the median of ``times``: the order statistics
    ``x_(j) <= x_(n+1-j)`` with the largest ``j`` such that, for B ~ Binomial(n, 1/2),
    P(j <= B <= n - j) >= ``confidence`` (the probability that they enclose the median of the
    distribution the times are drawn from). ``(-inf, inf)`` when no ``j >= 1`` reaches it
    (fewer than 6 times at 95 %).

    Examples
    --------
    >>> median_interval(range(1, 11))  # j = 2: P(2 <= B <= 8) = 1 - 22/1024 >= 0.95
    (2.0, 9.0)
    """
    x = np.sort(np.asarray(times, dtype=float))
    n = x.size
    below = 0.0  # P(B < j) for the current j
    best = 0
    for j in range(1, n // 2 + 1):
        below += math.comb(n, j - 1) / 2.0**n
        if 1.0 - 2.0 * below < confidence:
            break
        best = j
    if best == 0:
        return (-math.inf, math.inf)
    return (float(x[best - 1]), float(x[n - best]))


def median_is_precise(times: Sequence[float], precision: float = MEDIAN_PRECISION) -> bool:
    """Whether the :func:`median_interval` of ``times`` lies within ``precision`` (relative) of
    their median."""
    low, high = median_interval(times)
    median = float(np.median(times))
    return (1 - precision) * median <= low and high <= (1 + precision) * median


def compare(a: Timing, b: Timing) -> Comparison:
    """Compare run ``a`` with run ``b`` by the ratio of their median times.

    The interval is the percentile bootstrap (:data:`CONFIDENCE`) of median(b*) / median(a*),
    the repeats of each run resampled with replacement apart (:data:`RESAMPLES` resamples,
    generator seeded with :data:`SEED`). :data:`FASTER` when the interval lies above 1,
    :data:`SLOWER` when it lies below, :data:`TIE` when it contains 1 or when a run has fewer
    than :data:`MIN_REPEATS` repeats (then ``low`` and ``high`` are NaN).

    Examples
    --------
    >>> compare(Timing((1.0, 1.1, 0.9, 1.0, 1.2)), Timing((3.0, 3.3, 2.9, 3.1, 3.0))).text
    'faster by 3 [2.5, 3.33]'
    """
    ratio = b.median / a.median
    if min(len(a.repeats), len(b.repeats)) < MIN_REPEATS:
        return Comparison(TIE, ratio, math.nan, math.nan)
    rng = np.random.default_rng(SEED)
    medians = [
        np.median(rng.choice(np.asarray(t.repeats, dtype=float), (RESAMPLES, len(t.repeats))), 1)
        for t in (a, b)
    ]
    tail = (1 - CONFIDENCE) / 2
    low, high = (float(q) for q in np.quantile(medians[1] / medians[0], [tail, 1 - tail]))
    outcome = FASTER if low > 1 else SLOWER if high < 1 else TIE
    return Comparison(outcome, ratio, low, high)


def verdict(a: Timing, b: Timing) -> str:
    """The verdict of :func:`compare`: :data:`FASTER`, :data:`SLOWER` or :data:`TIE`."""
    return compare(a, b).verdict


def spread_columns(table: pd.DataFrame, name: str = "wall_time") -> pd.Series:
    """``<name>_max - <name>`` per row: the spread of its repeats; NaN where the row was timed
    once (``repeats`` < 2) or its timing is missing."""
    spread = table[f"{name}_max"].astype(float) - table[name].astype(float)
    if "repeats" in table:
        spread = spread.where(table["repeats"].astype(float) >= 2)
    return spread


def with_spreads(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with ``wall_time_spread`` and ``integration_time_spread`` added
    (:func:`spread_columns`; NaN without the ``_max`` column), and the timing columns it lacks
    as NaN (e.g. a table written before the integration time was recorded)."""
    columns: dict[str, Any] = {}
    for name in ("wall_time", "integration_time"):
        if {name, f"{name}_max"} <= set(table.columns):
            columns[f"{name}_spread"] = spread_columns(table, name)
        else:
            names = (name, f"{name}_max", f"{name}_spread")
            columns.update(dict.fromkeys((n for n in names if n not in table), math.nan))
    return table.assign(**columns)


def row_timing(row: Any) -> Timing:
    """The :class:`Timing` of a table row (a mapping or a pandas row) from its
    ``wall_time_repeats`` (a JSON list of seconds, or a list); no repeats when the row has
    none (NaN: a failed run)."""
    stored = row.get("wall_time_repeats", math.nan)
    if isinstance(stored, str):
        stored = json.loads(stored)
    if not isinstance(stored, (list, tuple)):
        return Timing(())
    return Timing(tuple(float(t) for t in stored))


def ties(best: Any, others: pd.DataFrame) -> pd.DataFrame:
    """The rows of ``others`` whose time ties with ``best``'s (:func:`verdict` on their
    ``wall_time_repeats``; ``best`` a row, ``others`` a frame)."""
    reference = row_timing(best)
    keep = [verdict(reference, row_timing(row)) == TIE for _, row in others.iterrows()]
    return others[keep] if len(others) else others


def fastest_within(runs: pd.DataFrame, metric: str, target: float) -> pd.Series | None:
    """The row of least ``wall_time`` among ``runs`` whose ``metric`` is at most ``target``
    (None if none is)."""
    reached = runs[runs[metric] <= target]
    return None if reached.empty else reached.loc[reached["wall_time"].idxmin()]


#: The family of a time-stepping run with step-size control (no step h: an rtol), as the
#: studies tell it apart from fixed-step time-stepping (:func:`comparison_families`).
ADAPTIVE_STEPPING = "adaptive time-stepping"

#: The families the studies compare, in the order their texts list them.
COMPARED_FAMILIES = (TIME_STEPPING, ADAPTIVE_STEPPING, EVENT_DRIVEN)


def comparison_families(table: pd.DataFrame) -> pd.DataFrame:
    """``table`` with the ``family`` of its time-stepping rows without a step (``h`` NaN: a
    method with step-size control, :class:`impactbench.Adaptive`) set to
    :data:`ADAPTIVE_STEPPING`: three families to compare, not two."""
    adaptive = (table["family"] == TIME_STEPPING) & table["h"].isna()
    return table.assign(family=table["family"].where(~adaptive, ADAPTIVE_STEPPING))


def crossover(
    runs: pd.DataFrame, metric: str, targets: Sequence[float]
) -> list[tuple[list[float], str]]:
    """Which family is faster to each error target: per target, the fastest run (least
    ``wall_time``) of each family (``family`` column: :data:`COMPARED_FAMILIES`) whose
    ``metric`` is at most the target, compared by :func:`compare` on ``wall_time_repeats``.

    Returns
    -------
    list of (targets, answer)
        ``answer``: ``"<family> (faster by X [a, b])"``, the family whose fastest run is faster
        than every other family's, X the ratio of medians to the closest of them with its
        bootstrap interval; ``"tie"`` (two families reach the target and tie) or ``"tie:
        <families>"`` (more than two: the fastest and those that tie with it); or ``"only
        <family> reaches it"``; consecutive targets with the same answer merged, targets no run
        reaches left out.
    """
    answers: list[tuple[list[float], str]] = []
    for target in targets:
        best = {}
        for family in COMPARED_FAMILIES:
            row = fastest_within(runs[runs["family"] == family], metric, target)
            if row is not None:
                best[family] = row
        if not best:
            continue
        if len(best) == 1:
            answer = f"only {next(iter(best))} reaches it"
        else:
            first = min(best, key=lambda family: float(best[family]["wall_time"]))
            against = {
                family: compare(row_timing(best[first]), row_timing(best[family]))
                for family in best
                if family != first
            }
            tied = [family for family, result in against.items() if result.verdict != FASTER]
            if not tied:
                closest = min(against.values(), key=lambda result: result.ratio)
                answer = f"{first} ({closest.text})"
            elif len(best) == 2:
                answer = TIE
            else:
                answer = f"{TIE}: {', '.join([first, *tied])}"
        if answers and answers[-1][1] == answer:
            answers[-1][0].append(target)
        else:
            answers.append(([target], answer))
    return answers


def crossover_text(answers: list[tuple[list[float], str]]) -> str:
    """``"<= 0.1, 0.01: time-stepping; <= 0.001: tie"`` from :func:`crossover`'s answers."""
    return "; ".join(
        f"<= {', '.join(f'{t:g}' for t in targets)}: {answer}" for targets, answer in answers
    )
