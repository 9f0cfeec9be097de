"""Timing verdicts that respect the measured spread of the repeats.

A run is timed ``repeats`` times (:mod:`impactbench.bench.runner`): its time is the minimum,
its *spread* the maximum minus the minimum. Two times differ measurably only when their gap
exceeds the spread of both runs; the studies then say which is faster, and "tie" otherwise
(:func:`verdict`). A run timed once has no measured spread (NaN): it ties with every run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, NamedTuple

import pandas as pd

from impactbench.core.method import EVENT_DRIVEN, TIME_STEPPING

#: The verdicts of :func:`verdict`.
FASTER = "faster"
SLOWER = "slower"
TIE = "tie"


class Timing(NamedTuple):
    """A run's time and the spread of its repeats (seconds; NaN spread: not measured)."""

    seconds: float
    spread: float


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


def verdict(a: Timing, b: Timing) -> str:
    """:data:`FASTER` when ``a`` is faster than ``b`` by more than the spread of both,
    :data:`SLOWER` when ``b`` is faster than ``a`` so, :data:`TIE` otherwise (also when a time or
    a spread is NaN).

    Examples
    --------
    >>> verdict(Timing(1.0, 0.1), Timing(1.25, 0.2))  # gap 0.25 > max(0.1, 0.2)
    'faster'
    >>> verdict(Timing(1.0, 0.1), Timing(1.15, 0.2))  # gap 0.15 <= 0.2
    'tie'
    """
    gap = b.seconds - a.seconds
    noise = max(a.spread, b.spread)
    if not (math.isfinite(gap) and math.isfinite(noise)):
        return TIE
    if gap > noise:
        return FASTER
    if -gap > noise:
        return SLOWER
    return TIE


def row_timing(row: Any, name: str = "wall_time") -> Timing:
    """The :class:`Timing` of a table row with ``name`` and ``<name>_spread`` (a mapping or a
    pandas row)."""
    return Timing(float(row[name]), float(row[f"{name}_spread"]))


def ties(best: Any, others: pd.DataFrame, name: str = "wall_time") -> pd.DataFrame:
    """The rows of ``others`` whose time ties with ``best``'s (:func:`verdict`; ``best`` a row
    with ``name`` and ``<name>_spread``, ``others`` a frame with those columns)."""
    reference = row_timing(best, name)
    keep = [verdict(reference, row_timing(row, name)) == TIE for _, row in others.iterrows()]
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
    """Which family is faster to each error target: per target, the fastest run of each family
    (``family`` column: :data:`COMPARED_FAMILIES`) whose ``metric`` is at most the target,
    compared by :func:`verdict` on ``wall_time`` and ``wall_time_spread``.

    Returns
    -------
    list of (targets, answer)
        ``answer``: the family whose fastest run is faster than every other family's, ``"tie"``
        (two families reach the target and tie) or ``"tie: <families>"`` (more than two: the
        fastest and those that tie with it), or ``"only <family> reaches it"``; consecutive
        targets with the same answer merged, targets no run reaches left out.
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
            tied = [
                family
                for family in best
                if family != first
                and verdict(row_timing(best[first]), row_timing(best[family])) != FASTER
            ]
            if not tied:
                answer = first
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
