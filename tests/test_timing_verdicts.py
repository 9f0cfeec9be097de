"""The timing verdicts (impactbench.analysis.timing): the ratio of medians with its bootstrap
interval, the interval of a median, worked by hand and by seeded simulation."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from impactbench.analysis.fitting import phase_medians
from impactbench.analysis.timing import (
    ADAPTIVE_STEPPING,
    FASTER,
    MIN_REPEATS,
    SLOWER,
    STUDY_REPEATS,
    TIE,
    Timing,
    compare,
    comparison_families,
    crossover,
    crossover_text,
    median_interval,
    median_is_precise,
    protocol_text,
    row_timing,
    spread_columns,
    ties,
    with_spreads,
)


def _noisy(median: float, n: int, seed: int, slowest: float = 11.0) -> Timing:
    """``n`` repeats around ``median`` (lognormal, 10 % scatter) whose slowest is ``slowest``
    times the fastest: a shared machine's slowdowns."""
    rng = np.random.default_rng(seed)
    times = median * np.exp(rng.normal(0.0, 0.1, n))
    times[0] = slowest * times.min()
    return Timing(tuple(times))


def test_a_28x_gap_with_noisy_repeats_is_never_a_tie():
    # the case: three repeats with spread over 11x the fastest printed a 28x gap as a
    # tie; the ratio of medians with its bootstrap interval does not
    for seed in range(20):
        fast, slow = _noisy(1e-3, 10, seed), _noisy(28e-3, 10, 100 + seed)
        assert max(slow.repeats) > 11 * min(fast.repeats) > 0
        result = compare(fast, slow)
        assert result.verdict == FASTER and result.low > 1
        assert 20 < result.ratio < 40 and result.text.startswith("faster by ")
        assert compare(slow, fast).verdict == SLOWER


def test_a_ratio_interval_that_contains_one_is_a_tie():
    # the same distribution twice: the interval of the ratio of medians holds 1
    a, b = _noisy(1e-3, 10, 1, slowest=2.0), _noisy(1e-3, 10, 2, slowest=2.0)
    result = compare(a, b)
    assert result.low < 1 < result.high and result.verdict == TIE
    assert result.text.startswith("tie (ratio ")


def test_too_few_repeats_give_no_verdict():
    few = Timing((1.0, 1.0, 1.0, 1.0))  # fewer than MIN_REPEATS
    result = compare(few, Timing((5.0,) * MIN_REPEATS))
    assert result.verdict == TIE and math.isnan(result.low) and result.ratio == 5.0
    assert result.text == f"tie (fewer than {MIN_REPEATS} repeats)"


def test_the_bootstrap_interval_covers_the_true_ratio():
    # 400 seeded experiments: two runs of lognormal repeats (median 1 and 3, 30 % scatter),
    # ten repeats each; the 95 % interval must hold the true ratio 3 in about 95 % of them
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(400):
        a = Timing(tuple(np.exp(rng.normal(0.0, 0.3, 10))))
        b = Timing(tuple(3.0 * np.exp(rng.normal(0.0, 0.3, 10))))
        result = compare(a, b)
        covered += result.low <= 3.0 <= result.high
    assert 0.92 <= covered / 400 <= 0.99


def test_verdicts_are_deterministic():
    a, b = _noisy(1e-3, 10, 3), _noisy(1.05e-3, 10, 4)
    assert compare(a, b) == compare(a, b)


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        # n = 10: j = 2 (P(2 <= B <= 8) = 1 - 2 * 11/1024 = 0.979; j = 3 gives 0.891)
        (10, (2.0, 9.0)),
        # n = 6: j = 1 (1 - 2/64 = 0.969); n = 5: 1 - 2/32 = 0.9375 < 0.95, no interval
        (6, (1.0, 6.0)),
        (5, (-math.inf, math.inf)),
        # n = 20: j = 6 (P(B <= 5) = 0.0207, 1 - 0.041 >= 0.95; j = 7: 1 - 0.115)
        (20, (6.0, 15.0)),
    ],
)
def test_the_median_interval_is_the_binomial_order_statistics(n, expected):
    assert median_interval(np.arange(1.0, n + 1)[::-1]) == expected


def test_a_median_is_precise_when_its_interval_is_within_five_percent():
    assert median_is_precise([1.0] * 8 + [0.96, 1.04])
    # ten repeats, the 2nd smallest 0.94: outside 5 % of the median 1
    assert not median_is_precise([0.5, 0.94] + [1.0] * 8)
    assert not median_is_precise([1.0] * 5)  # no interval at 95 % from five


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


def _repeats(median: float, scatter: float) -> str:
    """Ten repeats spread evenly over ``median (1 +- scatter)``, as a table stores them."""
    return json.dumps(list(median * (1.0 + scatter * np.linspace(-1.0, 1.0, 10))))


def test_ties_lists_the_rows_whose_ratio_interval_holds_one():
    best = {"wall_time_repeats": _repeats(1.0, 0.1)}
    others = pd.DataFrame(
        {
            "method": ["A", "B", "C", "D"],
            # A: the same repeats; B: 1.5 times slower, no overlap; C: 1.2 times with 30 %
            # scatter, wide enough to hold 1; D: timed with too few repeats for a verdict
            "wall_time_repeats": [
                _repeats(1.0, 0.1),
                _repeats(1.5, 0.1),
                _repeats(1.2, 0.3),
                json.dumps([5.0, 5.0]),
            ],
        }
    )
    assert ties(best, others)["method"].tolist() == ["A", "C", "D"]
    assert compare(row_timing(best), row_timing(others.iloc[1])).verdict == FASTER


def test_crossover_states_the_faster_family_per_target_with_ties():
    # error and repeats per run; targets 1e-1, 1e-2, 1e-4, 1e-8
    runs = pd.DataFrame(
        {
            "family": ["time-stepping"] * 3 + ["event-driven"] * 2,
            "error": [5e-2, 5e-3, 5e-5, 1e-3, 1e-6],
            "wall_time": [0.9, 1.8, 9.5, 1.9, 3.6],
            "wall_time_repeats": [
                _repeats(1.0, 0.1),
                _repeats(2.0, 0.1),
                _repeats(10.0, 0.05),
                _repeats(2.1, 0.1),
                _repeats(4.0, 0.1),
            ],
        }
    )
    answers = crossover(runs, "error", [1e-1, 1e-2, 1e-4, 1e-8])
    # 1e-1: TS (median 1.0) against ED 2.1: 2.1 times faster, time-stepping;
    # 1e-2: TS 2.0 against ED 2.1 with 10 % scatter: a tie;
    # 1e-4: TS 10.0 against ED 4.0: event-driven, 2.5 times faster; 1e-8: no run
    first, second = (
        compare(*(row_timing(runs.iloc[i]) for i in (0, 3))),
        compare(*(row_timing(runs.iloc[i]) for i in (4, 2))),
    )
    assert first.verdict == second.verdict == FASTER
    assert first.ratio == pytest.approx(2.1) and second.ratio == pytest.approx(2.5)
    assert answers == [
        ([1e-1], f"time-stepping ({first.text})"),
        ([1e-2], "tie"),
        ([1e-4], f"event-driven ({second.text})"),
    ]
    assert crossover_text(answers) == (
        f"<= 0.1: time-stepping ({first.text}); <= 0.01: tie; "
        f"<= 0.0001: event-driven ({second.text})"
    )
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
                "wall_time": [2.9, 0.9, 1.0],
                "wall_time_repeats": [_repeats(3.0, 0.1), _repeats(1.0, 0.2), _repeats(1.1, 0.2)],
            }
        )
    )
    assert runs["family"].tolist() == ["time-stepping", ADAPTIVE_STEPPING, "event-driven"]
    # adaptive 1.0 against event-driven 1.1 (20 % scatter: tie), time-stepping 3.0 (slower)
    assert crossover(runs, "error", [1e-2]) == [([1e-2], f"tie: {ADAPTIVE_STEPPING}, event-driven")]
    faster = runs.assign(
        wall_time_repeats=[_repeats(3.0, 0.1), _repeats(1.0, 0.1), _repeats(2.0, 0.1)]
    )
    # the answer names the ratio to the closest family: event-driven, 2 times slower
    closest = compare(row_timing(faster.iloc[1]), row_timing(faster.iloc[2]))
    assert closest.ratio == pytest.approx(2.0)
    assert crossover(faster, "error", [1e-2]) == [([1e-2], f"{ADAPTIVE_STEPPING} ({closest.text})")]


def test_the_protocol_text_states_the_repeats():
    text = protocol_text(STUDY_REPEATS)
    assert "at least 10 repeats, more until the 95 % interval of their median is within 5 %" in text
    assert "at most 20 (5 on the quick grid)" in text and "at least 10 ms" in text
    fixed = {"full": {"repeats": 7, "max_repeats": 7}, "quick": {"repeats": 5, "max_repeats": 5}}
    assert "; 7 repeats (5 on the quick grid);" in protocol_text(fixed)


def test_a_phase_family_pools_the_repeats_of_its_runs():
    # two phase copies of one nominal step and an adaptive run: the family's repeats are its
    # copies' repeats together (a failed copy has none)
    table = pd.DataFrame(
        {
            "problem": ["P"] * 4,
            "method": ["M", "M", "M", "A"],
            "h_nominal": [0.1, 0.1, 0.1, np.nan],
            "tolerance": [np.nan, np.nan, np.nan, 1e-3],
            "status": ["ok", "ok", "failed", "ok"],
            "wall_time": [1.0, 2.0, np.nan, 3.0],
            "wall_time_repeats": [json.dumps([1.0, 1.5]), json.dumps([2.0]), np.nan, "[3.0]"],
        }
    )
    families = phase_medians(table, ["wall_time"])
    assert families["wall_time_repeats"].map(json.loads).tolist() == [[1.0, 1.5, 2.0], [3.0]]
    assert row_timing(families.iloc[0]).repeats == (1.0, 1.5, 2.0)


def test_the_long_run_studies_can_stop_on_a_precise_median():
    """The long-run studies' first precision test comes at a count whose median interval is
    finite (so that it can trigger), and they stop by 10 repeats at the latest."""
    from impactbench.analysis.timing import LONG_RUN_REPEATS, median_interval, median_is_precise

    full = LONG_RUN_REPEATS["full"]
    first = [1.0 + 0.001 * k for k in range(full["repeats"])]
    assert all(math.isfinite(bound) for bound in median_interval(first))
    assert median_is_precise(first)
    assert full["max_repeats"] == 10
