"""Built-in problems: the exact solutions are checked against the mathematics, not the code.

Checks: the ODE between impacts (central differences), admissibility on fine grids, the Newton
law at every exact impact (left/right limits), the kinetic metric of the slanted wall, rest and
sliding after the accumulation point, energies, the forced orbit's numbers, periodicity and
stability (independent event-located integrations), and the validation of every parameter.
"""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

from impactbench.core.problem import CompiledProblem, timed_gap, timed_gradient
from impactbench.problems import (
    PROBLEMS,
    BouncingBall,
    ForcedImpactOscillator,
    ImpactingOscillator,
    SlantedWall,
    floor_contact,
)

from conftest import H_FD, smooth_grid

DELTA = 1e-9  # offset for left / right limits at an impact


def check_ode(problem, t, acceleration, tol_v=1e-7, tol_a=1e-5):
    """Central differences of q against v and of v against ``acceleration(t, q, v)``."""
    t = t[t - H_FD >= problem.t0]
    qp, vp = problem.exact_solution(t + H_FD)
    qm, vm = problem.exact_solution(t - H_FD)
    q, v = problem.exact_solution(t)
    dq = (qp - qm) / (2 * H_FD)
    dv = (vp - vm) / (2 * H_FD)
    scale = 1.0 + np.abs(v).max()
    np.testing.assert_allclose(dq, v, rtol=0, atol=tol_v * scale)
    acc = np.array([acceleration(ti, qi, vi) for ti, qi, vi in zip(t, q, v, strict=True)])
    np.testing.assert_allclose(dv, acc, rtol=0, atol=tol_a * (1.0 + np.abs(acc).max()))


def limits(problem, t_k, delta=DELTA):
    """(q, v) just before and just after t_k."""
    qm, vm = problem.exact_solution(np.array([t_k - delta]))
    qp, vp = problem.exact_solution(np.array([t_k + delta]))
    return qm[0], vm[0], qp[0], vp[0]


# --------------------------------------------------------------------------------------------
# The name table and the contract
# --------------------------------------------------------------------------------------------


EXACT = sorted(name for name, cls in PROBLEMS.items() if cls().has_exact_solution)


def test_problem_table():
    assert {"BouncingBall", "ImpactingOscillator", "ForcedImpactOscillator", "SlantedWall"} <= set(
        EXACT
    )
    for name, cls in PROBLEMS.items():
        assert cls.__name__ == name
        problem = cls()
        assert isinstance(problem, CompiledProblem)
        assert problem.name == name
        problem.check()


@pytest.mark.parametrize("name", EXACT)
def test_contract_shapes_and_start(name):
    problem = PROBLEMS[name]()
    n, m = problem.n_dof, problem.n_constraints
    assert problem.q0.shape == (n,) and problem.v0.shape == (n,)
    t = problem.t0 + np.linspace(0.0, 3.0, 7)
    q, v = problem.exact_solution(t)
    assert q.shape == (7, n) and v.shape == (7, n)
    np.testing.assert_allclose(q[0], problem.q0, rtol=0, atol=1e-14)
    np.testing.assert_allclose(v[0], problem.v0, rtol=0, atol=1e-14)
    assert problem.mass_matrix(problem.q0).shape == (n, n)
    assert problem.forces(problem.t0, problem.q0, problem.v0).shape == (n,)
    g0 = timed_gap(problem, problem.t0, problem.q0)  # g(q0), or g(t0, q0) if the obstacle moves
    G0 = timed_gradient(problem, problem.t0, problem.q0)
    assert g0.shape == (m,)
    assert G0.shape == (m, n)
    if problem.has_friction:  # the frictional block starts sliding on its incline
        assert g0[0] == 0.0 and problem.v0 @ G0[0] == 0.0
    else:
        assert g0[0] > 0.0  # every impact problem starts off the wall
    with pytest.raises(ValueError, match="t must"):
        problem.exact_solution(np.array([problem.t0 - 1.0]))
    with pytest.raises(ValueError, match="t must"):
        problem.exact_solution(np.array([np.nan]))


@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_compiled_kernels_match_their_python_source(name):
    problem = PROBLEMS[name]()
    k = problem.kernels()
    p = problem.kernel_parameters()
    n, m = problem.n_dof, problem.n_constraints
    rng = np.random.default_rng(1)
    q, v, t = rng.normal(size=n), rng.normal(size=n), 0.7
    for compiled, py in [(k.forces, k.forces.py_func)]:
        a, b = np.empty(n), np.empty(n)
        compiled(t, q, v, p, a)
        py(t, q, v, p, b)
        np.testing.assert_allclose(a, b, rtol=1e-14)
    timed = (t,) if k.rheonomic else ()  # a moving obstacle's geometric kernels take t first
    kernels = [((), k.mass_matrix, (n, n)), (timed, k.gap, (m,)), (timed, k.gap_gradient, (m, n))]
    if k.rheonomic:
        kernels.append(((t,), k.gap_rate, (m,)))
    for first, fun, shape in kernels:
        a, b = np.empty(shape), np.empty(shape)
        fun(*first, q, p, a)
        fun.py_func(*first, q, p, b)
        np.testing.assert_allclose(a, b, rtol=1e-14)
    if k.rheonomic:
        a, b = np.empty(m), np.empty(m)
        k.gap_drift(t, q, v, p, a)
        k.gap_drift.py_func(t, q, v, p, b)
        np.testing.assert_allclose(a, b, rtol=1e-14)


# --------------------------------------------------------------------------------------------
# Bouncing ball
# --------------------------------------------------------------------------------------------


def ball_reference(q0, v0, g, e, t0, count):
    """Impact times and post-impact speeds from the recursion t_{k+1} = t_k + 2 V_k / g."""
    v1 = math.sqrt(v0 * v0 + 2 * g * q0)
    t = t0 + (v0 + v1) / g
    times, speeds = [], []
    speed = v1
    for _ in range(count):
        times.append(t)
        speed *= e
        speeds.append(speed)
        t += 2 * speed / g
    return np.array(times), np.array(speeds), v1


BALL_CASES = [
    dict(),
    dict(q0=0.3, v0=2.0, gravity=3.0, restitution=0.6, mass=2.5, t0=1.5),
    dict(q0=2.0, v0=-4.0, restitution=0.9),
    dict(q0=0.0, v0=1.0, restitution=0.5),
]


@pytest.mark.parametrize("kw", BALL_CASES)
def test_ball_impact_times_and_newton_law(kw):
    ball = BouncingBall(**kw)
    e, g = ball.restitution, ball.gravity
    ref_t, ref_speed, v1 = ball_reference(ball.q0[0], ball.v0[0], g, e, ball.t0, 25)
    times = ball.impact_times(ball.t0 + 100.0)
    np.testing.assert_allclose(times[:25], ref_t, rtol=1e-13, atol=1e-13)
    assert np.all(np.diff(times) > 0)
    for t_k, speed in zip(ref_t[:20], ref_speed[:20], strict=True):
        q_m, v_m, q_p, v_p = limits(ball, t_k)
        v_minus = v_m[0] - g * DELTA  # remove the gravity drift over DELTA
        v_plus = v_p[0] + g * DELTA
        assert v_minus < 0
        assert v_plus / v_minus == pytest.approx(-e, rel=1e-6)
        assert v_plus == pytest.approx(speed, rel=1e-6)
    # at the returned impact times: on the floor, with the post-impact velocity (right limit)
    q_k, v_k = ball.exact_solution(times[:20])
    assert np.all(q_k == 0.0)
    np.testing.assert_allclose(v_k[:, 0], ref_speed[:20], rtol=1e-9)


@pytest.mark.parametrize("kw", BALL_CASES)
def test_ball_ode_gap_energy(kw):
    ball = BouncingBall(**kw)
    g, m = ball.gravity, ball.mass
    t_inf = ball.accumulation_time
    impacts = ball.impact_times(t_inf)
    t = smooth_grid(ball.t0, t_inf - 1e-3, impacts[impacts < t_inf - 1e-3])
    check_ode(ball, t, lambda ti, q, v: np.array([-g]))  # flights
    check_ode(ball, np.linspace(t_inf + 1e-3, t_inf + 2.0, 101), lambda ti, q, v: 0.0 * q)  # rest
    fine = np.linspace(ball.t0, t_inf + 2.0, 200_001)
    q, v = ball.exact_solution(fine)
    assert q.min() >= 0.0
    # energy m g q + m v^2 / 2 is e^{2k} m V1^2 / 2 on flight k
    ref_t, ref_speed, v1 = ball_reference(ball.q0[0], ball.v0[0], g, ball.restitution, ball.t0, 30)
    mids = 0.5 * (ref_t[:-1] + ref_t[1:])
    qm, vm = ball.exact_solution(mids)
    energy = m * g * qm[:, 0] + 0.5 * m * vm[:, 0] ** 2
    np.testing.assert_allclose(energy, 0.5 * m * ref_speed[:-1] ** 2, rtol=1e-10, atol=1e-14)
    assert ball.potential_energy(np.array([0.7])) == pytest.approx(m * g * 0.7)


def test_ball_rest_after_accumulation():
    ball = BouncingBall(q0=1.0, v0=0.0, gravity=9.81, restitution=0.8)
    g, e = 9.81, 0.8
    v1 = math.sqrt(2 * g)
    t1 = v1 / g
    t_inf = t1 + 2 * e * v1 / (g * (1 - e))
    assert ball.accumulation_time == pytest.approx(t_inf, rel=1e-14)
    after = np.linspace(t_inf + 1e-12, t_inf + 50.0, 1001)
    q, v = ball.exact_solution(after)
    assert np.all(q == 0.0) and np.all(v == 0.0)
    # continuity at t_inf: in the last delta before t_inf the flights are tiny
    for delta in [1e-1, 1e-3, 1e-6]:
        t = np.linspace(t_inf - delta, t_inf, 2001)
        q, v = ball.exact_solution(t)
        assert np.abs(v).max() <= g * delta / e
        assert q.max() <= g * delta**2 / e**2
    # the impacts returned all lie before t_inf and stop at the round-off cut-off
    times = ball.impact_times(t_inf + 10.0)
    assert times[-1] <= t_inf
    assert 50 < times.size < 1000
    assert times.size == ball.impact_times(t_inf + 10.0, max_count=10**6).size
    np.testing.assert_array_equal(ball.impact_times(t_inf, max_count=5), times[:5])


def test_ball_restitution_zero_and_one():
    g = 9.81
    ball = BouncingBall(q0=2.0, restitution=0.0)
    t1 = math.sqrt(2 * 2.0 / g)
    np.testing.assert_allclose(ball.impact_times(10.0), [t1], rtol=1e-14)
    assert ball.accumulation_time == pytest.approx(t1)
    t = np.linspace(0, t1, 101)
    q, v = ball.exact_solution(t)
    np.testing.assert_allclose(q[:, 0], np.maximum(2.0 - g * t**2 / 2, 0), atol=1e-14)
    q, v = ball.exact_solution(np.linspace(t1, 10.0, 101))
    assert np.all(q == 0.0) and np.all(v == 0.0)

    ball = BouncingBall(q0=2.0, restitution=1.0)
    v1 = math.sqrt(2 * g * 2.0)
    period = 2 * v1 / g
    assert ball.accumulation_time == math.inf
    t = np.linspace(t1, t1 + 20 * period, 4001)
    q, v = ball.exact_solution(t)
    qs, vs = ball.exact_solution(t + period)
    np.testing.assert_allclose(qs, q, atol=1e-11)
    energy = g * q[:, 0] + 0.5 * v[:, 0] ** 2
    np.testing.assert_allclose(energy, g * 2.0, rtol=1e-12)
    times = ball.impact_times(t1 + 20.5 * period)
    np.testing.assert_allclose(times, t1 + period * np.arange(21), rtol=1e-13)
    assert ball.impact_times(1e6, max_count=7).size == 7
    for t_k in times[:5]:
        _, v_m, _, v_p = limits(ball, t_k)
        assert (v_p[0] + g * DELTA) == pytest.approx(-(v_m[0] - g * DELTA), rel=1e-7)


def test_ball_special_starts():
    # on the floor, moving down: impact at t0, post-impact velocity returned there
    ball = BouncingBall(q0=0.0, v0=-2.0, restitution=0.5, t0=1.0)
    assert ball.impact_times(1.5)[0] == 1.0
    q, v = ball.exact_solution(np.array([1.0, 1.1]))
    assert q[0, 0] == 0.0 and v[0, 0] == pytest.approx(1.0)
    assert q[1, 0] == pytest.approx(0.1 - 9.81 * 0.01 / 2)
    # at rest on the floor: stays there, no impact
    ball = BouncingBall(q0=0.0, v0=0.0)
    q, v = ball.exact_solution(np.linspace(0, 5, 11))
    assert np.all(q == 0) and np.all(v == 0)
    assert ball.impact_times(5.0).size == 0
    # time shift invariance
    a, b = BouncingBall(t0=0.0), BouncingBall(t0=3.0)
    t = np.linspace(0, 5, 501)
    np.testing.assert_allclose(b.exact_solution(t + 3.0)[0], a.exact_solution(t)[0], atol=1e-12)


@pytest.mark.parametrize("e", [0.3, 0.95, 0.999])
def test_ball_many_restitutions_stay_consistent(e):
    ball = BouncingBall(restitution=e)
    t_inf = ball.accumulation_time
    times = ball.impact_times(t_inf + 1.0, max_count=10**6)
    assert np.all(np.diff(times) > 0)
    assert t_inf - times[-1] < 1e-10 * t_inf
    # the impact times are exactly where the solution switches flights
    q, v = ball.exact_solution(times)
    assert np.all(q == 0.0)
    assert np.all(v[:-1, 0] > 0)  # post-impact velocities...
    assert v[-1, 0] == 0.0  # ...and the last one switches to rest (round-off cut-off)
    t = np.linspace(0, t_inf * 1.1, 100_001)
    assert ball.exact_solution(t)[0].min() >= 0.0


# --------------------------------------------------------------------------------------------
# Impacting oscillator
# --------------------------------------------------------------------------------------------


def test_oscillator_defaults_impacts_and_energy():
    osc = ImpactingOscillator()
    e = 0.8
    times = osc.impact_times(20.0)
    np.testing.assert_allclose(times, np.pi / 2 + np.pi * np.arange(times.size), rtol=1e-14)
    assert times.size == 6
    for k in range(8):  # mid-flight after k impacts: apex, energy e^{2k}/2
        t_mid = np.pi * k  # apex of flight k (impact k at pi/2 + (k - 1) pi)
        q, v = osc.exact_solution(np.array([t_mid]))
        assert osc.energy(q[0], v[0]) == pytest.approx(e ** (2 * k) / 2, rel=1e-12)
        assert q[0, 0] == pytest.approx(e**k, rel=1e-12)
    for t_k in times:
        _, v_m, q_p, v_p = limits(osc, t_k)
        assert v_p[0] / v_m[0] == pytest.approx(-e, rel=1e-8)


@pytest.mark.parametrize(
    "kw",
    [
        dict(restitution=0.6, x0=0.3, v0=-0.7, frequency=2.0, t0=0.5),
        dict(restitution=0.9, x0=0.0, v0=1.5, frequency=0.5),
        dict(restitution=1.0, x0=0.2, v0=0.4, frequency=3.0),
    ],
)
def test_oscillator_general(kw):
    osc = ImpactingOscillator(**kw)
    w, e = osc.frequency, osc.restitution
    x0, v0 = osc.q0[0], osc.v0[0]
    e0 = 0.5 * (v0**2 + w**2 * x0**2)
    t_end = osc.t0 + 12 * np.pi / w
    times = osc.impact_times(t_end)
    # impacts pi/omega apart; x = 0 there, moving into the wall just before
    np.testing.assert_allclose(np.diff(times), np.pi / w, rtol=1e-12)
    q_first, _ = osc.exact_solution(times[:1])
    assert abs(q_first[0, 0]) < 1e-14
    _, v_m, _, _ = limits(osc, times[0])
    assert v_m[0] < 0
    t = smooth_grid(osc.t0, t_end, times)
    check_ode(osc, t, lambda ti, q, v: -(w**2) * q)
    fine = np.linspace(osc.t0, t_end, 100_001)
    q, v = osc.exact_solution(fine)
    assert q.min() >= 0.0
    assert np.all(fine[q[:, 0] == 0.0] >= times[0] - 1e-12) or x0 == 0.0
    # energy e^{2k} E0 on flight k (k impacts before t)
    k = np.searchsorted(times, fine, side="right")
    energy = 0.5 * v[:, 0] ** 2 + 0.5 * w**2 * q[:, 0] ** 2
    np.testing.assert_allclose(energy, e ** (2 * k) * e0, rtol=1e-10, atol=1e-300)
    for t_k in times[:5]:
        _, v_m, _, v_p = limits(osc, t_k)
        assert v_p[0] / v_m[0] == pytest.approx(-e, rel=1e-8)
    assert osc.potential_energy(np.array([0.5])) == pytest.approx(w**2 * 0.125)


def test_oscillator_restitution_zero_and_one():
    osc = ImpactingOscillator(restitution=0.0)
    assert osc.impact_times(50.0).tolist() == [pytest.approx(np.pi / 2)]
    q, v = osc.exact_solution(np.linspace(np.pi / 2, 50, 1001))
    assert np.all(q == 0) and np.all(v == 0)
    osc = ImpactingOscillator(restitution=1.0, frequency=2.0)
    t = np.linspace(np.pi / 4, 20.0, 2001)
    q, v = osc.exact_solution(t)
    qs, _ = osc.exact_solution(t + np.pi / 2)
    np.testing.assert_allclose(qs, q, atol=1e-12)
    np.testing.assert_allclose(q[:, 0], np.abs(np.cos(2 * t)), atol=1e-12)


def test_oscillator_starts_on_wall():
    osc = ImpactingOscillator(x0=0.0, v0=-1.0, restitution=0.5)
    assert osc.impact_times(1.0)[0] == 0.0
    q, v = osc.exact_solution(np.array([0.0, np.pi / 2]))
    assert v[0, 0] == pytest.approx(0.5) and q[1, 0] == pytest.approx(0.5)
    rest = ImpactingOscillator(x0=0.0, v0=0.0)
    assert rest.impact_times(10.0).size == 0
    q, v = rest.exact_solution(np.linspace(0, 10, 11))
    assert np.all(q == 0) and np.all(v == 0)


# --------------------------------------------------------------------------------------------
# Forced impact oscillator
# --------------------------------------------------------------------------------------------


def forced_rhs(omega, zeta=0.0):
    return lambda t, y: [y[1], math.cos(omega * t) - y[0] - 2 * zeta * y[1]]


def flight_to_wall(t_s, x_s, v_s, omega, sigma):
    """Closed-form free flight (zeta = 0) from (t_s, x_s, v_s) to the next x = sigma (brentq)."""
    p = 1 / (1 - omega**2)
    c1 = x_s - p * math.cos(omega * t_s)
    c2 = v_s + p * omega * math.sin(omega * t_s)

    def x(t):
        return p * math.cos(omega * t) + c1 * math.cos(t - t_s) + c2 * math.sin(t - t_s) - sigma

    def v(t):
        return -p * omega * math.sin(omega * t) - c1 * math.sin(t - t_s) + c2 * math.cos(t - t_s)

    grid = t_s + np.linspace(1e-9, 3 * 2 * math.pi / omega, 3001)
    vals = np.array([x(t) for t in grid])
    i = np.nonzero((vals[:-1] < 0) & (vals[1:] >= 0))[0][0]
    t_hit = brentq(x, grid[i], grid[i + 1], xtol=1e-15, rtol=1e-15)
    return t_hit, v(t_hit)


def test_forced_orbit_numbers():
    osc = ForcedImpactOscillator(omega=2.5, sigma=0.05, restitution=0.8)
    w, s, r = 2.5, 0.05, 0.8
    V, phi = osc.impact_speed, osc.impact_phase
    assert V == pytest.approx(0.477102, abs=1e-6)
    assert phi == pytest.approx(3.041233, abs=1e-6)
    cot = 1 / math.tan(math.pi / w)
    lhs = (1 - w**2) ** 2 * (V**2 * (1 - r) ** 2 / (4 * w**2) + (s + V * (1 + r) * cot / 2) ** 2)
    assert lhs == pytest.approx(1.0, rel=1e-12)
    p = 1 / (1 - w**2)
    a = -V * (1 + r) * cot / 2
    assert math.sin(phi) == pytest.approx(-V * (1 - r) * (1 - w**2) / (2 * w), rel=1e-12)
    assert math.cos(phi) == pytest.approx((s - a) / p, rel=1e-12)
    assert osc.period == pytest.approx(2 * math.pi / w)
    assert osc.t0 == pytest.approx((phi + math.pi) / w)


@pytest.mark.parametrize(
    "omega,sigma,r",
    [(2.5, 0.05, 0.8), (3.0, 0.0, 0.8), (2.5, 0.05, 1.0), (2.5, -0.5, 0.8), (1.5, 0.1, 0.8)],
)
def test_forced_orbit_is_a_periodic_solution(omega, sigma, r):
    """Integrate the flight from the post-impact state with solve_ivp: back at sigma with V."""
    osc = ForcedImpactOscillator(omega=omega, sigma=sigma, restitution=r)
    V, phi = osc.impact_speed, osc.impact_phase
    t_i = phi / omega
    period = 2 * math.pi / omega
    sol = solve_ivp(forced_rhs(omega), (t_i, t_i + period), [sigma, -r * V], method="DOP853",
                    rtol=1e-12, atol=1e-14, dense_output=True)  # fmt: skip
    assert sol.y[0, -1] == pytest.approx(sigma, abs=1e-9)
    assert sol.y[1, -1] == pytest.approx(V, rel=1e-8)
    tt = np.linspace(t_i, t_i + period, 2001)
    x_ivp = sol.sol(tt)
    assert x_ivp[0].max() <= sigma + 1e-9  # admissible: x <= sigma over the period
    # the exact solution is this flight, repeated
    for j in (1, 5):
        q, v = osc.exact_solution(tt[1:-1] + j * period)
        np.testing.assert_allclose(q[:, 0], x_ivp[0, 1:-1], atol=1e-9)
        np.testing.assert_allclose(v[:, 0], x_ivp[1, 1:-1], atol=1e-9)


def test_forced_exact_solution_properties():
    osc = ForcedImpactOscillator()
    w, s, r = osc.omega, osc.sigma, osc.restitution
    period = osc.period
    t = np.linspace(osc.t0, osc.t0 + 3 * period, 3001)
    t = t[np.abs(np.sin(math.pi * (t - osc.impact_phase / w) / period)) > 1e-6]  # off impacts
    q, v = osc.exact_solution(t)
    q2, v2 = osc.exact_solution(t + 7 * period)
    np.testing.assert_allclose(q2, q, atol=1e-12)
    np.testing.assert_allclose(v2, v, atol=1e-12)
    times = osc.impact_times(osc.t0 + 10 * period)
    assert times.size == 10
    np.testing.assert_allclose(np.diff(times), period, rtol=1e-12)
    assert times[0] == pytest.approx(osc.t0 + period / 2)
    assert np.all(np.cos(w * times) == pytest.approx(math.cos(osc.impact_phase), abs=1e-12))
    check_ode(osc, smooth_grid(osc.t0, osc.t0 + 4 * period, times),
              lambda ti, x, xd: np.cos(w * ti) - x)  # fmt: skip
    fine = np.linspace(osc.t0, osc.t0 + 4 * period, 200_001)
    x, _ = osc.exact_solution(fine)
    assert (s - x).min() >= -1e-14
    for t_k in times[:4]:
        x_m, v_m, x_p, v_p = limits(osc, t_k)
        assert abs(x_m[0] - s) < 1e-8 and abs(x_p[0] - s) < 1e-8
        assert v_m[0] == pytest.approx(osc.impact_speed, rel=1e-7)
        assert v_p[0] / v_m[0] == pytest.approx(-r, rel=1e-7)
        # gap rate ratio (the gap is sigma - x)
        assert (-v_p[0]) / (-v_m[0]) == pytest.approx(-r, rel=1e-7)
    assert osc.potential_energy(np.array([0.4])) == pytest.approx(0.08)
    f = osc.forces(1.3, np.array([0.2]), np.array([5.0]))
    assert f[0] == pytest.approx(math.cos(w * 1.3) - 0.2)
    np.testing.assert_array_equal(osc.gap_gradient(np.array([0.0])), [[-1.0]])
    assert osc.gap(np.array([0.01]))[0] == pytest.approx(0.04)


def test_forced_orbit_is_stable():
    """A 1e-8 perturbation of the post-impact state shrinks over 12 periods."""
    osc = ForcedImpactOscillator(omega=2.5, sigma=0.05, restitution=0.8)
    w, s, r, V = 2.5, 0.05, 0.8, osc.impact_speed
    period = 2 * math.pi / w
    t_i = osc.impact_phase / w
    t_s, v_s = t_i + 1e-8, -r * V + 1e-8
    for _ in range(12):
        t_hit, v_hit = flight_to_wall(t_s, s, v_s, w, s)
        t_s, v_s = t_hit, -r * v_hit
    dist = math.hypot(t_s - (t_i + 12 * period), v_s + r * V)
    assert dist < 0.5 * math.hypot(1e-8, 1e-8)


def test_forced_unstable_orbit_diverges():
    """omega = 3, sigma = 0 (unstable, docs/design.md section 6): a perturbation grows by orders."""
    osc = ForcedImpactOscillator(omega=3.0, sigma=0.0, restitution=0.8)
    t_i = osc.impact_phase / 3.0
    t_s, v_s = t_i + 1e-8, -0.8 * osc.impact_speed + 1e-8
    for _ in range(6):
        t_s, v_hit = flight_to_wall(t_s, 0.0, v_s, 3.0, 0.0)
        v_s = -0.8 * v_hit
    k = round((t_s - t_i) / osc.period)
    assert math.hypot(t_s - t_i - k * osc.period, v_s + 0.8 * osc.impact_speed) > 1e-6


def test_forced_damped_has_no_exact_solution():
    osc = ForcedImpactOscillator(zeta=0.1)
    ref = ForcedImpactOscillator()
    assert not osc.has_exact_solution
    assert osc.t0 == ref.t0
    np.testing.assert_array_equal(osc.q0, ref.q0)
    np.testing.assert_array_equal(osc.v0, ref.v0)
    with pytest.raises(NotImplementedError):
        osc.exact_solution(np.array([osc.t0]))
    with pytest.raises(NotImplementedError):
        osc.impact_times(osc.t0 + 1.0)
    f = osc.forces(0.4, np.array([0.01]), np.array([-0.3]))
    assert f[0] == pytest.approx(math.cos(2.5 * 0.4) - 0.01 + 2 * 0.1 * 0.3)


@pytest.mark.parametrize(
    "kw",
    [
        dict(omega=0.7),  # orbit through the wall
        dict(omega=2.5, sigma=0.3),  # no real impact speed
        dict(omega=5.0, sigma=0.05),
    ],
)
def test_forced_without_admissible_orbit_raises(kw):
    with pytest.raises(ValueError) as err:
        ForcedImpactOscillator(**kw)
    msg = str(err.value)
    assert "omega" in msg and "sigma" in msg and "restitution" in msg


# --------------------------------------------------------------------------------------------
# Slanted wall
# --------------------------------------------------------------------------------------------


def wall_reference(mass, force, normal, offset, e, q0, v0, t0, count):
    """Event by event: closed-form parabola to the wall, then the impact law (docs/design.md s. 3).

    Returns the impact times and the post-impact states, computed without the exact solution.
    """
    mass, force, normal = (np.asarray(x, dtype=float) for x in (mass, force, normal))
    a = np.linalg.solve(mass, force)
    m_inv_n = np.linalg.solve(mass, normal)
    g = -normal @ a
    t, q, v = t0, np.array(q0, dtype=float), np.array(v0, dtype=float)
    out = []
    for _ in range(count):
        s, u = normal @ q - offset, normal @ v
        if g > 0:
            tau = (u + math.sqrt(u * u + 2 * g * s)) / g
        elif u < 0 and u * u + 2 * g * s > 0:
            tau = (-u - math.sqrt(u * u + 2 * g * s)) / -g if g < 0 else s / -u
        else:
            break
        t, q, v = t + tau, q + v * tau + 0.5 * a * tau**2, v + a * tau
        u_minus = normal @ v
        v = v - (1 + e) * u_minus * m_inv_n / (normal @ m_inv_n)
        out.append((t, q.copy(), v.copy()))
    return out


WALL_CASES = [
    dict(),
    dict(
        mass_matrix=[[1.0, -0.8], [-0.8, 3.0]],
        force=[2.0, -1.0],
        normal=[-1.0, 2.0],
        offset=0.5,
        restitution=0.5,
        q0=[1.0, 1.5],
        v0=[-0.5, 0.3],
        t0=0.7,
    ),
]


@pytest.mark.parametrize("kw", WALL_CASES)
def test_wall_against_event_by_event_reference(kw):
    wall = SlantedWall(**kw)
    ref = wall_reference(wall.mass, wall.force, wall.normal, wall.offset, wall.restitution,
                         wall.q0, wall.v0, wall.t0, 12)  # fmt: skip
    times = wall.impact_times(wall.t0 + 100.0)
    ref_t = np.array([r[0] for r in ref])
    np.testing.assert_allclose(times[:12], ref_t, rtol=1e-11, atol=1e-12)
    q, v = wall.exact_solution(times[:12])  # post-impact states at the returned times
    np.testing.assert_allclose(q, np.array([r[1] for r in ref]), atol=1e-10)
    np.testing.assert_allclose(v, np.array([r[2] for r in ref]), atol=1e-9)


@pytest.mark.parametrize("kw", WALL_CASES)
def test_wall_ode_gap_and_kinetic_metric(kw):
    wall = SlantedWall(**kw)
    mass, force, n, e = wall.mass, wall.force, wall.normal, wall.restitution
    a = np.linalg.solve(mass, force)
    m_inv_n = np.linalg.solve(mass, n)
    np.testing.assert_allclose(wall.impulse_direction, m_inv_n, rtol=1e-14)
    t_inf = wall.accumulation_time
    times = wall.impact_times(t_inf)
    t = smooth_grid(wall.t0, t_inf - 1e-3, times[times < t_inf - 1e-3])
    check_ode(wall, t, lambda ti, q, v: a)
    fine = np.linspace(wall.t0, t_inf + 3.0, 100_001)
    q, v = wall.exact_solution(fine)
    gap = q @ n - wall.offset
    assert gap.min() >= -1e-13 * (1 + np.abs(q).max())
    an = n @ a  # acceleration of the gap, -g_eff
    for t_k in times[:15]:
        q_m, v_m, q_p, v_p = limits(wall, t_k)
        v_minus = v_m + a * DELTA  # remove the smooth drift over DELTA
        v_plus = v_p - a * DELTA
        u_minus, u_plus = n @ v_minus, n @ v_plus
        assert abs(n @ q_m - wall.offset) < 1e-8
        assert u_minus < 0
        assert u_plus / u_minus == pytest.approx(-e, rel=1e-6)
        jump = v_plus - v_minus
        # parallel to M^-1 n, and not to n (M is not diagonal)
        cross_minv = (jump[0] * m_inv_n[1] - jump[1] * m_inv_n[0]) / (
            np.linalg.norm(jump) * np.linalg.norm(m_inv_n)
        )
        cross_n = (jump[0] * n[1] - jump[1] * n[0]) / (np.linalg.norm(jump) * np.linalg.norm(n))
        assert abs(cross_minv) < 1e-6
        assert abs(cross_n) > 0.05
        np.testing.assert_allclose(jump, -(1 + e) * u_minus * m_inv_n / (n @ m_inv_n), rtol=1e-6)
        # kinetic energy lost = (1 - e^2) u-^2 / (2 n^T M^-1 n)
        loss = 0.5 * v_minus @ mass @ v_minus - 0.5 * v_plus @ mass @ v_plus
        assert loss == pytest.approx((1 - e**2) * u_minus**2 / (2 * n @ m_inv_n), rel=1e-6)
    assert an < 0
    assert wall.effective_gravity == pytest.approx(-an)


@pytest.mark.parametrize("kw", WALL_CASES)
def test_wall_slides_after_accumulation(kw):
    wall = SlantedWall(**kw)
    mass, force, n, e, c = wall.mass, wall.force, wall.normal, wall.restitution, wall.offset
    a = np.linalg.solve(mass, force)
    m_inv_n = np.linalg.solve(mass, n)
    w = m_inv_n / (n @ m_inv_n)
    g_eff = -n @ a
    s0, u0 = n @ wall.q0 - c, n @ wall.v0
    v1 = math.sqrt(u0**2 + 2 * g_eff * s0)
    t1 = wall.t0 + (u0 + v1) / g_eff
    t_inf = t1 + 2 * e * v1 / (g_eff * (1 - e))
    assert wall.accumulation_time == pytest.approx(t_inf, rel=1e-13)
    t = np.linspace(t_inf + 1e-9, t_inf + 5.0, 501)
    q, v = wall.exact_solution(t)
    scale = 1 + np.abs(q).max()
    np.testing.assert_allclose(q @ n - c, 0.0, atol=1e-13 * scale)
    np.testing.assert_allclose(v @ n, 0.0, atol=1e-13 * scale)
    slide = a + g_eff * w
    np.testing.assert_allclose(wall.sliding_acceleration, slide, rtol=1e-12)
    check_ode(wall, t[1:], lambda ti, qi, vi: slide)
    # tangential velocity is continuous through t_inf (no impulse along the wall tangent)
    tangent = np.array([-n[1], n[0]])
    (_, v_b), (_, v_a) = (wall.exact_solution(np.array([x])) for x in (t_inf - 1e-7, t_inf + 1e-7))
    assert tangent @ mass @ v_b[0] == pytest.approx(tangent @ mass @ v_a[0], abs=1e-5)


def test_wall_restitution_zero_and_one_and_no_gravity():
    wall = SlantedWall(restitution=0.0)
    times = wall.impact_times(100.0)
    assert times.size == 1
    t = np.linspace(times[0], times[0] + 3.0, 301)
    q, v = wall.exact_solution(t)
    np.testing.assert_allclose(q @ wall.normal, 0.0, atol=1e-12)
    wall = SlantedWall(restitution=1.0)
    assert wall.accumulation_time == math.inf
    t = np.linspace(0.0, 10.0, 20_001)
    q, v = wall.exact_solution(t)
    energy = 0.5 * np.einsum("ij,jk,ik->i", v, wall.mass, v) - q @ wall.force
    np.testing.assert_allclose(energy, energy[0], rtol=1e-10, atol=1e-10)
    # no force: straight line to the wall, one impact, straight line away
    wall = SlantedWall(force=[0.0, 0.0], q0=[0.0, 1.0], v0=[0.2, -1.0], restitution=0.5)
    ref = wall_reference(wall.mass, wall.force, wall.normal, 0.0, 0.5, wall.q0, wall.v0, 0.0, 3)
    assert len(ref) == 1
    np.testing.assert_allclose(wall.impact_times(100.0), [ref[0][0]], rtol=1e-14)
    q, v = wall.exact_solution(np.array([ref[0][0], 10.0]))
    np.testing.assert_allclose(q[0], ref[0][1], atol=1e-13)
    np.testing.assert_allclose(q[1], ref[0][1] + (10.0 - ref[0][0]) * ref[0][2], atol=1e-12)
    # force pushing away from the wall (g_eff < 0) but thrown at it: one impact, then away
    wall = SlantedWall(force=[0.0, 3.0], q0=[0.0, 0.5], v0=[0.0, -4.0], restitution=0.6)
    assert wall.effective_gravity < 0
    ref = wall_reference(wall.mass, wall.force, wall.normal, 0.0, 0.6, wall.q0, wall.v0, 0.0, 3)
    assert len(ref) == 1
    times = wall.impact_times(100.0)
    np.testing.assert_allclose(times, [ref[0][0]], rtol=1e-13)
    check_ode(wall, smooth_grid(0.0, 5.0, times), lambda ti, q, v: np.linalg.solve(wall.mass,
              wall.force))  # fmt: skip
    q, _ = wall.exact_solution(np.linspace(0, 5, 5001))
    assert (q @ wall.normal).min() >= -1e-12
    # ... and not thrown hard enough: it turns back before the wall, no impact
    wall = SlantedWall(force=[0.0, 30.0], q0=[0.0, 0.5], v0=[0.0, -1.0])
    assert wall.impact_times(100.0).size == 0


def test_wall_attributes_are_read_only():
    wall = SlantedWall()
    for name in ["mass", "force", "normal", "impulse_direction", "impulse_weight"]:
        with pytest.raises(ValueError):
            getattr(wall, name)[0] = 1.0
    assert wall.effective_gravity > 0
    assert wall.potential_energy(np.array([1.0, 2.0])) == pytest.approx(-(0.5 - 2 * 9.81))


# --------------------------------------------------------------------------------------------
# Validation: every bad parameter raises a ValueError naming it
# --------------------------------------------------------------------------------------------

NAN, INF = float("nan"), float("inf")

BAD = [
    (BouncingBall, dict(restitution=1.5), "restitution"),
    (BouncingBall, dict(restitution=-0.1), "restitution"),
    (BouncingBall, dict(restitution=NAN), "restitution"),
    (BouncingBall, dict(q0=-0.1), "q0"),
    (BouncingBall, dict(q0=INF), "q0"),
    (BouncingBall, dict(v0=NAN), "v0"),
    (BouncingBall, dict(gravity=0.0), "gravity"),
    (BouncingBall, dict(gravity=-9.81), "gravity"),
    (BouncingBall, dict(mass=0.0), "mass"),
    (BouncingBall, dict(mass=NAN), "mass"),
    (BouncingBall, dict(t0=INF), "t0"),
    (BouncingBall, dict(q0="high"), "q0"),
    (ImpactingOscillator, dict(restitution=2.0), "restitution"),
    (ImpactingOscillator, dict(restitution=NAN), "restitution"),
    (ImpactingOscillator, dict(x0=-1e-3), "x0"),
    (ImpactingOscillator, dict(x0=NAN), "x0"),
    (ImpactingOscillator, dict(v0=INF), "v0"),
    (ImpactingOscillator, dict(frequency=0.0), "frequency"),
    (ImpactingOscillator, dict(frequency=-1.0), "frequency"),
    (ImpactingOscillator, dict(t0=NAN), "t0"),
    (ForcedImpactOscillator, dict(omega=1.0), "omega"),
    (ForcedImpactOscillator, dict(omega=0.5), "omega"),
    (ForcedImpactOscillator, dict(omega=0.0), "omega"),
    (ForcedImpactOscillator, dict(omega=NAN), "omega"),
    (ForcedImpactOscillator, dict(sigma=INF), "sigma"),
    (ForcedImpactOscillator, dict(restitution=1.01), "restitution"),
    (ForcedImpactOscillator, dict(restitution=NAN), "restitution"),
    (ForcedImpactOscillator, dict(zeta=-0.1), "zeta"),
    (ForcedImpactOscillator, dict(zeta=NAN), "zeta"),
    (SlantedWall, dict(mass_matrix=[[2.0, 0.5], [0.6, 1.0]]), "mass_matrix"),  # not symmetric
    (SlantedWall, dict(mass_matrix=[[1.0, 2.0], [2.0, 1.0]]), "mass_matrix"),  # indefinite
    (SlantedWall, dict(mass_matrix=[[-1.0, 0.0], [0.0, -1.0]]), "mass_matrix"),
    (SlantedWall, dict(mass_matrix=[[1.0, 0.0], [0.0, 1e-14]]), "mass_matrix"),  # cond 1e14
    (SlantedWall, dict(mass_matrix=np.eye(3)), "mass_matrix"),
    (SlantedWall, dict(mass_matrix=[1.0, 2.0]), "mass_matrix"),
    (SlantedWall, dict(mass_matrix=[[1.0, NAN], [NAN, 1.0]]), "mass_matrix"),
    (SlantedWall, dict(force=[1.0, 2.0, 3.0]), "force"),
    (SlantedWall, dict(force=[INF, 0.0]), "force"),
    (SlantedWall, dict(normal=[0.0, 0.0]), "normal"),
    (SlantedWall, dict(normal=[1.0]), "normal"),
    (SlantedWall, dict(normal=[NAN, 1.0]), "normal"),
    (SlantedWall, dict(offset=NAN), "offset"),
    (SlantedWall, dict(restitution=-1.0), "restitution"),
    (SlantedWall, dict(restitution=INF), "restitution"),
    (SlantedWall, dict(q0=[0.0, -1.0]), "q0"),  # below the wall
    (SlantedWall, dict(q0=[0.0, 1.0, 2.0]), "q0"),
    (SlantedWall, dict(q0=[NAN, 1.0]), "q0"),
    (SlantedWall, dict(v0=[0.0]), "v0"),
    (SlantedWall, dict(v0=[0.0, INF]), "v0"),
    (SlantedWall, dict(t0=NAN), "t0"),
]


@pytest.mark.parametrize(("cls", "kwargs", "argname"), BAD)
def test_bad_parameters_raise_value_error_naming_them(cls, kwargs, argname):
    with pytest.raises(ValueError, match=argname):
        cls(**kwargs)


@pytest.mark.parametrize("name", EXACT)
def test_impact_times_validates_arguments(name):
    problem = PROBLEMS[name]()
    with pytest.raises(ValueError, match="max_count"):
        problem.impact_times(problem.t0 + 1.0, max_count=0)
    with pytest.raises(ValueError, match="t_end"):
        problem.impact_times(NAN)
    assert problem.impact_times(problem.t0 - 1.0).size == 0


# --------------------------------------------------------------------------------------------
# Bodies on a rough floor: the kernels they share (problems/floor_contact.py)
# --------------------------------------------------------------------------------------------

#: Each floor-contact problem built with mu = 0.37 (and e_T = 0.25 where it has one), its prefix
#: of parameters, and the moment of inertia J of its body about the centre (None: a point mass).
FLOOR_BODIES = {
    "SlidingBlock": (
        dict(mu=0.37, tangential_restitution=0.25),
        floor_contact.FLOOR_PARAMETERS,
        None,
    ),
    "FrictionOscillator": (
        dict(friction_level=0.37, tangential_restitution=0.25),
        floor_contact.FLOOR_PARAMETERS,
        None,
    ),
    "ImpactingStick": (
        dict(mu=0.37, tangential_restitution=0.25),
        floor_contact.RIGID_BODY_PARAMETERS,
        lambda b: b.mass * b.length**2 / 12,
    ),
    "PainleveRod": (
        dict(mu=0.37),
        floor_contact.RIGID_BODY_PARAMETERS,
        lambda b: b.mass * b.half_length**2 / 3,
    ),
    "RockingBlock": (
        dict(mu=0.37, tangential_restitution=0.25),
        floor_contact.RIGID_BODY_PARAMETERS,
        lambda b: b.mass * (b.half_width**2 + b.half_height**2) / 3,
    ),
}


@pytest.mark.parametrize("name", sorted(FLOOR_BODIES))
def test_floor_contact_problems_read_the_shared_parameters_by_their_names(name):
    """The shared kernels read p[MASS], p[MU], ... at the indices of floor_contact: each problem's
    parameter tuple starts with that prefix, and the shared kernels then give its M (the
    closed-form J of its body) and the mu and e_T it was built with, at every contact."""
    kwargs, prefix, inertia = FLOOR_BODIES[name]
    problem = PROBLEMS[name](**kwargs)
    assert sys.modules[type(problem).__module__].PARAMETERS[: len(prefix)] == prefix
    p = problem.kernel_parameters()
    n, m = problem.n_dof, problem.n_constraints
    mass = np.empty((n, n))
    problem.kernels().mass_matrix(problem.q0, p, mass)
    diagonal = [problem.mass] * 2 + ([] if inertia is None else [inertia(problem)])
    np.testing.assert_allclose(mass, np.diag(diagonal), rtol=1e-15, atol=0)
    mu, e_t = np.empty(m), np.empty(m)
    problem.kernels().friction(problem.q0, p, mu, e_t)
    assert np.all(mu == 0.37) and np.all(e_t == kwargs.get("tangential_restitution", 0.0))
