"""Observed orders of the time-stepping schemes against closed-form solutions (docs/design.md s. 7).

Orders are least-squares slopes over >= 10 step sizes spanning >= 1.5 decades on randomly
jittered grids (several seeds): error/h swings several-fold with where the impacts fall on the
grid, so one halving or a narrow range measures noise.
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.analysis.fitting import observed_order
from impactbench.analysis.metrics import l1_velocity_error, max_position_error
from impactbench.methods import CatchingUp, MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall, ImpactingOscillator, SlantedWall

from conftest import step_grid

TIME_STEPPERS = [PaoliSchatzman(), MoreauJean(theta=0.5), CatchingUp()]
SEEDS = [0, 1, 2]


def fitted_order(problem, method, t_end, steps, error=max_position_error):
    errors = [error(problem, simulate(problem, method, t_end, h=h)) for h in steps]
    return observed_order(steps, np.array(errors))


def test_grid_spans_the_required_range():
    steps = step_grid(1e-4, 4e-3, 12, seed=0)
    assert len(steps) >= 10
    assert np.log10(steps.max() / steps.min()) >= 1.5


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("method", TIME_STEPPERS, ids=lambda m: m.name)
def test_bouncing_ball_first_order_through_accumulation(method, seed):
    ball = BouncingBall(q0=1.0, v0=0.0, gravity=9.81, restitution=0.8)
    t_end = ball.accumulation_time + 1.5  # through t_inf and well into the rest phase
    order, residual = fitted_order(ball, method, t_end, step_grid(1e-4, 4e-3, 12, seed))
    assert order >= 0.85, (order, residual)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("method", TIME_STEPPERS, ids=lambda m: m.name)
def test_slanted_wall_first_order_with_non_diagonal_mass(method, seed):
    wall = SlantedWall(restitution=0.7)
    t_end = wall.accumulation_time + 1.0
    order, residual = fitted_order(wall, method, t_end, step_grid(1e-4, 4e-3, 12, seed))
    assert order >= 0.85, (order, residual)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("method", [PaoliSchatzman(), MoreauJean(theta=0.5)], ids=lambda m: m.name)
def test_second_order_between_impacts(method, seed):
    oscillator = ImpactingOscillator(restitution=0.8, x0=1.0, v0=0.0)
    t_end = 1.5  # the first impact is at pi/2
    order, residual = fitted_order(oscillator, method, t_end, step_grid(2e-4, 2e-2, 12, seed))
    assert order >= 1.9, (order, residual)


def test_catching_up_is_first_order_between_impacts():
    oscillator = ImpactingOscillator(restitution=0.8, x0=1.0, v0=0.0)
    order, _ = fitted_order(oscillator, CatchingUp(), 1.5, step_grid(2e-4, 2e-2, 12, seed=0))
    assert 0.9 <= order <= 1.2


@pytest.mark.parametrize("method", TIME_STEPPERS, ids=lambda m: m.name)
def test_l1_velocity_error_converges(method):
    ball = BouncingBall(restitution=0.8)
    order, _ = fitted_order(
        ball, method, 3.0, step_grid(1e-4, 4e-3, 12, seed=3), error=l1_velocity_error
    )
    assert order >= 0.85


def test_observed_order_recovers_a_known_slope():
    h = step_grid(1e-3, 1e-1, 12, seed=4)
    order, residual = observed_order(h, 3.0 * h**1.5)
    assert order == pytest.approx(1.5, abs=1e-12)
    assert residual < 1e-12
