"""Bad input fails fast with a ValueError naming the argument (DESIGN.md section 9), and a run
that produces non-finite values stops with an error giving t, q and v."""

from __future__ import annotations

import math

import numpy as np
import pytest

from impactbench import SimulationError, simulate
from impactbench.methods import CatchingUp, MoreauJean, PaoliSchatzman, get_method
from impactbench.problems import BouncingBall, SlantedWall

from conftest import PythonBall

TIME_STEPPERS = [PaoliSchatzman(), MoreauJean(), CatchingUp()]


@pytest.mark.parametrize("e", [-0.1, 1.5, math.nan, math.inf, "x"])
def test_restitution_outside_unit_interval(e):
    with pytest.raises(ValueError, match="restitution"):
        BouncingBall(restitution=e)
    with pytest.raises(ValueError, match="restitution"):
        simulate(PythonBall(restitution=e), MoreauJean(), 1.0, h=0.01)


@pytest.mark.parametrize("h", [0.0, -1e-3, math.nan, math.inf, 2.0, None])
@pytest.mark.parametrize("method", TIME_STEPPERS, ids=lambda m: m.name)
def test_bad_step(method, h):
    with pytest.raises(ValueError, match=r"\bh\b"):
        simulate(BouncingBall(), method, 1.0, h=h)


@pytest.mark.parametrize("t_end", [0.0, -1.0, math.nan, math.inf])
def test_bad_final_time(t_end):
    with pytest.raises(ValueError, match="t_end"):
        simulate(BouncingBall(), MoreauJean(), t_end, h=1e-3)


@pytest.mark.parametrize("output_every", [0, -3, 1.5, True])
def test_bad_output_every(output_every):
    with pytest.raises(ValueError, match="output_every"):
        simulate(BouncingBall(), MoreauJean(), 1.0, h=1e-3, output_every=output_every)


@pytest.mark.parametrize(
    "attribute, value",
    [
        ("q0", np.array([math.nan])),
        ("q0", np.array([1.0, 2.0])),
        ("v0", np.array([math.inf])),
        ("v0", np.zeros((1, 1))),
        ("q0", np.array([-0.5])),  # outside K
    ],
)
def test_bad_initial_state(attribute, value):
    problem = PythonBall()
    setattr(problem, attribute, value)
    with pytest.raises(ValueError, match=attribute):
        simulate(problem, MoreauJean(), 1.0, h=1e-3)


def test_initial_position_outside_k_in_builtin_problem():
    with pytest.raises(ValueError, match="q0"):
        BouncingBall(q0=-0.1)
    with pytest.raises(ValueError, match="q0"):
        SlantedWall(q0=(0.0, -1.0))


@pytest.mark.parametrize(
    "mass",
    [
        [[2.0, 0.6], [0.5, 1.0]],  # not symmetric
        [[1.0, 2.0], [2.0, 1.0]],  # indefinite
        [[1.0, 0.0], [0.0, 1e-14]],  # badly conditioned
        [[1.0, 0.0], [0.0, math.nan]],
        [[1.0, 0.0, 0.0]],
    ],
)
def test_bad_mass_matrix(mass):
    with pytest.raises(ValueError, match="mass_matrix"):
        SlantedWall(mass_matrix=mass)


def test_user_problem_with_indefinite_mass_matrix():
    class Bad(PythonBall):
        def mass_matrix(self, q):
            return -np.eye(1)

    with pytest.raises(ValueError, match="mass_matrix"):
        simulate(Bad(), MoreauJean(), 1.0, h=1e-3)


@pytest.mark.parametrize("theta", [0.0, -0.5, 1.5, math.nan])
def test_theta_outside_its_range(theta):
    with pytest.raises(ValueError, match="theta"):
        MoreauJean(theta=theta)


@pytest.mark.parametrize("spec", ["NoSuchMethod", "MoreauJean[theta=2]", "Moreau Jean", ""])
def test_unknown_or_malformed_method_names(spec):
    with pytest.raises(ValueError, match="method|theta"):
        get_method(spec)


def test_simulate_rejects_non_problems_and_non_methods():
    with pytest.raises(ValueError, match="problem"):
        simulate("BouncingBall", MoreauJean(), 1.0, h=1e-3)
    with pytest.raises(ValueError, match="method"):
        simulate(BouncingBall(), "MoreauJean", 1.0, h=1e-3)


class NaNForceBall(PythonBall):
    """A user problem whose force turns into NaN after t = 0.25 (before the first impact)."""

    def forces(self, t, q, v):
        return np.array([math.nan if t > 0.25 else -self.gravity])


@pytest.mark.parametrize("method", TIME_STEPPERS, ids=lambda m: m.name)
def test_nan_force_mid_run_reports_time_and_state(method):
    with pytest.raises(SimulationError) as info:
        simulate(NaNForceBall(), method, 1.0, h=1e-2)
    error = info.value
    assert 0.25 <= error.t <= 0.28
    assert np.all(np.isfinite(error.q)) and np.all(np.isfinite(error.v))
    assert error.q[0] == pytest.approx(1.0 - 0.5 * 9.81 * error.t**2, abs=0.05)
    message = str(error)
    assert "t=" in message and "q=" in message and "v=" in message
    assert error.trajectory is not None and error.trajectory.t[-1] <= error.t


def test_run_too_large_for_memory_is_refused():
    with pytest.raises(ValueError, match="output_every"):
        simulate(BouncingBall(), MoreauJean(), 1e6, h=1e-5)
