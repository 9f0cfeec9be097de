"""ImpactingStick (problems/impacting_stick.py): MoreauJean and CatchingUp against the closed
form of the first impact (free flight, then the Newton-Coulomb law at the stick's end, sliding
or sticking), and MoreauJean against Siconos' own output of the example."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import impactbench as ib
from impactbench.core.friction import frictional_impact
from impactbench.methods import CatchingUp, MoreauJean
from impactbench.problems import ImpactingStick

REFERENCE = Path(__file__).parent / "data" / "siconos" / "ImpactingStick10.ref"


@pytest.mark.parametrize("mu", [0.01, 1.0])
def test_the_closed_form_impact_solves_the_law(mu):
    """The closed form at the first impact is the law's (the enumeration's velocity to 1e-14);
    with Siconos' mu = 0.01 the end slides, with mu = 1 it sticks (its tangential velocity
    after is 0)."""
    stick = ImpactingStick(mu=mu)
    t_star, q, v = stick.first_impact()
    assert abs(stick.gap(q)[0]) <= 1e-15 and 0.06 < t_star < 0.061
    v_plus, state = stick.impact(q, v)
    assert state == ("slip" if mu < 0.1 else "stick")
    law, _, _ = frictional_impact(
        stick.mass_matrix(q), stick.gap_gradient(q), stick.tangent_gradient(q), v, v, 1.0,
        np.zeros(1), np.array([mu]),
    )  # fmt: skip
    np.testing.assert_allclose(v_plus, law, rtol=0, atol=1e-14)
    if state == "stick":
        assert abs(stick.tangent_gradient(q)[0] @ v_plus) <= 1e-15


@pytest.mark.parametrize("cls", [MoreauJean, CatchingUp], ids=lambda c: c.__name__)
@pytest.mark.parametrize("mu", [0.01, 1.0])
def test_the_schemes_give_the_closed_form_impact_to_order_h(cls, mu):
    """The first impact step (within h of t*) leaves the velocity of the closed-form impact
    within 40 h (h = 1e-4, 1e-5; measured 2.6e-3 and 5e-5 for MoreauJean, 2.6e-3 and 3.7e-4
    for CatchingUp): the law applied at q_p, O(h) from the contact configuration."""
    stick = ImpactingStick(mu=mu)
    t_star, q, v = stick.first_impact()
    v_plus, _ = stick.impact(q, v)
    for h in (1e-4, 1e-5):
        run = ib.simulate(stick, cls(), 0.1, h=h)
        t_impact = run.impacts.t[0]
        assert t_star <= t_impact <= t_star + 2 * h
        after = np.searchsorted(run.t, t_impact - 1e-12)
        assert np.abs(run.v[after] - v_plus).max() <= 40 * h


def test_moreau_jean_against_siconos_output():
    """Siconos' MoreauJeanOSI (theta = 1/2, h = 1e-4, its FrictionContact solver to 1e-10) on
    the same stick to T = 0.2: the project's MoreauJean stays within 1e-5 in q and 1e-3 in v
    (measured 2.1e-6 and 1.5e-4; not round-off: Siconos' iterative solver stops at 1e-10,
    and its contact rows and activation are not evaluated at the same point as q_p)."""
    data = np.loadtxt(REFERENCE, skiprows=1)
    run = ib.simulate(ImpactingStick(), MoreauJean(), 0.2, h=1e-4)
    on_grid = np.searchsorted(run.t, data[:, 0] - 1e-12)
    np.testing.assert_allclose(run.t[on_grid], data[:, 0], rtol=0, atol=1e-14)
    assert np.abs(run.q[on_grid] - data[:, 1:4]).max() <= 1e-5
    assert np.abs(run.v[on_grid] - data[:, 4:7]).max() <= 1e-3
    assert run.impacts.total > 0
