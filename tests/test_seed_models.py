"""The seed models: the tight joint (1 and 2 DOF) and the double pendulum with an obstacle.

Checked against the mathematics, not against the code's own outputs: the tight joint's closed
form against the ODE (central differences), an independent root-finding recursion for the impact
times, the Newton law, the e^2 contraction of the excess energy and the algebraic decay law; the
double pendulum's M and F against an independent Cartesian Lagrangian (finite differences) and
energy conservation of an accurate solve_ivp run; every time-stepping method on all four
configurations (admissibility, energy) and its convergence to the exact tight joint.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

import impactbench as ib
from impactbench import energy, simulate
from impactbench.analysis.fitting import observed_order
from impactbench.analysis.metrics import keeping_dense_output, max_position_error
from impactbench.core.problem import CompiledProblem
from impactbench.methods import METHODS, CatchingUp, MoreauJean, PaoliSchatzman, reference_method
from impactbench.problems import PROBLEMS, DoublePendulum, TightJoint, TightJoint2D

from conftest import H_FD, smooth_grid, step_grid

DELTA_T = 1e-9  # offset for left / right limits at an impact
NAN, INF = math.nan, math.inf

TIME_STEPPERS = [PaoliSchatzman(), MoreauJean(theta=0.5), CatchingUp()]


# --------------------------------------------------------------------------------------------
# Tight joint, 1 DOF: the exact solution
# --------------------------------------------------------------------------------------------

JOINT_CASES = [
    dict(),  # k = 1, e = 0.9, x0 = 0, v0 = 1, delta = 0.1
    dict(mass=2.0, stiffness=5.0, clearance=0.3, restitution=0.7, x0=-0.2, v0=-3.0, t0=1.5),
    dict(stiffness=0.0, restitution=0.8, x0=0.05, v0=-2.0),
    dict(stiffness=0.0, restitution=1.0, x0=-0.1, v0=0.5),
    dict(stiffness=4.0, restitution=1.0, x0=0.1, v0=-1.0),
    dict(stiffness=3.0, restitution=0.0, x0=0.0, v0=2.0),
]


def joint_reference(joint, count):
    """Impact times, walls and pre-impact speeds by propagating the flights with root finding.

    Independent of the closed form: from a state (x, v) the flight is x(tau) = x cos(w tau) +
    (v / w) sin(w tau) (or x + v tau for k = 0); the next impact is the first root of
    |x(tau)| = delta, bracketed on a fine grid and located by Brent's method; then v -> -e v.
    """
    m, k, e, delta = joint.mass, joint.stiffness, joint.restitution, joint.clearance
    w = math.sqrt(k / m)
    t, x, v = joint.t0, float(joint.q0[0]), float(joint.v0[0])
    times, walls, speeds = [], [], []
    for _ in range(count):
        if k > 0:

            def pos(tau, x=x, v=v):
                return x * np.cos(w * tau) + (v / w) * np.sin(w * tau)

            def vel(tau, x=x, v=v):
                return v * np.cos(w * tau) - w * x * np.sin(w * tau)

            grid = np.linspace(0.0, 2 * math.pi / w, 20001)[1:]
            excess = np.abs(pos(grid)) - delta
            hits = np.nonzero(excess > 0)[0]
            if hits.size == 0:
                break
            j = hits[0]
            lo = grid[j - 1] if j > 0 else 1e-300
            wall = math.copysign(1.0, pos(grid[j]))
            tau = brentq(lambda s, wall=wall: wall * pos(s) - delta, lo, grid[j], xtol=1e-15)
            v_new = vel(tau)
        else:
            if v == 0.0:
                break
            wall = math.copysign(1.0, v)
            tau = (wall * delta - x) / v
            v_new = v
        t += tau
        times.append(t)
        walls.append(wall)
        speeds.append(abs(v_new))
        x, v = wall * delta, -e * v_new
        if v == 0.0:
            break
    return np.array(times), np.array(walls), np.array(speeds)


@pytest.mark.parametrize("kw", JOINT_CASES)
def test_joint_impacts_match_an_independent_recursion(kw):
    joint = TightJoint(**kw)
    e = joint.restitution
    ref_t, ref_walls, ref_speeds = joint_reference(joint, 25)
    times = joint.impact_times(ref_t[-1] + 1e-9)
    assert times.size == ref_t.size
    np.testing.assert_allclose(times, ref_t, rtol=1e-12, atol=1e-12)
    # at the impacts: on the wall, alternating, speeds e^n U1
    q, v = joint.exact_solution(times)
    np.testing.assert_allclose(q[:, 0], ref_walls * joint.clearance, rtol=1e-13)
    assert np.all(ref_walls[1:] == -ref_walls[:-1])
    np.testing.assert_allclose(ref_speeds, ref_speeds[0] * e ** np.arange(ref_t.size), rtol=1e-9)
    # the Newton law u+ = -e u- from the left/right limits (removing the drift of a = -k x / m)
    acc = -joint.stiffness * ref_walls * joint.clearance / joint.mass
    _, vm = joint.exact_solution(times - DELTA_T)
    _, vp = joint.exact_solution(times + DELTA_T)
    v_minus = vm[:, 0] + acc * DELTA_T
    v_plus = vp[:, 0] - acc * DELTA_T
    assert np.all(v_minus * ref_walls > 0)  # moving into the wall
    np.testing.assert_allclose(np.abs(v_minus), ref_speeds, rtol=1e-6)
    np.testing.assert_allclose(v_plus, -e * v_minus, rtol=1e-6, atol=1e-12)


@pytest.mark.parametrize("kw", JOINT_CASES)
def test_joint_solves_the_ode_and_stays_in_the_gap(kw):
    joint = TightJoint(**kw)
    m, k, delta = joint.mass, joint.stiffness, joint.clearance
    t_end = joint.t0 + 8.0
    impacts = joint.impact_times(t_end)
    t = smooth_grid(joint.t0 + 2 * H_FD, t_end, impacts)
    qp, vp = joint.exact_solution(t + H_FD)
    qm, vm = joint.exact_solution(t - H_FD)
    q, v = joint.exact_solution(t)
    scale = 1.0 + np.abs(v).max()
    np.testing.assert_allclose((qp - qm) / (2 * H_FD), v, rtol=0, atol=1e-7 * scale)
    acc = -k * q / m
    np.testing.assert_allclose((vp - vm) / (2 * H_FD), acc, rtol=0, atol=1e-5 * (1 + k / m))
    fine = np.linspace(joint.t0, t_end, 400_001)
    q, _ = joint.exact_solution(fine)
    assert np.abs(q).max() <= delta
    # start: the initial state
    q0, v0 = joint.exact_solution(np.array([joint.t0]))
    if not (impacts.size and impacts[0] == joint.t0):
        assert q0[0, 0] == pytest.approx(joint.q0[0], abs=1e-15)
        assert v0[0, 0] == pytest.approx(joint.v0[0], abs=1e-15)


def test_joint_excess_energy_contracts_by_e_squared_per_impact():
    joint = TightJoint(mass=1.5, stiffness=2.0, clearance=0.2, restitution=0.85, x0=0.1, v0=1.3)
    m, k, delta, e = joint.mass, joint.stiffness, joint.clearance, joint.restitution
    times = joint.impact_times(200.0)
    assert times.size > 40
    mids = np.concatenate([[0.5 * (joint.t0 + times[0])], 0.5 * (times[:-1] + times[1:])])
    q, v = joint.exact_solution(mids)
    excess = 0.5 * m * v[:, 0] ** 2 + 0.5 * k * q[:, 0] ** 2 - 0.5 * k * delta**2
    e0 = 0.5 * m * joint.v0[0] ** 2 + 0.5 * k * joint.q0[0] ** 2 - 0.5 * k * delta**2
    # (E - k delta^2 / 2 is a difference: round-off of E ~ 1e-17 in absolute terms)
    np.testing.assert_allclose(excess, e0 * e ** (2 * np.arange(mids.size)), rtol=1e-8, atol=1e-15)
    # the flights lengthen to pi / w: no accumulation
    w = math.sqrt(k / m)
    gaps = np.diff(times)
    assert np.all(np.diff(gaps) > 0) and gaps[-1] == pytest.approx(math.pi / w, rel=1e-3)


def test_joint_free_speeds_are_geometric():
    joint = TightJoint(stiffness=0.0, restitution=0.7, x0=0.0, v0=3.0, clearance=0.05)
    times = joint.impact_times(1e3)
    mids = 0.5 * (times[:-1] + times[1:])
    _, v = joint.exact_solution(mids)
    n = np.arange(1, times.size)
    np.testing.assert_allclose(np.abs(v[:, 0]), 3.0 * 0.7**n, rtol=1e-12)
    assert np.all(np.sign(v[1:, 0]) == -np.sign(v[:-1, 0]))
    np.testing.assert_allclose(np.diff(times), 2 * 0.05 / (3.0 * 0.7**n), rtol=1e-12)


@pytest.mark.parametrize("e", [0.5, 0.9, 0.99])
def test_joint_free_energy_decays_like_inverse_square_time(e):
    m, delta = 2.0, 0.1
    joint = TightJoint(mass=m, stiffness=0.0, restitution=e, clearance=delta, x0=0.03, v0=5.0)
    c = 2 * m * delta**2 / (1 - e) ** 2
    times = joint.impact_times(1e9, max_count=10**6)
    assert times[-1] > 1e6
    # just before each impact E (t_n - t0)^2 -> 2 m delta^2 / (1 - e)^2 ...
    _, v = joint.exact_solution(times - 1e-9 * times)
    pre = 0.5 * m * v[:, 0] ** 2
    late = times > 1e5
    np.testing.assert_allclose(pre[late] * (times[late] - joint.t0) ** 2 / c, 1.0, rtol=2e-3)
    np.testing.assert_allclose(pre[late], joint.energy_decay_law(times[late]), rtol=2e-3)
    # ... and between impacts e^2 law <= E <= law, asymptotically
    t = np.geomspace(1e5, 1e8, 5001)
    q, v = joint.exact_solution(t)
    ratio = 0.5 * m * v[:, 0] ** 2 / joint.energy_decay_law(t)
    assert ratio.max() <= 1.0 + 1e-3 and ratio.min() >= e**2 * (1.0 - 1e-3)
    # exactly, with the shifted origin t_* = t_1 - 2 delta / ((1 - e) U_1)
    t_star = times[0] - 2 * delta / ((1 - e) * 5.0)
    np.testing.assert_allclose(pre * (times - t_star) ** 2, c, rtol=1e-7)


def test_joint_decay_law_needs_the_free_joint():
    with pytest.raises(ValueError, match="stiffness"):
        TightJoint().energy_decay_law(1.0)
    with pytest.raises(ValueError, match="restitution"):
        TightJoint(stiffness=0.0, restitution=1.0).energy_decay_law(1.0)
    with pytest.raises(NotImplementedError):
        TightJoint(stiffness=0.0, damping=0.1).energy_decay_law(1.0)


def test_joint_many_impacts_over_long_times():
    joint = TightJoint(restitution=0.999)
    m, k, delta, e = joint.mass, joint.stiffness, joint.clearance, joint.restitution
    times = joint.impact_times(1e4, max_count=10**6)
    assert 10_000 / math.pi < times.size < 10_000 and np.all(np.diff(times) > 0)
    q, v = joint.exact_solution(times)
    np.testing.assert_allclose(np.abs(q[:, 0]), delta, rtol=1e-12)
    assert np.all(q[1:, 0] == -q[:-1, 0])
    mids = 0.5 * (times[:-1] + times[1:])
    q, v = joint.exact_solution(mids)
    excess = 0.5 * m * v[:, 0] ** 2 + 0.5 * k * q[:, 0] ** 2 - 0.5 * k * delta**2
    e0 = 0.5 * m * joint.v0[0] ** 2 - 0.5 * k * delta**2
    np.testing.assert_allclose(excess, e0 * e ** (2 * np.arange(1, times.size)), rtol=1e-7)
    q, _ = joint.exact_solution(np.linspace(0.0, 1e4, 1_000_001))
    assert np.abs(q).max() <= delta


def test_joint_plastic_impact_then_grazing_harmonic_motion():
    joint = TightJoint(stiffness=4.0, restitution=0.0, x0=0.02, v0=-1.0)
    times = joint.impact_times(100.0)
    assert times.size == 1
    t1 = times[0]
    t = np.linspace(t1, t1 + 20.0, 2001)
    q, v = joint.exact_solution(t)
    np.testing.assert_allclose(q[:, 0], -0.1 * np.cos(2.0 * (t - t1)), atol=1e-14)
    np.testing.assert_allclose(v[:, 0], 0.2 * np.sin(2.0 * (t - t1)), atol=1e-13)
    # k = 0: the pin stops on the wall
    joint = TightJoint(stiffness=0.0, restitution=0.0, v0=2.0)
    q, v = joint.exact_solution(np.array([0.04, 0.05, 1.0, 1e6]))
    np.testing.assert_allclose(q[:, 0], [0.08, 0.1, 0.1, 0.1], atol=1e-15)
    np.testing.assert_allclose(v[:, 0], [2.0, 0.0, 0.0, 0.0])


def test_joint_without_impacts():
    joint = TightJoint(stiffness=4.0, x0=0.05, v0=0.1)  # amplitude sqrt(0.05^2 + 0.05^2) < 0.1
    assert joint.impact_times(100.0).size == 0 and joint.first_impact_time == INF
    t = np.linspace(0.0, 100.0, 10001)
    q, v = joint.exact_solution(t)
    np.testing.assert_allclose(q[:, 0], 0.05 * np.cos(2 * t) + 0.05 * np.sin(2 * t), atol=1e-14)
    joint = TightJoint(stiffness=0.0, x0=0.05, v0=0.0)
    q, v = joint.exact_solution(t)
    assert np.all(q == 0.05) and np.all(v == 0.0)


def test_joint_starting_on_the_wall():
    # moving out: impact at t0, the post-impact velocity is returned there (right limit)
    joint = TightJoint(stiffness=1.0, restitution=0.5, x0=0.1, v0=0.5, t0=2.0)
    assert joint.impact_times(3.0)[0] == 2.0
    q, v = joint.exact_solution(np.array([2.0]))
    assert q[0, 0] == 0.1 and v[0, 0] == pytest.approx(-0.25, rel=1e-14)
    # moving in: no impact at t0
    joint = TightJoint(stiffness=1.0, restitution=0.5, x0=-0.1, v0=0.5)
    assert joint.impact_times(10.0)[0] > 0.1
    q, v = joint.exact_solution(np.array([0.0]))
    assert q[0, 0] == -0.1 and v[0, 0] == 0.5


def test_joint_with_damping_or_forcing_has_no_exact_solution():
    for kw in [dict(damping=0.1), dict(forcing_amplitude=0.5)]:
        joint = TightJoint(**kw)
        assert not joint.has_exact_solution
        with pytest.raises(NotImplementedError):
            joint.exact_solution(np.array([0.0]))
        with pytest.raises(NotImplementedError):
            joint.impact_times(1.0)
    joint = TightJoint(damping=0.3, forcing_amplitude=0.7, forcing_frequency=2.0)
    f = joint.forces(0.4, np.array([0.05]), np.array([-0.2]))
    assert f[0] == pytest.approx(-0.05 + 0.06 + 0.7 * math.cos(0.8))


def test_joint_contract_and_kernels():
    joint = TightJoint(mass=2.0, stiffness=3.0, clearance=0.2)
    assert joint.n_dof == 1 and joint.n_constraints == 2
    assert joint.kernels().affine_gap and joint.kernels().constant_mass
    for x in [-0.2, -0.05, 0.0, 0.13, 0.2]:
        np.testing.assert_allclose(joint.gap(np.array([x])), [0.2 + x, 0.2 - x])
        np.testing.assert_array_equal(joint.gap_gradient(np.array([x])), [[1.0], [-1.0]])
        assert joint.potential_energy(np.array([x])) == pytest.approx(1.5 * x * x)
    np.testing.assert_array_equal(joint.mass_matrix(joint.q0), [[2.0]])
    t = np.linspace(0, 3, 7)
    q, v = joint.exact_solution(t)
    assert q.shape == (7, 1) and v.shape == (7, 1)
    with pytest.raises(ValueError, match="t must"):
        joint.exact_solution(np.array([-1.0]))
    with pytest.raises(ValueError, match="max_count"):
        joint.impact_times(1.0, max_count=0)
    with pytest.raises(ValueError, match="t_end"):
        joint.impact_times(NAN)
    assert joint.impact_times(-1.0).size == 0
    assert joint.impact_times(50.0, max_count=3).size == 3


# --------------------------------------------------------------------------------------------
# Tight joint, 2 DOF
# --------------------------------------------------------------------------------------------


def test_joint_2d_forces_potential_and_gap():
    joint = TightJoint2D(
        mass=2.0, stiffness=3.0, damping=0.5, load=(0.1, -0.2), forcing_amplitude=(0.3, 0.4),
        forcing_frequency=2.0, clearance=0.25,
    )  # fmt: skip
    assert joint.n_dof == 2 and joint.n_constraints == 1 and not joint.has_exact_solution
    assert not joint.kernels().affine_gap and joint.kernels().constant_mass
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, v, t = rng.normal(scale=0.2, size=2), rng.normal(size=2), rng.uniform(0, 5)
        grad_v = np.array(
            [(joint.potential_energy(q + s) - joint.potential_energy(q - s)) / 2e-6
             for s in 1e-6 * np.eye(2)]
        )  # fmt: skip
        expected = -grad_v - 0.5 * v + np.array([0.3, 0.4]) * math.cos(2.0 * t)
        np.testing.assert_allclose(joint.forces(t, q, v), expected, rtol=0, atol=1e-8)
        assert joint.gap(q)[0] == pytest.approx(0.25**2 - q @ q)
        fd = np.array([(joint.gap(q + s) - joint.gap(q - s))[0] / 2e-6 for s in 1e-6 * np.eye(2)])
        np.testing.assert_allclose(joint.gap_gradient(q)[0], fd, rtol=0, atol=1e-8)
        np.testing.assert_array_equal(joint.mass_matrix(q), 2.0 * np.eye(2))


# --------------------------------------------------------------------------------------------
# Double pendulum
# --------------------------------------------------------------------------------------------


def cartesian_lagrangian(pendulum, q, v):
    """L = T - V from the Cartesian positions and velocities of the two point masses."""
    m1, m2, l1, l2, g = pendulum.m1, pendulum.m2, pendulum.l1, pendulum.l2, pendulum.gravity
    r1d = l1 * v[0] * np.array([math.cos(q[0]), math.sin(q[0])])
    r2d = r1d + l2 * v[1] * np.array([math.cos(q[1]), math.sin(q[1])])
    y1 = -l1 * math.cos(q[0])
    y2 = y1 - l2 * math.cos(q[1])
    return 0.5 * m1 * r1d @ r1d + 0.5 * m2 * r2d @ r2d - (m1 * g * y1 + m2 * g * y2)


def pendulum_rhs(pendulum):
    def rhs(t, y):
        q, v = y[:2], y[2:]
        a = np.linalg.solve(pendulum.mass_matrix(q), pendulum.forces(t, q, v))
        return np.concatenate([v, a])

    return rhs


PENDULA = [
    DoublePendulum(),
    DoublePendulum(m1=0.7, m2=1.8, l1=0.6, l2=1.3, gravity=3.0),
    DoublePendulum.two_contact(),
]


@pytest.mark.parametrize("pendulum", PENDULA, ids=["default", "asymmetric", "two-contact"])
def test_pendulum_satisfies_the_euler_lagrange_equations(pendulum):
    """d/dt dL/dv - dL/dq = 0 at v' = M^-1 F, all derivatives of L by finite differences."""
    rng = np.random.default_rng(7)
    s = 1e-4
    eye = np.eye(2)

    def lagrangian(q, v):
        return cartesian_lagrangian(pendulum, q, v)

    def momentum(q, v):
        return np.array(
            [(lagrangian(q, v + s * d) - lagrangian(q, v - s * d)) / (2 * s) for d in eye]
        )

    for _ in range(10):
        q, v = rng.uniform(-3, 3, size=2), rng.normal(scale=2.0, size=2)
        a = np.linalg.solve(pendulum.mass_matrix(q), pendulum.forces(0.0, q, v))
        dp_dt = (momentum(q + s * v, v + s * a) - momentum(q - s * v, v - s * a)) / (2 * s)
        dl_dq = np.array(
            [(lagrangian(q + s * d, v) - lagrangian(q - s * d, v)) / (2 * s) for d in eye]
        )
        scale = 1.0 + np.abs(pendulum.forces(0.0, q, v)).max()
        np.testing.assert_allclose(dp_dt - dl_dq, 0.0, atol=1e-5 * scale)
        # and M is the Hessian of T in v: T = v^T M v / 2 exactly
        t_kin = cartesian_lagrangian(pendulum, q, v) + pendulum.potential_energy(q)
        assert t_kin == pytest.approx(pendulum.kinetic_energy(q, v), rel=1e-12, abs=1e-12)


@pytest.mark.parametrize("pendulum", PENDULA, ids=["default", "asymmetric", "two-contact"])
def test_pendulum_mass_matrix_is_spd_with_the_stated_determinant(pendulum):
    m1, m2, l1, l2 = pendulum.m1, pendulum.m2, pendulum.l1, pendulum.l2
    for q in np.random.default_rng(2).uniform(-4, 4, size=(50, 2)):
        mass = pendulum.mass_matrix(q)
        np.testing.assert_array_equal(mass, mass.T)
        det = m2 * l1**2 * l2**2 * (m1 + m2 * math.sin(q[0] - q[1]) ** 2)
        assert np.linalg.det(mass) == pytest.approx(det, rel=1e-10)
        assert np.linalg.eigvalsh(mass).min() > 0


def _energy_drift(pendulum, rhs, y0):
    """An accurate solve_ivp run of ``rhs`` over [0, 10] and its largest relative change of
    T + V over 501 samples."""
    t = np.linspace(0.0, 10.0, 501)
    sol = solve_ivp(rhs, (0.0, 10.0), y0, method="DOP853", rtol=1e-12, atol=1e-12, t_eval=t)
    energies = np.array([pendulum.energy(y[:2], y[2:]) for y in sol.y.T])
    return sol, np.abs(energies - energies[0]).max() / abs(energies[0])


def test_pendulum_energy_is_conserved_without_the_wall():
    """An accurate free run of M q'' = F conserves T + V; a Coriolis sign error would not."""
    free = DoublePendulum(wall_distance=10.0, q0=(1.2, -0.5), v0=(1.0, 3.0))
    y0 = np.concatenate([free.q0, free.v0])
    sol, drift = _energy_drift(free, pendulum_rhs(free), y0)
    assert sol.success
    assert drift < 1e-8
    assert np.abs(sol.y[:2]).max() > 1.0  # a real motion, not a small oscillation
    assert min(free.gap(y[:2])[0] for y in sol.y.T) > 0  # the wall is never reached

    def wrong_rhs(t, y):  # flip the sign of the Coriolis terms
        q, v = y[:2], y[2:]
        f = free.forces(t, q, v)
        s = free.m2 * free.l1 * free.l2 * math.sin(q[0] - q[1])
        f = f + 2 * np.array([s * v[1] ** 2, -s * v[0] ** 2])
        return np.concatenate([v, np.linalg.solve(free.mass_matrix(q), f)])

    assert _energy_drift(free, wrong_rhs, y0)[1] > 1e-2


@pytest.mark.parametrize("pendulum", PENDULA, ids=["default", "asymmetric", "two-contact"])
def test_pendulum_gaps_gradients_and_potential(pendulum):
    rng = np.random.default_rng(4)
    d = pendulum.wall_distance
    s = 1e-6
    for q in rng.uniform(-3, 3, size=(10, 2)):
        x1 = pendulum.l1 * math.sin(q[0])
        x2 = x1 + pendulum.l2 * math.sin(q[1])
        expected = [d + x2] if pendulum.contacts == "tip" else [d + x1, d + x2]
        np.testing.assert_allclose(pendulum.gap(q), expected, rtol=1e-14, atol=1e-15)
        positions = pendulum.positions(q)
        np.testing.assert_allclose(positions[:, 0], [x1, x2], atol=1e-15)
        fd = np.stack(
            [(pendulum.gap(q + s * e) - pendulum.gap(q - s * e)) / (2 * s) for e in np.eye(2)],
            axis=1,
        )
        np.testing.assert_allclose(pendulum.gap_gradient(q), fd, rtol=0, atol=1e-8)
        g = pendulum.gravity
        potential = g * (pendulum.m1 * positions[0, 1] + pendulum.m2 * positions[1, 1])
        assert pendulum.potential_energy(q) == pytest.approx(potential, rel=1e-13, abs=1e-13)


def test_pendulum_configurations():
    default = DoublePendulum()
    assert default.n_constraints == 1 and default.contacts == "tip"
    assert default.t_end > default.t0 and not default.has_exact_solution
    assert not default.kernels().affine_gap and not default.kernels().constant_mass
    assert default.gap(default.q0)[0] > 0
    assert default.l1 * math.sin(default.q0[0]) + default.l2 * math.sin(default.q0[1]) > 0
    potra = DoublePendulum.two_contact()
    assert potra.n_constraints == 2 and potra.t_end == 2.5 and potra.restitution == 0.1
    assert (potra.m1, potra.m2, potra.l1, potra.l2, potra.gravity) == (1, 1, 1, 1, 9.81)
    np.testing.assert_array_equal(potra.q0, [math.pi / 3, math.pi / 5])
    np.testing.assert_array_equal(potra.v0, [0.0, 0.0])
    q = np.array([0.3, -0.2])
    np.testing.assert_allclose(potra.gap(q), [math.sin(0.3), math.sin(0.3) + math.sin(-0.2)])
    changed = DoublePendulum.two_contact(restitution=0.5, t_end=4.0)
    assert changed.restitution == 0.5 and changed.t_end == 4.0 and changed.n_constraints == 2
    # the recommended horizons are relative to t0
    assert default.t_end == 5.5 and DoublePendulum(t0=3.0).t_end == 8.5
    assert DoublePendulum.two_contact(t0=1.0).t_end == 3.5


def test_default_pendulum_hits_the_wall_several_times():
    """Independent of the time-steppers: free flights by solve_ivp with a wall-crossing event."""
    pendulum = DoublePendulum()
    rhs = pendulum_rhs(pendulum)

    def hit(t, y):
        return pendulum.gap(y[:2])[0]

    hit.terminal, hit.direction = True, -1
    t, y, impacts = 0.0, np.concatenate([pendulum.q0, pendulum.v0]), []
    while t < pendulum.t_end:
        sol = solve_ivp(rhs, (t, pendulum.t_end), y, events=hit, rtol=1e-10, atol=1e-10)
        if sol.status != 1:
            break
        t, y = sol.t_events[0][0], sol.y_events[0][0]
        q, v = y[:2], y[2:]
        normal = pendulum.gap_gradient(q)[0]
        direction = np.linalg.solve(pendulum.mass_matrix(q), normal)  # Newton law, metric of M
        jump = (1 + pendulum.restitution) * (normal @ v) / (normal @ direction)
        y = np.concatenate([q, v - jump * direction])
        impacts.append(t)
    # the four impacts of the class docstring
    np.testing.assert_allclose(impacts, [0.73, 2.16, 3.47, 4.80], atol=1e-2)
    assert pendulum.t_end - impacts[-1] > 0.3  # the horizon does not end at an impact
    # the event-driven reference (used by every study) finds the same impacts and end state
    reference = ib.reference(pendulum, pendulum.t_end, reference_method())
    np.testing.assert_allclose(reference.impact_times, impacts, rtol=0, atol=1e-8)
    sol = solve_ivp(rhs, (t, pendulum.t_end), y, rtol=1e-12, atol=1e-12)
    q_end, v_end = reference.state(np.array([pendulum.t_end]))
    np.testing.assert_allclose(q_end[0], sol.y[:2, -1], rtol=0, atol=1e-7)
    np.testing.assert_allclose(v_end[0], sol.y[2:, -1], rtol=0, atol=1e-7)


# --------------------------------------------------------------------------------------------
# The methods on the four configurations
# --------------------------------------------------------------------------------------------

CONFIGURATIONS = {
    "TightJoint": lambda: (TightJoint(), 4.0),
    "TightJoint2D": lambda: (TightJoint2D(), 4.0),
    "DoublePendulum": lambda: (DoublePendulum(), 2.5),
    "DoublePendulum.two_contact": lambda: (DoublePendulum.two_contact(), 2.5),
}


def normal_speed(problem, trajectory):
    return max(
        np.abs(problem.gap_gradient(q) @ v).max()
        for q, v in zip(trajectory.q, trajectory.v, strict=True)
    )


@pytest.mark.parametrize("config", sorted(CONFIGURATIONS))
@pytest.mark.parametrize("method", TIME_STEPPERS, ids=lambda m: m.name)
def test_every_method_runs_and_stays_admissible_within_order_h(method, config):
    problem, t_end = CONFIGURATIONS[config]()
    for h in [2e-3, 5e-4]:
        trajectory = simulate(problem, method, t_end, h=h)
        assert trajectory.t[-1] == pytest.approx(t_end) and trajectory.impacts.total > 0
        assert np.all(np.isfinite(trajectory.q)) and np.all(np.isfinite(trajectory.v))
        # one step moves the gap by at most h |u| (velocity schemes); Paoli-Schatzman's
        # reflection q^{k+1} = -e q^{k-1} + (1 + e) p, p in K, by at most (1 + e) h |u|
        penetration = max(0.0, -min(problem.gap(q).min() for q in trajectory.q))
        assert penetration <= 2.0 * h * normal_speed(problem, trajectory), (h, penetration)


def energy_of_unforced(config):
    problem, t_end = CONFIGURATIONS[config]()
    if isinstance(problem, TightJoint2D):
        problem = TightJoint2D(forcing_amplitude=(0.0, 0.0))
    return problem, t_end


@pytest.mark.parametrize("config", ["TightJoint", "TightJoint2D"])
def test_moreau_jean_energy_never_increases_beyond_order_h2_on_the_joints(config):
    """Constant M, conservative F: E rises by O(h^2) per step at most; the impacts dissipate."""
    problem, t_end = energy_of_unforced(config)
    for h in [2e-3, 5e-4]:
        trajectory = simulate(problem, MoreauJean(theta=0.5), t_end, h=h)
        energies = energy(problem, trajectory)
        assert np.max(np.diff(energies)) <= 0.1 * h**2 * abs(energies[0])
        assert energies[-1] < energies[0] - 0.05 * abs(energies[0])


@pytest.mark.parametrize("config", ["DoublePendulum", "DoublePendulum.two_contact"])
def test_moreau_jean_energy_on_the_pendulum_dissipates(config):
    """M(q) is not constant: no exact energy balance between impacts, only O(h) at the end."""
    problem, t_end = CONFIGURATIONS[config]()
    for h in [2e-3, 5e-4]:
        trajectory = simulate(problem, MoreauJean(theta=0.5), t_end, h=h)
        energies = energy(problem, trajectory)
        scale = abs(energies[0]) + 1.0
        assert energies[-1] <= energies[0] + 0.1 * h * scale
        # at the impacts: the energy drops; elsewhere it drifts by O(h^2) per step at most
        steps = np.diff(energies)
        # the step ending at the logged time (t_k + h: round to the grid)
        impact_steps = np.rint((trajectory.impacts.t - problem.t0) / trajectory.h).astype(int) - 1
        strong = np.abs(trajectory.impacts.normal_velocity_before) > 0.1
        assert strong.sum() >= 1
        assert np.all(steps[impact_steps[strong]] < 0)
        assert steps[impact_steps[strong]].sum() < -0.05 * scale
        smooth = np.ones(steps.size, dtype=bool)
        smooth[impact_steps] = False
        assert np.max(steps[smooth]) <= 20 * h**2 * scale  # measured: 5.7 h^2 scale


@pytest.mark.parametrize("method", TIME_STEPPERS, ids=lambda m: m.name)
@pytest.mark.parametrize("seed", [0, 1])
def test_time_steppers_converge_to_the_exact_tight_joint(method, seed):
    joint = TightJoint()  # k = 1, e = 0.9: 12 impacts before t = 4.5
    assert joint.impact_times(4.0).size >= 10
    steps = step_grid(1e-4, 4e-3, 12, seed)
    errors = [max_position_error(joint, simulate(joint, method, 4.0, h=h)) for h in steps]
    order, residual = observed_order(steps, np.array(errors))
    assert order >= 0.85, (order, residual)
    assert max(errors) < 0.5 * joint.clearance  # and the errors are errors, not noise


EVENT_DRIVEN = METHODS.get("EventDriven")


@pytest.mark.skipif(EVENT_DRIVEN is None, reason="no event-driven method registered")
@pytest.mark.parametrize("config", sorted(CONFIGURATIONS))
def test_event_driven_runs_and_agrees_with_the_exact_joint(config):
    problem, t_end = CONFIGURATIONS[config]()
    method = EVENT_DRIVEN(rtol=1e-10, atol=1e-12)
    trajectory = simulate(problem, method, t_end)
    assert trajectory.t[-1] == pytest.approx(t_end) and trajectory.impacts.total > 0
    assert min(problem.gap(q).min() for q in trajectory.q) > -1e-12
    if problem.has_exact_solution:
        assert trajectory.impacts.total == problem.impact_times(t_end).size
        # between the steps through the interpolants of its own run
        measured = simulate(problem, keeping_dense_output(method), t_end)
        assert max_position_error(problem, measured) < 1e-8


# --------------------------------------------------------------------------------------------
# Registry and validation
# --------------------------------------------------------------------------------------------


def test_registry():
    for name in ["TightJoint", "TightJoint2D", "DoublePendulum"]:
        cls = PROBLEMS[name]
        problem = cls()
        assert cls.__name__ == name and problem.name == name
        assert isinstance(problem, CompiledProblem)
        problem.check()
    assert TightJoint().has_exact_solution
    assert not TightJoint2D().has_exact_solution and not DoublePendulum().has_exact_solution


BAD = [
    (TightJoint, dict(mass=0.0), "mass"),
    (TightJoint, dict(mass=NAN), "mass"),
    (TightJoint, dict(stiffness=-1.0), "stiffness"),
    (TightJoint, dict(stiffness=INF), "stiffness"),
    (TightJoint, dict(damping=-0.1), "damping"),
    (TightJoint, dict(forcing_amplitude=NAN), "forcing_amplitude"),
    (TightJoint, dict(forcing_frequency=-1.0), "forcing_frequency"),
    (TightJoint, dict(clearance=0.0), "clearance"),
    (TightJoint, dict(clearance=INF), "clearance"),
    (TightJoint, dict(restitution=1.5), "restitution"),
    (TightJoint, dict(restitution=NAN), "restitution"),
    (TightJoint, dict(x0=0.2), "x0"),
    (TightJoint, dict(x0=-0.11), "x0"),
    (TightJoint, dict(x0="a"), "x0"),
    (TightJoint, dict(v0=INF), "v0"),
    (TightJoint, dict(t0=NAN), "t0"),
    (TightJoint2D, dict(mass=-1.0), "mass"),
    (TightJoint2D, dict(stiffness=-1.0), "stiffness"),
    (TightJoint2D, dict(damping=NAN), "damping"),
    (TightJoint2D, dict(load=(1.0,)), "load"),
    (TightJoint2D, dict(load=(NAN, 0.0)), "load"),
    (TightJoint2D, dict(forcing_amplitude=(0.0, 0.0, 1.0)), "forcing_amplitude"),
    (TightJoint2D, dict(forcing_frequency=INF), "forcing_frequency"),
    (TightJoint2D, dict(clearance=-0.1), "clearance"),
    (TightJoint2D, dict(restitution=-0.1), "restitution"),
    (TightJoint2D, dict(q0=(0.08, 0.08)), "q0"),
    (TightJoint2D, dict(q0=(0.0,)), "q0"),
    (TightJoint2D, dict(v0=(0.0, NAN)), "v0"),
    (TightJoint2D, dict(t0=INF), "t0"),
    (DoublePendulum, dict(m1=0.0), "m1"),
    (DoublePendulum, dict(m2=-1.0), "m2"),
    (DoublePendulum, dict(l1=NAN), "l1"),
    (DoublePendulum, dict(l2=0.0), "l2"),
    (DoublePendulum, dict(gravity=-9.81), "gravity"),
    (DoublePendulum, dict(gravity=INF), "gravity"),
    (DoublePendulum, dict(restitution=2.0), "restitution"),
    (DoublePendulum, dict(q0=(-1.0, -1.0)), "q0"),  # the tip beyond the wall
    (DoublePendulum, dict(q0=(0.0, 0.0, 0.0)), "q0"),
    (DoublePendulum, dict(v0=(INF, 0.0)), "v0"),
    (DoublePendulum, dict(wall_distance=-0.5), "wall_distance"),
    (DoublePendulum, dict(wall_distance=NAN), "wall_distance"),
    (DoublePendulum, dict(contacts="elbow"), "contacts"),
    (DoublePendulum, dict(contacts=None), "contacts"),
    (DoublePendulum, dict(t_end=0.0), "t_end"),
    (DoublePendulum, dict(t_end=NAN), "t_end"),
    (DoublePendulum, dict(t0=NAN), "t0"),
    (DoublePendulum, dict(m1=1e-14, q0=(0.5, 0.5)), "mass_matrix"),  # badly conditioned
]


@pytest.mark.parametrize(("cls", "kwargs", "argname"), BAD)
def test_bad_parameters_raise_value_error_naming_them(cls, kwargs, argname):
    with pytest.raises(ValueError, match=argname):
        cls(**kwargs)


def test_two_contact_validates_overrides():
    with pytest.raises(ValueError, match="q0"):
        DoublePendulum.two_contact(q0=(-0.2, 0.5))  # mass 1 beyond the wall x = 0
    with pytest.raises(ValueError, match="restitution"):
        DoublePendulum.two_contact(restitution=-1.0)
    with pytest.raises(ValueError, match="t0"):
        DoublePendulum.two_contact(t0="later")
    with pytest.raises(ValueError, match="t_end"):
        DoublePendulum.two_contact(t0=1.0, t_end=0.5)
