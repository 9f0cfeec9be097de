"""RockingBlock (problems/rocking_block.py): Housner's law from the velocity-level
Newton-Coulomb law, the sliding impacts below the sticking friction, and the frictionless
block, against the closed forms of the impact at one corner."""

from __future__ import annotations

import math

import numpy as np
import pytest

import impactbench as ib
from impactbench.methods import MoreauJean
from impactbench.problems import RockingBlock


def _impact_ratios(run, count):
    """omega+ / omega- at the first ``count`` impacts: at each sign change of phi, the step of
    largest |change of omega| within 3 steps of it, and omega before and after that step."""
    phi, omega = run.q[:, 2], run.v[:, 2]
    crossings = np.flatnonzero(np.sign(phi[1:]) != np.sign(phi[:-1]))[:count]
    ratios, before = [], []
    for k in crossings:
        window = np.arange(max(k - 3, 0), k + 3)
        j = window[np.argmax(np.abs(omega[window + 1] - omega[window]))]
        ratios.append(omega[j + 1] / omega[j])
        before.append(omega[j])
    return np.array(ratios), np.array(before)


def test_housner_closed_forms():
    """r = 1 - (3/2) sin^2 alpha; the one-corner law's ratio is r from the sticking friction
    3 b c / (b^2 + 4 c^2) up, continuous there, and (R^2 - 3 b^2) / (R^2 + 3 b^2) at mu = 0."""
    block = RockingBlock(half_width=0.2, half_height=0.5)
    b, c = 0.2, 0.5
    assert block.housner_ratio == pytest.approx(1 - 1.5 * b * b / (b * b + c * c), rel=1e-15)
    star = block.impact_friction
    assert block.impact_ratio(star) == block.housner_ratio == block.impact_ratio(5.0)
    assert block.impact_ratio(star * (1 - 1e-9)) == pytest.approx(block.housner_ratio, rel=1e-8)
    r2 = b * b + c * c
    assert block.impact_ratio(0.0) == pytest.approx((r2 - 3 * b * b) / (r2 + 3 * b * b), rel=1e-15)
    with pytest.raises(ValueError, match="angle"):
        RockingBlock(angle=0.5)  # beyond alpha = atan(0.4): it would topple


def test_moreau_jean_reproduces_housner_when_the_corners_stick():
    """mu = 1 (above the sticking friction 0.288), e_N = 0, released at rest from 0.1 rad:
    the first impact comes with the closed-form |omega-| (rocking about the sticking pivot),
    and each of the first three impacts multiplies omega by Housner's r = 0.79310 within 10 h
    at h = 1e-5 and 1e-4 (measured: 5e-5 and 5e-4 off: first order in h), the error
    decreasing with h. The pivot does not slide before the first impact: its tangential
    velocity W_T(q_p) v_{k+1} is 0 at each step, but the step moves q by h (v_k + v_{k+1}) / 2
    and W_T(q_p) v_k is O(h), so its horizontal position (nonlinear in q) drifts by O(h) over
    the phase: within 0.01 h (measured 3.85e-3 h at both steps)."""
    block = RockingBlock(angle=0.1, mu=1.0)
    errors = []
    for h in (1e-4, 1e-5):
        run = ib.simulate(block, MoreauJean(), 1.2, h=h)
        ratios, before = _impact_ratios(run, 3)
        assert len(ratios) == 3
        error = np.abs(ratios - block.housner_ratio).max()
        assert error <= 10 * h, (h, ratios)
        errors.append(error)
        assert abs(before[0]) == pytest.approx(block.impact_speed(), rel=10 * h)
        first = run.t < 0.9 * (run.t[np.argmax(run.q[:, 2] < 0.0)])
        q = run.q[first]
        pivot = q[:, 0] - 0.2 * np.cos(q[:, 2]) + 0.5 * np.sin(q[:, 2])
        assert np.abs(pivot - pivot[0]).max() <= 0.01 * h
    assert errors[1] < errors[0] / 5


@pytest.mark.parametrize("mu", [0.25, 0.0])
def test_below_the_sticking_friction_the_new_corner_slides_at_impact(mu):
    """mu below 3 b c / (b^2 + 4 c^2) = 0.288: the new corner slides outwards at the impact
    (P_T = -mu P_N) and omega+ / omega- is the sliding impact's closed form (0.7313 at
    mu = 0.25, 0.4146 at mu = 0), not Housner's r; the pivot slides before the impact too
    (|omega-| is not the sticking pivot's). Frictionless, no horizontal force acts: x' = 0
    to round-off (1e-15) throughout."""
    block = RockingBlock(angle=0.1, mu=mu)
    h = 1e-5
    run = ib.simulate(block, MoreauJean(), 0.3, h=h)
    ratios, before = _impact_ratios(run, 1)
    assert abs(ratios[0] - block.impact_ratio()) <= 10 * h
    assert abs(ratios[0] - block.housner_ratio) > 0.05
    assert abs(abs(before[0]) - block.impact_speed()) > 0.02
    if mu == 0.0:
        assert np.abs(run.v[:, 0]).max() <= 1e-15 and np.abs(run.q[:, 0]).max() <= 1e-15
    else:
        assert math.isfinite(run.q[-1, 0]) and run.q[-1, 0] != run.q[0, 0]
