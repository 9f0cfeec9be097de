"""The shared contact numerics against linear algebra and optimisation done independently."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from impactbench.core.contact import (
    all_finite,
    delassus,
    factor_mass,
    impact_velocity,
    impulse,
    ldl_factor,
    ldl_factor_banded,
    ldl_solve,
    ldl_solve_banded,
    make_metric_projection,
    make_workspace,
    solve_lcp,
)
from impactbench.core.problem import ProblemKernels

from reference_moreau_jean import solve_lcp_by_enumeration


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
        assert solve_lcp(w, b, m, p, ws, False, False) > 0
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


# --------------------------------------------------------------------------------------------
# Banded LDL^T, the Delassus matrix of a chain, and the warm-started LCP
# --------------------------------------------------------------------------------------------


def random_banded_spd(rng, s, bw):
    """A random SPD matrix with A_ij = 0 for |i - j| > bw (diagonally dominant)."""
    a = rng.normal(size=(s, s))
    a = a + a.T
    a[np.abs(np.subtract.outer(np.arange(s), np.arange(s))) > bw] = 0.0
    return a + np.diag(np.abs(a).sum(axis=1) + 1.0)


@pytest.mark.parametrize("s", [1, 2, 3, 7, 12])
def test_banded_ldl_is_the_dense_factorisation_on_the_band(s):
    """For every half-bandwidth 0 .. s - 1 the banded factor holds the dense factor's entries on
    the band to the last bit (the products left out are exact zeros), and solves A x = b."""
    rng = np.random.default_rng(40 + s)
    for bw in sorted({0, 1, 2, s - 1} & set(range(s))):
        a = random_banded_spd(rng, s, bw)
        dense = np.empty((s, s))
        banded = np.full((s, s), np.nan)  # entries off the band must not be read or written
        assert ldl_factor(a, s, dense)
        assert ldl_factor_banded(a, s, bw, banded)
        band = np.abs(np.subtract.outer(np.arange(s), np.arange(s))) <= bw
        np.testing.assert_array_equal(banded[band], dense[band])
        assert np.all(np.isnan(banded[~band]))
        b = rng.normal(size=s)
        x = np.empty(s)
        ldl_solve_banded(banded, s, bw, b, x)
        np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-12, atol=0)
        x_dense = np.empty(s)
        ldl_solve(dense, s, b, x_dense)
        np.testing.assert_array_equal(x, x_dense)


def test_banded_ldl_rejects_an_indefinite_band():
    a = np.array([[1.0, 2.0, 0.0], [2.0, 1.0, 0.5], [0.0, 0.5, 3.0]])
    assert not ldl_factor_banded(a, 3, 1, np.empty((3, 3)))


def delassus_by_hand(G, rows, mass):
    """Y = M^-1 G_A^T (rows) and W_ac = sum_j G_ij Y_cj over every column j, in order."""
    Y = np.linalg.solve(mass, G[rows].T).T
    k, n = len(rows), G.shape[1]
    W = np.zeros((k, k))
    for a in range(k):
        for c in range(k):
            s = 0.0
            for j in range(n):
                s += G[rows[a], j] * Y[c, j]
            W[a, c] = s
    return Y, W


@pytest.mark.parametrize("order", ["chain", "shuffled"])
@pytest.mark.parametrize("structure", ["diagonal", "dense"])
def test_delassus_matrix_and_its_pattern(order, structure):
    """W = G_A M^-1 G_A^T over the pairs whose spans meet is the full sum to the last bit for a
    diagonal M (a dense one: to round-off, its solves are LDL^T against numpy's); the pattern
    bounds it leaves enclose every nonzero of each row of W."""
    rng = np.random.default_rng(7 if order == "chain" else 8)
    n = 12
    G = np.zeros((n, n))
    G[0, 0] = 1.0
    for i in range(1, n):  # beads of random masses and gradients spanning 1 to 3 columns
        width = rng.integers(1, 4)
        G[i, max(0, i - width + 1) : i + 1] = rng.normal(size=min(width, i + 1))
        G[i, i] = 1.0 + rng.random()
    rows = np.arange(n) if order == "chain" else rng.permutation(n)
    rows = rows[rng.random(n) < 0.8].astype(np.int64)
    k = len(rows)
    d = 1.0 + rng.random(n)
    if structure == "diagonal":
        mass, M = np.diag(d), d[None, :]
    else:
        mass = np.diag(d) + 0.1 * np.ones((n, n))
        M = mass
    F = np.empty_like(M)
    assert factor_mass(M, n, F)
    Y, W, span = np.full((n, n), np.nan), np.full((n, n), np.nan), np.empty((7, n + 1), np.int64)
    delassus(G, rows, k, F, n, Y, W, span)
    Y_ref, W_ref = delassus_by_hand(G, rows, mass)
    if structure == "diagonal":  # Y_cj = G_cj (1 / d_j), the factor's reciprocals
        Y_exact = G[rows] * (1.0 / d)
        np.testing.assert_array_equal(Y[:k], Y_exact)
        W_exact = [[sum(G[i, j] * y[j] for j in range(n)) for y in Y_exact] for i in rows]
        np.testing.assert_array_equal(W[:k, :k], np.array(W_exact))
    np.testing.assert_allclose(Y[:k], Y_ref, rtol=0, atol=1e-14)
    np.testing.assert_allclose(W[:k, :k], W_ref, rtol=0, atol=1e-14)
    for a in range(k):
        nonzero = np.flatnonzero(W[a, :k])
        assert span[4, a] <= min(a, nonzero.min()) and max(a, nonzero.max()) <= span[5, a]
        columns = np.flatnonzero(G[rows[a]])
        assert (span[0, a], span[1, a]) == (columns.min(), columns.max())


def warm_solve(W, b, start):
    """solve_lcp from the active set ``start`` (None: the empty set, cold)."""
    k = b.shape[0]
    ws = make_workspace(k, k)
    P = np.empty(k)
    if start is not None:
        ws[5][:k] = start
    used = solve_lcp(W, b, k, P, ws, start is not None, False)
    return P, used, ws[5][:k].copy()


@pytest.mark.parametrize("k", range(2, 13))
def test_warm_started_lcp_is_the_unique_solution(k):
    """Murty's method from any starting set reaches the LCP's unique solution (SPD W): random
    sets, the full set, the previous problem's final set (b drifting as between steps), for
    dense, tridiagonal and pentadiagonal W, against enumeration and against the cold start."""
    rng = np.random.default_rng(100 + k)
    for bw in (k - 1, 1, 2):
        W = random_banded_spd(rng, k, bw) if bw < k - 1 else random_spd(rng, k)
        b = rng.normal(size=k)
        previous = None
        for _ in range(3):
            b = b + 0.3 * rng.normal(size=k)
            exact = solve_lcp_by_enumeration(W, b)
            cold, cold_used, final = warm_solve(W, b, None)
            assert cold_used > 0
            scale = max(1.0, float(np.abs(exact).max()))
            np.testing.assert_allclose(cold, exact, rtol=0, atol=1e-12 * scale)
            starts = [rng.random(k) < 0.5 for _ in range(4)] + [np.ones(k, dtype=bool)]
            if previous is not None:
                starts.append(previous)
            for start in starts:
                P, used, _ = warm_solve(W, b, start)
                assert 0 < used <= 2**k
                np.testing.assert_allclose(P, cold, rtol=0, atol=1e-12 * scale)
            # from its own solution's set: one basis, no pivot, the same impulses to the bit
            P, used, _ = warm_solve(W, b, final)
            assert used == 1
            np.testing.assert_array_equal(P, cold)
            previous = final


def test_warm_start_falls_back_to_the_cold_start_on_a_singular_guess():
    """Two copies of one constraint (W = [[1, 1], [1, 1]], only positive semidefinite): the
    guess {0, 1} has a singular basis, the cold start solves it (P = (1, 0)) and is taken."""
    W = np.ones((2, 2))
    b = np.array([-1.0, -1.0])
    cold, cold_used, _ = warm_solve(W, b, None)
    np.testing.assert_array_equal(cold, [1.0, 0.0])
    assert cold_used == 2
    P, used, final = warm_solve(W, b, np.array([True, True]))
    np.testing.assert_array_equal(P, cold)
    assert used == 1 + cold_used
    np.testing.assert_array_equal(final, [True, False])


def test_resting_column_needs_one_basis_per_step_once_settled():
    """A 30-bead stack (r = 0.1, so round-off leaves some gaps open at first) settles in about
    200 steps of h = 1e-4 (measured: a contact is open last at step 199, and the LCP pivots
    last at step 200, when it closes again); from then on every step solves its 30 x 30 LCP
    from the previous step's set with one factorisation and no pivot, every contact carrying
    the weight above it."""
    n, h, radius, steps = 30, 1e-4, 0.1, 600
    G = np.eye(n) - np.eye(n, k=-1)
    c = np.full(n, -2.0 * radius)
    c[0] = -radius
    F = np.empty((1, n))
    assert factor_mass(np.ones((1, n)), n, F)
    ws = make_workspace(n, n, 1, 1)
    rows = np.empty(n, dtype=np.int64)
    q, v, v_new = radius * (2.0 * np.arange(n) + 1.0), np.zeros(n), np.empty(n)
    used = []
    for _ in range(steps):  # MoreauJean, theta = 1/2, position activation
        active = np.flatnonzero(G @ (q + 0.5 * h * v) + c <= 0.0)
        rows[: active.size] = active
        v_free = v - h * 9.81
        if active.size:
            used.append(impulse(n, G, rows, active.size, v_free, v, 0.9, F, ws, v_new))
        else:
            v_new[:] = v_free
        q, v = (q + 0.5 * h * v) + 0.5 * h * v_new, v_new.copy()  # as the compiled scheme
        last = active.size
    assert max(used[:250]) > 1  # the settling does pivot
    assert used[300:] == [1] * (steps - 300)
    assert last == n
    carried = 9.81 * h * np.arange(n, 0, -1)
    np.testing.assert_allclose(ws[4][:n], carried, rtol=1e-9)


def test_all_finite_flags_nan_and_inf_only():
    a = np.full((3, 4), 1e308)  # a sum of these overflows; they are finite
    assert all_finite(a, 3, 4)
    for bad in (np.nan, np.inf, -np.inf):
        b = a.copy()
        b[2, 3] = bad
        assert not all_finite(b, 3, 4)
        assert all_finite(b, 2, 4)  # only the leading block is checked
