"""The shared contact numerics against linear algebra and optimisation done independently."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from impactbench.core.contact import (
    impact_velocity,
    ldl_factor,
    ldl_solve,
    make_metric_projection,
    make_workspace,
    solve_lcp,
)
from impactbench.core.problem import ProblemKernels


def random_spd(rng, n):
    a = rng.normal(size=(n, n))
    return a @ a.T + n * np.eye(n)


@pytest.mark.parametrize("n", [1, 2, 3, 5])
def test_ldl_solve_matches_numpy(n):
    rng = np.random.default_rng(n)
    a = random_spd(rng, n)
    b = rng.normal(size=n)
    f = np.empty((n, n))
    assert ldl_factor(a, n, f)
    x = np.empty(n)
    ldl_solve(f, n, b, x)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-12)


def test_ldl_rejects_indefinite_matrix():
    assert not ldl_factor(np.array([[1.0, 2.0], [2.0, 1.0]]), 2, np.empty((2, 2)))


def brute_force_lcp(w, b):
    m = len(b)
    for active in itertools.product([False, True], repeat=m):
        idx = np.flatnonzero(active)
        p = np.zeros(m)
        if idx.size:
            p[idx] = np.linalg.solve(w[np.ix_(idx, idx)], -b[idx])
        slack = w @ p + b
        if np.all(p >= -1e-12) and np.all(slack >= -1e-12):
            return p
    raise AssertionError("no solution")


@pytest.mark.parametrize("m", [1, 2, 3, 4, 6])
def test_lcp_matches_enumeration(m):
    rng = np.random.default_rng(10 + m)
    for _ in range(20):
        w = random_spd(rng, m)
        b = rng.normal(size=m)
        p = np.empty(m)
        ws = make_workspace(m, m)
        assert solve_lcp(w, b, m, p, ws) > 0
        np.testing.assert_allclose(p, brute_force_lcp(w, b), atol=1e-10)


def test_impact_law_in_the_kinetic_metric():
    mass = np.array([[2.0, 0.6], [0.6, 1.0]])
    normal = np.array([[0.3, 1.0]])
    v = np.array([0.4, -2.0])
    e = 0.6
    v_plus, impulse = impact_velocity(mass, normal, v, e, np.array([0]))
    u_minus = normal[0] @ v
    assert normal[0] @ v_plus == pytest.approx(-e * u_minus, rel=1e-13)
    jump = v_plus - v
    m_inv_n = np.linalg.solve(mass, normal[0])
    np.testing.assert_allclose(jump, -(1 + e) * u_minus * m_inv_n / (normal[0] @ m_inv_n))
    lost = 0.5 * v @ mass @ v - 0.5 * v_plus @ mass @ v_plus
    expected = (1 - e**2) * u_minus**2 / (2 * normal[0] @ m_inv_n)
    assert lost == pytest.approx(expected, rel=1e-12)
    assert impulse[0] > 0


def test_impact_with_two_contacts_satisfies_complementarity():
    mass = np.array([[2.0, 0.6], [0.6, 1.0]])
    grads = np.array([[1.0, 0.0], [1.0, 1.0]])
    v = np.array([-1.0, -0.2])
    e = 0.5
    v_plus, impulses = impact_velocity(mass, grads, v, e, np.array([0, 1]))
    slack = grads @ v_plus + e * grads @ v
    assert np.all(impulses >= 0) and np.all(slack >= -1e-12)
    assert abs(impulses @ slack) < 1e-12
    np.testing.assert_allclose(mass @ (v_plus - v), grads.T @ impulses, atol=1e-12)


def circle_kernels():
    """g(q) = 1 - |q|^2 >= 0 (inside the unit disc): a nonlinear gap."""

    def gap(q, p, out):
        out[0] = 1.0 - q[0] ** 2 - q[1] ** 2

    def gap_gradient(q, p, out):
        out[0, 0] = -2.0 * q[0]
        out[0, 1] = -2.0 * q[1]

    return ProblemKernels(None, None, gap, gap_gradient, affine_gap=False)


def test_metric_projection_onto_a_disc_matches_constrained_minimisation():
    kernels = circle_kernels()
    project = make_metric_projection(kernels.gap, kernels.gap_gradient, False, 1, False)
    mass = np.array([[3.0, 1.0], [1.0, 1.0]])
    y = np.array([1.05, 0.4])
    ws = make_workspace(2, 1)
    assert ldl_factor(mass, 2, ws[0])
    x = np.empty(2)
    iterations = project(
        y, 2, 1, np.zeros(0), 1e-14, 50, mass, ws[0], x, np.empty(1), np.empty((1, 2)), ws
    )
    assert 0 < iterations <= 8  # Newton: quadratic convergence
    reference = minimize(
        lambda z: 0.5 * (z - y) @ mass @ (z - y),
        x0=y / np.linalg.norm(y),
        jac=lambda z: mass @ (z - y),
        constraints=[{"type": "ineq", "fun": lambda z: 1 - z @ z, "jac": lambda z: -2 * z}],
        method="SLSQP",
        options={"ftol": 1e-15, "maxiter": 200},
    )
    np.testing.assert_allclose(x, reference.x, atol=1e-7)
    assert abs(x @ x - 1.0) < 1e-13
    # and the metric matters: the Euclidean projection is a different point
    assert np.linalg.norm(x - y / np.linalg.norm(y)) > 1e-3
