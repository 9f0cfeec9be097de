"""A run that grows without bound is a failure (impactbench.core.divergence).

The probe: the impacting bar above its stable step h_e / c (2 / omega_max) ran to t_end with
q ~ 1e50 and status ok for every explicit scheme. Up front, an explicit scheme now refuses a step
above its limit; at run time, the time loop stops a state beyond its bounds (tested on a bar that
does not declare its stable step, on the plain-Python loops: no compilation).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from impactbench import Problem, SimulationError, simulate
from impactbench.bench.runner import Run, perform
from impactbench.core import divergence
from impactbench.core.divergence import DivergenceError
from impactbench.methods import (
    CatchingUp,
    D1MinusLinear,
    EventDriven,
    MoreauJean,
    MoreauJeanProjection,
    NonsmoothGeneralizedAlpha,
    PaoliSchatzman,
)
from impactbench.problems import BouncingBall, ImpactingBar

EXPLICIT = (MoreauJean, CatchingUp, MoreauJeanProjection, D1MinusLinear, PaoliSchatzman)
FACTORS = (1.5, 4.0, 20.0)
STABLE = ImpactingBar(n_elements=4).stable_step  # h_e / c = 0.25


class UndeclaredBar(ImpactingBar):
    """The bar without its stable step: only the run-time bounds can stop it."""

    stable_step = None


@pytest.mark.parametrize("factor", FACTORS)
@pytest.mark.parametrize("method", EXPLICIT)
def test_explicit_schemes_refuse_a_step_above_the_stable_step(method, factor):
    h = factor * STABLE
    with pytest.raises(ValueError, match="stable step") as caught:
        simulate(ImpactingBar(n_elements=4), method(), 40 * h, h=h)
    message = str(caught.value)
    assert f"h={h!r}" in message and f"stable step {STABLE!r}" in message


def test_the_issue_reproduction_is_refused():
    """``impactbench simulate 'ImpactingBar[n_elements=40]' PaoliSchatzman --t-end 2.6 --h
    0.0375`` reported ok with q ~ 4.6e50: 0.0375 is 1.5 x h_e / c = 0.025."""
    with pytest.raises(ValueError, match=r"stable step 0\.025 .*1\.49 x the limit"):
        simulate(ImpactingBar(n_elements=40), PaoliSchatzman(), 2.6, h=0.0375)


def test_a_step_at_the_limit_is_accepted_and_the_theta_scheme_limit_holds():
    """For theta >= 1/2 the theta-scheme is stable up to stable_step / sqrt(4 theta - 1): at
    0.97 x that limit (theta = 1) a long run stays bounded, at 1.05 x it diverges; for
    theta < 1/2 no step is stable and no limit is declared."""
    limit = MoreauJean(theta=1.0).step_limit(ImpactingBar(n_elements=4))
    assert limit == pytest.approx(STABLE / math.sqrt(3.0), rel=1e-15)
    assert MoreauJean(theta=0.4).step_limit(ImpactingBar(n_elements=4)) is None
    assert NonsmoothGeneralizedAlpha().step_limit(ImpactingBar(n_elements=4)) is None
    stable = simulate(
        UndeclaredBar(n_elements=4),
        MoreauJean(theta=1.0, compiled=False),
        2000 * 0.97 * limit,
        h=0.97 * limit,
    )
    assert np.abs(stable.q).max() < 1e3
    with pytest.raises(DivergenceError):
        simulate(
            UndeclaredBar(n_elements=4),
            MoreauJean(theta=1.0, compiled=False),
            2000 * 1.05 * limit,
            h=1.05 * limit,
        )
    h = limit  # exactly at the limit (up to round-off): accepted
    simulate(ImpactingBar(n_elements=4), MoreauJean(theta=1.0, compiled=False), 10 * h, h=h)


@pytest.mark.parametrize("factor", FACTORS)
@pytest.mark.parametrize("method", EXPLICIT)
def test_the_run_time_bounds_stop_a_run_the_up_front_check_cannot_see(method, factor):
    h = factor * STABLE
    with pytest.raises(DivergenceError) as caught:
        simulate(UndeclaredBar(n_elements=4), method(compiled=False), 300 * h, h=h)
    error = caught.value
    assert "diverged" in error.reason and error.quantity in error.reason
    assert error.value > error.bound > 0.0
    assert np.all(np.isfinite(error.q)) and np.all(np.isfinite(error.v)) and error.t < 300 * h
    assert error.trajectory is not None and not error.trajectory.success


@pytest.mark.parametrize("factor", FACTORS)
def test_the_generalized_alpha_scheme_stops_above_the_stable_step(factor):
    """Implicit (no step limit declared): its fixed-point iteration fails to contract."""
    h = factor * STABLE
    with pytest.raises(SimulationError, match="fixed-point"):
        simulate(
            UndeclaredBar(n_elements=4), NonsmoothGeneralizedAlpha(compiled=False), 40 * h, h=h
        )


def test_a_stable_run_is_not_stopped():
    h = 0.5 * STABLE
    trajectory = simulate(UndeclaredBar(n_elements=4), MoreauJean(compiled=False), 400 * h, h=h)
    assert trajectory.success and trajectory.stats["steps"] == 400


def test_a_declared_state_scale_bounds_the_run():
    """The ball (dropped from 1 m, at most ~4.4 m/s) with a declared scale below its motion."""
    ball = BouncingBall()
    ball.state_scale = (10.0, 1e-7)  # bounds 1e7 m and 0.1 m/s
    with pytest.raises(DivergenceError, match=r"max \|v\|") as caught:
        simulate(ball, MoreauJean(compiled=False), 1.0, h=1e-2)
    assert caught.value.bound == pytest.approx(0.1)
    ball.state_scale = (1.0, -1.0)
    with pytest.raises(ValueError, match="state_scale"):
        simulate(ball, MoreauJean(compiled=False), 1.0, h=1e-2)


def test_default_bounds_follow_the_initial_energy_and_force():
    ball = BouncingBall()  # q0 = 1, v0 = 0, E0 = m g, F0 = -m g
    growth = divergence.state_bounds(ball, 2.0)
    g = -ball.forces(0.0, ball.q0, ball.v0)[0] / ball.mass_matrix(ball.q0)[0, 0]
    velocity = max(
        math.sqrt(2.0 * abs(ball.energy(ball.q0, ball.v0)) / ball.mass_matrix(ball.q0)[0, 0]),
        2.0 * g,
        1.0,
    )
    assert growth[divergence.V_BOUND] == pytest.approx(1e6 * velocity)
    assert growth[divergence.Q_BOUND] == pytest.approx(1e6 * max(1.0, 2.0 * velocity))


def test_a_study_records_a_diverged_run_as_failed():
    run = Run(UndeclaredBar, MoreauJean, 300 * 1.5 * STABLE, h=1.5 * STABLE,
              problem_kwargs={"n_elements": 4}, method_kwargs={"compiled": False})  # fmt: skip
    outcome = perform(run)
    assert outcome.status == "failed"
    assert outcome.error.startswith("DivergenceError: ") and "diverged" in outcome.error
    refused = perform(Run(ImpactingBar, MoreauJean, 1.0, h=1.5 * STABLE,
                          problem_kwargs={"n_elements": 4}))  # fmt: skip
    assert refused.status == "failed" and "stable step" in refused.error


class Repeller(Problem):
    """q'' = 100 q (a negative stiffness): the exact solution grows like exp(10 t), 1e13 at
    t = 3, with a floor far away. No stable step to declare: only the run-time bounds stop it."""

    name = "Repeller"

    def __init__(self) -> None:
        self.restitution = 0.0
        self.q0 = np.array([1.0])
        self.v0 = np.array([0.0])

    def mass_matrix(self, q: np.ndarray) -> np.ndarray:
        return np.eye(1)

    def forces(self, t: float, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        return 100.0 * q

    def gap(self, q: np.ndarray) -> np.ndarray:
        return q + 1e20

    def gap_gradient(self, q: np.ndarray) -> np.ndarray:
        return np.ones((1, 1))

    def potential_energy(self, q: np.ndarray) -> float:
        return -50.0 * float(q[0] ** 2)


@pytest.mark.parametrize(
    "method", [EventDriven(compiled=False), MoreauJean(compiled=False)], ids=["scipy", "mj"]
)
def test_a_growing_exact_solution_stops_every_path(method):
    """Bounds from E0 = -50 and F0 = 100 acting for 1 / omega = 0.1 (omega = sqrt(|dF/dq|) =
    10, the growth rate): V = max(sqrt(2 |E0|), 0.1 F0) = 10, Q = 30, times 1e6."""
    options = {"h": 1e-3} if method.requires_step else {}
    with pytest.raises(DivergenceError, match=r"diverged: max \|v\|") as caught:
        simulate(Repeller(), method, 3.0, **options)
    assert caught.value.bound == pytest.approx(1e7)
    # v = 10 sinh(10 t) = 1e7 at t = asinh(1e6) / 10 = 1.451; the loop checks every 32 steps
    assert 1.44 < caught.value.t < 1.49
