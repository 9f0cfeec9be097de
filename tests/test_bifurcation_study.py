"""The bifurcation study (studies/bifurcation.py): its attractor analysis on synthetic impact
sets, and its runs against the closed forms of the vibrating table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from impactbench import simulate
from impactbench.analysis.impact_events import impact_events
from impactbench.bench.runner import Run
from impactbench.methods import EventDriven, MoreauJean
from impactbench.problems import BallOnVibratingTable
from impactbench.problems.vibrating_table import TWO_PI, period_doubling_acceleration
from impactbench.studies import bifurcation as study


def test_period_is_the_least_return_of_the_impact_phases():
    assert study.period_of(np.array([1.0, 1.0 + 1e-5, 1.0 - 1e-5, 1.0])) == 1
    assert study.period_of(np.array([1.0, 2.0, 1.0, 2.0])) == 2
    assert study.period_of(np.tile([1.0, 2.0, 3.0, 2.5], 4)) == 4
    # phases on either side of 0 = 2 pi are close
    assert study.period_of(np.array([1e-5, TWO_PI - 1e-5, 3.0, 1e-5, TWO_PI - 1e-5, 3.0])) == 3
    assert study.period_of(np.linspace(0.0, 6.0, 100)) == study.APERIODIC
    assert study.period_of(np.array([1.0, 2.0, 1.0])) == study.APERIODIC  # too few to tell
    assert study.period_of(np.array([])) == 0
    # a time-stepper's impacts on two neighbouring steps: one phase at its resolution
    h = study.PERIOD / 1000
    hopping = np.array([0.634, 0.634 + study.ANGULAR_FREQUENCY * h] * 8)
    assert study.period_of(hopping) == 2
    assert study.period_of(hopping, study.phase_resolution(h)) == 1
    assert study.phase_resolution(None) == study.PHASE_RESOLUTION


def test_hausdorff_distance_on_the_circle():
    a = np.array([[0.01, 1.0]])
    b = np.array([[TWO_PI - 0.01, 1.0]])
    assert study.hausdorff_distance(a, b) == pytest.approx(0.02)
    c = np.array([[0.01, 1.0], [3.0, 1.0]])
    assert study.hausdorff_distance(a, c) == pytest.approx(2.99)  # the far point of c counts
    assert math.isnan(study.hausdorff_distance(a, np.zeros((0, 2))))


def test_first_doubling_and_onset_bracket_the_changes():
    gammas = np.array([1.0, 1.1, 1.2, 1.3, 1.4, 1.5])
    periods = np.array([1, 1, 2, 4, study.APERIODIC, study.APERIODIC])
    assert study.first_doubling(gammas, periods) == pytest.approx((1.15, 0.05))
    assert study.first_aperiodic(gammas, periods, 1.15) == pytest.approx((1.35, 0.05))
    assert all(math.isnan(x) for x in study.first_doubling(gammas, np.ones(6, dtype=int)))
    assert study._right(1.15, 0.05, 1.16) is False  # 0.06 > 1 % of 1.16
    assert study._right(1.16, 0.005, 1.16) is True


def test_runs_cover_the_sweep_with_the_reference_and_the_moving_obstacle_steppers():
    runs = study.runs(quick=True)
    steppers, refused = study.moving_obstacle_steppers()
    assert "MoreauJean" in steppers
    per_gamma = 1 + len(steppers) * len(study.STEPS_PER_PERIOD["quick"])
    per_gamma += len(study.ADAPTIVE_TOLERANCES["quick"])
    assert len(runs) == len(study.GAMMAS["quick"]) * per_gamma
    gammas = sorted({round(study.gamma_of(r.problem_kwargs["amplitude"]), 12) for r in runs})
    assert np.allclose(gammas, study.GAMMAS["quick"])
    for run in runs:
        assert run.method.moving_obstacles
        if run.h is not None:  # an integer number of steps per table period
            steps = study.PERIOD / run.h
            assert abs(steps - round(steps)) < 1e-9


def _record(method, gamma: float, h: float | None = None, transient: int = 100) -> np.ndarray:
    kwargs = study.problem_kwargs(gamma)
    t_end = kwargs["t0"] + (transient + study.RECORDED_PERIODS) * study.PERIOD
    run = Run(BallOnVibratingTable, method, t_end, h, problem_kwargs=kwargs)
    problem = BallOnVibratingTable(**kwargs)
    options = {"rtol": study.EVENT_RTOL} if h is None else {"log_capacity": 10**6}
    trajectory = simulate(problem, method(**options), t_end, h=h, output_every=1000)
    frame = study.recorded_impacts(run, problem, trajectory)[study.IMPACTS]
    assert impact_events(trajectory).impacts > len(frame) > 0
    return frame[["phase", "velocity"]].to_numpy()


def test_the_event_driven_reference_finds_the_closed_form_orbit_and_its_doubling():
    """Below Gamma_pd the reference settles on the period-1 orbit: one impact per period at
    the closed-form phase phi* and scaled take-off velocity; above it, on a 2-cycle."""
    gamma = 1.3
    points = _record(EventDriven, gamma)
    problem = BallOnVibratingTable(**study.problem_kwargs(gamma))
    orbit = problem.period_orbit(1)
    assert study.period_of(points[:, 0]) == 1
    assert np.allclose(points[:, 0], orbit.phase, atol=1e-6)
    scale = study.ANGULAR_FREQUENCY / study.GRAVITY
    assert np.allclose(points[:, 1], orbit.relative_velocity * scale, rtol=1e-6)
    assert len(points) == study.RECORDED_PERIODS  # one impact a period
    closed = period_doubling_acceleration(1, study.RESTITUTION)
    above = _record(EventDriven, closed * 1.03)
    assert study.period_of(above[:, 0]) == 2


def test_moreau_jean_resolves_the_orbit_to_its_step():
    """MoreauJean at P/1000 settles on a period-1 attractor whose phase lies within a few
    omega h of the closed form's."""
    gamma = 1.3
    h = study.PERIOD / 1000
    points = _record(MoreauJean, gamma, h)
    orbit = BallOnVibratingTable(**study.problem_kwargs(gamma)).period_orbit(1)
    assert study.period_of(points[:, 0], study.phase_resolution(h)) == 1
    assert abs(points[0, 0] - orbit.phase) < 5 * study.ANGULAR_FREQUENCY * h
