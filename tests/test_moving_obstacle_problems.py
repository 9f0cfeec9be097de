"""The oscillator against a harmonically moving stop and the cam-follower
(problems/moving_stop.py, problems/cam_follower.py): declared kernels against the obstacle's
motion and Problem.check, the moving stop's exact orbit against the mathematics (the ODE between
impacts by central differences, admissibility on a fine grid, Newton's law on the relative
velocity, periodicity), the cam lift against a transcription of Siconos' CamState, bad input
refused naming the argument; and the analysis callers (penetration depths, the energy gate's
scale, make_trajectory's relative normal velocities, contact states) on tabulated trajectories
of a moving obstacle. No method integrates a moving obstacle yet on this branch.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from impactbench import Problem, make_trajectory
from impactbench.analysis.metrics import late_penetration, max_penetration, penetration_depths
from impactbench.bench.figure_data import OPEN, SLIP, STICK, contact_states
from impactbench.core.energy import energy_gain
from impactbench.methods import MoreauJean
from impactbench.problems import (
    PROBLEMS,
    BallOnVibratingTable,
    CamFollower,
    ForcedImpactOscillator,
    ImpactOscillatorMovingStop,
    moving_stop,
)
from impactbench.problems.impact_oscillator import OSCILLATOR_PARAMETERS
from impactbench.problems.moving_stop import harmonic_flight

EPS = float(np.finfo(float).eps)

#: (W / Omega > 1: the forced oscillator's defaults) and (W / Omega < 1: K < 0, mirrored).
STOPS = [
    dict(),
    dict(stop_frequency=0.8, stop_amplitude=0.5, stop_offset=0.18, restitution=0.6),
    dict(stop_frequency=5.0, stop_amplitude=0.05, stop_offset=0.013125, frequency=2.0),
]


# --------------------------------------------------------------------------------------------
# The oscillator against a moving stop
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", STOPS)
def test_moving_stop_kernels_are_the_stop_motion(kwargs):
    problem = ImpactOscillatorMovingStop(**kwargs)
    problem.check()
    # M and F are the free oscillator's kernels, reading omega^2 at the same index
    assert moving_stop.PARAMETERS[:1] == OSCILLATOR_PARAMETERS
    assert problem.mass_matrix(problem.q0)[0, 0] == 1.0
    force = problem.forces(problem.t0, np.array([0.3]), problem.v0)[0]
    assert force == pytest.approx(-(problem.frequency**2) * 0.3, rel=1e-15)
    assert problem.rheonomic and problem.kernels().affine_gap and not problem.conservative
    d, b, w = problem.stop_offset, problem.stop_amplitude, problem.stop_frequency
    x = np.array([-0.3])
    for t in np.linspace(-2.0, 50.0, 23):
        assert problem.gap(t, x)[0] == pytest.approx(d + b * math.sin(w * t) + 0.3, abs=1e-15)
        assert problem.gap(t, x)[0] == pytest.approx(problem.stop_position(t) + 0.3, abs=1e-15)
        assert problem.gap_gradient(t, x)[0, 0] == -1.0
        assert problem.gap_rate(t, x)[0] == pytest.approx(b * w * math.cos(w * t), abs=1e-15)
        assert problem.gap_rate(t, x)[0] == pytest.approx(problem.stop_velocity(t), abs=1e-15)
        drift = problem.gap_drift(t, x, np.array([2.0]))[0]
        assert drift == pytest.approx(-b * w * w * math.sin(w * t), abs=1e-14)
        assert drift == pytest.approx(problem.stop_acceleration(t), abs=1e-14)


@pytest.mark.parametrize("kwargs", STOPS)
def test_moving_stop_orbit_is_an_exact_periodic_motion(kwargs):
    """x'' = -Omega^2 x between impacts (central differences of the exact solution), the gap
    s(t) - x >= 0 on a fine grid, zero at the impacts, U+ = -r U- there, one impact per period
    of the stop, the state repeating with that period."""
    problem = ImpactOscillatorMovingStop(**kwargs)
    omega, r = problem.frequency, problem.restitution
    period = 2.0 * math.pi / problem.stop_frequency
    impacts = problem.impact_times(problem.t0 + 4.0 * period)
    assert len(impacts) == 4
    np.testing.assert_allclose(np.diff(impacts), period, rtol=1e-13)
    assert impacts[0] - problem.t0 == pytest.approx(0.5 * period, rel=1e-12)
    t = np.linspace(problem.t0, impacts[-1], 40001)
    x, v = problem.exact_solution(t)
    gaps = problem.gaps(x, t)[:, 0]
    assert gaps.min() >= -1e-14
    # between impacts: the free oscillation (central differences, away from the impacts)
    h = 1e-5
    inner = t[(np.min(np.abs(t[:, None] - impacts[None, :]), axis=1) > 2 * h) & (t > t[0] + h)]
    xp, vp = problem.exact_solution(inner + h)
    xm, vm = problem.exact_solution(inner - h)
    xc, vc = problem.exact_solution(inner)
    scale = 1.0 + float(np.abs(v).max())
    np.testing.assert_allclose((xp - xm) / (2 * h), vc, rtol=0, atol=1e-8 * scale)
    np.testing.assert_allclose((vp - vm) / (2 * h), -(omega**2) * xc, rtol=0, atol=1e-6 * scale)
    for t_k in impacts:
        x_k, v_k = problem.exact_solution(np.array([t_k - 1e-9, t_k]))
        assert abs(problem.gap(t_k, x_k[1])[0]) <= 1e-13
        u_before = problem.stop_velocity(t_k) - (v_k[0, 0] - omega**2 * x_k[0, 0] * 1e-9)
        u_after = problem.stop_velocity(t_k) - v_k[1, 0]
        assert u_before == pytest.approx(-problem.impact_speed, rel=1e-7)
        assert u_after == pytest.approx(-r * u_before, rel=1e-7)
    later = problem.exact_solution(t[:500] + period)
    np.testing.assert_allclose(later[0], x[:500], rtol=0, atol=1e-12)
    np.testing.assert_allclose(later[1], v[:500], rtol=0, atol=1e-12)


def test_moving_stop_defaults_are_the_forced_oscillator_in_the_stop_frame():
    """d = 0.0525, B = 0.2, W = 2.5, Omega = 1: K = 1.05, sigma = 0.05, the forced oscillator's
    defaults; the relative impact speed is K Omega V."""
    problem = ImpactOscillatorMovingStop()
    forced = ForcedImpactOscillator()
    assert problem.frame_scale == pytest.approx(1.05, rel=1e-15)
    assert problem.forced.sigma == pytest.approx(forced.sigma, rel=1e-14)
    assert problem.forced.impact_speed == pytest.approx(forced.impact_speed, rel=1e-12)
    assert problem.impact_speed == pytest.approx(1.05 * forced.impact_speed, rel=1e-12)


def test_free_flight_continues_the_orbit_from_an_impact():
    problem = ImpactOscillatorMovingStop()
    t1, t2 = problem.impact_times(problem.t0 + 10.0)[:2]
    x1, v1 = (float(a[0, 0]) for a in problem.exact_solution(np.array([t1])))
    t = np.linspace(t1, t2, 101)[:-1]
    x, v = problem.free_flight(t, t1, x1, v1)
    exact_x, exact_v = problem.exact_solution(t)
    np.testing.assert_allclose(x, exact_x[:, 0], rtol=0, atol=1e-13)
    np.testing.assert_allclose(v, exact_v[:, 0], rtol=0, atol=1e-13)
    # the closed form itself: x'' = -Omega^2 x, x(t_s) = x_s, x'(t_s) = v_s
    x, v = harmonic_flight(np.array([0.0, 0.5]), 0.0, 1.0, 0.0, 2.0)
    np.testing.assert_allclose(x, [1.0, math.cos(1.0)], rtol=1e-15)
    np.testing.assert_allclose(v, [0.0, -2.0 * math.sin(1.0)], rtol=1e-15)


@pytest.mark.parametrize(
    ("kwargs", "argname"),
    [
        (dict(restitution=1.5), "restitution"),
        (dict(stop_offset=math.nan), "stop_offset"),
        (dict(stop_amplitude=0.0), "stop_amplitude"),
        (dict(stop_frequency=-2.5), "stop_frequency"),
        (dict(frequency=0.0), "frequency"),
        (dict(stop_frequency=1.0), "stop_frequency"),  # resonance
        (dict(stop_offset=50.0), "stop_offset"),  # no admissible orbit
    ],
)
def test_moving_stop_bad_input_is_refused_naming_the_argument(kwargs, argname):
    with pytest.raises(ValueError, match=argname):
        ImpactOscillatorMovingStop(**kwargs)


# --------------------------------------------------------------------------------------------
# The cam-follower
# --------------------------------------------------------------------------------------------


def siconos_cam_state(time: float, rpm: float) -> tuple[float, float, float]:
    """CamState of siconos-tutorials examples/mechanics/CamFollower/CamState.h, transcribed
    line by line (its truncated PI and fmod included): (h_c, h_c', h_c'')."""
    pi = 3.14159265
    rb, k1, k2, rho1, rho3, rho2 = 0.40, 0.45, 0.40393320723821, 0.85, 0.15, 0.55393320723821
    beta1, beta2, beta3 = 0.0, 1.050328174371336, 1.22173047639603
    w = 2 * pi * rpm / 60
    beta = math.fmod(w * time + pi / 2, 2 * pi)
    if beta > pi:
        beta = 2 * pi - beta
        w = -w
    if beta <= pi / 2 - beta1:
        hc, hcp, hcpp = rb, 0.0, 0.0
    elif beta <= pi / 2 + beta2:
        root = math.sqrt(1 - (math.cos(beta) * (k1 / rho1)) ** 2)
        hc = -k1 * math.sin(beta) + rho1 * root
        hcp = (-k1 * math.cos(beta) + k1**2 * math.sin(beta) * math.cos(beta) / (rho1 * root)) * w
        s, c = math.sin(beta - beta1), math.cos(beta - beta1)
        root = math.sqrt(1 - (c * (k1 / rho1)) ** 2)
        tmp1 = c**2 - s**2 - (k1 * s * c) ** 2 / (rho1**2 * root**2)
        hcpp = (k1 * s + k1**2 / (rho1 * root) * tmp1) * w**2
    elif beta <= pi / 2 + beta3:
        u = beta + pi / 9
        root = math.sqrt(1 - (math.sin(u) * (k2 / rho3)) ** 2)
        hc = -k2 * math.cos(u) + rho3 * root
        hcp = (k2 * math.sin(u) - k2**2 * math.sin(u) * math.cos(u) / (rho3 * root)) * w
        s, c = math.sin(beta - beta3), math.cos(beta - beta3)
        root = math.sqrt(1 - (c * (k2 / rho3)) ** 2)
        tmp1 = c**2 - s**2 - (k2 * s * c) ** 2 / (rho3**2 * root**2)
        hcpp = (-k2 * s + k2**2 / (rho3 * root) * tmp1) * w**2
    else:
        hc, hcp, hcpp = rho2, 0.0, 0.0
    return hc - 0.3, hcp, hcpp


@pytest.mark.parametrize("rpm", [358.0, 660.0])
def test_cam_lift_is_siconos_cam_state(rpm):
    """Siconos' time convention, the cam angle w t + pi/2 (started a quarter turn before t = 0,
    where the check can differentiate); compared away from the ends of the arcs (where Siconos'
    truncated pi may pick the other arc)."""
    turn = 60.0 / rpm
    problem = CamFollower(rpm=rpm, cam_angle=0.25 * math.pi, t0=-turn / 8, q0=1.0)
    times = np.linspace(0.0, 2.0 * turn, 1601)[1:]
    beta = (2 * math.pi * rpm / 60 * times + 0.5 * math.pi) % (2 * math.pi)
    folded = np.minimum(beta, 2 * math.pi - beta)
    ends = np.array([0.5 * math.pi, 0.5 * math.pi + 1.050328174371336, 8 * math.pi / 9, math.pi])
    away = np.min(np.abs(folded[:, None] - ends[None, :]), axis=1) > 1e-6
    ours = np.column_stack(
        [problem.cam_position(times), problem.cam_velocity(times), problem.cam_acceleration(times)]
    )
    theirs = np.array([siconos_cam_state(t, rpm) for t in times])
    w = 2 * math.pi * rpm / 60
    scale = np.array([1.0, w, w * w])
    np.testing.assert_allclose(ours[away] / scale, theirs[away] / scale, rtol=0, atol=1e-7)
    # both dwells and a rise and fall each turn
    assert ours[:, 0].min() == pytest.approx(0.1, abs=1e-15)
    assert ours[:, 0].max() == pytest.approx(0.55393320723821 - 0.3, abs=1e-15)


def test_cam_lift_is_c1_with_its_declared_derivatives():
    """h_c' and h_c'' are the derivatives of h_c and h_c' (central differences inside the arcs);
    h_c and h_c' are continuous at the ends of the arcs, h_c'' jumps there."""
    problem = CamFollower(cam_angle=0.0, q0=1.0)
    w = problem.angular_speed
    ends = np.array([0.5 * math.pi, 0.5 * math.pi + 1.050328174371336, 8 * math.pi / 9])
    for angle in np.concatenate([ends, 2 * math.pi - ends]):
        t = angle / w
        left, right = problem._cam_states(t - 1e-10), problem._cam_states(t + 1e-10)
        np.testing.assert_allclose(left[0, :2], right[0, :2], rtol=0, atol=1e-8 * w)
    assert abs(problem.cam_acceleration(ends[0] / w + 1e-10)[0]) > 1.0  # the jump of h''
    t = np.linspace(0.0, 2 * math.pi / w, 997)
    h = 1e-7
    inside = np.min(np.abs(((w * t) % (2 * math.pi))[:, None] - np.concatenate(
        [ends, 2 * math.pi - ends])[None, :]), axis=1) > 2 * w * h  # fmt: skip
    states, plus, minus = (problem._cam_states(t[inside] + s) for s in (0.0, h, -h))
    np.testing.assert_allclose((plus[:, 0] - minus[:, 0]) / (2 * h), states[:, 1], atol=1e-6 * w)
    np.testing.assert_allclose((plus[:, 1] - minus[:, 1]) / (2 * h), states[:, 2], atol=1e-5 * w**2)


@pytest.mark.parametrize("cam_angle", [0.25 * math.pi, 1.2, 2.0, 2.7, 4.0, 5.0])
def test_cam_follower_passes_the_check_on_each_arc(cam_angle):
    """Problem.check validates gap_rate = -h_c' and gap_drift = -h_c'' by differences in t at
    (t0, q0, v0): on the base circle, both flanks (rising and falling) and the dwell."""
    problem = CamFollower(cam_angle=cam_angle, t0=0.3, q0=0.6)
    problem.check()
    t, x = problem.t0, problem.q0
    assert problem.gap(t, x)[0] == pytest.approx(0.6 - problem.cam_position(t)[0], abs=1e-15)
    assert problem.gap_rate(t, x)[0] == -problem.cam_velocity(t)[0]
    assert problem.gap_drift(t, x, problem.v0)[0] == -problem.cam_acceleration(t)[0]
    force = problem.contact_force(t)[0]
    assert force == pytest.approx(
        problem.mass * problem.cam_acceleration(t)[0]
        + problem.stiffness * problem.cam_position(t)[0]
    )


def test_cam_follower_defaults_and_the_check_at_a_jump_of_the_drift():
    problem = PROBLEMS["CamFollower"]()
    assert (problem.mass, problem.stiffness, problem.rpm, problem.restitution) == (
        1.221, 1430.8, 358.0, 0.8,
    )  # fmt: skip
    assert problem.q0[0] == 0.4 and problem.v0[0] == 0.4 and problem.t0 == 0.0
    assert problem.gap(0.0, problem.q0)[0] == pytest.approx(0.3, abs=1e-15)  # base circle 0.1
    # at 358 rpm the cam decelerates faster than the spring can follow: the follower leaves it
    turn = np.linspace(0.0, 60.0 / 358.0, 4001)
    assert problem.contact_force(turn).min() < 0.0 < problem.contact_force(turn).max()
    # free flight: m x'' = -k x
    x, v = problem.free_flight(np.array([0.01]), 0.0, 0.4, 0.4)
    omega = math.sqrt(1430.8 / 1.221)
    assert x[0] == pytest.approx(
        0.4 * math.cos(0.01 * omega) + 0.4 / omega * math.sin(0.01 * omega)
    )
    # Siconos' own start, the end of the base circle, is where h_c'' jumps: the central
    # differences in t straddle the jump and disagree with the one-sided declarations
    with pytest.raises(ValueError, match="gap_(rate|drift)"):
        CamFollower(cam_angle=0.5 * math.pi)


@pytest.mark.parametrize(
    ("kwargs", "argname"),
    [
        (dict(rpm=0.0), "rpm"),
        (dict(restitution=-0.2), "restitution"),
        (dict(mass=-1.0), "mass"),
        (dict(stiffness=math.nan), "stiffness"),
        (dict(spring_offset=math.inf), "spring_offset"),
        (dict(q0=0.05), "q0"),  # below the base circle h_c = 0.1
        (dict(v0=None), "v0"),
        (dict(cam_angle=math.nan), "cam_angle"),
        (dict(t0="later"), "t0"),
    ],
)
def test_cam_follower_bad_input_is_refused_naming_the_argument(kwargs, argname):
    with pytest.raises(ValueError, match=argname):
        CamFollower(**kwargs)


# --------------------------------------------------------------------------------------------
# The analysis callers on a moving obstacle
# --------------------------------------------------------------------------------------------


def table_trajectory():
    """A tabulated run of the ball on the table at rest on it, then 1e-3 m inside it at two
    samples, then 2e-3 above it: the depth is measured against s(t_k), not s(0)."""
    problem = BallOnVibratingTable(q0=0.2)
    t = np.linspace(0.0, 0.4, 9)
    offset = np.array([0.2, 0.0, -1e-3, -1e-3, 2e-3, 0.0, 0.0, -4e-4, 0.0])
    q = problem.table_position(t) + offset
    v = problem.table_velocity(t)
    return problem, t, q[:, None], v[:, None], offset


def test_penetration_depths_read_the_obstacle_at_the_samples_times():
    problem, t, q, v, offset = table_trajectory()
    depths = penetration_depths(problem, q, t)
    np.testing.assert_allclose(depths, np.maximum(0.0, -offset), rtol=0, atol=1e-16)
    with pytest.raises(ValueError, match="t must"):
        penetration_depths(problem, q)
    run = make_trajectory(problem, MoreauJean(), t, q, v, steps=8, force_evaluations=8, h=0.05)
    assert max_penetration(problem, run, None) == pytest.approx(1e-3, abs=1e-16)
    assert late_penetration(problem, run, None) == pytest.approx(4e-4, abs=1e-16)


def test_energy_scale_takes_the_admissible_samples_at_their_times():
    """S = E_0 - min V over the samples with g(t_k, q_k) >= 0 (and k = 0): the samples inside
    the moving table, the lowest of them, do not count."""
    problem = BallOnVibratingTable(q0=0.2)
    low = 1.5 * math.pi / problem.angular_frequency  # the table at its lowest, s = -A
    t = np.array([0.0, 0.1, low, 0.3])
    offset = np.array([0.2, 0.01, -1e-3, 0.01])  # inside the table at its lowest only
    q = (problem.table_position(t) + offset)[:, None]
    v = np.array([[0.0], [0.3], [-0.2], [0.1]])
    run = make_trajectory(problem, MoreauJean(), t, q, v, steps=3, force_evaluations=3, h=0.1)
    gain, scale, index = energy_gain(problem, run)
    energies = problem.kinetic_energies(q, v) + problem.potential_energies(q)
    admissible = offset >= 0.0
    admissible[0] = True
    potential = problem.potential_energies(q)
    assert potential[~admissible].min() < potential[admissible].min()  # the test means something
    assert scale == pytest.approx(energies[0] - potential[admissible].min(), rel=1e-15)
    assert gain == pytest.approx(max(0.0, energies.max() - energies[0]), rel=1e-15)
    assert index == int(np.argmax(energies))


def test_make_trajectory_logs_velocities_relative_to_the_moving_obstacle():
    """On the exact period-1 orbit sampled as a time-stepper's output (the sample j at the
    impact time t1 after the impact, j - 1 at t1 - delta): the default log is U- = G v_{j-1} +
    r(t_{j-1}) = v_{j-1} - s'(t_{j-1}) and U+ = v_j - s'(t1) (the fixed-floor reading, G v,
    would log -V and V), the orbit's approach and take-off velocities to O(delta)."""
    problem = BallOnVibratingTable()
    t1 = problem.impact_times(problem.t0 + 0.5)[0]
    delta = 1e-6
    times = np.array([problem.t0, 0.5 * (problem.t0 + t1), t1 - delta, t1, t1 + 0.05])
    q, v = problem.exact_solution(times)
    run = make_trajectory(
        problem, MoreauJean(), times, q, v, steps=4, force_evaluations=4, impact_times=[t1]
    )
    orbit = problem.period_orbit(1)
    before, after = run.impacts.normal_velocity_before[0], run.impacts.normal_velocity_after[0]
    assert run.impacts.constraint.tolist() == [0]
    assert before == pytest.approx(v[2, 0] - problem.table_velocity(t1 - delta), rel=1e-15)
    assert after == pytest.approx(v[3, 0] - problem.table_velocity(t1), rel=1e-15)
    assert before == pytest.approx(orbit.approach_velocity, rel=1e-4)
    assert after == pytest.approx(orbit.relative_velocity, rel=1e-14)


class ConveyorFloor(Problem):
    """A block q = (x, y) on the floor y >= 0 carried by a belt at speed c along x (Coulomb
    friction): g = y, W_T = (1, 0), tau = -c (the slip relative to the belt is v_x - c); a
    frictional problem with a moving obstacle, written in plain Python."""

    rheonomic = True

    def __init__(self, belt_speed: float = 0.5) -> None:
        self.name, self.restitution, self.t0 = "ConveyorFloor", 0.0, 0.0
        self.belt_speed = belt_speed
        self.q0, self.v0 = np.array([0.0, 0.0]), np.array([0.0, 0.0])
        self.check()

    def mass_matrix(self, q):
        return np.eye(2)

    def forces(self, t, q, v):
        return np.array([0.0, -9.81])

    def potential_energy(self, q):
        return 9.81 * float(q[1])

    def gap(self, t, q):
        return np.array([q[1]])

    def gap_gradient(self, t, q):
        return np.array([[0.0, 1.0]])

    def gap_rate(self, t, q):
        return np.zeros(1)

    def gap_drift(self, t, q, v):
        return np.zeros(1)

    def tangent_gradient(self, t, q):
        return np.array([[1.0, 0.0]])

    def tangent_rate(self, t, q):
        return np.array([-self.belt_speed])

    def tangent_drift(self, t, q, v):
        return np.zeros(1)

    def friction(self, q):
        return np.array([0.4]), np.array([0.0])


def test_contact_states_slip_relative_to_the_moving_belt():
    belt = ConveyorFloor(belt_speed=0.5)
    t = np.array([0.0, 0.1, 0.2, 0.3])
    q = np.array([[0.0, 0.0], [0.01, 0.0], [0.05, 0.0], [0.1, 0.2]])
    v = np.array([[0.0, 0.0], [0.25, 0.0], [0.5, 0.0], [0.5, 1.0]])
    states = contact_states(belt, q, v, t)
    np.testing.assert_allclose(states.slip[:3, 0], [-0.5, -0.25, 0.0], rtol=0, atol=1e-16)
    assert states.state[:, 0].tolist() == [SLIP, SLIP, STICK, OPEN]
    with pytest.raises(ValueError, match="t must"):
        contact_states(belt, q, v)


def test_figures_draw_the_gap_and_the_impact_speeds_relative_to_the_obstacle():
    """The trajectory figure of a tabulated run on the table's exact orbit: its gap panel is
    g(t_k, x_k) = x_k - s(t_k) (>= 0, not x_k), its impact map marks the reference impacts at the
    relative approach speed -U- = 2 g pi / ((1 + e) omega) (not the ball's speed V); the
    overlay figure's gap panel likewise."""
    import matplotlib

    matplotlib.use("Agg")
    from impactbench.analysis.reference import Reference
    from impactbench.bench.plotting import overlay_figure
    from impactbench.bench.trajectory_figure import trajectory_figure

    problem = BallOnVibratingTable()
    t_end = problem.t0 + 0.5
    t = np.linspace(problem.t0, t_end, 201)
    q, v = problem.exact_solution(t)
    run = make_trajectory(
        problem, MoreauJean(), t, q, v, steps=200, force_evaluations=200, h=t[1] - t[0]
    )
    expected_gap = q[:, 0] - problem.table_position(t)
    assert expected_gap.min() >= 0.0 and not np.allclose(expected_gap, q[:, 0], atol=1e-3)
    figure = trajectory_figure(problem, run, Reference.exact(problem, t_end))
    ax_map, ax_gap = figure.axes[3], figure.axes[4]
    gap_line = ax_gap.get_lines()[0]
    np.testing.assert_allclose(gap_line.get_ydata(), expected_gap, rtol=0, atol=1e-15)
    assert ax_gap.get_ylabel().startswith("$g(t, q)$")
    (marks,) = [line for line in ax_map.get_lines() if line.get_marker() == "x"]
    speed = -problem.period_orbit(1).approach_velocity
    np.testing.assert_allclose(marks.get_ydata(), speed, rtol=1e-6)
    assert speed != pytest.approx(problem.period_orbit(1).ball_velocity, rel=1e-3)
    overlay = overlay_figure(problem, [run])
    lines = [line.get_ydata() for ax in overlay.axes for line in ax.get_lines()]
    drawn_gaps = [y for y in lines if len(y) == len(t) and np.allclose(y, expected_gap)]
    assert drawn_gaps, "the overlay's gap panel draws g(t_k, q_k)"
