"""The scaling study's runs and its report on a table made by hand (studies/scaling.py)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from impactbench.analysis.cost_scaling import fit_cost_exponent
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
        _row(scaling.COLUMN, "MoreauJean", 10, 500, 800.0, 1500),
        _row(scaling.COLUMN, "MoreauJean", 100, 500, 9000.0, 15_000),
        _row(scaling.BAR, "EventDriven[rtol=1e-10]", 11, 100, 20000.0),
        _row(scaling.COLUMN, "EventDriven[rtol=1e-10]", 3, 4, 50000.0),
        _row(scaling.COLUMN, "EventDriven[rtol=1e-10]", 10, 8, 75000.0),
        _row(scaling.BAR, "MoreauJean", 3000, 1000, 1.0, status=FAILED),
    ]
)


def test_costs_per_step_and_memory_per_dof():
    frame = scaling.costs(TABLE)
    assert len(frame) == 10  # the failed run is left out
    bar = frame[(frame["problem"] == scaling.BAR) & (frame["method"] == "MoreauJean")]
    assert bar["n"].tolist() == [100, 1000, 10000]
    np.testing.assert_allclose(bar["ns_per_step"], [500.0, 5000.0, 55000.0], rtol=1e-12)
    np.testing.assert_allclose(bar["bytes_per_dof"], [240.0, 240.0, 240.0], rtol=1e-12)
    np.testing.assert_allclose(bar["ms_per_run"], [0.5, 5.0, 110.0], rtol=1e-12)
    column = frame[(frame["problem"] == scaling.COLUMN) & (frame["method"] == "PaoliSchatzman")]
    assert column["n"].tolist() == [10, 100]
    np.testing.assert_allclose(column["bytes_per_dof"], [200.0, 200.0], rtol=1e-12)
    event = frame[frame["method"] == scaling.EVENT_DRIVEN]
    assert sorted(event["n"].tolist()) == [3, 10, 11]
    assert event["bytes_per_dof"].isna().all()


def test_exponents_by_hand():
    fits = scaling.exponents(scaling.costs(TABLE)).set_index(["problem", "method"])
    bar = fits.loc[(scaling.BAR, "MoreauJean")]
    # three equally spaced log n: the least-squares slope is (y3 - y1) / (x3 - x1)
    assert bar["p"] == pytest.approx(math.log(110.0) / math.log(100.0), rel=1e-12)
    assert bar["p_low"] < bar["p"] < bar["p_high"] and bar["sizes"] == 3
    assert bar["p_last"] == pytest.approx(math.log(11.0) / math.log(10.0), rel=1e-12)
    assert bar["cost(1e4) / cost(1e3)"] == pytest.approx(11.0, rel=1e-12)
    column = fits.loc[(scaling.COLUMN, "PaoliSchatzman")]
    assert column["p"] == pytest.approx(1.0, rel=1e-12) and column["sizes"] == 2
    # two sizes: no interval, and the fit is the local exponent
    assert math.isnan(column["p_low"]) and math.isnan(column["p_high"])
    assert column["p_last"] == pytest.approx(1.0, rel=1e-12)
    assert math.isnan(column["cost(1e4) / cost(1e3)"])
    # the engine's column runs take 4 and 8 steps: a cost per run, not fitted per step
    assert (scaling.COLUMN, scaling.EVENT_DRIVEN) not in fits.index
    assert (scaling.BAR, scaling.EVENT_DRIVEN) not in fits.index  # one size: no fit
    steps = scaling.MIN_FIT_STEPS  # with that many steps, they are
    engine = [_row(scaling.COLUMN, "EventDriven", n, steps, c) for n, c in ((3, 5e4), (10, 7.5e4))]
    fits = scaling.exponents(scaling.costs(pd.DataFrame(engine)))
    assert fits["p"].tolist() == [pytest.approx(math.log(1.5) / math.log(10.0 / 3.0), rel=1e-12)]


def test_findings_state_the_figures_of_the_table(tmp_path):
    findings = scaling.report(TABLE, tmp_path).findings
    text = "\n".join(findings)
    assert "MoreauJean on ImpactingBar: cost per step ~ n^1.02" in text
    assert "n = 10^4 costs 11.0x n = 10^3 per step (issue 14 target: <= 15x)" in text
    assert "between the two largest sizes n^1.04" in text
    assert (
        "PaoliSchatzman on ColumnOfBeads (settled): cost per step ~ n^1.00 (no interval, "
        "2 sizes)." in text
    )
    assert "PaoliSchatzman on ColumnOfBeads (settled): 200-200 bytes per DOF" in text
    assert "MoreauJean on ImpactingBar: 240-240 bytes per DOF of work buffers (n = 100-" in text
    assert "in total ~ n^1.00." in text
    assert (
        "EventDriven (compiled engine) on ImpactingBar: 100 steps, 20 us per step, 2 ms per "
        "run at n = 11; the fastest time-stepping run at n = 100, MoreauJean: 1000 steps, "
        "0.5 us per step, 0.5 ms per run" in text
    )
    # on the column at n = 10 the fastest of the two time-steppers is MoreauJean (0.4 ms)
    assert (
        "EventDriven (compiled engine) on ColumnOfBeads (settled): 8 steps, 75 us per step, "
        "0.6 ms per run at n = 10; the fastest time-stepping run at n = 10, MoreauJean: 500 "
        "steps, 0.8 us per step, 0.4 ms per run" in text
    )
    assert (tmp_path / "scaling.png").exists()
    # no repeats in this table: no verdict between the engine and the time-stepper
    assert text.count("(a tie (fewer than 5 repeats))") == 2


def test_the_engine_against_a_time_stepper_is_a_verdict_on_the_ratio_of_medians(tmp_path):
    # ten repeats spread evenly over [wall, wall + spread]: the engine's over [2, 2.5] ms
    # against MoreauJean's over [0.5, 0.6] ms: medians 2.25 and 0.55 ms, the engine slower by
    # 2.25 / 0.55 = 4.09; against MoreauJean's over [2, 2.5] ms too: a tie
    def timed(row, spread):
        wall = row["wall_time"]
        repeats = json.dumps(list(np.linspace(wall, wall + spread, 10)))
        return {**row, "wall_time_max": wall + spread, "wall_time_repeats": repeats}

    engine = timed(_row(scaling.BAR, "EventDriven[rtol=1e-10]", 11, 100, 20000.0), 5e-4)
    slower = [engine, timed(_row(scaling.BAR, "MoreauJean", 100, 1000, 500.0), 1e-4)]
    text = "\n".join(scaling.report(pd.DataFrame(slower), tmp_path).findings)
    assert "(the engine's run is slower by 4.09 [" in text
    tie = [engine, timed(_row(scaling.BAR, "MoreauJean", 100, 1000, 2000.0), 5e-4)]
    text = "\n".join(scaling.report(pd.DataFrame(tie), tmp_path).findings)
    assert "(a tie (ratio 1 [" in text


def test_runs_of_each_grid():
    quick = scaling.runs(quick=True)
    full = scaling.runs(quick=False)
    for runs, grid in ((quick, "quick"), (full, "full")):
        methods = [run.method.__name__ for run in runs]
        bars = sum(len(sizes) for sizes in scaling.BAR_METHODS[grid].values())
        assert set(scaling.BAR_METHODS[grid]) == set(scaling.TIME_STEPPING)
        columns = sum(len(sizes) for sizes in scaling.COLUMN_METHODS[grid].values())
        assert set(scaling.COLUMN_METHODS[grid]) == set(scaling.TIME_STEPPING)
        engines = len(scaling.EVENT_DRIVEN_SIZES[grid]) + len(
            scaling.EVENT_DRIVEN_COLUMN_SIZES[grid]
        )
        assert methods.count(scaling.EVENT_DRIVEN) == engines
        assert len(runs) == bars + columns + engines
        for run in runs:
            if run.method.__name__ != scaling.EVENT_DRIVEN:
                assert run.metrics == ("work_bytes",) and run.h > 0
    # quick: no engine on the bar (one engine compile per size), the suite's 3-bead engine
    quick_engines = [run for run in quick if run.method.__name__ == scaling.EVENT_DRIVEN]
    assert [run.problem_kwargs for run in quick_engines] == [{"n_beads": 3}]
    assert len(scaling.TIME_STEPPING) == 6 and len(full) == 6 * 4 + 6 * 4 + 3 + 2
    column = scaling.resting_column(5)
    # every bead touching its neighbours and the floor (to the round-off of 0.1 (2 i - 1))
    assert np.abs(column.gap(column.q0)).max() <= 1e-16 and np.all(column.v0 == 0.0)


def test_cost_exponent_of_three_points_by_hand():
    # log10 n = 0, 1, 2 and log10 cost = 0, 1, 3: slope 3/2, residuals (1/6, -1/3, 1/6) ln 10,
    # standard error sqrt((1/6) / 1 / 2) = 1/sqrt(12); one degree of freedom: Student's t is
    # Cauchy's law, whose 97.5 % quantile is tan(0.475 pi)
    fit = fit_cost_exponent([1.0, 10.0, 100.0], [1.0, 10.0, 1000.0])
    half = math.tan(0.475 * math.pi) / math.sqrt(12.0)
    assert fit.exponent == pytest.approx(1.5, rel=1e-12) and fit.sizes == 3
    assert fit.low == pytest.approx(1.5 - half, rel=1e-9)
    assert fit.high == pytest.approx(1.5 + half, rel=1e-9)


def test_cost_exponent_of_an_exact_power_law_and_of_two_sizes():
    n = np.array([10.0, 30.0, 100.0, 300.0])
    fit = fit_cost_exponent(n, 7.0 * n**1.25)
    assert fit.exponent == pytest.approx(1.25, rel=1e-12)
    assert fit.high - fit.low == pytest.approx(0.0, abs=1e-12)
    two = fit_cost_exponent([10.0, 1000.0], [3.0, 300.0])
    assert two.exponent == pytest.approx(1.0, rel=1e-12) and two.sizes == 2
    assert math.isnan(two.low) and math.isnan(two.high)  # no scatter to estimate it from


@pytest.mark.parametrize(
    ("n", "cost", "confidence", "name"),
    [
        ([10.0], [1.0], 0.95, "n and cost"),
        ([10.0, 10.0], [1.0, 2.0], 0.95, "n must"),
        ([10.0, -1.0], [1.0, 2.0], 0.95, "n must"),
        ([10.0, 100.0], [1.0, 0.0], 0.95, "cost must"),
        ([10.0, 100.0], [1.0, np.nan], 0.95, "cost must"),
        ([10.0, 100.0], [1.0, 2.0], 1.0, "confidence"),
    ],
)
def test_cost_exponent_rejects_bad_input_naming_it(n, cost, confidence, name):
    with pytest.raises(ValueError, match=name):
        fit_cost_exponent(n, cost, confidence)


def test_report_of_runs_with_no_two_sizes_of_one_method(tmp_path):
    # one size per (problem, method) left, as when every other run failed: no fit, a report
    single = TABLE.drop_duplicates(["problem", "method"]).reset_index(drop=True)
    fits = scaling.exponents(scaling.costs(single))
    assert fits.empty and "p_last" in fits.columns
    findings = scaling.report(single, tmp_path).findings
    assert not any("cost per step ~" in line for line in findings)
    assert (tmp_path / "scaling.png").exists()
