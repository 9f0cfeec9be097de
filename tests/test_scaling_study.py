"""The scaling study's runs and its report on a table made by hand (studies/scaling.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from impactbench.bench.runner import FAILED
from impactbench.studies import scaling


def _row(problem, method, n, steps, ns_per_step, work_bytes=np.nan, status="ok"):
    bar = problem == scaling.BAR
    return {
        "problem": problem,
        "method": method,
        "problem.n_elements": n - 1 if bar else np.nan,
        "problem.n_beads": np.nan if bar else n,
        "steps": steps,
        "wall_time": ns_per_step * steps * 1e-9,
        "work_bytes": work_bytes,
        "status": status,
    }


TABLE = pd.DataFrame(
    [
        _row(scaling.BAR, "MoreauJean", 100, 1000, 500.0, 24_000),
        _row(scaling.BAR, "MoreauJean", 1000, 1000, 5000.0, 240_000),
        _row(scaling.BAR, "MoreauJean", 10000, 2000, 55000.0, 2_400_000),
        _row(scaling.COLUMN, "PaoliSchatzman", 10, 500, 1000.0, 2000),
        _row(scaling.COLUMN, "PaoliSchatzman", 100, 500, 10000.0, 20_000),
        _row(scaling.BAR, "EventDriven[rtol=1e-10]", 11, 100, 20000.0),
        _row(scaling.BAR, "MoreauJean", 3000, 1000, 1.0, status=FAILED),
    ]
)


def test_costs_per_step_and_memory_per_dof():
    frame = scaling.costs(TABLE)
    assert len(frame) == 6  # the failed run is left out
    bar = frame[(frame["problem"] == scaling.BAR) & (frame["method"] == "MoreauJean")]
    assert bar["n"].tolist() == [100, 1000, 10000]
    np.testing.assert_allclose(bar["ns_per_step"], [500.0, 5000.0, 55000.0], rtol=1e-12)
    np.testing.assert_allclose(bar["bytes_per_dof"], [240.0, 240.0, 240.0], rtol=1e-12)
    column = frame[frame["problem"] == scaling.COLUMN]
    assert column["n"].tolist() == [10, 100]
    np.testing.assert_allclose(column["bytes_per_dof"], [200.0, 200.0], rtol=1e-12)
    event = frame[frame["method"] == scaling.EVENT_DRIVEN]
    assert event["n"].tolist() == [11] and math.isnan(event["bytes_per_dof"].iloc[0])


def test_exponents_by_hand():
    fits = scaling.exponents(scaling.costs(TABLE)).set_index(["problem", "method"])
    bar = fits.loc[(scaling.BAR, "MoreauJean")]
    # three equally spaced log n: the least-squares slope is (y3 - y1) / (x3 - x1)
    assert bar["p"] == pytest.approx(math.log(110.0) / math.log(100.0), rel=1e-12)
    assert bar["p_low"] < bar["p"] < bar["p_high"] and bar["sizes"] == 3
    assert bar["cost(1e4) / cost(1e3)"] == pytest.approx(11.0, rel=1e-12)
    column = fits.loc[(scaling.COLUMN, "PaoliSchatzman")]
    assert column["p"] == pytest.approx(1.0, rel=1e-12) and math.isnan(column.iloc[-1])
    assert (scaling.BAR, scaling.EVENT_DRIVEN) not in fits.index  # one size: no fit


def test_findings_state_the_figures_of_the_table(tmp_path):
    findings = scaling.report(TABLE, tmp_path).findings
    text = "\n".join(findings)
    assert "MoreauJean on ImpactingBar: cost per step ~ n^1.02" in text
    assert "n = 10^4 costs 11.0x n = 10^3 per step (issue 14 target: <= 15x)" in text
    assert "PaoliSchatzman on ColumnOfBeads (settled): 200-200 bytes per DOF" in text
    assert "MoreauJean on ImpactingBar: 240-240 bytes per DOF of work buffers (n = 100-" in text
    assert "in total ~ n^1.00." in text
    assert (
        "EventDriven (compiled engine) on the bar: 20 us per step and 100 steps at n = 11, "
        "against 0.5 us per step for MoreauJean at n = 100" in text
    )
    assert (tmp_path / "scaling.png").exists()


def test_runs_of_each_grid():
    quick = scaling.runs(quick=True)
    full = scaling.runs(quick=False)
    for runs, grid in ((quick, "quick"), (full, "full")):
        methods = [run.method.__name__ for run in runs]
        bars = sum(len(sizes) for sizes in scaling.BAR_METHODS[grid].values())
        assert set(scaling.BAR_METHODS[grid]) == set(scaling.TIME_STEPPING)
        columns = len(scaling.COLUMN_SIZES[grid]) * len(scaling.STUDIED)
        assert methods.count(scaling.EVENT_DRIVEN) == len(scaling.EVENT_DRIVEN_SIZES[grid])
        assert len(runs) == bars + columns + len(scaling.EVENT_DRIVEN_SIZES[grid])
        for run in runs:
            if run.method.__name__ != scaling.EVENT_DRIVEN:
                assert run.metrics == ("work_bytes",) and run.h > 0
    assert not any(run.method.__name__ == scaling.EVENT_DRIVEN for run in quick)
    assert len(scaling.TIME_STEPPING) == 6 and len(full) == 6 * 4 + 2 * 4 + 3
    column = scaling.resting_column(5)
    # every bead touching its neighbours and the floor (to the round-off of 0.1 (2 i - 1))
    assert np.abs(column.gap(column.q0)).max() <= 1e-16 and np.all(column.v0 == 0.0)
