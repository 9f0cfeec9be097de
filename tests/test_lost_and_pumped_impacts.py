"""No lost or pumped impact reported ok (issue 51, items 4 and 6).

* An impact at t0 (a closed contact approaching) is applied by every scheme: the ball on the
  floor moving down with e = 1 bounces to v0^2 / (2 g), whatever the scheme's start.
* A run of a conservative problem whose energy rises above its initial value by more than the
  gate's bound (:data:`impactbench.core.energy.ENERGY_GAIN_BOUND` of its kinetic-energy scale)
  fails with a message: Paoli-Schatzman with e = 1 on bounces of height O(h) pumps its energy.
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import SimulationError, simulate
from impactbench.core.energy import ENERGY_GAIN_BOUND, energy
from impactbench.methods import (
    CatchingUp,
    D1MinusLinear,
    EventDriven,
    MoreauJean,
    MoreauJeanProjection,
    NonsmoothGeneralizedAlpha,
    PaoliSchatzman,
)
from impactbench.problems import BouncingBall, SlantedWall

GRAVITY = 9.81

TIME_STEPPERS = [
    PaoliSchatzman(),
    MoreauJean(),
    CatchingUp(),
    MoreauJeanProjection(),
    NonsmoothGeneralizedAlpha(),
    D1MinusLinear(),
]


@pytest.mark.parametrize("h", [1e-2, 1e-3])
@pytest.mark.parametrize("method", [*TIME_STEPPERS, EventDriven()], ids=lambda m: m.name)
def test_an_impact_at_t0_is_applied(method, h):
    """q0 = 0, v0 = -1, e = 1: the ball leaves the floor at t0 with v = +1 and rises to
    v0^2 / (2 g) = 0.051 m. A scheme through the impact is first order, so its peak is within
    the distance of a step at the impact speed, h |v0|, of the exact one; a lost impact leaves
    the ball at q <= 0."""
    ball = BouncingBall(q0=0.0, v0=-1.0, restitution=1.0, gravity=GRAVITY)
    run = simulate(ball, method, 0.3, h=h if method.requires_step else None)
    assert run.success
    peak = 1.0 / (2.0 * GRAVITY)
    assert abs(run.q[:, 0].max() - peak) <= h * 1.0


@pytest.mark.parametrize("h", [0.02, 0.07])
def test_paoli_schatzman_pumping_an_elastic_ball_fails_with_a_message(h):
    """e = 1, bounces of 0.051 m: each impact of the two-step scheme changes the energy by
    O(m g h), with a sign that follows the phase of the impact against the grid; the energy
    wanders up (peaks of 0.74 m at h = 0.02, 6.35 m at h = 0.07 by t = 100) and the run stops
    on the energy gate instead of reaching t_end as ok."""
    ball = BouncingBall(q0=0.0, v0=1.0, restitution=1.0, gravity=GRAVITY)
    with pytest.raises(SimulationError, match="energy of a conservative problem grew") as caught:
        simulate(ball, PaoliSchatzman(), 100.0, h=h)
    trajectory = caught.value.trajectory
    assert trajectory is not None
    gain = energy(ball, trajectory).max() - 0.5
    assert gain > ENERGY_GAIN_BOUND * 0.5  # the kinetic-energy scale E0 - V(floor) = 1/2


@pytest.mark.parametrize(
    "problem",
    [
        BouncingBall(q0=1.0, restitution=1.0),
        BouncingBall(q0=1.0, restitution=0.8),
        BouncingBall(q0=0.0, v0=0.0, restitution=1.0),
        SlantedWall(),
    ],
    ids=["elastic ball", "ball e=0.8", "ball at rest", "slanted wall"],
)
@pytest.mark.parametrize("method", [*TIME_STEPPERS, EventDriven()], ids=lambda m: m.name)
def test_the_energy_gate_passes_converging_runs(method, problem):
    """Runs at a resolved step (h = 1e-3: bounces of 1 m at 4.4 m/s) of the conservative
    problems pass the gate, and record their gain relative to the kinetic-energy scale."""
    run = simulate(problem, method, 3.0, h=1e-3 if method.requires_step else None)
    assert run.success
    assert 0.0 <= run.stats["energy_gain"] <= ENERGY_GAIN_BOUND


def test_conservative_must_be_a_bool():
    ball = BouncingBall()
    ball.conservative = 1
    with pytest.raises(ValueError, match="conservative"):
        simulate(ball, MoreauJean(), 0.1, h=1e-2)


def test_a_conservative_problems_energy_gain_is_recorded_from_its_samples():
    """The gain is max_k E_k - E_0 over the samples, relative to E_0 - min V over K."""
    ball = BouncingBall(q0=1.0, restitution=1.0)
    run = simulate(ball, MoreauJean(theta=1.0), 1.0, h=1e-2)
    energies = energy(ball, run)
    above_floor = run.q[:, 0] >= 0.0
    expected = (energies.max() - energies[0]) / (
        energies[0] - ball.potential_energies(run.q[above_floor]).min()
    )
    assert run.stats["energy_gain"] == pytest.approx(expected, abs=1e-15)
    assert np.all(np.diff(energies[run.t < ball.first_impact_time - 0.02]) < 0.0)


@pytest.mark.parametrize("steps", [1, 2, 3])
def test_a_first_order_scheme_leaving_rest_passes_the_gate(steps):
    """Catching-up is symplectic Euler in flight: E - (h/2) F^T v is conserved, so after k steps
    from rest E has risen by k h^2 g^2 / 2 while the kinetic scale S is (k h g)^2 / 2 (their ratio
    1/k, above the gate's half for k <= 2). The gate allows the O(h |F^T v|) oscillation of a
    first-order scheme: the ball's first steps are no energy creation."""
    h = 0.05
    ball = BouncingBall(q0=1.0, v0=0.0, restitution=0.8, gravity=GRAVITY)
    run = simulate(ball, CatchingUp(), steps * h, h=h)
    assert run.success
    gain = energy(ball, run).max() - energy(ball, run)[0]
    assert gain == pytest.approx(steps * h**2 * GRAVITY**2 / 2, rel=1e-9)
