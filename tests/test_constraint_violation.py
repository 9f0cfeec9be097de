"""The constraint-violation study's table, worked by hand (quick run: tests/quick_run.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from impactbench.analysis.fitting import FLOOR, ORDER
from impactbench.studies import STUDIES
from impactbench.studies import constraint_violation as violation


def _rows(problem, method, law):
    steps = np.geomspace(1e-2, 1e-4, 10)
    metric = (
        "max_penetration" if violation.KIND[problem] == violation.IMPACTS else ("late_penetration")
    )
    return [
        {
            "problem": problem,
            "method": method,
            "h": h,
            "h_nominal": h,
            "tolerance": np.nan,
            "status": "ok",
            metric: law(h),
        }
        for h in steps
    ]


def test_orders_of_penetration_at_impacts_and_at_rest_and_the_floor():
    table = pd.DataFrame(
        _rows("ball", "MoreauJean", lambda h: 3.0 * h)
        + _rows("resting column", "MoreauJean", lambda h: 0.5 * 9.81 * h * h)
        + _rows("resting column", "PaoliSchatzman", lambda h: 0.0)
        + _rows("oscillator", "PaoliSchatzman", lambda h: 1e-17)
    )
    fitted = violation.fits(table).set_index(["case", "method"])
    assert fitted.loc[("ball", "MoreauJean"), "status"] == ORDER
    assert abs(fitted.loc[("ball", "MoreauJean"), "order"] - 1.0) < 1e-9
    assert abs(fitted.loc[("resting column", "MoreauJean"), "order"] - 2.0) < 1e-9
    for case in (("resting column", "PaoliSchatzman"), ("oscillator", "PaoliSchatzman")):
        assert fitted.loc[case, "status"] == FLOOR
        assert fitted.loc[case, "order in h [95 %]"].startswith("on K to round-off")
    assert fitted.loc[("ball", "MoreauJean"), "where"] == violation.IMPACTS
    assert fitted.loc[("resting column", "MoreauJean"), "where"] == violation.PERSISTENT


def test_every_case_runs_every_scheme_of_the_grid():
    assert STUDIES[violation.NAME] is violation.STUDY
    runs = violation.runs(quick=True)
    cases = {run.problem_name for run in runs}
    assert cases == set(violation.KIND)
    column = violation.resting_column()
    assert np.allclose(column.gap(column.q0), 0.0)  # every contact closed at the start
