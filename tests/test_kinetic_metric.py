"""The impact law acts in the kinetic metric: velocity jumps are along M^-1 n, not along n.

On the slanted wall (constant non-diagonal M, constant F) take l(v) = w^T v with w orthogonal to
M^-1 n. Impulses along M^-1 n leave l(v) untouched, so l(v(t)) = l(v0) + l(a) (t - t0) exactly for
every method (for Paoli-Schatzman's central-difference velocity too: the projection moves the
position along M^-1 n only). A method using the Euclidean normal n changes l at every impact,
since l(n) != 0 for this M - the test checks that too, so it can fail.
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import simulate
from impactbench.methods import CatchingUp, EventDriven, MoreauJean, PaoliSchatzman
from impactbench.problems import SlantedWall


def tangential_functional(wall):
    m_inv_n = np.linalg.solve(wall.mass_matrix(wall.q0), wall.gap_gradient(wall.q0)[0])
    return np.array([-m_inv_n[1], m_inv_n[0]])  # w with w . (M^-1 n) = 0


def test_the_functional_would_see_a_euclidean_jump():
    wall = SlantedWall(restitution=0.7)
    w = tangential_functional(wall)
    n = wall.gap_gradient(wall.q0)[0]
    assert abs(w @ n) > 0.1 * np.linalg.norm(w) * np.linalg.norm(n)


@pytest.mark.parametrize(
    "method",
    [PaoliSchatzman(), MoreauJean(theta=0.5), CatchingUp(), EventDriven(rtol=1e-10)],
    ids=lambda m: m.name,
)
def test_velocity_jumps_are_along_inverse_mass_times_normal(method):
    wall = SlantedWall(restitution=0.7)
    h = 1e-3 if method.requires_step else None
    trajectory = simulate(wall, method, wall.accumulation_time + 0.5, h=h)
    assert trajectory.impacts.total >= 10
    w = tangential_functional(wall)
    accel = np.linalg.solve(wall.mass_matrix(wall.q0), wall.forces(0.0, wall.q0, wall.v0))
    expected = w @ wall.v0 + (w @ accel) * (trajectory.t - wall.t0)
    scale = np.abs(trajectory.v).max() * np.linalg.norm(w)
    assert np.max(np.abs(trajectory.v @ w - expected)) <= 1e-9 * scale
