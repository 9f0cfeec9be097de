"""The event-driven method's step count on the ball against rtol: explained, and tested.

The work-precision report states that on the ball the event-driven method needs fewer steps as
rtol tightens because each restart at the floor (q = 0) starts from Hairer's initial step,
about 0.01 atol / rtol there, so with atol fixed a loose rtol restarts every flight with a tiny
step (studies/work_precision.py, RESTART_NOTE). These tests check that explanation on the runs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

import impactbench as ib
from impactbench.methods import EventDriven
from impactbench.problems import BouncingBall
from impactbench.studies import work_precision


def _steps(rtol: float, atol: float) -> int:
    ball = BouncingBall(restitution=0.8)
    run = ib.simulate(ball, EventDriven(rtol=rtol, atol=atol), ball.accumulation_time + 1.5)
    assert run.stats["impacts"] == 62  # the same impacts at every tolerance
    return int(run.stats["steps"])


def test_the_step_count_falls_with_rtol_only_while_atol_is_fixed():
    fixed = [_steps(rtol, 1e-12) for rtol in (1e-3, 1e-7, 1e-11)]
    assert fixed[0] > 1.5 * fixed[2] and fixed[0] > fixed[1] > fixed[2]
    scaled = [_steps(rtol, 1e-2 * rtol) for rtol in (1e-3, 1e-7)]
    assert abs(scaled[0] - scaled[1]) <= 0.1 * scaled[1]  # no longer depends on rtol
    assert scaled[0] < 0.6 * fixed[0]  # the tiny restart steps were the extra cost


def test_restart_table_takes_the_ball_s_event_driven_runs():
    table = pd.DataFrame(
        {
            "problem": ["BouncingBall", "BouncingBall", "SlantedWall", "BouncingBall"],
            "method": ["EventDriven[compiled=True]", "MoreauJean", "EventDriven", "EventDriven"],
            "tolerance": [1e-3, np.nan, 1e-3, 1e-9],
            "steps": [348, 1000, 10, 166],
            "force_evaluations": [5449, 1000, 100, 2719],
            "impacts": [62, 60, 5, 62],
            "status": ["zeno-handled", "ok", "ok", "failed"],
        }
    )
    frame = work_precision.restart_steps(table)
    assert list(frame["rtol"]) == [1e-3]
    assert frame["steps per impact"].iloc[0] == 348 / 62


def test_restart_table_prints_a_capped_count_as_a_lower_bound():
    """A run whose impact log filled up: its count ">= N", its steps per impact not given (the
    count is a lower bound)."""
    table = pd.DataFrame(
        {
            "problem": ["BouncingBall", "BouncingBall"],
            "method": ["EventDriven", "EventDriven"],
            "tolerance": [1e-3, 1e-9],
            "steps": [348, 166],
            "force_evaluations": [5449, 2719],
            "impacts": [62, 100_000],
            "impacts_capped": [False, True],
            "status": ["ok", "ok"],
        }
    )
    frame = work_precision.restart_steps(table)
    assert list(frame["impacts"]) == [">= 100000", "62"]  # sorted by rtol
    assert np.isnan(frame["steps per impact"].iloc[0])
    assert frame["steps per impact"].iloc[1] == 348 / 62
