"""The ball on a vibrating table as a problem (problems/ball_on_vibrating_table.py): its declared
kernels against the table's motion and Problem.check, its start on the period-n orbit against the
exact impact map of problems/vibrating_table.py (a fixed point of the map, iterated
independently here: the flight checked against the table on a fine grid, Newton's law on the
relative velocity at the landing), the delegated closed forms, and bad input refused naming the
argument. No method integrates a moving obstacle yet on this branch: no simulation here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from impactbench.problems import PROBLEMS, BallOnVibratingTable, ball_on_vibrating_table
from impactbench.problems.bouncing_ball import PARAMETERS as BALL_PARAMETERS
from impactbench.problems.vibrating_table import (
    TWO_PI,
    VibratingTable,
    period_doubling_acceleration,
)

GRAVITY = 9.81
EPS = float(np.finfo(float).eps)


def ball(gamma: float = 1.3, restitution: float = 0.5, omega: float = 20.0, **kwargs):
    """The ball on a table of dimensionless acceleration ``gamma`` at ``omega`` rad/s."""
    amplitude = gamma * GRAVITY / omega**2
    return BallOnVibratingTable(amplitude, omega, restitution, GRAVITY, **kwargs)


def test_registered_and_checked_with_its_declared_kernels():
    problem = PROBLEMS["BallOnVibratingTable"](mass=2.0)
    # M and F are the bouncing ball's kernels, reading gravity and mass at the same indices
    assert ball_on_vibrating_table.PARAMETERS[:2] == BALL_PARAMETERS
    assert problem.mass_matrix(problem.q0)[0, 0] == 2.0
    assert problem.forces(problem.t0, problem.q0, problem.v0)[0] == -2.0 * GRAVITY
    assert problem.rheonomic and problem.kernels().rheonomic and problem.kernels().affine_gap
    assert not problem.conservative  # a moving table does work on the ball
    problem.check()
    # a start with a given state, at several table phases (rising, falling, at rest on it)
    for t0 in (0.0, 0.05, 0.2, 0.31):
        start = ball(q0=0.5, v0=-1.0, t0=t0)
        start.check()
        on_table = ball(
            q0=float(start.table_position(t0)), v0=float(start.table_velocity(t0)), t0=t0
        )
        assert on_table.gap(t0, on_table.q0)[0] == 0.0


@pytest.mark.parametrize("omega", [20.0, 2.0 * math.pi * 50.0])
def test_kernels_are_the_table_motion_and_its_derivatives(omega):
    """g = x - A sin(w t), G = 1, r = -A w cos(w t), c = A w^2 sin(w t), at times up to 100 s
    (the obstacle's time scale need not be 1)."""
    problem = ball(gamma=1.2, omega=omega, q0=1.0)
    amplitude = problem.amplitude
    x = np.array([0.37])
    for t in np.linspace(0.0, 100.0, 37):
        phase = omega * t
        assert problem.gap(t, x)[0] == pytest.approx(0.37 - amplitude * math.sin(phase), abs=1e-15)
        assert problem.gap_gradient(t, x)[0, 0] == 1.0
        rate = problem.gap_rate(t, x)[0]
        assert rate == pytest.approx(-amplitude * omega * math.cos(phase), rel=1e-14, abs=1e-15)
        drift = problem.gap_drift(t, x, np.array([3.0]))[0]
        assert drift == pytest.approx(amplitude * omega**2 * math.sin(phase), rel=1e-14, abs=1e-13)
        # the closed-form table motion of vibrating_table.py
        assert problem.gap(t, x)[0] == pytest.approx(0.37 - problem.table_position(t), abs=1e-15)
        assert rate == pytest.approx(-problem.table_velocity(t), rel=1e-14, abs=1e-15)
        assert drift == pytest.approx(-problem.table_acceleration(t), rel=1e-14, abs=1e-13)


def test_a_wrong_declared_drift_is_refused():
    """The check would see a sign error in the declared drift (it is not decorative)."""

    class WrongDrift(BallOnVibratingTable):
        def gap_drift(self, t, q, v):
            return -super().gap_drift(t, q, v)

    with pytest.raises(ValueError, match="gap_drift"):
        WrongDrift(0.03, 20.0, 0.5, q0=1.0, t0=0.1)


def flight_gap(problem, t_start, x_start, v_start, t):
    """x(t) - s(t) of the free parabola from (t_start, x_start, v_start), by hand."""
    tau = t - t_start
    x = x_start + v_start * tau - 0.5 * problem.gravity * tau**2
    return x - problem.amplitude * np.sin(problem.angular_frequency * t)


@pytest.mark.parametrize(
    ("gamma", "restitution", "n"), [(1.2232, 0.5, 1), (1.45, 0.5, 1), (2.3, 0.5, 2), (1.6, 0.6, 1)]
)
def test_the_orbit_start_is_a_fixed_point_of_the_exact_impact_map(gamma, restitution, n):
    problem = ball(gamma, restitution, orbit_periods=n)
    w, g = problem.angular_frequency, problem.gravity
    period = TWO_PI * n / w
    # the start: the apex of the flight, v0 = 0, half the flight after a take-off
    assert problem.v0[0] == 0.0
    t1 = problem.impact_times(problem.t0 + 1.5 * period)[0]
    assert t1 == pytest.approx(problem.t0 + 0.5 * period, rel=1e-14)
    # the landing of the flight from the start, located by hand: on the table at t1
    assert abs(flight_gap(problem, problem.t0, problem.q0[0], 0.0, t1)) <= 64 * EPS
    # the flight stays above the table (grazing excluded) on a fine grid of the whole flight
    grid = np.linspace(t1 - period, t1, 20001)[1:-1]
    x_grid, _ = problem.exact_solution(grid[grid >= problem.t0])
    assert np.all(x_grid[:, 0] - problem.table_position(grid[grid >= problem.t0]) > 0.0)
    assert np.all(flight_gap(problem, t1 - period, problem.table_position(t1 - period),
                             g * math.pi * n / w, grid) > 0.0)  # fmt: skip
    # Newton's law on the relative velocity at t1: U+ = -e U-
    before, after = problem.exact_solution(np.array([t1 - 1e-9, t1]))[1][:, 0]
    table_speed = float(problem.table_velocity(t1))
    u_minus = (before - g * 1e-9) - table_speed  # v(t1-) = v(t1 - 1e-9) - g 1e-9
    u_plus = after - table_speed
    assert u_plus == pytest.approx(-restitution * u_minus, rel=1e-12)
    # ... and the exact impact map takes (phase, u+) of that impact into itself after n periods
    impact = problem.impact_map((w * t1) % TWO_PI, u_plus)
    assert impact.elapsed_phase == pytest.approx(TWO_PI * n, rel=1e-12)
    assert impact.rest_phase == 0.0
    assert impact.phase == pytest.approx((w * t1) % TWO_PI, abs=1e-11)
    assert impact.relative_velocity == pytest.approx(u_plus, rel=1e-11)
    assert impact.approach_velocity == pytest.approx(u_minus, rel=1e-9)
    orbit = problem.period_orbit(n)
    assert orbit.phase == pytest.approx((w * t1) % TWO_PI, abs=1e-12)
    # the exact solution repeats with the flight: state at t and at t + 2 pi n / omega
    t = problem.t0 + np.linspace(0.0, 3.0 * period, 41)
    x, v = problem.exact_solution(t)
    x_later, v_later = problem.exact_solution(t + period)
    np.testing.assert_allclose(x_later, x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(v_later, v, rtol=0, atol=1e-12)


def test_period_orbit_state_takes_off_from_the_table():
    problem = ball(1.3, 0.5)
    orbit = problem.period_orbit(1)
    t, x, v = problem.period_orbit_state(1)
    assert t == orbit.phase / problem.angular_frequency
    assert x == pytest.approx(float(problem.table_position(t)), abs=1e-16)
    assert v == pytest.approx(GRAVITY * math.pi / problem.angular_frequency, rel=1e-15)
    assert v - float(problem.table_velocity(t)) == pytest.approx(orbit.relative_velocity, rel=1e-13)
    landing = problem.period_orbit_state(1, elapsed=TWO_PI / problem.angular_frequency)
    assert landing[1] == pytest.approx(x, abs=1e-14) and landing[2] == pytest.approx(-v, rel=1e-14)


def test_closed_forms_are_those_of_the_vibrating_table():
    problem = ball(1.3, 0.5)
    table = VibratingTable(problem.amplitude, problem.angular_frequency, 0.5, GRAVITY)
    assert problem.acceleration_ratio == pytest.approx(1.3, rel=1e-15)
    # the numbers of the class docstring (its defaults: Gamma = 0.03 * 20^2 / 9.81, e = 0.5)
    default = BallOnVibratingTable()
    assert round(default.acceleration_ratio, 4) == 1.2232
    assert round(default.birth_acceleration(1), 4) == 1.0472
    assert round(default.period_doubling_acceleration(1), 4) == 1.5268
    assert problem.period_doubling_acceleration(2) == period_doubling_acceleration(2, 0.5)
    np.testing.assert_array_equal(problem.period_orbit_jacobian(1), table.period_orbit_jacobian(1))
    multipliers = problem.period_orbit_multipliers(1)
    assert np.all(np.abs(multipliers) < 1.0)  # Gamma_sn < 1.3 < Gamma_pd: stable
    assert np.prod(multipliers).real == pytest.approx(0.25, rel=1e-12)  # det J = e^2


def test_release_where_the_table_accelerates_below_minus_g():
    problem = ball(1.3, 0.5, q0=1.0)
    phase = problem.release_phase()
    assert math.sin(phase) == pytest.approx(1.0 / 1.3, rel=1e-15) and 0.0 < phase < math.pi / 2
    # a ball at rest at t = 0.5 leaves at the next release time, where the contact force vanishes
    leaving = problem.release_time(0.5)
    assert leaving >= 0.5
    assert (problem.angular_frequency * leaving - phase) / TWO_PI == pytest.approx(
        round((problem.angular_frequency * leaving - phase) / TWO_PI), abs=1e-12
    )
    assert abs(problem.contact_force(leaving)) <= 1e-12 * GRAVITY
    before = np.linspace(0.5, leaving, 2001)[:-1]
    assert np.all(problem.contact_force(before) > 0.0)  # pressed on the table until then
    assert math.isinf(ball(0.9, 0.5, q0=1.0).release_time(0.5))  # Gamma < 1: never leaves
    with pytest.raises(ValueError, match="amplitude"):
        ball(0.9, 0.5, q0=1.0).release_phase()


@pytest.mark.parametrize(
    ("kwargs", "argname"),
    [
        (dict(amplitude=0.0), "amplitude"),
        (dict(amplitude=math.nan), "amplitude"),
        (dict(angular_frequency=-1.0), "angular_frequency"),
        (dict(restitution=1.0), "restitution"),
        (dict(restitution=-0.1), "restitution"),
        (dict(gravity=math.inf), "gravity"),
        (dict(mass=0.0), "mass"),
        (dict(q0=-0.5), "q0"),
        (dict(q0=math.nan), "q0"),
        (dict(q0=1.0, v0="fast"), "v0"),
        (dict(v0=1.0), "v0"),
        (dict(t0=1.0), "t0"),
        (dict(orbit_periods=0), "orbit_periods"),
        (dict(orbit_periods=1.5), "orbit_periods"),
        (dict(amplitude=0.01), "orbit_periods"),  # Gamma = 0.41 < Gamma_sn: no period-1 orbit
        (dict(orbit_periods=3), "orbit_periods"),  # Gamma = 1.22 < Gamma_sn(3) = 3.14
    ],
)
def test_bad_input_is_refused_naming_the_argument(kwargs, argname):
    with pytest.raises(ValueError, match=argname):
        BallOnVibratingTable(**kwargs)


def test_methods_refuse_bad_arguments_naming_them():
    problem = ball(1.3, 0.5)
    with pytest.raises(ValueError, match="elapsed"):
        problem.period_orbit_state(1, elapsed=-1.0)
    with pytest.raises(ValueError, match="n must"):
        problem.period_orbit_state(0)
    with pytest.raises(ValueError, match="t must"):
        problem.exact_solution(np.array([problem.t0 - 1.0]))
    with pytest.raises(ValueError, match="max_count"):
        problem.impact_times(problem.t0 + 1.0, max_count=0)
    with pytest.raises(NotImplementedError, match="period-n orbit"):
        ball(1.3, 0.5, q0=1.0).exact_solution(np.array([0.0]))
