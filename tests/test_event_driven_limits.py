"""The event-driven limits study: its equal-error comparison worked by hand (its quick run is
tests/quick_run.py's)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from impactbench import Adaptive
from impactbench.analysis.timing import ADAPTIVE_STEPPING
from impactbench.methods import EventDriven
from impactbench.studies import STUDIES
from impactbench.studies import event_driven_limits as limits


def _row(method, h, tolerance, error, fastest, slowest, repeats=10, impacts=10):
    """A run whose ``repeats`` timed repeats spread evenly from ``fastest`` to ``slowest``."""
    family = "time-stepping" if h == h else "event-driven"
    return {
        "method": method,
        "h": h,
        "tolerance": tolerance,
        "error": error,
        "wall_time": fastest,
        "wall_time_max": slowest,
        "wall_time_repeats": json.dumps(list(np.linspace(fastest, slowest, repeats))),
        "repeats": repeats,
        "impacts": impacts,
        "family": family,
    }


def test_each_event_driven_run_meets_the_cheapest_time_stepper_at_least_as_accurate():
    nan = np.nan
    frame = pd.DataFrame(
        [
            _row("MoreauJean", 1e-2, nan, 1e-1, 1.0e-3, 1.1e-3),
            _row("MoreauJean", 1e-3, nan, 1e-2, 5.0e-3, 5.5e-3),
            _row("PaoliSchatzman", 1e-3, nan, 8e-3, 4.0e-3, 4.2e-3),
            _row("EventDriven", nan, 1e-2, 2e-2, 2.0e-3, 2.2e-3),  # MJ h=1e-3 or PS: PS cheaper
            _row("EventDriven", nan, 1e-4, 9e-3, 4.0e-3, 4.4e-3),  # PS only; medians close
            _row("EventDriven", nan, 1e-6, 1e-9, 1.0e-3, 1.0e-3),  # nothing reaches it
            _row("EventDriven", nan, 1e-8, 1e-1, 9.0e-3, 9.0e-3, repeats=1),  # one repeat
        ]
    )
    compared = limits.equal_error(frame)
    assert list(compared["time-stepper"]) == [
        "PaoliSchatzman (h = 0.001)",
        "PaoliSchatzman (h = 0.001)",
        "none reaches it",
        "MoreauJean (h = 0.01)",
    ]
    assert list(compared["verdict"]) == [
        "event-driven faster",  # medians 2.1 and 4.1 ms: faster by about 1.95
        "tie",  # medians 4.2 and 4.1 ms, repeats spread over [4.0, 4.4] and [4.0, 4.2]
        "-",
        "- (fewer than 5 repeats)",
    ]
    assert compared["ratio"].iloc[0].startswith("faster by 1.95 [")
    assert compared["ratio"].iloc[1].startswith("tie (ratio 0.976 [")


def test_the_study_runs_both_families_on_every_case():
    assert STUDIES[limits.NAME] is limits.STUDY
    runs = limits.runs(quick=True)
    for label in (limits.BALL, limits.PENDULUM, limits.COLUMN):
        mine = [run for run in runs if run.problem_name == label]
        assert {run.method.requires_step for run in mine} == {True, False}
        events = [run for run in mine if run.method is EventDriven]
        zeno = sorted(run.tolerance_value for run in events)
        assert zeno == sorted(limits.REST_VELOCITIES["quick"])
        controlled = sorted(run.tolerance_value for run in mine if run.method is Adaptive)
        quick = label in limits.ADAPTIVE_CASES["quick"]
        assert controlled == (limits.ADAPTIVE_TOLERANCES["quick"] if quick else [])
    assert set(limits.ADAPTIVE_CASES["full"]) == {limits.BALL, limits.PENDULUM, limits.COLUMN}


def test_each_adaptive_run_meets_the_cheapest_run_of_both_other_families():
    nan = np.nan
    frame = pd.DataFrame(
        [
            _row("MoreauJean", 1e-2, nan, 1e-1, 1.0e-3, 1.1e-3),
            _row("MoreauJean", 1e-3, nan, 1e-2, 5.0e-3, 5.5e-3),
            _row("EventDriven", nan, 1e-2, 5e-3, 2.0e-3, 2.2e-3),
            _row("Adaptive[scheme=MoreauJean]", nan, 1e-3, 2e-2, 0.5e-3, 0.6e-3),
            _row("Adaptive[scheme=MoreauJean]", nan, 1e-5, 1e-9, 9.0e-3, 9.5e-3),
        ]
    ).assign(family=lambda f: f["family"].where(~f["method"].str.startswith("Adaptive"),
                                                 ADAPTIVE_STEPPING))  # fmt: skip
    compared = limits.adaptive_equal_error(frame)
    assert list(compared["rtol"]) == [1e-3, 1e-5]
    # rtol 1e-3 (error 2e-2): MJ h = 1e-3 and the event-driven run reach it; faster than both
    assert list(compared["fixed step"]) == ["MoreauJean (h = 0.001)", "none reaches it"]
    assert list(compared["event-driven"]) == ["EventDriven (0.01)", "none reaches it"]
    assert list(compared["verdict (vs fixed step)"]) == ["adaptive time-stepping faster", "-"]
    assert list(compared["verdict (vs event-driven)"]) == ["adaptive time-stepping faster", "-"]


def test_a_capped_impact_count_is_a_lower_bound_in_the_equal_error_tables():
    """An event-driven or adaptive run whose impact log filled up shows ">= N" in both
    equal-error tables; the other counts stay as they are."""
    nan = np.nan
    frame = pd.DataFrame(
        [
            _row("MoreauJean", 1e-3, nan, 1e-2, 5.0e-3, 5.5e-3),
            _row("EventDriven", nan, 1e-2, 2e-2, 2.0e-3, 2.2e-3, impacts=203),
            _row("EventDriven", nan, 1e-10, 1e-3, 9.0e-3, 9.5e-3, impacts=100_000),
            _row("Adaptive[scheme=MoreauJean]", nan, 1e-3, 2e-2, 0.5e-3, 0.6e-3, impacts=50),
        ]
    ).assign(
        impacts_capped=[False, False, True, True],
        family=lambda f: f["family"].where(
            ~f["method"].str.startswith("Adaptive"), ADAPTIVE_STEPPING
        ),
    )
    assert list(limits.equal_error(frame)["impacts"]) == ["203", ">= 100000"]
    assert list(limits.adaptive_equal_error(frame)["impacts"]) == [">= 50"]
    assert "impacts_capped" not in limits.equal_error(frame)
    plain = limits.equal_error(frame.assign(impacts_capped=False))
    assert list(plain["impacts"]) == [203, 100_000]
