"""One source, two paths: compiled and plain-Python loops agree; a user's Python problem runs."""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.methods import CatchingUp, EventDriven, MoreauJean, PaoliSchatzman
from impactbench.metrics import max_position_error
from impactbench.problems import (
    BouncingBall,
    ForcedImpactOscillator,
    ImpactingOscillator,
    SlantedWall,
)

from conftest import PythonBall

PROBLEMS = [
    BouncingBall(restitution=0.8),
    ImpactingOscillator(restitution=0.8),
    ForcedImpactOscillator(),
    SlantedWall(restitution=0.7),
]
METHOD_CLASSES = [PaoliSchatzman, MoreauJean, CatchingUp]


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: p.name)
@pytest.mark.parametrize("method_class", METHOD_CLASSES, ids=lambda c: c.__name__)
def test_compiled_and_python_paths_agree(problem, method_class):
    t_end = problem.t0 + 3.0
    compiled = simulate(problem, method_class(), t_end, h=5e-3)
    plain = simulate(problem, method_class(compiled=False), t_end, h=5e-3)
    assert compiled.stats["compiled"] and not plain.stats["compiled"]
    assert compiled.impacts.total > 0
    assert compiled.impacts.total == plain.impacts.total
    np.testing.assert_allclose(plain.t, compiled.t, rtol=0, atol=1e-14)
    np.testing.assert_allclose(plain.q, compiled.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(plain.v, compiled.v, rtol=0, atol=1e-11)


@pytest.mark.parametrize("method_class", METHOD_CLASSES, ids=lambda c: c.__name__)
def test_user_python_problem_runs_and_matches_the_exact_ball(method_class):
    user = PythonBall(q0=1.0, v0=0.0, gravity=9.81, restitution=0.8)
    builtin = BouncingBall(q0=1.0, v0=0.0, gravity=9.81, restitution=0.8)
    trajectory = simulate(user, method_class(), 3.0, h=1e-3)
    assert not trajectory.stats["compiled"]
    assert trajectory.impacts.total >= 5
    assert max_position_error(builtin, trajectory) < 2e-2


def test_user_python_problem_runs_event_driven():
    user = PythonBall(q0=1.0, v0=0.0, gravity=9.81, restitution=0.8)
    builtin = BouncingBall(q0=1.0, v0=0.0, gravity=9.81, restitution=0.8)
    trajectory = simulate(user, EventDriven(rtol=1e-10), builtin.accumulation_time + 0.5)
    assert trajectory.impacts.total >= 10
    assert max_position_error(builtin, trajectory) < 1e-8


def test_output_decimation_keeps_first_and_last_sample():
    ball = BouncingBall(restitution=0.8)
    full = simulate(ball, MoreauJean(), 2.0, h=1e-3)
    decimated = simulate(ball, MoreauJean(), 2.0, h=1e-3, output_every=300)
    assert decimated.t[0] == ball.t0 and decimated.t[-1] == pytest.approx(2.0, abs=1e-12)
    assert len(decimated.t) == 2000 // 300 + 2
    np.testing.assert_array_equal(decimated.q[1:-1], full.q[300:-1:300])
    np.testing.assert_array_equal(decimated.q[-1], full.q[-1])


def test_step_not_dividing_the_interval_is_reduced_to_end_exactly():
    ball = BouncingBall()
    trajectory = simulate(ball, MoreauJean(), 1.0, h=0.3)
    assert trajectory.h == pytest.approx(0.25)
    assert trajectory.t[-1] == 1.0
