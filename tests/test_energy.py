"""Energy balance of the velocity schemes (constant M and F, affine gap; module docstring of
impactbench.methods.moreau_jean).

With E = v^T M v / 2 - F^T q, the Moreau-Jean theta = 1/2 step changes E, and the catching-up
step changes its conserved quantity E - (h/2) F^T v, by exactly

    Delta_k = ((1 - e)/2) P_k U_k,     U_k = G v_k,  P_k >= 0 the step's impulse,

so Delta_k <= 0 on every step whose contact approaches (U_k <= 0) and Delta_k > 0 only where the
position rule activates a separating contact still inside K. There U_k < h alpha / (1 + e)
(alpha = -G M^-1 F, the acceleration towards the constraint) and P w = h alpha - (1 + e) U_k
(w = G M^-1 G^T), so Delta_k <= (1 - e) h^2 alpha^2 / (8 (1 + e) w): O(h^2), for all time.
The tests reconstruct P_k and U_k from the output and check the identity step by step, the sign
rule, the bound over long resting and sliding runs, and that the increase does occur (it is the
signature of the position rule; the "approaching" rule never increases E and sinks instead).
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import energy, simulate
from impactbench.analysis.fitting import observed_order
from impactbench.methods import CatchingUp, MoreauJean, PaoliSchatzman
from impactbench.problems import BouncingBall, SlantedWall

from conftest import step_grid

RESTITUTIONS = [0.0, 0.5, 0.9, 1.0]
SCHEMES = {"MoreauJean": MoreauJean, "CatchingUp": CatchingUp}


def constant_force_problems(e):
    return [BouncingBall(q0=1.0, v0=0.5, restitution=e), SlantedWall(restitution=e)]


def roundoff(values):
    return 1e-13 * max(1.0, float(np.max(np.abs(values))))


def balance(problem, trajectory, scheme):
    """Per step: the energy change Delta_k of the scheme's conserved quantity, P_k, U_k, and the
    constants alpha and w of the bound (single affine constraint, constant M and F)."""
    h = trajectory.h
    M = problem.mass_matrix(problem.q0)
    F = problem.forces(0.0, problem.q0, problem.v0)
    G = problem.gap_gradient(problem.q0)[0]
    Minv_G = np.linalg.solve(M, G)
    w = float(G @ Minv_G)
    alpha = -float(G @ np.linalg.solve(M, F))
    # E = v^T M v / 2 - F^T q (+ a constant): the potential of the constant force
    E = 0.5 * np.einsum("ki,ij,kj->k", trajectory.v, M, trajectory.v) - trajectory.q @ F
    if scheme == "CatchingUp":
        E = E - 0.5 * h * trajectory.v @ F
    U = trajectory.v @ G
    P = (np.diff(U) - h * (-alpha)) / w  # G (v_{k+1} - v_k) = h G M^-1 F + w P
    return np.diff(E), P, U[:-1], alpha, w, 10 * roundoff(E)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("e", RESTITUTIONS)
def test_energy_change_is_the_impulse_balance(scheme, e):
    """Delta_k = ((1 - e)/2) P_k U_k at every step, <= 0 on approaching steps."""
    for problem in constant_force_problems(e):
        trajectory = simulate(problem, SCHEMES[scheme](), 20.0, h=1e-3)
        assert trajectory.impacts.total > 0
        delta, P, U, _, _, tol = balance(problem, trajectory, scheme)
        assert np.min(P) >= -tol
        np.testing.assert_allclose(delta, 0.5 * (1.0 - e) * P * U, rtol=0, atol=tol)
        assert np.max(delta[U <= 0.0]) <= tol, problem.name


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize(
    ("problem", "t_end", "h"),
    [
        (BouncingBall(q0=1.0, v0=0.0, restitution=0.9), 1000.0, 5e-3),
        (SlantedWall(restitution=0.7), 100.0, 1e-3),
    ],
    ids=["resting ball", "sliding particle"],
)
def test_energy_increase_is_bounded_by_h2_for_all_time(scheme, problem, t_end, h):
    """Over a long persistent contact every increase stays below the O(h^2) bound, and
    increases do happen (a separating contact inside K is activated: the position rule)."""
    trajectory = simulate(problem, SCHEMES[scheme](), t_end, h=h)
    delta, P, U, alpha, w, tol = balance(problem, trajectory, scheme)
    e = problem.restitution
    bound = (1.0 - e) * h**2 * alpha**2 / (8.0 * (1.0 + e) * w)
    assert np.max(delta) <= bound + tol
    increases = (U > 0) & (P > tol)
    assert np.any(increases)  # the position rule at work
    assert np.max(delta[increases]) > tol


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("e", RESTITUTIONS)
def test_approaching_rule_never_increases_energy(scheme, e):
    """The documented trade-off: with activation="approaching" P_k U_k <= 0 at every step."""
    for problem in constant_force_problems(e):
        trajectory = simulate(problem, SCHEMES[scheme](activation="approaching"), 4.0, h=1e-3)
        delta, _, _, _, _, tol = balance(problem, trajectory, scheme)
        assert np.max(delta) <= tol, problem.name


def test_catching_up_mechanical_energy_rises_in_free_flight():
    """The reason the catching-up tests use its discrete energy: E itself is not monotone."""
    ball = BouncingBall(q0=1.0, v0=0.0, restitution=0.5)
    h = 1e-3
    trajectory = simulate(ball, CatchingUp(), 0.3, h=h)  # before the first impact
    rise = np.diff(energy(ball, trajectory))
    np.testing.assert_allclose(rise, 0.5 * h**2 * ball.gravity**2, rtol=1e-6)


def test_moreau_jean_conserves_energy_exactly_for_e_1():
    for problem in constant_force_problems(1.0):
        trajectory = simulate(problem, MoreauJean(theta=0.5), 10.0, h=1e-3)
        energies = energy(problem, trajectory)
        assert np.max(np.abs(energies - energies[0])) <= 1e-9 * max(1.0, abs(energies[0]))


@pytest.mark.parametrize("method", [PaoliSchatzman(), CatchingUp()], ids=lambda m: m.name)
def test_energy_of_elastic_ball_is_conserved_to_order_h(method):
    """Energy drift O(h) for e = 1, measured away from the impact steps.

    A velocity taken as a difference of positions across an impact (Paoli-Schatzman's central
    difference) is O(1) wrong at that one sample by construction, as the max norm of any
    time-stepping velocity error is near impacts; so samples within two steps of a logged impact
    are left out. The catching-up scheme needs no such mask but gets the same treatment.
    """
    ball = BouncingBall(q0=1.0, v0=0.0, restitution=1.0)
    steps = step_grid(1e-4, 4e-3, 10, seed=5)
    drift = []
    for h in steps:
        trajectory = simulate(ball, method, 5.0, h=h)
        assert trajectory.impacts.total >= 5
        near_impact = np.zeros(trajectory.t.shape, dtype=bool)
        for t_impact in trajectory.impacts.t:
            near_impact |= np.abs(trajectory.t - t_impact) <= 2.5 * h
        energies = energy(ball, trajectory)[~near_impact]
        drift.append(np.max(np.abs(energies - energies[0])))
    order, _ = observed_order(steps, np.array(drift))
    assert order >= 0.85
    assert max(drift) < 0.1 * ball.potential_energy(ball.q0)
