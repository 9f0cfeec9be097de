"""Adaptive with its defaults controls its error through impacts: the default gap control
(``gap_tolerance=None``: atol + rtol L, L the largest initial gap; impactbench.core.adaptive)."""

from __future__ import annotations

import numpy as np
import pytest

from impactbench.analysis.fitting import ORDER, fit_order
from impactbench.bench.specs import load_method
from impactbench.core.adaptive import Adaptive
from impactbench.methods import (
    CatchingUp,
    D1MinusLinear,
    MoreauJean,
    MoreauJeanProjection,
    NonsmoothGeneralizedAlpha,
)
from impactbench.problems import BouncingBall

BALL = BouncingBall(q0=1.0, v0=0.0, restitution=0.8)
#: One second past the accumulation point: every impact and the start of the rest.
PAST_ACCUMULATION = BALL.accumulation_time + 1.0
#: The built-in schemes but PaoliSchatzman, whose runs under Adaptive stop at t0 with a
#: rejection at h_min whatever the tolerances and gap control (a refusal, not an ok result).
SCHEMES = [MoreauJean, CatchingUp, D1MinusLinear, MoreauJeanProjection, NonsmoothGeneralizedAlpha]


def test_the_default_gap_tolerance_is_atol_plus_rtol_times_the_largest_initial_gap():
    assert Adaptive(rtol=1e-3, atol=1e-6).gap_bound(BALL) == pytest.approx(1e-6 + 1e-3 * 1.0)
    on_floor = BouncingBall(q0=0.0, v0=2.0)
    assert Adaptive(rtol=1e-3, atol=1e-6).gap_bound(on_floor) == 1e-6
    assert Adaptive(gap_tolerance=2e-4).gap_bound(BALL) == 2e-4
    assert Adaptive(gap_tolerance=np.inf).gap_bound(BALL) == np.inf
    uncontrolled = Adaptive(gap_tolerance=np.inf)
    assert "gap_tolerance=inf" in uncontrolled.name
    assert load_method(uncontrolled.name).gap_tolerance == np.inf
    with pytest.raises(ValueError, match="gap_tolerance"):
        Adaptive(gap_tolerance=0.0)


@pytest.mark.parametrize("scheme", SCHEMES, ids=lambda scheme: scheme.__name__)
def test_every_scheme_with_the_defaults_bounds_the_penetration_through_the_accumulation(scheme):
    # a flight the scheme integrates exactly (D1MinusLinear's Verlet step, MoreauJean's
    # midpoint rule) has a zero error estimate: without gap control the step grows to h_max and
    # the ball meets the floor up to h_max |U| inside, whatever rtol. With the default control
    # the penetration grows by at most the gap tolerance on a step; it can grow on the step that
    # closes the contact and on the impulse step after it (whose position update still uses the
    # closing velocity), hence at most twice the tolerance.
    method = Adaptive(scheme())
    run = method.solve(BALL, PAST_ACCUMULATION)
    assert run.t[-1] == PAST_ACCUMULATION and run.stats["impacts"] > 0
    assert -run.q.min() <= 2.0 * method.gap_bound(BALL)


def test_the_defaults_converge_in_rtol_through_the_accumulation():
    # the max position error over [0, t_inf + 1] at the accepted steps against the closed form
    tolerances = np.geomspace(1e-2, 1e-6, 9)
    errors = []
    for rtol in tolerances:
        run = Adaptive(rtol=rtol).solve(BALL, PAST_ACCUMULATION)
        exact, _ = BALL.exact_solution(run.t)
        errors.append(np.abs(run.q - exact).max())
    fit = fit_order(tolerances, errors)
    assert fit.status == ORDER and fit.low >= 0.5, fit


@pytest.mark.parametrize("scheme", [MoreauJean, D1MinusLinear], ids=lambda s: s.__name__)
def test_the_defaults_rest_the_ball_on_the_floor_to_t_1000_at_a_large_step(scheme):
    run = Adaptive(scheme()).solve(BALL, 1000.0)  # raises if a rejection reaches h_min
    assert run.t[-1] == 1000.0
    assert abs(run.q[-1, 0]) <= 1e-4 and abs(run.v[-1, 0]) <= 1e-4
    # at rest the step is back near h_max = 100: the last steps span tens of seconds
    assert run.stats["steps"] < 10_000 and np.diff(run.t[-3:]).min() >= 10.0
