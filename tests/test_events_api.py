"""The event-driven method's public API (impactbench.core.events): a method written on it.

:class:`impactbench.core.events.EventMethod` runs the shared event loop with a stepper that the
method gives (:class:`impactbench.core.events.Stepper`); ``EventDriven(compiled=False)`` is one
such method, with scipy's solvers. A method written on the API alone, its stepper wrapping
scipy's, must give ``EventDriven(compiled=False)``'s run bit for bit, and a failure of its
stepper must be a :class:`impactbench.SimulationError` with the stepper's reason, t, q, v and
the trajectory up to there.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate

import impactbench as ib
from impactbench.core.events import EventMethod, Settings
from impactbench.methods import EventDriven
from impactbench.problems import BouncingBall


class CountingStepper:
    """scipy's RK45 stepped by hand, counting its steps; ``fail_after`` steps then a failure."""

    name = "counted RK45"
    dense_degree = 4

    def __init__(self, fail_after: float = math.inf) -> None:
        self.steps = 0
        self.fail_after = fail_after

    def start(self, fun, t, y, t_end, first_step, rtol, atol, max_step):
        self.solver = integrate.RK45(
            fun, t, y, t_end, first_step=first_step, rtol=rtol, atol=atol, max_step=max_step
        )

    def step(self):
        solver = self.solver
        if self.steps >= self.fail_after:
            return solver.t, solver.t, solver.y, "counted RK45 gave up"
        solver.step()
        self.steps += 1
        return solver.t_old, solver.t, solver.y, None

    def interpolant(self):
        return self.solver.dense_output()


class CountedRK45(EventMethod):
    """An event-driven method on the public API alone."""

    def __init__(self, rtol: float = 1e-8, fail_after: float = math.inf) -> None:
        self.rtol = rtol
        self.fail_after = fail_after
        self.steppers: list[CountingStepper] = []

    def settings(self) -> Settings:
        return Settings(self.rtol, 1e-12, math.inf, 1e-6, 1e-12)

    def stepper(self) -> CountingStepper:
        self.steppers.append(CountingStepper(self.fail_after))
        return self.steppers[-1]


def test_a_method_on_the_events_api_runs_the_shared_loop_with_its_stepper():
    ball = BouncingBall()
    mine = CountedRK45()
    run = ib.simulate(ball, mine, 3.0)
    scipy = ib.simulate(ball, EventDriven(integrator="RK45", rtol=1e-8, compiled=False), 3.0)
    assert run.stats["engine"] == "scipy"  # no compiled pair: the plain loop
    assert run.impacts.total == scipy.impacts.total == 6
    np.testing.assert_array_equal(run.t, scipy.t)
    np.testing.assert_array_equal(run.q, scipy.q)
    np.testing.assert_array_equal(run.v, scipy.v)
    assert run.stats["steps"] == scipy.stats["steps"] == mine.steppers[0].steps
    assert mine.family == "event-driven" and not mine.requires_step
    with pytest.raises(ValueError, match="CountedRK45 is adaptive: h must be None"):
        ib.simulate(ball, mine, 3.0, h=1e-3)


def test_a_stepper_failure_is_a_simulation_error_with_the_state():
    ball = BouncingBall()
    with pytest.raises(ib.SimulationError, match="^counted RK45 gave up at t=") as info:
        ib.simulate(ball, CountedRK45(fail_after=5), 3.0)
    error = info.value
    assert 0.0 < error.t < 3.0
    assert error.q.shape == error.v.shape == (1,)
    assert error.trajectory is not None and error.trajectory.stats["steps"] == 5
