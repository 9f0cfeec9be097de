"""The tie rule of the timing verdicts (impactbench.analysis.timing), worked by hand."""

import math

import numpy as np
import pandas as pd
import pytest

from impactbench.analysis.timing import (
    ADAPTIVE_STEPPING,
    FASTER,
    SLOWER,
    TIE,
    Timing,
    comparison_families,
    crossover,
    crossover_text,
    spread_columns,
    ties,
    verdict,
    with_spreads,
)


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        # gap 1.25 - 1.0 = 0.25 > max(0.1, 0.2) = 0.2: a is faster, b slower
        (Timing(1.0, 0.1), Timing(1.25, 0.2), FASTER),
        (Timing(1.25, 0.2), Timing(1.0, 0.1), SLOWER),
        # gap 0.15 exceeds a's spread 0.1 but not b's 0.2: a tie
        (Timing(1.0, 0.1), Timing(1.15, 0.2), TIE),
        # a gap equal to the spread is not beyond it
        (Timing(1.0, 0.25), Timing(1.25, 0.0), TIE),
        # the case: 21.55 against 21.88 ms with a 20 % spread
        (Timing(21.55e-3, 4.3e-3), Timing(21.88e-3, 4.4e-3), TIE),
        # a run timed once has no measured spread: no verdict
        (Timing(1.0, math.nan), Timing(5.0, 0.1), TIE),
    ],
)
def test_a_verdict_needs_a_gap_beyond_the_spread_of_both(a, b, expected):
    assert verdict(a, b) == expected


def test_spreads_are_max_minus_min_and_unmeasured_for_a_single_repeat():
    table = pd.DataFrame(
        {
            "wall_time": [1.0, 2.0, 3.0],
            "wall_time_max": [1.5, 2.25, 3.0],
            "integration_time": [0.5, 1.0, 2.0],
            "integration_time_max": [0.75, 1.0, 2.0],
            "repeats": [3, 2, 1],
        }
    )
    assert spread_columns(table).tolist()[:2] == [0.5, 0.25]
    assert math.isnan(spread_columns(table).iloc[2])
    spreads = with_spreads(table)
    assert spreads["integration_time_spread"].tolist()[:2] == [0.25, 0.0]
    assert (
        with_spreads(table.drop(columns=["integration_time"]))["integration_time_spread"]
        .isna()
        .all()
    )


def test_ties_lists_the_rows_within_the_spread_of_the_best():
    best = {"wall_time": 1.0, "wall_time_spread": 0.1}
    others = pd.DataFrame(
        {
            "method": ["A", "B", "C"],
            "wall_time": [1.05, 1.5, 1.2],
            "wall_time_spread": [0.1, 0.1, 0.3],
        }
    )
    # A: gap 0.05 <= 0.1; B: gap 0.5 > 0.1; C: gap 0.2 <= 0.3
    assert ties(best, others)["method"].tolist() == ["A", "C"]


def test_crossover_states_the_faster_family_per_target_with_ties():
    # error, wall time, spread per run; targets 1e-1, 1e-2, 1e-4, 1e-8
    runs = pd.DataFrame(
        {
            "family": ["time-stepping"] * 3 + ["event-driven"] * 2,
            "error": [5e-2, 5e-3, 5e-5, 1e-3, 1e-6],
            "wall_time": [1.0, 2.0, 10.0, 2.1, 4.0],
            "wall_time_spread": [0.1, 0.2, 0.5, 0.2, 0.2],
        }
    )
    answers = crossover(runs, "error", [1e-1, 1e-2, 1e-4, 1e-8])
    # 1e-1: TS 1.0 (spread 0.1) against ED 2.1 (0.2): gap 1.1 > 0.2, time-stepping;
    # 1e-2: TS 2.0 (0.2) against ED 2.1 (0.2): gap 0.1 <= 0.2, a tie;
    # 1e-4: TS 10.0 (0.5) against ED 4.0 (0.2): gap 6 > 0.5, event-driven; 1e-8: no run
    assert answers == [([1e-1], "time-stepping"), ([1e-2], "tie"), ([1e-4], "event-driven")]
    assert crossover_text(answers) == "<= 0.1: time-stepping; <= 0.01: tie; <= 0.0001: event-driven"
    only = crossover(runs[runs["family"] == "event-driven"], "error", [1e-2, 1e-4])
    assert only == [([1e-2, 1e-4], "only event-driven reaches it")]


def test_crossover_of_three_families():
    """Adaptive time-stepping (time-stepping rows without h) is a family of its own."""
    runs = comparison_families(
        pd.DataFrame(
            {
                "family": ["time-stepping", "time-stepping", "event-driven"],
                "h": [1e-3, np.nan, np.nan],
                "error": [1e-3, 1e-3, 1e-3],
                "wall_time": [3.0, 1.0, 1.1],
                "wall_time_spread": [0.1, 0.2, 0.2],
            }
        )
    )
    assert runs["family"].tolist() == ["time-stepping", ADAPTIVE_STEPPING, "event-driven"]
    # adaptive 1.0 against event-driven 1.1 (gap 0.1 <= 0.2: tie), time-stepping 3.0 (slower)
    assert crossover(runs, "error", [1e-2]) == [([1e-2], f"tie: {ADAPTIVE_STEPPING}, event-driven")]
    faster = runs.assign(wall_time=[3.0, 1.0, 2.0])
    assert crossover(faster, "error", [1e-2]) == [([1e-2], ADAPTIVE_STEPPING)]
