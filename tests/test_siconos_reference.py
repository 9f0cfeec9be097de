"""Agreement with a peer's published regression output: Siconos' MoreauJeanOSI bouncing ball.

tests/data/siconos/BouncingBallTS.ref (see the README there) is the reference output Siconos'
own example suite compares against at 1e-12: ball of mass 1, q0 = 1, v0 = 0, gravity 9.81,
e = 0.9, theta = 1/2, h = 5e-3, T = 10, rows t, q, v, p (the step's impulse), lambda. The run
bounces 28 times, accumulates and rests on the floor at q = -2.2886e-5 for the last 1.4 s, so it
checks the impact law, the activation rule and persistent contact together.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from impactbench import simulate
from impactbench.methods import MoreauJean
from impactbench.problems import BouncingBall

REFERENCE = Path(__file__).parent / "data" / "siconos" / "BouncingBallTS.ref"
H = 5e-3
T = 10.0
GRAVITY = 9.81


@pytest.fixture(scope="module")
def siconos() -> np.ndarray:
    with open(REFERENCE) as file:
        rows, cols = (int(word) for word in file.readline().split())
    table = np.loadtxt(REFERENCE, skiprows=1)
    assert table.shape == (rows, cols) == (2001, 5)
    return table


def _run(method: MoreauJean):
    ball = BouncingBall(q0=1.0, v0=0.0, gravity=GRAVITY, restitution=0.9)
    return simulate(ball, method, T, h=H)


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "python"])
def test_default_moreau_jean_reproduces_siconos(siconos, compiled):
    """q and v to 1e-10 at every one of the 2001 rows, and the same impulse on the same steps."""
    run = _run(MoreauJean(theta=0.5, compiled=compiled))
    assert run.stats["compiled"] is compiled
    np.testing.assert_allclose(run.t, siconos[:, 0], rtol=0, atol=1e-12)
    assert np.max(np.abs(run.q[:, 0] - siconos[:, 1])) <= 1e-10
    assert np.max(np.abs(run.v[:, 0] - siconos[:, 2])) <= 1e-10
    # the impulse of step k -> k+1 (mass 1): p = v_{k+1} - v_k + h g, zero on free steps
    impulse = np.diff(run.v[:, 0]) + H * GRAVITY
    active = siconos[1:, 3] > 0
    assert np.count_nonzero(active) == run.impacts.total == 345
    assert np.max(np.abs(impulse[active] - siconos[1:, 3][active])) <= 1e-10
    assert np.max(np.abs(impulse[~active])) <= 1e-12
    # the rest state Siconos reaches, for all of its last 1.4 s
    resting = siconos[:, 0] >= 8.6
    np.testing.assert_allclose(run.q[resting, 0], -2.2886e-5, rtol=1e-4)


def test_approaching_rule_is_not_siconos(siconos):
    """The velocity-sign rule leaves the peer's output once the ball rests (it sinks)."""
    run = _run(MoreauJean(theta=0.5, activation="approaching"))
    deviation = np.abs(run.q[:, 0] - siconos[:, 1])
    assert np.max(deviation[siconos[:, 0] < 2.0]) <= 1e-10  # same bounces at first
    assert run.q[-1, 0] < -1e-3  # 2.0e-3 deep at t = 10, against Siconos' 2.3e-5
