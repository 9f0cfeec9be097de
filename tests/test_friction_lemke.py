"""Lemke's method on the planar Newton-Coulomb law (impactbench.core.friction_lemke): the law
solved to round-off with independent and dependent contact rows, the ray where the law has no
solution, and the schemes on dependent rows (two particles pushed into corners: four contacts,
eight rows in four degrees of freedom) and on a corner without solution (a named failure)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import impactbench as ib
from impactbench import Problem, SimulationError
from impactbench.core.friction import (
    STATUS_FRICTION_NO_SOLUTION,
    complementarity_residual,
    frictional_impact,
)
from impactbench.core.friction_lemke import LEMKE_RAY, lemke_friction
from impactbench.methods import CatchingUp, MoreauJean

EPS = np.finfo(float).eps
FRICTIONAL_SCHEMES = [MoreauJean, CatchingUp]


def _law(rng, n, k, rank=None):
    """A random SPD M, contact rows (of rank ``rank`` if given: dependent rows) and velocities."""
    a = rng.standard_normal((n, n))
    M = a @ a.T + n * np.eye(n)  # noqa: N806
    if rank is None:
        rows = rng.standard_normal((2 * k, n))
    else:
        rows = rng.standard_normal((2 * k, rank)) @ rng.standard_normal((rank, n))
    v = rng.standard_normal(n)
    return M, rows[:k], rows[k:], v, v + 0.3 * rng.standard_normal(n)


def _residual(M, wn, wt, v, v_free, e_n, e_t, mu, pn, pt):  # noqa: N803
    rows = np.vstack([wn, wt])
    delassus = rows @ np.linalg.solve(M, rows.T)
    b = np.concatenate([wn @ (v_free + e_n * v), wt @ v_free + e_t * (wt @ v)])
    return complementarity_residual(delassus, b, mu, pn, pt)


@pytest.mark.parametrize("k", [1, 2, 3, 5])
def test_lemke_solves_the_law_with_independent_rows(k):
    """Random masses, independent rows (2k <= n), coefficients and restitutions: Glocker's LCP
    holds to round-off (measured: 8 to 17 eps for k = 2, 3, 5; 230 eps for k = 1 on an
    ill-conditioned instance, impulses 590 for unit velocities, where the enumeration's is 90
    eps). For one contact the velocity is the enumeration's (to 1e-12 relative); for several,
    these random geometries with mu up to 1.5 include laws with several solutions (a
    velocity-level Painleve situation: the two solvers' velocities differ by up to 0.8 relative,
    both solving the LCP), so only the LCP is asserted."""
    rng = np.random.default_rng(350 + k)
    worst, velocity = 0.0, 0.0
    for _ in range(100):
        n = 2 * k + int(rng.integers(0, 3))
        M, wn, wt, v, v_free = _law(rng, n, k)  # noqa: N806
        mu = rng.uniform(0.0, 1.5, k)
        e_t = rng.uniform(0.0, 1.0, k) * (rng.random() < 0.5)
        e_n = float(rng.uniform(0.0, 1.0))
        v_plus, pn, pt = frictional_impact(M, wn, wt, v, v_free, e_n, e_t, mu, solver="lemke")
        worst = max(worst, _residual(M, wn, wt, v, v_free, e_n, e_t, mu, pn, pt))
        np.testing.assert_allclose(M @ (v_plus - v_free), wn.T @ pn + wt.T @ pt, atol=1e-12 * n)
        if k == 1:
            other, _, _ = frictional_impact(M, wn, wt, v, v_free, e_n, e_t, mu, "enumeration")
            velocity = max(velocity, np.abs(v_plus - other).max() / np.abs(other).max())
    assert worst < 1000 * EPS, worst
    assert velocity < 1e-12, velocity


@pytest.mark.parametrize("k", [2, 3, 4])
def test_lemke_solves_the_law_with_dependent_rows(k):
    """2k rows of rank below 2k (a singular Delassus matrix; n from 2 to 2k, also fewer
    degrees of freedom than rows) with e_T = e_N: b is in the range of the rows, a solution
    exists, and Lemke's method finds one: the LCP holds to 1e-12 (measured: 937 eps), with
    impulses that may be large along the null space of the rows."""
    rng = np.random.default_rng(35 * k)
    worst = 0.0
    for _ in range(100):
        n = int(rng.integers(2, 2 * k + 1))
        M, wn, wt, v, v_free = _law(rng, n, k, rank=min(n, 2 * k - 1))  # noqa: N806
        mu = rng.uniform(0.0, 1.5, k)
        e_n = float(rng.uniform(0.0, 1.0))
        e_t = np.full(k, e_n)
        _, pn, pt = frictional_impact(M, wn, wt, v, v_free, e_n, e_t, mu, solver="lemke")
        worst = max(worst, _residual(M, wn, wt, v, v_free, e_n, e_t, mu, pn, pt))
    assert worst < 1e-12, worst


@pytest.mark.parametrize("mu", [0.5, 5.0])
def test_a_block_resting_on_two_sticking_corners(mu):
    """A rectangular block (half-width b, half-height c) flat on a floor, both corners closed:
    the tangent rows (1, 0, c) of the two corners are equal, so the Delassus matrix is
    singular. Pushed horizontally less than mu times its weight, it sticks on both corners:
    v+ = 0 to round-off; the impulses balance the free velocity (sum of P_N = -m v_free,y,
    sum of P_T = -m v_free,x) and each lies in its friction cone."""
    m, b, c = 2.0, 0.2, 0.5
    M = np.diag([m, m, m * (b * b + c * c) / 3.0])  # noqa: N806
    wn = np.array([[0.0, 1.0, -b], [0.0, 1.0, b]])
    wt = np.array([[1.0, 0.0, c], [1.0, 0.0, c]])
    v_free = np.array([0.001, -0.01, 0.0])
    v_plus, pn, pt = frictional_impact(
        M, wn, wt, np.zeros(3), v_free, 0.0, np.zeros(2), np.full(2, mu), solver="lemke"
    )
    assert np.abs(v_plus).max() <= 1e-15
    assert pn.sum() == pytest.approx(m * 0.01, rel=1e-13)
    assert pt.sum() == pytest.approx(-m * 0.001, rel=1e-13)
    assert np.all(pn >= 0.0) and np.all(np.abs(pt) <= mu * pn * (1 + 1e-13))


def test_lemke_ends_on_a_ray_where_the_law_has_no_solution():
    """A unit-mass particle thrown into a corner (floor y >= 0 and wall x >= 0), velocity
    (-1, -1), e_N = 1, e_T = 0, mu = 1.2: the wall's tangent row is the floor's normal row. No
    impulse solves the law: rebounding needs v+ >= (e, e) > 0, so both contacts slide outwards
    and take P_T = -mu P_N, and adding the two normal conditions gives
    (1 - mu)(P_N1 + P_N2) >= 2 (1 + e) > 0, impossible for mu >= 1. Lemke's method ends on a
    ray; with mu = 0.5 it finds v+ = (1, 1)."""
    wn = np.array([[0.0, 1.0], [1.0, 0.0]])
    wt = np.array([[1.0, 0.0], [0.0, 1.0]])
    v = np.array([-1.0, -1.0])
    ann, ant, att = wn @ wn.T, wn @ wt.T, wt @ wt.T
    bn, bt = wn @ (v + v), wt @ v
    work = [tuple(np.empty(2) for _ in range(4)) for _ in range(3)]
    inverse = tuple(np.empty((2, 2)) for _ in range(16))
    mu = np.full(2, 1.2)
    used = lemke_friction(2, ann, ant, att, bn, bt, mu, np.empty(2), np.empty(2), inverse, *work)
    assert used == LEMKE_RAY
    with pytest.raises(RuntimeError, match="no solution"):
        frictional_impact(np.eye(2), wn, wt, v, v, 1.0, np.zeros(2), mu, solver="lemke")
    v_plus, _, _ = frictional_impact(np.eye(2), wn, wt, v, v, 1.0, np.zeros(2), np.full(2, 0.5))
    np.testing.assert_allclose(v_plus, [1.0, 1.0], rtol=1e-14)


class Corners(Problem):
    """Particles in corners (plain Python): particle j at (x_j, y_j) over the floor y_j >= 0
    and right of the wall x_j >= 0, Coulomb friction mu on each contact (the wall's tangent
    is y, the floor's x: 2 rows per contact, 4 per particle in its 2 coordinates), pushed into
    its corner by the force ``push``; a non-diagonal constant mass matrix couples them."""

    def __init__(self, mass, push, q0, v0, mu, restitution=0.0):
        self.name = "Corners"
        self.restitution = restitution
        self._mass = np.asarray(mass, dtype=float)
        self._push = np.asarray(push, dtype=float)
        self._mu = np.asarray(mu, dtype=float)
        self.q0 = np.asarray(q0, dtype=float)
        self.v0 = np.asarray(v0, dtype=float)

    def mass_matrix(self, q):
        return self._mass

    def forces(self, t, q, v):
        return self._push

    def gap(self, q):
        return np.concatenate([q[1::2], q[0::2]])  # floors, then walls

    def gap_gradient(self, q):
        n = len(q)
        floors, walls = np.eye(n)[1::2], np.eye(n)[0::2]
        return np.vstack([floors, walls])

    def tangent_gradient(self, q):
        n = len(q)
        return np.vstack([np.eye(n)[0::2], np.eye(n)[1::2]])

    def friction(self, q):
        return self._mu, np.zeros(len(self._mu))

    def potential_energy(self, q):
        return -float(self._push @ q)


COUPLED_MASS = np.array(
    [
        [2.0, 0.3, 0.4, 0.1],
        [0.3, 1.5, 0.2, 0.3],
        [0.4, 0.2, 1.8, 0.2],
        [0.1, 0.3, 0.2, 1.2],
    ]
)


@pytest.mark.parametrize("cls", FRICTIONAL_SCHEMES, ids=lambda c: c.__name__)
def test_two_particles_pushed_into_corners_come_to_rest_there(cls):
    """Two coupled particles pushed harder than their floors' friction holds slide into their
    walls (four contacts, eight
    rows in four coordinates: closed together, more than the enumeration takes, so Lemke's
    method solves every step with all four). e = 0: each stops at its wall and then rests in
    its corner: the velocity is 0 to round-off, the positions constant, no step fails; the
    compiled and plain-Python loops agree."""
    problem = Corners(
        COUPLED_MASS, push=[-8.0, -9.81, -6.0, -9.81], q0=[0.05, 0.0, 0.1, 0.0],
        v0=[-1.0, 0.0, -0.5, 0.0], mu=[0.3, 0.4, 0.5, 0.6],
    )  # fmt: skip
    h = 1e-3
    run = ib.simulate(problem, cls(), 1.0, h=h)
    plain = ib.simulate(problem, cls(compiled=False), 1.0, h=h)
    np.testing.assert_allclose(plain.q, run.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(plain.v, run.v, rtol=0, atol=1e-12)
    late = run.t >= 0.5
    assert np.abs(run.v[late]).max() <= 1e-13
    assert np.abs(run.q[late] - run.q[-1]).max() <= 1e-13
    assert np.all(problem.gap(run.q[-1]) <= 0.0)  # all four closed
    assert np.all(problem.gap(run.q[-1]) >= -h * 1.0)  # within h |U| of the walls


@pytest.mark.parametrize("cls", FRICTIONAL_SCHEMES, ids=lambda c: c.__name__)
def test_a_corner_without_solution_stops_the_run_naming_it(cls):
    """The particle of the ray test in a run (e_N = 1, e_T = 0, mu = 1.2, thrown into the
    corner): the step into the corner has no solution of the law; the run stops with the
    named status, its message and the time, position and velocity of the failed step."""
    problem = Corners(
        np.eye(2), push=[0.0, 0.0], q0=[0.01, 0.01], v0=[-1.0, -1.0], mu=[1.2, 1.2],
        restitution=1.0,
    )  # fmt: skip
    with pytest.raises(SimulationError, match="Lemke's method ended on a ray") as error:
        ib.simulate(problem, cls(), 0.1, h=1e-3)
    assert error.value.t == pytest.approx(0.01, abs=2e-3)
    assert error.value.q is not None and error.value.v is not None
    assert STATUS_FRICTION_NO_SOLUTION in cls.failure_reasons
    assert math.isfinite(error.value.t)
