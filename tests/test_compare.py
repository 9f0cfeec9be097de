"""impactbench.compare and `impactbench compare`: orders with 95 % intervals, a work-precision
figure and a table, through the study runner and its cache; the reference run for a problem
without an exact solution."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import impactbench as ib
from impactbench.bench.cli import main
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall

STEPS = np.geomspace(1e-3, 2e-2, 6)
T_END = 2.0


class BallWithoutClosedForm(BouncingBall):
    """The bouncing ball, its closed form hidden: compare measures against the reference run."""

    @property
    def has_exact_solution(self) -> bool:
        return False


@pytest.fixture(scope="module")
def ball_comparison(tmp_path_factory):
    folder = tmp_path_factory.mktemp("compare")
    options = {"output": folder / "out", "cache_dir": folder / "cache"}
    methods = ["MoreauJean", "PaoliSchatzman", "EventDriven"]
    first = ib.compare(
        "BouncingBall[restitution=0.8]",
        methods,
        steps=STEPS,
        tolerances=[1e-4, 1e-6, 1e-8],
        t_end=T_END,
        **options,
    )
    again = ib.compare(
        "BouncingBall[restitution=0.8]",
        methods,
        steps=STEPS,
        tolerances=[1e-4, 1e-6, 1e-8],
        t_end=T_END,
        **options,
    )
    return first, again


def test_orders_with_intervals_table_and_figure(ball_comparison):
    result, _ = ball_comparison
    orders = result.orders.set_index(["method", "versus"])
    for method in ("MoreauJean", "PaoliSchatzman"):  # first order through impacts
        fit = orders.loc[(method, "h")]
        assert fit["status"] == "order"
        assert fit["low"] < 1.0 < fit["high"] and fit["high"] - fit["low"] < 1.0
        assert orders.loc[(method, "force evaluations"), "status"] == "order"
    # three tolerances are too few for an order: said so, never fitted
    assert orders.loc[("EventDriven", "rtol"), "text"] == "not resolved: 3 points (< 6)"
    table = result.table
    assert len(table) == 2 * len(STEPS) + 3
    steppers = table[table["family"] == "time-stepping"]
    assert (steppers["runs"] == 3).all()  # the nominal step and two phase copies
    np.testing.assert_allclose(sorted(steppers["h"].unique()), STEPS)
    assert (table["impacts"] == 3).all()  # three impacts of the ball before t = 2
    assert [path.suffix for path in result.figures] == [".png", ".pdf"]
    assert result.figure.read_bytes().startswith(b"\x89PNG")
    assert (result.folder / "README.md").read_text().count("0.9") >= 1
    stored = pd.read_csv(result.folder / "results.csv.gz")
    assert len(stored) == 2 * 3 * len(STEPS) + 3


def test_a_second_call_reads_the_run_cache(ball_comparison):
    first, again = ball_comparison
    assert again.result.cached == len(again.result.runs) > 0
    pd.testing.assert_frame_equal(
        first.table.drop(columns="wall_time"), again.table.drop(columns="wall_time")
    )


def test_without_an_exact_solution_the_reference_run_is_used(ball_comparison, tmp_path):
    exact, _ = ball_comparison
    result = ib.compare(
        BallWithoutClosedForm,
        [MoreauJean()],
        problem_kwargs={"restitution": 0.8},
        steps=STEPS,
        t_end=T_END,
        output=tmp_path / "out",
        cache_dir=tmp_path / "cache",
    )
    assert result.result.runs[0].reference is not None
    with_exact = exact.table[exact.table["method"] == "MoreauJean"]
    # the DOP853 reference (rtol 1e-12) and the closed form give the same errors
    np.testing.assert_allclose(
        result.table["max_position_error"].to_numpy(),
        with_exact["max_position_error"].to_numpy(),
        rtol=1e-6,
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"methods": []}, "methods"),
        ({"methods": ["MoreauJean"], "steps": None}, "steps"),
        ({"methods": ["EventDriven"], "tolerances": None}, "tolerances"),
        ({"methods": ["MoreauJean"], "metric": "nope"}, "metric"),
        ({"methods": ["MoreauJean"], "steps": [1e-3, -1.0]}, "steps"),
        ({"methods": [3]}, "methods"),
        (
            {"methods": ["MoreauJean"], "problem": BouncingBall(), "problem_kwargs": {"q0": 2.0}},
            "problem_kwargs must be empty",
        ),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, message, tmp_path):
    arguments = {
        "problem": "BouncingBall",
        "steps": STEPS,
        "tolerances": [1e-6],
        "t_end": 1.0,
        "output": tmp_path,
    }
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        ib.compare(arguments.pop("problem"), arguments.pop("methods"), **arguments)
    assert not any(tmp_path.iterdir())  # refused before any run


def test_the_compare_command(ball_comparison, tmp_path, capsys):
    result, _ = ball_comparison
    cache = result.folder.parent.parent / "cache"
    argv = ["compare", "BouncingBall[restitution=0.8]", "MoreauJean", "PaoliSchatzman"]
    argv += ["--t-end", str(T_END), "--steps", *map(str, STEPS), "--output", str(tmp_path)]
    assert main([*argv, "--cache-dir", str(cache)]) == 0
    out = capsys.readouterr().out
    assert "order [95 %]" in out and "force evaluations" in out
    assert (tmp_path / "compare_BouncingBall_restitution0-8" / "comparison.pdf").exists()
