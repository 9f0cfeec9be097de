"""Planar Coulomb friction (docs/friction.md): the contract, the exact solver of the
Newton-Coulomb law, and MoreauJean and CatchingUp against the closed forms of a block on an
incline (stop, stick for ever, slide, reverse) and against the law's own conditions (a particle
bouncing with tangential velocity).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import impactbench as ib
from impactbench import Problem
from impactbench.analysis.fitting import ORDER, fit_order, perturbed_steps
from impactbench.core.contact import DEGENERATE_GRADIENT
from impactbench.core.friction import (
    complementarity_residual,
    frictional_impact,
    planar_friction,
)
from impactbench.methods import (
    CatchingUp,
    D1MinusLinear,
    MoreauJean,
    MoreauJeanProjection,
    PaoliSchatzman,
)
from impactbench.problems import SlidingBlock

EPS = np.finfo(float).eps
FRICTIONAL_SCHEMES = [MoreauJean, CatchingUp]


# --------------------------------------------------------------------------------------------
# The solver of the law


def _random_contacts(rng, n, k):
    """A random SPD M and normal and tangent rows of k contacts (independent: 2k <= n)."""
    a = rng.standard_normal((n, n))
    M = a @ a.T + n * np.eye(n)  # noqa: N806
    rows = rng.standard_normal((2 * k, n))
    return M, rows[:k], rows[k:]


@pytest.mark.parametrize("k", [1, 2, 3])
def test_the_law_is_solved_to_round_off(k):
    """Glocker's LCP in (P_N, P_T+, P_T-, lambda) holds to a few eps at the solution, for
    random masses, contacts, velocities and coefficients (approaching, separating, sticking and
    slipping contacts among them)."""
    rng = np.random.default_rng(35 + k)
    worst = 0.0
    states = set()
    for _ in range(200):
        n = 2 * k + int(rng.integers(0, 3))
        M, wn, wt = _random_contacts(rng, n, k)  # noqa: N806
        v = rng.standard_normal(n)
        v_free = v + 0.3 * rng.standard_normal(n)
        mu = rng.uniform(0.0, 1.5, k)
        e_t = rng.uniform(0.0, 1.0, k) * (rng.random() < 0.5)
        e_n = float(rng.uniform(0.0, 1.0))
        v_plus, pn, pt = frictional_impact(M, wn, wt, v, v_free, e_n, e_t, mu)
        rows = np.vstack([wn, wt])
        delassus = rows @ np.linalg.solve(M, rows.T)
        b = np.concatenate([wn @ (v_free + e_n * v), wt @ v_free + e_t * (wt @ v)])
        worst = max(worst, complementarity_residual(delassus, b, mu, pn, pt))
        np.testing.assert_allclose(
            M @ (v_plus - v_free), wn.T @ pn + wt.T @ pt, rtol=0, atol=1e-12 * np.abs(M).max()
        )
        xi_t = wt @ v_plus + e_t * (wt @ v)
        for a in range(k):
            if pn[a] <= 1e-12 * np.abs(pn).max(initial=1e-300):
                states.add("open")
            elif abs(xi_t[a]) <= 1e-12 * np.abs(b).max():
                states.add("stick")
            else:
                states.add("slip")
    assert worst < 100 * EPS, worst
    assert states == {"open", "stick", "slip"}  # every state was met


def test_complementarity_residual_sees_a_violation():
    """The measure itself: a slipping impulse rotated off the cone edge is caught."""
    M, wn, wt = np.eye(2), np.array([[0.0, 1.0]]), np.array([[1.0, 0.0]])  # noqa: N806
    v = np.array([3.0, -1.0])
    _, pn, pt = frictional_impact(M, wn, wt, v, v, 0.0, np.zeros(1), np.array([0.5]))
    delassus, b = np.eye(2), np.array([-1.0, 3.0])
    assert complementarity_residual(delassus, b, np.array([0.5]), pn, pt) < 10 * EPS
    assert pn[0] == 1.0 and pt[0] == -0.5  # slip: P_T = -mu P_N
    assert complementarity_residual(delassus, b, np.array([0.5]), pn, 0.9 * pt) > 0.01


def test_a_vanishing_row_is_reported():
    blocks = [np.zeros((1, 1)) for _ in range(4)]
    used = planar_friction(
        1, np.zeros((1, 1)), np.zeros((1, 1)), np.ones((1, 1)), np.array([-1.0]), np.zeros(1),
        np.ones(1), np.empty(1), np.empty(1), *blocks,
    )  # fmt: skip
    assert used == DEGENERATE_GRADIENT


# --------------------------------------------------------------------------------------------
# The contract


class FrictionalFloor(Problem):
    """A particle of unit mass over the floor y >= 0 with Coulomb friction mu (plain Python)."""

    def __init__(self, mu=0.4, restitution=0.5, q0=(0.0, 0.5), v0=(3.0, 0.0), e_t=0.0):
        self.name = "FrictionalFloor"
        self.restitution = restitution
        self.mu = mu
        self.e_t = e_t
        self.q0 = np.array(q0, dtype=float)
        self.v0 = np.array(v0, dtype=float)

    def mass_matrix(self, q):
        return np.eye(2)

    def forces(self, t, q, v):
        return np.array([0.0, -9.81])

    def gap(self, q):
        return np.array([q[1]])

    def gap_gradient(self, q):
        return np.array([[0.0, 1.0]])

    def tangent_gradient(self, q):
        return np.array([[1.0, 0.0]])

    def friction(self, q):
        return np.array([self.mu]), np.array([self.e_t])

    def potential_energy(self, q):
        return 9.81 * float(q[1])


@pytest.mark.parametrize(
    "method",
    [
        PaoliSchatzman(),
        D1MinusLinear(),
        MoreauJeanProjection(),
    ],
    ids=lambda method: f"{type(method).__name__}[compiled={method.compiled}]",
)
@pytest.mark.parametrize("problem", [SlidingBlock(), FrictionalFloor()], ids=lambda p: p.name)
def test_a_scheme_without_a_friction_law_refuses_a_frictional_problem(method, problem):
    h = 1e-3 if method.requires_step else None
    with pytest.raises(ValueError, match="no friction law") as error:
        ib.simulate(problem, method, 1.0, h=h)
    assert method.name in str(error.value) and problem.name in str(error.value)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (dict(mu=-0.1), "mu"),
        (dict(mu=math.nan), "friction"),
        (dict(e_t=1.5), "e_T"),
    ],
)
def test_bad_friction_data_is_refused_naming_it(change, named):
    with pytest.raises(ValueError, match=named):
        FrictionalFloor(**change).check()


def test_a_zero_tangent_row_and_half_declared_kernels_are_refused():
    class NoTangent(FrictionalFloor):
        def tangent_gradient(self, q):
            return np.zeros((1, 2))

    with pytest.raises(ValueError, match="tangent_gradient"):
        NoTangent().check()

    class HalfDeclared(SlidingBlock):
        KERNELS = SlidingBlock.KERNELS._replace(friction=None)

    with pytest.raises(ValueError, match="tangent_gradient and friction together"):
        HalfDeclared()


def test_frictionless_problems_are_not_frictional():
    from impactbench.problems import PROBLEMS

    frictional = {name for name, cls in PROBLEMS.items() if cls().has_friction}
    assert frictional == {
        "SlidingBlock",
        "RockingBlock",
        "Woodpecker",
        "ImpactingStick",
        "PainleveRod",
        "FrictionOscillator",
    }
    assert FrictionalFloor().has_friction and not ib.problems.BouncingBall().has_friction


class Frictionless(SlidingBlock):
    """The block with mu absent: the same class without its friction kernels."""

    KERNELS = SlidingBlock.KERNELS._replace(tangent_gradient=None, friction=None)


@pytest.mark.parametrize("cls", FRICTIONAL_SCHEMES, ids=lambda c: c.__name__)
def test_mu_zero_is_the_frictionless_law_to_the_last_bit(cls):
    """With mu = 0 the Newton-Coulomb law is Newton's: the frictional loop on the block with
    mu = 0 and the frictionless loop on the same block without friction kernels agree bit for
    bit (unit mass: the two laws' impulses are the same floating-point operations)."""
    frictional = SlidingBlock(angle=0.4, mu=0.0, u0=-1.0)
    frictionless = Frictionless(angle=0.4, mu=0.0, u0=-1.0)
    assert frictional.has_friction and not frictionless.has_friction
    a = ib.simulate(frictional, cls(), 2.0, h=1e-3)
    b = ib.simulate(frictionless, cls(), 2.0, h=1e-3)
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.v, b.v)


@pytest.mark.parametrize("cls", FRICTIONAL_SCHEMES, ids=lambda c: c.__name__)
def test_compiled_and_plain_python_frictional_loops_agree(cls):
    block = SlidingBlock(angle=0.5, mu=0.3, u0=-2.0)
    compiled = ib.simulate(block, cls(), 1.0, h=1e-3)
    plain = ib.simulate(block, cls(compiled=False), 1.0, h=1e-3)
    assert compiled.stats["compiled"] and not plain.stats["compiled"]
    np.testing.assert_allclose(plain.q, compiled.q, rtol=0, atol=1e-12)
    np.testing.assert_allclose(plain.v, compiled.v, rtol=0, atol=1e-12)


# --------------------------------------------------------------------------------------------
# The block: closed forms, and resting, sliding and sticking contacts to t = 1000


@pytest.mark.parametrize("cls", FRICTIONAL_SCHEMES, ids=lambda c: c.__name__)
def test_sliding_on_a_floor_stops_at_the_coulomb_time_and_distance_then_rests(cls):
    """u0 = 2, mu = 0.5, horizontal: stops at t* = u0 / (mu g) after u0^2 / (2 mu g), within a
    step, then rests: v exactly 0 and x constant to t = 1000, on the floor (y = 0 exactly)."""
    u0, mu, g, h = 2.0, 0.5, 9.81, 1e-3
    block = SlidingBlock(angle=0.0, mu=mu, u0=u0, gravity=g)
    t_star, distance = u0 / (mu * g), u0 * u0 / (2.0 * mu * g)
    assert block.stopping_time == pytest.approx(t_star, rel=1e-15)
    run = ib.simulate(block, cls(), 1.0, h=h)
    moving = run.v[:, 0] != 0.0
    stop = run.t[np.argmin(moving)]  # the first sample at rest
    assert not moving[run.t >= stop].any()
    assert t_star <= stop <= t_star + h
    assert abs(run.q[-1, 0] - distance) <= u0 * h
    q, v = block.exact_solution(run.t)
    assert np.abs(run.v[:, 0] - v[:, 0]).max() <= mu * g * h * (1 + 1e-12)
    assert np.all(run.q[:, 1] == 0.0) and np.all(run.v[:, 1] == 0.0)
    # resting to t = 1000 (10^5 steps of 1e-2): no creep, on K
    long = ib.simulate(block, cls(), 1000.0, h=1e-2, output_every=100)
    at_rest = long.t > t_star + 1e-2
    assert np.all(long.v[at_rest] == 0.0)
    assert np.all(long.q[at_rest, 0] == long.q[-1, 0]) and np.all(long.q[:, 1] == 0.0)
    assert abs(long.q[-1, 0] - distance) <= u0 * 1e-2


@pytest.mark.parametrize("cls", FRICTIONAL_SCHEMES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("u0", [0.0, 1.5])
def test_a_block_on_an_incline_flatter_than_the_friction_angle_sticks_for_ever(cls, u0):
    """tan(alpha) < mu: from rest it never moves; launched downhill it stops at the closed-form
    time within a step, after the closed-form distance within u0 h, and then sticks: velocity
    exactly 0, position constant (no creep) and on the incline (y = 0) to t = 1000."""
    block = SlidingBlock(angle=0.3, mu=0.5, u0=u0)
    assert math.tan(block.angle) < block.mu and block.sticks
    h = 1e-2
    run = ib.simulate(block, cls(), 1000.0, h=h, output_every=10)
    t_star = block.stopping_time
    q_exact, _ = block.exact_solution(np.array([1000.0]))
    at_rest = run.t >= t_star + h
    assert np.all(run.v[at_rest] == 0.0)
    assert np.all(run.q[at_rest, 0] == run.q[-1, 0])  # no creep at all
    assert np.all(run.q[:, 1] == 0.0) and np.all(run.v[:, 1] == 0.0)
    assert abs(run.q[-1, 0] - q_exact[0, 0]) <= u0 * h
    if u0 == 0.0:
        assert np.all(run.q[:, 0] == 0.0)


@pytest.mark.parametrize("cls", FRICTIONAL_SCHEMES, ids=lambda c: c.__name__)
def test_a_block_on_an_incline_steeper_than_the_friction_angle_slides_to_t_1000(cls):
    """tan(alpha) > mu, from rest: x'' = g (sin alpha - mu cos alpha) for ever; the midpoint
    scheme integrates the constant acceleration exactly (round-off), catching-up to O(h); the
    block stays on the incline (y = 0 exactly) to t = 1000."""
    block = SlidingBlock(angle=0.5, mu=0.3, u0=0.0)
    a_down, _ = block.accelerations
    assert a_down == pytest.approx(9.81 * (math.sin(0.5) - 0.3 * math.cos(0.5)), rel=1e-15)
    h = 1e-2
    run = ib.simulate(block, cls(), 1000.0, h=h, output_every=1000)
    q, v = block.exact_solution(run.t)
    assert np.all(run.q[:, 1] == 0.0) and np.all(run.v[:, 1] == 0.0)
    np.testing.assert_allclose(run.v[:, 0], v[:, 0], rtol=1e-10)
    if cls is MoreauJean:
        np.testing.assert_allclose(run.q[:, 0], q[:, 0], rtol=1e-10)
    else:  # symplectic Euler: x_k = a h^2 k (k - 1) / 2, behind by a t h / 2
        np.testing.assert_allclose(run.q[:, 0], q[:, 0] - 0.5 * a_down * run.t * h, rtol=1e-10)


@pytest.mark.parametrize("cls", FRICTIONAL_SCHEMES, ids=lambda c: c.__name__)
def test_friction_only_dissipates_on_the_incline(cls):
    """Sliding down from rest (tan alpha > mu): on every step the tangential impulse
    P_T = m (x'_{k+1} - x'_k - h g sin alpha) is -mu m g cos alpha h (slip) and its work
    P_T x'_{k+1} <= 0. For the midpoint scheme the energy lost is exactly the Coulomb work:
    E(t) - E(0) = -mu m g cos alpha (x(t) - x(0)) (the step's energy change is
    P_T (x'_k + x'_{k+1}) / 2 and its displacement h (x'_k + x'_{k+1}) / 2)."""
    block = SlidingBlock(angle=0.5, mu=0.3, u0=0.0, mass=2.5)
    h = 1e-3
    run = ib.simulate(block, cls(), 2.0, h=h)
    m, g, alpha = block.mass, block.gravity, block.angle
    pt = m * (np.diff(run.v[:, 0]) - h * g * math.sin(alpha))
    normal = m * g * math.cos(alpha) * h
    np.testing.assert_allclose(pt, -block.mu * normal, rtol=1e-9)
    assert np.all(pt * run.v[1:, 0] <= 0.0)
    energy = ib.energy(block, run)
    coulomb = -block.mu * m * g * math.cos(alpha) * (run.q[:, 0] - run.q[0, 0])
    if cls is MoreauJean:
        scale = float(np.abs(energy).max())
        np.testing.assert_allclose(energy - energy[0], coulomb, rtol=0, atol=1e-12 * scale)
        assert np.all(np.diff(energy) <= 1e-14 * scale)


@pytest.mark.parametrize("cls", FRICTIONAL_SCHEMES, ids=lambda c: c.__name__)
def test_first_order_through_the_reversal_of_a_block_launched_uphill(cls):
    """tan(alpha) > mu, launched uphill: decelerates with g (sin alpha + mu cos alpha), stops at
    t1 = 0.2745, slides back with g (sin alpha - mu cos alpha). The max position error over
    [0, 1.5] converges with order 1 (12 steps over 1.7 decades, median of 9 grid phases each;
    the fitted interval contains 1)."""
    block = SlidingBlock(angle=0.5, mu=0.3, u0=-2.0)
    steps = np.geomspace(2e-4, 1e-2, 12)
    medians = []
    for family in perturbed_steps(steps, 9):
        errors = []
        for h in family:
            run = ib.simulate(block, cls(), 1.5, h=h)
            q, _ = block.exact_solution(run.t)
            errors.append(np.abs(run.q - q).max())
        medians.append(np.median(errors))
    fit = fit_order(steps, medians)
    assert fit.status == ORDER and fit.points == 12 and fit.decades >= 1.5
    assert fit.low <= 1.0 <= fit.high and 0.8 <= fit.order <= 1.2, fit


# --------------------------------------------------------------------------------------------
# A particle bouncing with tangential velocity: the law's conditions, step by step


@pytest.mark.parametrize("cls", FRICTIONAL_SCHEMES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("u0", [3.0, 0.5])
def test_impacts_with_friction_obey_coulomb_and_never_gain_energy(cls, u0):
    """Unit mass, e = 0.5, mu = 0.4, dropped from 0.5 with horizontal velocity u0 (3: slips at
    the first impacts; 0.5: sticks at the first). On every step, with P_N = vy+ - vy + g h and
    P_T = vx+ - vx: P_N >= 0; |P_T| <= mu P_N; the tangential velocity never reverses (friction
    stops it: stick, vx+ = 0 exactly, where mu P_N exceeds |vx|, else slip P_T = -mu P_N); the
    friction work P_T vx+ <= 0 (e_T = 0), so vx^2 never increases; the total energy at the
    end is below the start."""
    floor = FrictionalFloor(mu=0.4, restitution=0.5, v0=(u0, 0.0))
    h, g = 1e-3, 9.81
    run = ib.simulate(floor, cls(compiled=False), 2.0, h=h)
    vx, vy = run.v[:, 0], run.v[:, 1]
    pn = vy[1:] - vy[:-1] + g * h
    pt = vx[1:] - vx[:-1]
    tol = 1e-12
    assert run.impacts.total > 3
    assert pn.min() >= -tol
    assert np.all(np.abs(pt) <= 0.4 * pn + tol)
    assert np.all(vx[1:] * vx[:-1] >= 0.0)  # no reversal
    assert np.all(pt * vx[1:] <= tol)
    assert np.all(np.diff(vx * vx) <= tol)
    contact = pn > tol
    stick = contact & (0.4 * pn >= np.abs(vx[:-1]))
    assert stick.any() and np.all(vx[1:][stick] == 0.0)
    slip = contact & ~stick
    np.testing.assert_allclose(pt[slip], -0.4 * pn[slip] * np.sign(vx[:-1][slip]), atol=tol)
    if u0 == 3.0:
        assert slip.any()
    energy = ib.energy(floor, run)
    assert energy[-1] < energy[0]


# --------------------------------------------------------------------------------------------
# Two contacts coupled through the mass matrix: the law of every step, certified

COUPLED_MASS = np.array(
    [
        [2.0, 0.3, 0.4, 0.1],
        [0.3, 1.5, 0.2, 0.3],
        [0.4, 0.2, 1.8, 0.2],
        [0.1, 0.3, 0.2, 1.2],
    ]
)


class CoupledBlocks(Problem):
    """Two blocks on a floor, q = (x1, y1, x2, y2), with a non-diagonal constant mass matrix (so
    that each contact's impulse moves the other: the Delassus blocks are full), pushed
    horizontally against friction mu = (0.3, 0.6) (plain Python)."""

    def __init__(self, restitution=0.0):
        self.name = "CoupledBlocks"
        self.restitution = restitution
        self.q0 = np.zeros(4)
        self.v0 = np.array([2.0, 0.0, -1.0, 0.0])

    def mass_matrix(self, q):
        return COUPLED_MASS

    def forces(self, t, q, v):
        return np.array([1.0, -9.81, 2.0 * math.cos(3.0 * t), -9.81])

    def gap(self, q):
        return np.array([q[1], q[3]])

    def gap_gradient(self, q):
        return np.array([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])

    def tangent_gradient(self, q):
        return np.array([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]])

    def friction(self, q):
        return np.array([0.3, 0.6]), np.zeros(2)

    def potential_energy(self, q):
        return 9.81 * float(q[1] + q[3])


@pytest.mark.parametrize("cls", FRICTIONAL_SCHEMES, ids=lambda c: c.__name__)
def test_two_coupled_contacts_satisfy_the_law_at_every_step(cls):
    """From each step of the run, the impulses W^T P = M (v+ - v_free) (W the four rows, here
    independent) satisfy Glocker's LCP to round-off, with the law's b = W v_free (e = 0);
    both contacts close, and stick and slip both occur."""
    problem = CoupledBlocks()
    h = 1e-3
    method = cls(compiled=False)
    run = ib.simulate(problem, method, 3.0, h=h)
    normal, tangent = problem.gap_gradient(None), problem.tangent_gradient(None)
    mu = problem.friction(None)[0]
    theta = method.theta
    worst, states, both = 0.0, set(), 0
    for k in range(len(run.t) - 1):
        t_p = run.t[k] + theta * h
        q_p = run.q[k] + theta * h * run.v[k]
        v_free = run.v[k] + h * np.linalg.solve(COUPLED_MASS, problem.forces(t_p, q_p, run.v[k]))
        closed = problem.gap(q_p) <= 0.0  # the scheme's active set
        both += bool(closed.all())
        if not closed.any():
            continue
        W = np.vstack([normal[closed], tangent[closed]])  # noqa: N806
        impulses = np.linalg.lstsq(W.T, COUPLED_MASS @ (run.v[k + 1] - v_free), rcond=None)[0]
        pn, pt = np.split(impulses, 2)
        delassus = W @ np.linalg.solve(COUPLED_MASS, W.T)
        worst = max(worst, complementarity_residual(delassus, W @ v_free, mu[closed], pn, pt))
        xi_t = tangent[closed] @ run.v[k + 1]
        for a in range(len(pn)):
            if pn[a] > 0.0:
                states.add("stick" if abs(xi_t[a]) <= 1e-12 else "slip")
    assert worst < 1e-10, worst
    assert both > 100 and states == {"stick", "slip"}
