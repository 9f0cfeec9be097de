"""The friction oscillator: its closed form, Siconos' reference output, and MoreauJean on it.

Siconos' FrictionOscillator example (tests/data/siconos/FrictionOscillator.ref.gz, README
there) integrates x' = A x + B lambda, lambda in -Sign(x_2), with EulerMoreauOSI (theta = 1/2)
at h = 0.01 to T = 100. tests/reference_euler_moreau.py writes that discretisation
independently; the implicit MoreauJean on FrictionOscillator (a block on a rough floor, the
contact always closed with normal load N, mu N = alpha) is the same scheme (the theta-method on
(x, x'), the friction impulse h alpha lambda in the metric of W = m + h^2 k / 4): it reproduces
the output to round-off. The explicit MoreauJean evaluates the spring at q_k + h v_k / 2
instead of averaging it over the step: from a common state its velocity increment is the
implicit one times (1 + h^2 k / (4 m)) (same friction impulse), so the two differ by O(h^2).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from reference_euler_moreau import euler_moreau_relay

import impactbench as ib
from impactbench.analysis.fitting import ORDER, fit_order, perturbed_steps
from impactbench.methods import MoreauJean
from impactbench.problems import FrictionOscillator

DATA = Path(__file__).parent / "data" / "siconos" / "FrictionOscillator.ref.gz"

#: Siconos' step and horizon: 10000 rows, t = 0, 0.01, ..., 99.99.
H = 0.01
ROWS = 10_000


@pytest.fixture(scope="module")
def siconos() -> np.ndarray:
    table = np.loadtxt(DATA, skiprows=1)
    assert table.shape == (ROWS, 10)
    return table


def _relay(h: float, rows: int, x0=12.0, u0=6.0):
    """Siconos' discretisation of the example (m = k = alpha = 1) by the independent reference."""
    A = np.array([[0.0, 1.0], [-1.0, 0.0]])  # noqa: N806
    B = np.array([0.0, 1.0])  # noqa: N806
    C = np.array([0.0, 1.0])  # noqa: N806
    return euler_moreau_relay(A, B, C, np.array([x0, u0]), h, rows)


# --------------------------------------------------------------------------------------------
# The closed form


def test_the_closed_form_by_hand():
    """From (12, 6): the first arc around x = -1 has radius sqrt(13^2 + 6^2) = sqrt(205) and
    turns at sqrt(205) - 1 after atan2(6, 13); then each half-cycle (pi) takes 2 off |x_n|, the
    signs alternating, until |x_8| = 15 - sqrt(205) = 0.682 <= 1: at rest for ever from
    atan2(6, 13) + 7 pi."""
    problem = FrictionOscillator()
    times, points = problem.turning_points()
    first = math.sqrt(205.0) - 1.0
    expected = [first, -(first - 2), first - 4, -(first - 6), first - 8, -(first - 10)]
    expected += [first - 12, 15.0 - math.sqrt(205.0)]
    np.testing.assert_allclose(points, expected, rtol=0, atol=1e-13)
    np.testing.assert_allclose(times, math.atan2(6, 13) + math.pi * np.arange(8), atol=1e-13)
    assert problem.stick_position == points[-1] and problem.stick_time == times[-1]
    q, v = problem.exact_solution(np.array([times[-1], 1000.0]))
    assert np.all(q[:, 0] == points[-1]) and np.all(v == 0.0) and np.all(q[:, 1] == 0.0)


@pytest.mark.parametrize(
    ("kwargs"),
    [{}, {"x0": -3.0, "u0": 0.0, "friction_level": 0.4, "mass": 2.0, "stiffness": 3.0},
     {"x0": 0.5, "u0": -4.0, "friction_level": 2.0, "mass": 0.5, "stiffness": 7.0}],
)  # fmt: skip
def test_the_closed_form_solves_the_stick_slip_law(kwargs):
    """Along the closed form: m x'' = -k x - alpha sign(x') in each slip phase (second
    differences), the sign of x' that of the phase, the turning points following
    (x_{n+1} = -sign(x_n) (|x_n| - 2 delta)), each half-cycle pi / omega
    after the first, the stick position within the band |x| <= delta (and the previous turning
    point outside it), at rest there, and the energy lost equal to the friction work
    alpha |x_{n+1} - x_n| on each phase."""
    problem = FrictionOscillator(**kwargs)
    m, k, alpha = problem.mass, problem.stiffness, problem.friction_level
    delta, omega = problem.stick_band, problem.frequency
    phases = problem.phases()
    times, points = problem.turning_points()
    assert phases[-1][3] == 0 and all(s != 0 for *_, s in phases[:-1])
    assert abs(points[-1]) <= delta and (len(points) == 1 or abs(points[-2]) > delta)
    recursion = -np.sign(points[:-1]) * (np.abs(points[:-1]) - 2 * delta)
    np.testing.assert_allclose(points[1:], recursion, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.diff(times), math.pi / omega, rtol=1e-12)
    starts = [phase[0] for phase in phases]
    ends = starts[1:] + [starts[-1] + 1.0]
    for (start, _, _, s), end in zip(phases, ends, strict=True):
        t = np.linspace(start, end, 2001)[1:-1]
        dt = t[1] - t[0]
        q, v = problem.exact_solution(t)
        acceleration = (q[2:, 0] - 2 * q[1:-1, 0] + q[:-2, 0]) / dt**2
        law = (-k * q[1:-1, 0] - alpha * s) / m if s else 0.0 * acceleration  # stick: at rest
        scale = max(1.0, float(np.abs(law).max()))
        np.testing.assert_allclose(acceleration, law, rtol=0, atol=1e-5 * scale)
        assert np.all(np.sign(v[:, 0]) == s)
    energy = [problem.energy(*(np.array([x, 0.0]), np.array([u, 0.0]))) for _, x, u, _ in phases]
    positions = [phase[1] for phase in phases]
    np.testing.assert_allclose(np.diff(energy), -alpha * np.abs(np.diff(positions)), atol=1e-10)


# --------------------------------------------------------------------------------------------
# Siconos' output, its discretisation, and MoreauJean


def test_the_independent_discretisation_reproduces_siconos_output(siconos):
    """EulerMoreauOSI written from the formulas reproduces every row: the state to 2e-13
    (measured 1.6e-13 over 10000 steps, |x| <= 14), the relay multiplier to 1e-11 (measured
    1.1e-12: in the stick steps lambda = -q / D is the quotient by D = h / (1 + h^2 / 4)),
    y = x_2, and the vector field A x + B lambda of columns 7, 8. Siconos' time is a sum of
    steps, 7e-15 from k h at T."""
    run = _relay(H, ROWS)
    np.testing.assert_allclose(run.t, siconos[:, 0], rtol=0, atol=1e-13)
    np.testing.assert_allclose(run.x, siconos[:, 1:3], rtol=0, atol=2e-13)
    np.testing.assert_allclose(run.lam, siconos[:, 3], rtol=0, atol=1e-11)
    np.testing.assert_allclose(run.y, siconos[:, 4], rtol=0, atol=2e-13)
    field = np.column_stack([run.x[:, 1], -run.x[:, 0] + run.lam])
    np.testing.assert_allclose(field[1:], siconos[1:, 7:9], rtol=0, atol=1e-11)
    assert np.all(siconos[:, [5, 6, 9]] == 0.0)
    slip = np.abs(siconos[1:, 3]) == 1.0
    assert slip.sum() > 0 and (~slip).sum() > 0  # both slip and stick steps occur


def _tangential_impulse(problem: FrictionOscillator, run: ib.Trajectory, h: float, theta: float):
    """P_T of each step of the implicit scheme: W (v_{k+1} - v_k) - h F(q_p, v_k), W = m + h^2
    theta^2 k, q_p = q_k + theta h v_k."""
    m, k = problem.mass, problem.stiffness
    x, u = run.q[:, 0], run.v[:, 0]
    qp = x[:-1] + theta * h * u[:-1]
    return (m + (h * theta) ** 2 * k) * np.diff(u) + h * k * qp


def test_implicit_moreau_jean_reproduces_siconos_output(siconos):
    """MoreauJean(1/2, implicit=True) on FrictionOscillator: x, x' to 5e-13 of Siconos' rows
    (measured 2.0e-13, 2.1e-13), y = y' = 0 throughout, the tangential impulse h alpha lambda
    (lambda Siconos' multiplier) to 1e-12, the normal impulse h N."""
    problem = FrictionOscillator()
    run = ib.simulate(problem, MoreauJean(0.5, implicit=True), (ROWS - 1) * H, h=H)
    assert run.q.shape == (ROWS, 2)
    np.testing.assert_allclose(run.q[:, 0], siconos[:, 1], rtol=0, atol=5e-13)
    np.testing.assert_allclose(run.v[:, 0], siconos[:, 2], rtol=0, atol=5e-13)
    assert np.all(run.q[:, 1] == 0.0) and np.all(run.v[:, 1] == 0.0)
    impulse = _tangential_impulse(problem, run, H, 0.5)
    np.testing.assert_allclose(impulse, H * problem.friction_level * siconos[1:, 3], atol=1e-12)


def test_implicit_moreau_jean_is_siconos_discretisation_at_every_step_size():
    """The identity is not a coincidence of h = 0.01: at h = 0.037 and 0.0013 (to t = 30) the
    independent reference and the implicit MoreauJean agree to 1e-12 too."""
    problem = FrictionOscillator()
    for h in (0.037, 0.0013):
        rows = int(round(30.0 / h)) + 1
        reference = _relay(h, rows)
        run = ib.simulate(problem, MoreauJean(0.5, implicit=True), (rows - 1) * h, h=h)
        np.testing.assert_allclose(run.q[:, 0], reference.x[:, 0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(run.v[:, 0], reference.x[:, 1], rtol=0, atol=1e-12)


def test_explicit_moreau_jean_differs_from_siconos_by_its_spring_evaluation(siconos):
    """The explicit scheme takes the spring force at q_p = q_k + h v_k / 2, the implicit one
    (Siconos') its average over the step, -k (q_k + h (v_k + v_{k+1}) / 4): from a common
    state, with the same friction impulse P_T,

        explicit:  m (v_{k+1} - v_k) = -h k q_p + P_T,
        implicit:  (m + h^2 k / 4) (v_{k+1} - v_k) = -h k q_p + P_T,

    so the implicit increment is the explicit one divided by 1 + h^2 k / (4 m) (checked on the
    first step, a slip step: equal to round-off). The local difference is O(h^3), the global one
    O(h^2): against Siconos' rows at h = 0.01 the explicit run differs by 1.8e-3 (max over
    t <= 100, where the implicit one differs by 2e-13), and the difference between the two
    schemes is fitted with order 2 over 12 steps from 1e-3 to 5e-2 (median of 5 grid phases
    each). Both stop at the same place to O(h^2) (final positions 0.682044 and 0.682078)."""
    problem = FrictionOscillator()
    explicit = ib.simulate(problem, MoreauJean(0.5), (ROWS - 1) * H, h=H)
    first = (explicit.v[1, 0] - 6.0) / (1.0 + H * H / 4.0)
    assert siconos[1, 2] - 6.0 == pytest.approx(first, rel=1e-12, abs=0.0)
    difference = np.abs(explicit.q[:, 0] - siconos[:, 1]).max()
    assert H**2 < difference < 50 * H**2  # O(h^2), far above round-off
    assert abs(explicit.q[-1, 0] - siconos[-1, 1]) < 10 * H**2
    steps = np.geomspace(1e-3, 5e-2, 12)
    medians = []
    for family in perturbed_steps(steps, 5):
        gaps = []
        for h in family:
            a = ib.simulate(problem, MoreauJean(0.5), 30.0, h=h)
            b = ib.simulate(problem, MoreauJean(0.5, implicit=True), 30.0, h=h)
            gaps.append(np.abs(a.q[:, 0] - b.q[:, 0]).max())
        medians.append(np.median(gaps))
    fit = fit_order(steps, medians)
    assert fit.status == ORDER and fit.points == 12 and fit.decades >= 1.5
    assert fit.low <= 2.0 <= fit.high and 1.8 <= fit.order <= 2.3, fit


# --------------------------------------------------------------------------------------------
# Convergence to the closed form, and the stick


@pytest.mark.parametrize("implicit", [False, True])
def test_moreau_jean_converges_to_the_closed_form(implicit):
    """To t = 30, 12 steps from 1e-3 to 5e-2 (1.7 decades), median of 5 grid phases each: the
    final stick position converges with order 2 (the amplitudes are those of a second-order
    scheme), the max position error with order 1. The first order comes from the reversals:
    where the exact velocity crosses 0 within a step, the discrete one is exactly 0 for a whole
    step whenever m |v_k| lies within the friction impulse alpha h of the spring's impulse (the
    law sticks), which delays each later arc by a fraction of a step, an O(h) phase lag (the
    stick time also converges with order 1)."""
    problem = FrictionOscillator()
    steps = np.geomspace(1e-3, 5e-2, 12)
    final, worst, stick = [], [], []
    for family in perturbed_steps(steps, 5):
        f, w, s = [], [], []
        for h in family:
            run = ib.simulate(problem, MoreauJean(0.5, implicit=implicit), 30.0, h=h)
            q, _ = problem.exact_solution(run.t)
            w.append(np.abs(run.q[:, 0] - q[:, 0]).max())
            f.append(abs(run.q[-1, 0] - problem.stick_position))
            moving = np.flatnonzero(run.v[:, 0] != 0.0)
            s.append(abs(run.t[moving[-1] + 1] - problem.stick_time))
        final.append(np.median(f))
        worst.append(np.median(w))
        stick.append(np.median(s))
    for errors, order in ((final, 2.0), (worst, 1.0), (stick, 1.0)):
        fit = fit_order(steps, errors)
        assert fit.status == ORDER and fit.points == 12 and fit.decades >= 1.5, fit
        assert fit.low <= order + 0.15 and order - 0.15 <= fit.high, (order, fit)


@pytest.mark.parametrize("implicit", [False, True])
def test_the_block_sticks_to_t_1000_without_creep(implicit):
    """h = 0.01 to t = 1000 (10^5 steps): from the last moving step on, x' = 0 and x constant
    exactly (no creep at all), within 10 h^2 of the exact stick position, and the block on the
    floor (y = 0)."""
    problem = FrictionOscillator()
    run = ib.simulate(problem, MoreauJean(0.5, implicit=implicit), 1000.0, h=H, output_every=10)
    moving = np.flatnonzero(run.v[:, 0] != 0.0)
    rest = slice(moving[-1] + 1, None)
    assert run.t[moving[-1]] < problem.stick_time + 1.0
    assert np.all(run.q[rest, 0] == run.q[-1, 0]) and run.t[rest][0] < 30.0
    assert abs(run.q[-1, 0] - problem.stick_position) < 10 * H**2
    assert np.all(run.q[:, 1] == 0.0) and np.all(run.v[:, 1] == 0.0)
