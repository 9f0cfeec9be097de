"""NonsmoothGeneralizedAlpha with planar Coulomb friction (docs/friction.md): the block of
SlidingBlock against its closed forms (stick for ever, slide, stop, reverse) and a particle
bouncing with tangential velocity against the Newton-Coulomb law, step by step.

With constant M and F the pseudo-acceleration is the smooth acceleration a = M^-1 F at every
step (a_0 = vdot_0), so vt = v_k + h a and qt = q_k + h v_k + h^2 a / 2 whatever rho_inf; on a
step with a closed contact q_{k+1} = qt + (h/2) (v_{k+1} - vt) before the normal projection,
that is q_{k+1} = q_k + (h/2) (v_k + v_{k+1}) along the incline: the midpoint rule.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_friction import COUPLED_MASS, CoupledBlocks, FrictionalFloor, Frictionless

import impactbench as ib
from impactbench.analysis.fitting import ORDER, fit_order, perturbed_steps
from impactbench.core.friction import complementarity_residual
from impactbench.methods import NonsmoothGeneralizedAlpha
from impactbench.methods.nonsmooth_generalized_alpha import generalized_alpha_parameters
from impactbench.problems import SlidingBlock

EPS = np.finfo(float).eps


def assert_on_the_contact(run, block, h):
    """y >= 0 (on K: the projection) and at most the rounding of each step above the contact:
    a closed contact at rest normally computes y_k - h^2 a_N / 2 + (h/2) (h a_N), whose rounding
    (up to eps h^2 |a_N|) the projection leaves when it falls above K (measured on the floor,
    h = 1e-3: 8.5e-22 per step; exactly 0 on the inclines of these tests); v_N exactly 0."""
    a_normal = block.gravity * math.cos(block.angle)
    steps = round((run.t[-1] - run.t[0]) / h)
    assert run.q[:, 1].min() >= 0.0
    assert run.q[:, 1].max() <= EPS * h * h * a_normal * steps
    assert np.all(run.v[:, 1] == 0.0)


@pytest.mark.parametrize("mass", [1.0, 2.5])
def test_mu_zero_is_the_frictionless_scheme_to_the_last_bit(mass):
    """With mu = 0 the frictional step (the Newton-Coulomb law, the projection with
    1 / A_NN) and the frictionless step (Newton's law in closed form, the projection with its
    own 1 / (G M^-1 G^T)) on the same block without friction kernels agree bit for bit."""
    frictional = SlidingBlock(angle=0.4, mu=0.0, u0=-1.0, mass=mass)
    frictionless = Frictionless(angle=0.4, mu=0.0, u0=-1.0, mass=mass)
    assert frictional.has_friction and not frictionless.has_friction
    a = ib.simulate(frictional, NonsmoothGeneralizedAlpha(), 2.0, h=1e-3)
    b = ib.simulate(frictionless, NonsmoothGeneralizedAlpha(), 2.0, h=1e-3)
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.v, b.v)


def test_a_block_on_an_incline_flatter_than_the_friction_angle_sticks_for_ever():
    """tan(alpha) < mu, from rest and launched downhill: after the stop (within a step of the
    closed-form time, after the closed-form distance within u0 h) the velocity is exactly 0 to
    t = 1000 and the block on the incline (assert_on_the_contact). The creep,
    max |x(t) - x(t_stop)| / (1000 - t_stop), is round-off: each sticking step computes
    x_k + h^2 a / 2 - (h/2) (h a), whose rounding, up to eps h^2 |a|, moves x by at most
    eps h |a| per unit time (measured: 1.4e-18 m/s from rest, where x ~ 1e-15 resolves it, and
    exactly 0 at x = 4.6 after the launch, where it is below half an ulp of x)."""
    for u0 in (0.0, 1.5):
        block = SlidingBlock(angle=0.3, mu=0.5, u0=u0)
        assert math.tan(block.angle) < block.mu and block.sticks
        h = 1e-2
        run = ib.simulate(block, NonsmoothGeneralizedAlpha(), 1000.0, h=h, output_every=10)
        t_star = block.stopping_time
        at_rest = run.t >= t_star + h
        assert np.all(run.v[at_rest] == 0.0), u0
        x_rest = run.q[at_rest, 0]
        creep = np.abs(x_rest - x_rest[0]).max() / (run.t[-1] - run.t[at_rest][0])
        a_down = block.gravity * math.sin(block.angle)
        assert creep <= EPS * h * a_down, (u0, creep)
        assert_on_the_contact(run, block, h)
        q_exact, _ = block.exact_solution(np.array([1000.0]))
        assert abs(run.q[-1, 0] - q_exact[0, 0]) <= max(u0 * h, 1e-14)


@pytest.mark.parametrize("rho_inf", [0.0, 0.8])
def test_a_block_on_an_incline_steeper_than_the_friction_angle_slides_to_t_1000(rho_inf):
    """tan(alpha) > mu, from rest: x'' = g (sin alpha - mu cos alpha) for ever, integrated to
    round-off (the midpoint rule of the module docstring, exact for a constant acceleration);
    the block stays on the incline to t = 1000."""
    block = SlidingBlock(angle=0.5, mu=0.3, u0=0.0)
    h = 1e-2
    method = NonsmoothGeneralizedAlpha(rho_inf=rho_inf)
    run = ib.simulate(block, method, 1000.0, h=h, output_every=1000)
    q, v = block.exact_solution(run.t)
    np.testing.assert_allclose(run.v[:, 0], v[:, 0], rtol=1e-10)
    np.testing.assert_allclose(run.q[:, 0], q[:, 0], rtol=1e-10)
    assert_on_the_contact(run, block, h)


def test_sliding_on_a_floor_stops_at_the_coulomb_time_and_distance_then_rests():
    """u0 = 2, mu = 0.5, horizontal: stops within a step of t* = u0 / (mu g), after
    u0^2 / (2 mu g) to within u0 h, the velocity within mu g h of the closed form; then rests
    to t = 1000 (10^5 steps of 1e-2): v exactly 0 and x constant (no creep), on the floor to
    the rounding of each step."""
    u0, mu, g, h = 2.0, 0.5, 9.81, 1e-3
    block = SlidingBlock(angle=0.0, mu=mu, u0=u0, gravity=g)
    t_star, distance = u0 / (mu * g), u0 * u0 / (2.0 * mu * g)
    run = ib.simulate(block, NonsmoothGeneralizedAlpha(), 1.0, h=h)
    moving = run.v[:, 0] != 0.0
    stop = run.t[np.argmin(moving)]
    assert not moving[run.t >= stop].any()
    assert t_star <= stop <= t_star + h
    assert abs(run.q[-1, 0] - distance) <= u0 * h
    _, v = block.exact_solution(run.t)
    assert np.abs(run.v[:, 0] - v[:, 0]).max() <= mu * g * h * (1 + 1e-12)
    assert_on_the_contact(run, block, h)
    long = ib.simulate(block, NonsmoothGeneralizedAlpha(), 1000.0, h=1e-2, output_every=100)
    at_rest = long.t > t_star + 1e-2
    assert np.all(long.v[at_rest] == 0.0)
    assert np.all(long.q[at_rest, 0] == long.q[-1, 0])
    assert_on_the_contact(long, block, 1e-2)
    assert abs(long.q[-1, 0] - distance) <= u0 * 1e-2


def test_friction_only_dissipates_on_the_incline():
    """Sliding down from rest (tan alpha > mu), m = 2.5: on every step the tangential impulse
    P_T = m (x'_{k+1} - x'_k - h g sin alpha) is the slip impulse -mu m g cos alpha h and its
    work P_T x'_{k+1} <= 0; with the midpoint displacement the energy lost is exactly the
    Coulomb work, E(t) - E(0) = -mu m g cos alpha (x(t) - x(0)), and E never increases."""
    block = SlidingBlock(angle=0.5, mu=0.3, u0=0.0, mass=2.5)
    h = 1e-3
    run = ib.simulate(block, NonsmoothGeneralizedAlpha(), 2.0, h=h)
    m, g, alpha = block.mass, block.gravity, block.angle
    pt = m * (np.diff(run.v[:, 0]) - h * g * math.sin(alpha))
    np.testing.assert_allclose(pt, -block.mu * m * g * math.cos(alpha) * h, rtol=1e-9)
    assert np.all(pt * run.v[1:, 0] <= 0.0)
    energy = ib.energy(block, run)
    coulomb = -block.mu * m * g * math.cos(alpha) * (run.q[:, 0] - run.q[0, 0])
    scale = float(np.abs(energy).max())
    np.testing.assert_allclose(energy - energy[0], coulomb, rtol=0, atol=1e-12 * scale)
    assert np.all(np.diff(energy) <= 1e-14 * scale)


def test_first_order_through_the_reversal_of_a_block_launched_uphill():
    """tan(alpha) > mu, launched uphill: decelerates, stops at t1 = 0.2745 and slides back.
    The max position error over [0, 1.5] converges with order 1 (12 steps over 1.7 decades,
    median of 9 grid phases each; the fitted interval contains 1)."""
    block = SlidingBlock(angle=0.5, mu=0.3, u0=-2.0)
    steps = np.geomspace(2e-4, 1e-2, 12)
    medians = []
    for family in perturbed_steps(steps, 9):
        errors = []
        for h in family:
            run = ib.simulate(block, NonsmoothGeneralizedAlpha(), 1.5, h=h)
            q, _ = block.exact_solution(run.t)
            errors.append(np.abs(run.q - q).max())
        medians.append(np.median(errors))
    fit = fit_order(steps, medians)
    assert fit.status == ORDER and fit.points == 12 and fit.decades >= 1.5
    assert fit.low <= 1.0 <= fit.high and 0.8 <= fit.order <= 1.2, fit


@pytest.mark.parametrize("u0", [3.0, 0.5])
def test_impacts_with_friction_obey_coulomb_and_never_gain_energy(u0):
    """Unit mass, e = 0.5, mu = 0.4, dropped from 0.5 with horizontal velocity u0 (3: slips at
    the first impacts; 0.5: sticks at the first). The free velocity of a step is vt = v_k + h a
    (a = (0, -g): constant forces), so on every step P_N = vy+ - vy + g h and P_T = vx+ - vx:
    P_N >= 0; |P_T| <= mu P_N; the tangential velocity never reverses (stick, vx+ = 0
    exactly, where mu P_N exceeds |vx|, else slip P_T = -mu P_N); the friction work
    P_T vx+ <= 0 (e_T = 0); the energy at the end is below the start."""
    floor = FrictionalFloor(mu=0.4, restitution=0.5, v0=(u0, 0.0))
    h, g = 1e-3, 9.81
    run = ib.simulate(floor, NonsmoothGeneralizedAlpha(compiled=False), 2.0, h=h)
    vx, vy = run.v[:, 0], run.v[:, 1]
    pn = vy[1:] - vy[:-1] + g * h
    pt = vx[1:] - vx[:-1]
    tol = 1e-12
    assert run.impacts.total > 3
    assert pn.min() >= -tol
    assert np.all(np.abs(pt) <= 0.4 * pn + tol)
    assert np.all(vx[1:] * vx[:-1] >= 0.0)
    assert np.all(pt * vx[1:] <= tol)
    contact = pn > tol
    stick = contact & (0.4 * pn >= np.abs(vx[:-1]))
    assert stick.any() and np.all(vx[1:][stick] == 0.0)
    slip = contact & ~stick
    np.testing.assert_allclose(pt[slip], -0.4 * pn[slip] * np.sign(vx[:-1][slip]), atol=tol)
    if u0 == 3.0:
        assert slip.any()
    assert np.all(run.q[:, 1] >= 0.0)  # the normal projection: on K at every step
    energy = ib.energy(floor, run)
    assert energy[-1] < energy[0]


def test_two_coupled_contacts_satisfy_the_law_at_every_step():
    """Two blocks on a floor coupled through a full constant M, forces depending on t only
    (test_friction.CoupledBlocks). The pseudo-acceleration then never sees q or v:
    (1 - alpha_m) a_{k+1} = (1 - alpha_f) M^-1 F(t_{k+1}) + alpha_f M^-1 F(t_k) - alpha_m a_k,
    so the test rebuilds qt, vt of every step, and from W^T P = M (v_{k+1} - vt) (the four rows
    independent) the impulses satisfy Glocker's LCP on the contacts closed at qt to round-off,
    with b = W vt (e = 0). Both contacts close, stick and slip both occur, and both blocks stay
    on K (the metric projection with two constraints)."""
    problem = CoupledBlocks()
    h = 1e-3
    method = NonsmoothGeneralizedAlpha(compiled=False)
    run = ib.simulate(problem, method, 3.0, h=h)
    alpha_m, alpha_f, gamma, beta = generalized_alpha_parameters(method.rho_inf)
    normal, tangent = problem.gap_gradient(None), problem.tangent_gradient(None)
    mu = problem.friction(None)[0]
    vdot = [np.linalg.solve(COUPLED_MASS, problem.forces(t, None, None)) for t in run.t]
    a = [vdot[0]]
    for k in range(len(run.t) - 1):
        a.append(((1 - alpha_f) * vdot[k + 1] + alpha_f * vdot[k] - alpha_m * a[k]) / (1 - alpha_m))
    worst, states, both = 0.0, set(), 0
    for k in range(len(run.t) - 1):
        qt = run.q[k] + h * run.v[k] + h * h * ((0.5 - beta) * a[k] + beta * a[k + 1])
        vt = run.v[k] + h * ((1 - gamma) * a[k] + gamma * a[k + 1])
        closed = problem.gap(qt) <= 0.0
        both += bool(closed.all())
        if not closed.any():
            continue
        W = np.vstack([normal[closed], tangent[closed]])  # noqa: N806
        impulses = np.linalg.lstsq(W.T, COUPLED_MASS @ (run.v[k + 1] - vt), rcond=None)[0]
        pn, pt = np.split(impulses, 2)
        delassus = W @ np.linalg.solve(COUPLED_MASS, W.T)
        worst = max(worst, complementarity_residual(delassus, W @ vt, mu[closed], pn, pt))
        xi_t = tangent[closed] @ run.v[k + 1]
        for c in range(len(pn)):
            if pn[c] > 0.0:
                states.add("stick" if abs(xi_t[c]) <= 1e-12 else "slip")
    assert worst < 1e-10, worst
    assert both > 100 and states == {"stick", "slip"}
    assert run.q[:, [1, 3]].min() >= 0.0
