"""Compile once, then fan out (impactbench.warmup): one warm-up per distinct compiled loop."""

from __future__ import annotations

from impactbench.methods import EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall, SlantedWall
from impactbench.runner import Run
from impactbench.warmup import compile_run, distinct_loops, loop_key

from conftest import PythonBall


def _run(problem, method, h=1e-3, **method_kwargs):
    return Run(problem, method, 1.0, h, method_kwargs=method_kwargs)


def test_one_warm_up_per_distinct_loop():
    runs = [
        _run(BouncingBall, MoreauJean, 1e-3),
        _run(BouncingBall, MoreauJean, 2e-3),  # same loop, other step
        _run(BouncingBall, MoreauJean, 1e-3, theta=0.3),  # theta is a runtime value
        _run(BouncingBall, MoreauJean, 1e-3, activation="approaching"),  # another loop
        _run(SlantedWall, MoreauJean),  # another problem class
        _run(BouncingBall, PaoliSchatzman),
        _run(BouncingBall, MoreauJean, 1e-3, compiled=False),  # no compiled loop
        _run(PythonBall, MoreauJean),  # plain-Python problem: no compiled loop
        _run(BouncingBall, EventDriven, None),  # its compiled right-hand side
    ]
    chosen = distinct_loops(runs)
    assert [runs.index(run) for run in chosen] == [0, 3, 4, 5, 8]
    assert loop_key(runs[6]) is None and loop_key(runs[7]) is None


def test_compile_run_takes_one_step_and_never_raises():
    assert compile_run(_run(BouncingBall, MoreauJean))
    assert compile_run(_run(BouncingBall, EventDriven, None))
    assert not compile_run(_run(BouncingBall, MoreauJean, 1e-3, theta=7.0))  # rejected theta
