"""DragBall: the closed form of a ball with quadratic air drag, against independent runs."""

from __future__ import annotations

import math

import numpy as np
import pytest

import impactbench as ib
from impactbench.methods import EventDriven
from impactbench.problems import BouncingBall, DragBall


@pytest.mark.parametrize(("q0", "v0"), [(1.0, 0.0), (0.5, 2.0), (0.8, -3.0)])
def test_closed_form_agrees_with_a_tight_event_driven_run_through_the_accumulation(q0, v0):
    ball = DragBall(q0=q0, v0=v0)
    t_end = ball.accumulation_time + 0.5
    run = ib.simulate(ball, EventDriven(rtol=1e-12, atol=1e-14), t_end)
    q, v = ball.exact_solution(run.t)
    assert np.abs(run.q[:, 0] - q[:, 0]).max() < 1e-9
    exact_impacts = ball.impact_times(t_end)
    first = min(20, len(exact_impacts))
    assert np.abs(np.asarray(run.impacts.t)[:first] - exact_impacts[:first]).max() < 1e-9
    late = run.t > ball.accumulation_time + 1e-6
    assert np.all(q[late] == 0.0) and np.all(v[late] == 0.0)  # rest after t_inf


def test_landing_speed_and_apex_follow_the_flight_formulas():
    ball = DragBall(drag=0.3)
    vt = ball.terminal_speed
    for u in (0.1, 1.0, 5.0, 20.0):
        _, height = ball._apex(u)
        duration, landing = ball._descent(height)
        assert landing == pytest.approx(u / math.sqrt(1.0 + (u / vt) ** 2), rel=1e-12)
        # the fall's position formula lands exactly at the floor
        q, v = ball._fall(height, np.array([duration]))
        assert abs(q[0]) < 1e-12 * max(1.0, height) and v[0] == pytest.approx(-landing)


def test_without_drag_it_is_the_bouncing_ball():
    t = np.linspace(0.0, 6.0, 2001)
    drag_free = DragBall(drag=0.0, q0=1.0, v0=0.5)
    ball = BouncingBall(q0=1.0, v0=0.5)
    assert drag_free.accumulation_time == pytest.approx(ball.accumulation_time, rel=1e-12)
    np.testing.assert_allclose(
        drag_free.exact_solution(t)[0], ball.exact_solution(t)[0], atol=1e-12
    )


def test_drag_dissipates_energy_in_every_flight():
    ball = DragBall()
    times = ball.impact_times(ball.accumulation_time)
    t = np.linspace(times[0] + 1e-9, times[1] - 1e-9, 500)  # inside the first full flight
    q, v = ball.exact_solution(t)
    energy = 0.5 * ball.mass * v[:, 0] ** 2 + ball.mass * ball.gravity * q[:, 0]
    assert np.all(np.diff(energy) < 0.0)


@pytest.mark.parametrize(
    ("kwargs", "name"), [({"drag": -1.0}, "drag"), ({"v0": -100.0}, "v0"), ({"q0": -0.1}, "q0")]
)
def test_bad_parameters_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=name):
        DragBall(**kwargs)
