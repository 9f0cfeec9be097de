"""Closed forms of the ball on a vibrating table (problems/vibrating_table.py) against the exact
impact map iterated numerically: period-n orbits, their Jacobian and thresholds, the take-off
from rest and the chatter. Pure NumPy/SciPy (no compilation).

Velocities are compared in the scaled unit g/omega, phases in radians; EPS is the unit round-off.
No figure is quoted from Luck & Mehta (1993, Phys. Rev. E 48, 3988) or Barroso, Carneiro &
Macau (2009, Phys. Rev. E 79, 026206), whose texts were not at hand: the thresholds are checked
against the iterated exact map, and Holmes' high-bounce map (Holmes 1982, J. Sound Vib. 84, 173)
is iterated beside it to show that the exact threshold is not the high-bounce one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from impactbench.problems.vibrating_table import (
    VibratingTable,
    birth_acceleration,
    high_bounce_period_doubling_acceleration,
    period_doubling_acceleration,
)

GRAVITY = 9.81
OMEGA = 2.0 * math.pi * 10.0  # a 10 Hz table
EPS = float(np.finfo(float).eps)
TWO_PI = 2.0 * math.pi


def table(gamma: float, restitution: float) -> VibratingTable:
    """The table of dimensionless acceleration ``gamma`` at 10 Hz."""
    return VibratingTable(gamma * GRAVITY / OMEGA**2, OMEGA, restitution, GRAVITY)


def iterate(vibrating: VibratingTable, phase: float, velocity: float, count: int) -> np.ndarray:
    """``count`` impacts of the exact map from (phase, u [m/s]): rows (phase, u omega/g)."""
    states = np.empty((count, 2))
    for k in range(count):
        impact = vibrating.impact_map(phase, velocity)
        phase, velocity = impact.phase, impact.relative_velocity
        states[k] = phase, velocity / vibrating.velocity_scale
    return states


def phase_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| on the circle (phases near 0 and 2 pi are close)."""
    d = np.abs(np.asarray(a) - np.asarray(b)) % TWO_PI
    return np.minimum(d, TWO_PI - d)


def state_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Max-norm distance of (phase, scaled velocity) states, the phase on the circle."""
    return float(
        max(phase_distance(a[..., 0], b[..., 0]).max(), np.abs(a[..., 1] - b[..., 1]).max())
    )


# --------------------------------------------------------------------------------------------
# Period-n orbits are fixed points of the exact map
# --------------------------------------------------------------------------------------------

ORBITS = [  # (n, Gamma, e, stable_branch): Gamma between birth and period doubling, or a saddle
    (1, 1.3, 0.5, True),
    (1, 1.3, 0.5, False),
    (2, 2.2, 0.5, True),
    (2, 2.2, 0.5, False),
    (1, 0.9, 0.8, True),
    (2, 1.0, 0.8, True),
    (3, 3.5, 0.6, True),
]


def roundoff_budget(vibrating: VibratingTable, n: int) -> tuple[float, float]:
    """Round-off bounds on one step of the exact map from a period-n orbit (scaled units).

    The landing solves f(y) = F(y)/y = 0, a sum of terms each at most
    M = u + (1 + Gamma) y/2 + 2 Gamma in size: each evaluation errs by a few ulps of M (8 eps M
    allowed). At the orbit |f'(y*)| = |u-|/y* = 1/(1 + e), so the root moves by
    8 eps M (1 + e); Brent's stopping rule adds 4 eps y*, and the closed form's own rounding of
    (phi*, u*), propagated by d y/d phi = -(1 + e) Gamma sin(phi*) and d y/d u = 1 + e, adds a
    few eps (1 + e)(Gamma + u). The flight time's bound is 16 eps ((1 + e) M + y*), which covers
    these with a factor 2. The take-off velocity u' = -e F'(y*) moves by
    e (|F''| dy + 16 eps M), with |F''| <= 1 + Gamma.
    """
    gamma, e = vibrating.acceleration_ratio, vibrating.restitution
    flight = TWO_PI * n
    u = vibrating.period_orbit(n).relative_velocity / vibrating.velocity_scale
    size = u + (1.0 + gamma) * flight / 2.0 + 2.0 * gamma
    flight_bound = 16.0 * EPS * ((1.0 + e) * size + flight)
    velocity_bound = e * ((1.0 + gamma) * flight_bound + 16.0 * EPS * size)
    return flight_bound, velocity_bound


@pytest.mark.parametrize(("n", "gamma", "e", "stable_branch"), ORBITS)
def test_period_n_orbit_is_a_fixed_point_of_the_exact_map(n, gamma, e, stable_branch):
    vibrating = table(gamma, e)
    orbit = vibrating.period_orbit(n, stable_branch)
    scale = vibrating.velocity_scale
    # the closed forms of the derivation: cos(phi*) and the three velocities
    assert math.cos(orbit.phase) == pytest.approx(
        GRAVITY * math.pi * n * (1 - e) / (vibrating.amplitude * OMEGA**2 * (1 + e)), rel=4 * EPS
    )
    assert (math.sin(orbit.phase) > 0) == stable_branch
    assert orbit.ball_velocity == pytest.approx(GRAVITY * math.pi * n / OMEGA, rel=4 * EPS)
    take_off_ball = orbit.relative_velocity + vibrating.table_velocity(orbit.phase)
    assert take_off_ball == pytest.approx(orbit.ball_velocity, rel=1e-14)  # V = u + A w cos(phi)
    assert orbit.relative_velocity == pytest.approx(-e * orbit.approach_velocity, rel=4 * EPS)

    impact = vibrating.impact_map(orbit.phase, orbit.relative_velocity)
    flight_bound, velocity_bound = roundoff_budget(vibrating, n)
    assert impact.rest_phase == 0.0
    assert abs(impact.elapsed_phase - TWO_PI * n) <= flight_bound
    assert abs(impact.relative_velocity - orbit.relative_velocity) / scale <= velocity_bound
    assert abs(impact.approach_velocity - orbit.approach_velocity) / scale <= velocity_bound / e
    assert phase_distance(impact.phase, orbit.phase) <= flight_bound + 4 * EPS * TWO_PI
    assert vibrating.period_orbit_clears_table(n, stable_branch)


def test_a_saddle_orbit_whose_flight_hits_the_table_is_no_orbit_of_the_exact_map():
    """At Gamma = 4, e = 0.5 the saddle root takes off low on the table (sin(phi*) < 0), which
    accelerates upwards at 3.9 g: the relative motion starts as 2.1 y - 4.9 y^2/2 and the ball is
    caught after y near 0.86, long before its period. The stable root clears the table."""
    vibrating = table(4.0, 0.5)
    saddle = vibrating.period_orbit(1, stable_branch=False)
    impact = vibrating.impact_map(saddle.phase, saddle.relative_velocity)
    assert 0.5 < impact.elapsed_phase < 1.5
    assert not vibrating.period_orbit_clears_table(1, stable_branch=False)
    assert vibrating.period_orbit_clears_table(1, stable_branch=True)


def test_with_e_zero_the_period_one_orbit_needs_the_ball_to_leave_at_once():
    """e = 0: u* = 0, the ball leaves at once only where Gamma sin(phi*) >= 1, i.e. above
    sqrt(1 + pi^2) = 3.297; between pi and that the closed-form phase is a rest on the table."""
    free_flight = math.sqrt(1 + math.pi**2)
    assert not table(0.99 * free_flight, 0.0).period_orbit_clears_table(1)
    assert table(1.01 * free_flight, 0.0).period_orbit_clears_table(1)
    resting = table(0.99 * free_flight, 0.0)
    orbit = resting.period_orbit(1)
    assert orbit.relative_velocity == 0.0
    assert resting.impact_map(orbit.phase, 0.0).rest_phase > 0.0


def test_no_period_orbit_below_its_birth():
    e = 0.5
    birth = birth_acceleration(2, e)
    assert birth == pytest.approx(2 * math.pi * (1 - e) / (1 + e), rel=4 * EPS)
    with pytest.raises(ValueError, match="n: no period-2 orbit"):
        table(birth * (1 - 1e-9), e).period_orbit(2)
    orbit = table(birth, e).period_orbit(2)  # born at phase 0, both roots merged
    assert orbit.phase == pytest.approx(0.0, abs=1e-7)


# --------------------------------------------------------------------------------------------
# The analytic Jacobian against finite differences of the numerical map
# --------------------------------------------------------------------------------------------

#: Central-difference step in scaled units. The map is evaluated with an absolute error
#: eta of order 1e-14 (roundoff_budget); central differences err by eta/h + h^2 |D^3|/6. With
#: h = 1e-5 the round-off part is 1e-9 and the truncation part 1e-10 |D^3| (third derivatives
#: of the smooth flight map, far from grazing, are O(10)): a tolerance of 1e-6 on entries of
#: size O(1) leaves a margin of 100 and catches any wrong term of the Jacobian.
FD_STEP = 1e-5
FD_TOLERANCE = 1e-6


def scaled_map(vibrating: VibratingTable, state: np.ndarray) -> np.ndarray:
    """The exact map in (phase unwrapped, u omega/g)."""
    phase, velocity = state
    impact = vibrating.impact_map(phase, velocity * vibrating.velocity_scale)
    assert impact.rest_phase == 0.0
    return np.array(
        [phase + impact.elapsed_phase, impact.relative_velocity / vibrating.velocity_scale]
    )


def finite_difference_jacobian(vibrating: VibratingTable, state: np.ndarray) -> np.ndarray:
    columns = []
    for k in range(2):
        step = np.zeros(2)
        step[k] = FD_STEP
        plus, minus = scaled_map(vibrating, state + step), scaled_map(vibrating, state - step)
        columns.append((plus - minus) / (2 * FD_STEP))
    return np.column_stack(columns)


def scaled_jacobian(vibrating: VibratingTable, jacobian: np.ndarray) -> np.ndarray:
    """A Jacobian in (phase, u [m/s]) converted to (phase, u omega/g)."""
    scale = vibrating.velocity_scale
    return jacobian * np.array([[1.0, scale], [1.0 / scale, 1.0]])


@pytest.mark.parametrize(("n", "gamma", "e", "stable_branch"), ORBITS)
def test_closed_form_jacobian_at_the_orbit_matches_finite_differences(n, gamma, e, stable_branch):
    vibrating = table(gamma, e)
    orbit = vibrating.period_orbit(n, stable_branch)
    state = np.array([orbit.phase, orbit.relative_velocity / vibrating.velocity_scale])
    closed = scaled_jacobian(vibrating, vibrating.period_orbit_jacobian(n, stable_branch))
    numerical = finite_difference_jacobian(vibrating, state)
    assert np.abs(closed - numerical).max() <= FD_TOLERANCE * max(1.0, np.abs(closed).max())
    general = vibrating.impact_map_jacobian(orbit.phase, orbit.relative_velocity)
    assert np.abs(scaled_jacobian(vibrating, general) - closed).max() <= 1e-12 * max(
        1.0, np.abs(closed).max()
    )


GENERIC_STATES = [(0.3, 1.7), (2.0, 0.9), (4.5, 2.5), (3.5, 1.4)]  # (phase, u omega / g)


@pytest.mark.parametrize(("phase", "velocity"), GENERIC_STATES)
def test_the_map_lands_on_the_table_in_physical_units(phase, velocity):
    """The free flight x(t) = s(t0) + (u + s'(t0)) (t - t0) - g (t - t0)^2 / 2 written out in
    metres and seconds meets the table at the returned impact, with the returned velocities."""
    vibrating = table(1.8, 0.6)
    u = velocity * vibrating.velocity_scale
    impact = vibrating.impact_map(phase, u)
    flight = impact.elapsed_phase / OMEGA
    landing = phase + impact.elapsed_phase
    take_off_velocity = u + vibrating.table_velocity(phase)
    ball = vibrating.table_position(phase) + take_off_velocity * flight - GRAVITY * flight**2 / 2
    # heights of order A + V^2/g, each term rounded: a few ulps of the largest
    size = vibrating.amplitude + take_off_velocity**2 / GRAVITY
    assert ball - vibrating.table_position(landing) == pytest.approx(0.0, abs=64 * EPS * size)
    approach = take_off_velocity - GRAVITY * flight - vibrating.table_velocity(landing)
    assert impact.approach_velocity == pytest.approx(approach, rel=1e-12)
    assert impact.relative_velocity == pytest.approx(-0.6 * approach, rel=1e-12)
    assert impact.phase == pytest.approx(landing % TWO_PI, abs=4 * EPS * landing)


@pytest.mark.parametrize(("phase", "velocity"), GENERIC_STATES)
def test_analytic_jacobian_at_any_take_off_matches_finite_differences(phase, velocity):
    vibrating = table(1.8, 0.6)
    state = np.array([phase, velocity])
    impact = vibrating.impact_map(phase, velocity * vibrating.velocity_scale)
    # transversal landings only: near grazing (u- -> 0) the map's derivatives blow up like
    # 1/u- and the step-size argument of FD_STEP no longer holds
    assert impact.approach_velocity / vibrating.velocity_scale < -0.5
    analytic = scaled_jacobian(
        vibrating, vibrating.impact_map_jacobian(phase, velocity * vibrating.velocity_scale)
    )
    numerical = finite_difference_jacobian(vibrating, state)
    assert np.abs(analytic - numerical).max() <= FD_TOLERANCE * max(1.0, np.abs(analytic).max())
    # det J = e^2 u / u' for the exact map, checked on the finite differences as well
    u_next = impact.relative_velocity / vibrating.velocity_scale
    expected = 0.6**2 * velocity / u_next
    assert np.linalg.det(analytic) == pytest.approx(expected, rel=1e-12)
    assert np.linalg.det(numerical) == pytest.approx(expected, rel=1e-5)


@pytest.mark.parametrize(("n", "gamma", "e", "stable_branch"), ORBITS)
def test_orbit_jacobian_has_determinant_e_squared_and_the_stated_multipliers(
    n, gamma, e, stable_branch
):
    vibrating = table(gamma, e)
    jacobian = vibrating.period_orbit_jacobian(n, stable_branch)
    assert np.linalg.det(jacobian) == pytest.approx(e * e, rel=1e-13)
    multipliers = vibrating.period_orbit_multipliers(n, stable_branch)
    assert np.sort_complex(multipliers) == pytest.approx(
        np.sort_complex(np.linalg.eigvals(jacobian).astype(complex)), abs=1e-13
    )
    stable = birth_acceleration(n, e) < gamma < period_doubling_acceleration(n, e)
    assert (np.abs(multipliers).max() < 1.0) == (stable and stable_branch)
    if not stable_branch:  # the saddle: one multiplier above 1
        assert multipliers[0].real > 1.0 and multipliers[0].imag == 0.0


@pytest.mark.parametrize("e", [0.0, 0.3, 0.5, 0.8])
@pytest.mark.parametrize("n", [1, 2])
def test_a_multiplier_is_minus_one_at_the_period_doubling_threshold(n, e):
    vibrating = table(period_doubling_acceleration(n, e), e)
    multipliers = vibrating.period_orbit_multipliers(n)
    assert multipliers[0] == pytest.approx(-1.0, abs=1e-12)
    assert multipliers[1] == pytest.approx(-e * e, abs=1e-12)
    # the exact threshold lies above Holmes' high-bounce one for e < 1
    assert period_doubling_acceleration(n, e) > high_bounce_period_doubling_acceleration(n, e)


def test_exact_and_high_bounce_thresholds_agree_as_e_tends_to_one():
    """2 (1 + e^2)/(1 + e)^2 = 1 + ((1 - e)/(1 + e))^2: the gap is (1 - e)^2/4 to leading order."""
    for e in (0.9, 0.99, 0.999):
        gap = period_doubling_acceleration(1, e) - high_bounce_period_doubling_acceleration(1, e)
        assert gap == pytest.approx((1 - e) ** 2 / 4, rel=2 * (1 - e) + 1e-6)


# --------------------------------------------------------------------------------------------
# Period doubling of the iterated exact map
# --------------------------------------------------------------------------------------------

#: Iterations before the attractor is read. Below the threshold (1 % under it) the slowest
#: multiplier has modulus at most 0.94 (e in {0, 0.5, 0.8}), so 500 iterations shrink a 1e-3
#: perturbation below 1e-16; above it the 2-cycle attracts at a comparable rate.
TRANSIENT = 500


@pytest.mark.parametrize("e", [0.0, 0.5, 0.8])
def test_iterated_map_is_period_one_below_and_period_two_above_the_threshold(e):
    threshold = period_doubling_acceleration(1, e)
    below = table(threshold * 0.99, e)
    orbit = below.period_orbit(1)
    start = (orbit.phase + 1e-3, orbit.relative_velocity)
    states = iterate(below, *start, TRANSIENT)
    fixed = np.array([orbit.phase, orbit.relative_velocity / below.velocity_scale])
    assert state_distance(states[-1], fixed) < 1e-10

    above = table(threshold * 1.01, e)
    orbit = above.period_orbit(1)
    states = iterate(above, orbit.phase + 1e-3, orbit.relative_velocity, TRANSIENT)
    assert state_distance(states[-1], states[-3]) < 1e-10  # a 2-cycle ...
    assert state_distance(states[-1], states[-2]) > 1e-2  # ... not the period-1 orbit
    fixed = np.array([orbit.phase, orbit.relative_velocity / above.velocity_scale])
    # the cycle straddles the (now unstable) orbit
    assert (states[-1, 0] - fixed[0]) * (states[-2, 0] - fixed[0]) < 0.0


@pytest.mark.parametrize("e", [0.0, 0.5])
def test_just_past_the_high_bounce_threshold_the_exact_map_is_still_period_one(e):
    """Holmes' approximation period-doubles at sqrt(Gamma_sn^2 + 1), the exact map only at
    Gamma_pd (3.297 and 3.724 for e = 0; 1.448 and 1.527 for e = 0.5). 1 % past the former,
    Holmes' map iterated has a 2-cycle while the exact map converges to its period-1 orbit."""
    gamma = 1.01 * high_bounce_period_doubling_acceleration(1, e)
    assert gamma < period_doubling_acceleration(1, e)
    vibrating = table(gamma, e)
    orbit = vibrating.period_orbit(1)
    states = iterate(vibrating, orbit.phase + 1e-3, orbit.relative_velocity, TRANSIENT)
    fixed = np.array([orbit.phase, orbit.relative_velocity / vibrating.velocity_scale])
    assert state_distance(states[-1], fixed) < 1e-10

    # Holmes' (1982) high-bounce map, in the scaled absolute velocity v = 2 omega V / g:
    # phi' = phi + v, v' = e v + 2 (1 + e) Gamma cos(phi'); its period-1 orbit is v = 2 pi at
    # the same phase, and its trace 1 + e - 2 (1 + e) Gamma sin(phi) reaches -(1 + e) at
    # Gamma sin(phi) = 1.
    phase, velocity = orbit.phase + 1e-3, 2 * math.pi
    cycle = []
    for _ in range(TRANSIENT):
        phase = (phase + velocity) % TWO_PI
        velocity = e * velocity + 2 * (1 + e) * gamma * math.cos(phase)
        cycle.append((phase, velocity))
    cycle = np.array(cycle)
    assert state_distance(cycle[-1], cycle[-3]) < 1e-10
    assert state_distance(cycle[-1], cycle[-2]) > 1e-2


def test_two_cycle_amplitude_extrapolates_to_the_period_doubling_threshold():
    """Past a (supercritical) flip the squared spread of the 2-cycle grows linearly in
    Gamma - Gamma_pd; the line through the spreads at 1 % and 2 % above the closed-form
    threshold must cross zero at it. The quadratic term of the normal form moves the crossing
    by O(delta_1 delta_2) relative, a few 1e-4: a threshold wrong by 0.2 % fails."""
    e = 0.5
    threshold = period_doubling_acceleration(1, e)
    spreads = []
    gammas = [threshold * 1.01, threshold * 1.02]
    for gamma in gammas:
        vibrating = table(gamma, e)
        orbit = vibrating.period_orbit(1)
        states = iterate(vibrating, orbit.phase + 1e-3, orbit.relative_velocity, TRANSIENT)
        spreads.append(float(phase_distance(states[-1, 0], states[-2, 0])) ** 2)
    slope = (spreads[1] - spreads[0]) / (gammas[1] - gammas[0])
    crossing = gammas[0] - spreads[0] / slope
    assert abs(crossing - threshold) / threshold < 2e-3


# --------------------------------------------------------------------------------------------
# Grazing: the first root, not the first sampled sign change
# --------------------------------------------------------------------------------------------


def grazing_take_off(phase: float, grazing_time: float) -> tuple[float, float]:
    """(u omega/g, Gamma) for which the flight from ``phase`` touches the table tangentially at
    the scaled time ``grazing_time``: F = F' = 0 there, linear in (u, Gamma)."""
    s, c, y = math.sin(phase), math.cos(phase), grazing_time
    matrix = np.array(
        [
            [y, s * (1 - math.cos(y)) + c * (y - math.sin(y))],
            [1.0, s * math.sin(y) + c * (1 - math.cos(y))],
        ]
    )
    velocity, gamma = np.linalg.solve(matrix, [0.5 * y * y, y])
    return float(velocity), float(gamma)


def dense_first_landing(phase: float, velocity: float, gamma: float) -> float:
    """First root of the gap F(y), found independently of the module: F sampled every 1e-6
    (scaled time) around the grazing time 3 and every 1e-3 elsewhere, Brent's method on the
    first sign change."""
    s, c = math.sin(phase), math.cos(phase)

    def gap(y):
        return velocity * y - 0.5 * y * y + gamma * (s * (1 - np.cos(y)) + c * (y - np.sin(y)))

    y = np.concatenate(
        (np.arange(1, 2900) * 1e-3, 2.9 + np.arange(200_000) * 1e-6, np.arange(3100, 20_000) * 1e-3)
    )
    values = gap(y)
    first = int(np.flatnonzero(values <= 0)[0])
    return brentq(gap, y[first - 1], y[first], xtol=1e-15)


@pytest.mark.parametrize("lowering", [1e-6, -1e-6])
def test_a_near_grazing_landing_is_found(lowering):
    """From phase 3 pi/2 the flight grazes the table at y = 3 (F'' = 1.84 > 0 there, F > 0
    before). Lowering u by 1e-6 of itself makes a dip of width 2 sqrt(2 y du / F''), about 7e-3,
    below the table, 14 times narrower than the sampling step: the map must land there (the
    first root), as the dense search does; raising u by as much lets the ball fly past it."""
    phase = 1.5 * math.pi
    velocity, gamma = grazing_take_off(phase, 3.0)
    velocity *= 1 - lowering
    vibrating = table(gamma, 0.5)
    impact = vibrating.impact_map(phase, velocity * vibrating.velocity_scale)
    expected = dense_first_landing(phase, velocity, gamma)
    assert (expected < 3.1) == (lowering > 0)
    assert impact.elapsed_phase == pytest.approx(expected, abs=1e-9)


# --------------------------------------------------------------------------------------------
# Sticking: take-off from rest, chatter
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("gamma", [1.05, 1.5, 3.0])
def test_take_off_from_rest_where_the_table_acceleration_falls_below_minus_g(gamma):
    vibrating = table(gamma, 0.5)
    take_off = vibrating.take_off_phase_from_rest()
    assert math.sin(take_off) == pytest.approx(1 / gamma, rel=2 * EPS)
    assert 0 < take_off < math.pi / 2
    assert vibrating.table_acceleration(take_off) == pytest.approx(-GRAVITY, rel=4 * EPS)
    # resting anywhere the table's acceleration is above -g: all leave at the same phase and
    # land at the same impact (locking: the landing phase is forgotten)
    impacts = [vibrating.impact_map(phase, 0.0) for phase in np.linspace(2.9, 2 * math.pi, 7)]
    for phase, impact in zip(np.linspace(2.9, 2 * math.pi, 7), impacts, strict=True):
        start = phase + impact.rest_phase
        assert math.sin(start) == pytest.approx(1 / gamma, rel=4 * EPS)
        assert math.cos(start) > 0  # the table's acceleration is falling through -g
        assert vibrating.table_acceleration(phase) > -GRAVITY  # it was resting
    assert np.ptp([impact.phase for impact in impacts]) < 1e-12
    assert np.ptp([impact.relative_velocity for impact in impacts]) < 1e-12
    # just before the take-off phase the ball rests, just after it flies at once
    assert vibrating.impact_map(take_off - 1e-3, 0.0).rest_phase == pytest.approx(1e-3, rel=1e-9)
    assert vibrating.impact_map(take_off + 1e-3, 0.0).rest_phase == 0.0


def test_below_one_g_a_resting_ball_stays_for_ever():
    vibrating = table(0.9, 0.5)
    assert vibrating.impact_map(1.0, 0.0) is None
    assert vibrating.departure_phase_from_rest(1.0) == math.inf
    with pytest.raises(ValueError, match="amplitude"):
        vibrating.take_off_phase_from_rest()


def accumulated_phase(vibrating: VibratingTable, phase: float, velocity: float) -> float:
    """Phase from an impact to the accumulation of the impacts of the exact map: iterated until
    u has dropped by 1e-13, the tail of the geometric series of flights being below 1e-13 of
    the total (all flights are free flights: the ball never rests in between)."""
    total, remaining = 0.0, velocity
    while remaining > 1e-13 * velocity:
        impact = vibrating.impact_map(phase, remaining)
        assert impact.rest_phase == 0.0
        total += impact.elapsed_phase
        phase, remaining = impact.phase, impact.relative_velocity
    return total


@pytest.mark.parametrize("e", [0.5, 0.8])
def test_chatter_accumulation_converges_at_the_stated_orders(e):
    """The geometric series tau_0 errs by O(omega tau_0) relative, the jerk-corrected
    tau_inf by O((omega tau_0)^2): halving u0 halves the first error and quarters the second
    (ratios within 10 % of 2 and 4 at omega tau_0 <= 0.05)."""
    vibrating = table(1.5, e)
    phase = 4.0  # the table's acceleration is +1.1 g: the ball is pressed on it
    leading, corrected = [], []
    for scaled_velocity in (1e-2, 5e-3, 2.5e-3):
        velocity = scaled_velocity * vibrating.velocity_scale
        chatter = vibrating.chatter(phase, velocity)
        exact = accumulated_phase(vibrating, phase, velocity)
        leading.append(abs(OMEGA * chatter.geometric_accumulation_time - exact) / exact)
        corrected.append(abs(chatter.rest_phase - phase - exact) / exact)
        assert corrected[-1] < (OMEGA * chatter.geometric_accumulation_time) ** 2
    assert leading[0] / leading[1] == pytest.approx(2, rel=0.1)
    assert leading[1] / leading[2] == pytest.approx(2, rel=0.1)
    assert corrected[0] / corrected[1] == pytest.approx(4, rel=0.1)
    assert corrected[1] / corrected[2] == pytest.approx(4, rel=0.1)


def test_after_the_chatter_the_ball_rests_until_the_take_off_phase():
    vibrating = table(1.5, 0.5)
    phase, velocity = 4.0, 1e-2 * vibrating.velocity_scale
    chatter = vibrating.chatter(phase, velocity)
    assert chatter.effective_gravity == pytest.approx(GRAVITY * (1 - 1.5 * math.sin(4.0)))
    assert chatter.geometric_accumulation_time == pytest.approx(
        2 * velocity / (chatter.effective_gravity * 0.5)
    )
    assert chatter.departure_phase == pytest.approx(
        TWO_PI + vibrating.take_off_phase_from_rest(), abs=4 * EPS * TWO_PI
    )
    assert chatter.phase_on_table == pytest.approx(chatter.departure_phase - chatter.rest_phase)
    # the exact map from the accumulation point at rest: on the table until that phase
    rest = phase + accumulated_phase(vibrating, phase, velocity)
    impact = vibrating.impact_map(rest, 0.0)
    assert rest + impact.rest_phase == pytest.approx(chatter.departure_phase, abs=1e-12)
    with pytest.raises(ValueError, match="phase"):
        vibrating.chatter(1.2, velocity)  # the table accelerates down at 1.4 g: no chatter


# --------------------------------------------------------------------------------------------
# Bad input fails fast, naming the argument
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "name"),
    [
        ((0.0, OMEGA, 0.5), "amplitude"),
        ((1e-3, -1.0, 0.5), "angular_frequency"),
        ((1e-3, OMEGA, 1.0), "restitution"),
        ((1e-3, OMEGA, -0.1), "restitution"),
        ((1e-3, OMEGA, 0.5, math.nan), "gravity"),
    ],
)
def test_bad_table_parameters_name_the_argument(arguments, name):
    with pytest.raises(ValueError, match=name):
        VibratingTable(*arguments)


def test_bad_map_and_orbit_arguments_name_the_argument():
    vibrating = table(1.5, 0.5)
    with pytest.raises(ValueError, match="relative_velocity"):
        vibrating.impact_map(0.0, -1.0)
    with pytest.raises(ValueError, match="n must be"):
        vibrating.period_orbit(0)
    with pytest.raises(ValueError, match="relative_velocity"):
        vibrating.impact_map_jacobian(4.0, 0.0)  # resting: the map is flat in the phase
    with pytest.raises(ValueError, match="restitution"):
        period_doubling_acceleration(1, 1.0)
