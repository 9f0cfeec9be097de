"""Event-driven integration with planar Coulomb friction (impactbench.core.events.coulomb):
stick and slip phases against the closed forms of a block on an incline (stick for ever, slide,
stop and stick, stop and reverse), a particle bouncing on a rough floor (frictional impacts,
then slip, then stick) against its closed form, the work of friction, the Painleve situations of
a rod on a rough floor, and the three engines (compiled, the same source as plain Python, the
scipy path) against each other.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import impactbench as ib
from impactbench import Problem
from impactbench.core.events.engine import simulate_compiled
from impactbench.core.status_codes import (
    STATUS_PAINLEVE_INCONSISTENT,
    STATUS_PAINLEVE_INDETERMINATE,
)
from impactbench.methods import EventDriven
from impactbench.problems import FrictionOscillator, SlidingBlock

RTOL, ATOL = 1e-10, 1e-12
#: The engines: compiled (numba), the same source as plain Python, the scipy path.
ENGINES = ("compiled", "plain", "scipy")


def _run(problem: Problem, t_end: float, engine: str) -> ib.Trajectory:
    if engine == "scipy":
        run = ib.simulate(problem, EventDriven(compiled=False, rtol=RTOL, atol=ATOL), t_end)
        assert run.stats["engine"] == "scipy"
        return run
    return simulate_compiled(problem, t_end, RTOL, ATOL, compile=engine == "compiled")


def _nearest_sample(run: ib.Trajectory, t: float) -> float:
    """The sample time nearest to ``t`` (every restart is sampled: a located event is)."""
    return float(run.t[np.argmin(np.abs(run.t - t))])


# --------------------------------------------------------------------------------------------
# A block on an incline (SlidingBlock: closed form for every initial velocity)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_block_held_by_friction_sticks_for_ever_without_creep(engine):
    """tan alpha < mu, from rest: one restart (the contact closes sticking at t0), then the
    velocity is 0 and the position x0 to round-off up to t = 1000 (no creep), on the incline."""
    block = SlidingBlock(angle=0.3, mu=0.5, u0=0.0, x0=0.25)
    assert block.sticks
    run = _run(block, 1000.0, engine)
    assert run.status is ib.Status.OK
    assert run.stats["events"] == 0 and run.stats["segments"] == 1
    assert np.abs(run.v).max() <= 1e-14
    assert np.abs(run.q[:, 0] - 0.25).max() <= 1e-14
    assert np.abs(run.q[:, 1]).max() <= 1e-14


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("u0", [0.0, 1.5])
def test_a_block_on_a_steep_incline_slides_with_the_exact_acceleration(engine, u0):
    """tan alpha > mu: x'' = g (sin alpha - mu cos alpha) from rest (slip from rest, decided by
    the acceleration-level problem) or launched downhill; DOP853 integrates the constant
    acceleration to round-off: no event."""
    block = SlidingBlock(angle=0.5, mu=0.2, u0=u0)
    run = _run(block, 4.0, engine)
    q, v = block.exact_solution(run.t)
    assert run.status is ib.Status.OK and run.stats["events"] == 0
    scale = float(np.abs(q).max())
    assert np.abs(run.q - q).max() <= 1e-13 * scale
    assert np.abs(run.v - v).max() <= 1e-13 * float(np.abs(v).max())
    a_down = block.accelerations[0]
    assert a_down > 0.0
    assert v[-1, 0] == pytest.approx(u0 + 4.0 * a_down, rel=1e-15)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("angle", "mu"), [(0.3, 0.5), (0.5, 0.2)], ids=["sticks", "reverses"])
def test_a_block_launched_uphill_stops_at_the_exact_time_then_sticks_or_reverses(engine, angle, mu):
    """u0 < 0: decelerates with g (sin alpha + mu cos alpha) to rest at t* = -u0 / a_up, an
    event located to round-off (the tangential velocity crossing 0), where the acceleration-
    level problem decides: stick for ever (tan alpha <= mu) or slide back down with
    g (sin alpha - mu cos alpha). The whole motion follows the closed form to round-off."""
    block = SlidingBlock(angle=angle, mu=mu, u0=-2.0)
    a_down, a_up = block.accelerations
    t_stop = 2.0 / a_up
    run = _run(block, 3.0, engine)
    assert run.status is ib.Status.OK
    assert run.stats["events"] == 1
    t_event = _nearest_sample(run, t_stop)
    assert abs(t_event - t_stop) <= 8 * np.finfo(float).eps * t_stop
    q, v = block.exact_solution(run.t)
    assert np.abs(run.q - q).max() <= 1e-12 and np.abs(run.v - v).max() <= 1e-12
    after = run.t > t_event
    if block.sticks:
        assert block.stopping_time == pytest.approx(t_stop, rel=1e-15)
        assert np.all(run.v[after] == 0.0)
        assert np.all(run.q[after, 0] == run.q[-1, 0])
    else:
        assert np.all(run.v[after, 0] > 0.0)
        assert run.v[-1, 0] == pytest.approx(a_down * (3.0 - t_stop), rel=1e-12)


@pytest.mark.parametrize("engine", ["compiled", "scipy"])
def test_a_block_sliding_down_a_steep_incline_follows_the_closed_form_to_t_1000(engine):
    """tan alpha > mu from rest: one slip phase to t = 1000, x = a t^2 / 2 with
    a = g (sin alpha - mu cos alpha), to a relative 1e-12 at every sample (x reaches 6e5), no
    event, the block on the incline (y = 0) throughout."""
    block = SlidingBlock(angle=0.5, mu=0.2)
    run = _run(block, 1000.0, engine)
    assert run.status is ib.Status.OK and run.t[-1] == 1000.0
    assert run.stats["events"] == 0
    q, v = block.exact_solution(run.t)
    assert np.abs(run.q[:, 0] - q[:, 0]).max() <= 1e-12 * np.abs(q[:, 0]).max()
    assert np.abs(run.v[:, 0] - v[:, 0]).max() <= 1e-12 * np.abs(v[:, 0]).max()
    assert np.abs(run.q[:, 1]).max() <= 1e-14 * np.abs(q[:, 0]).max()


@pytest.mark.parametrize("engine", ["plain", "scipy"])
def test_the_friction_oscillator_slides_then_sticks_for_ever_at_the_closed_form(engine):
    """FrictionOscillator (Siconos' data): eight half-cycles of slip, each ending in an event
    where the velocity vanishes and the acceleration-level problem decides to slide back, then
    stick for good at the closed-form position and time; after that, to t = 1000, v = 0 and x
    constant (no creep), the block on the floor."""
    problem = FrictionOscillator()
    run = _run(problem, 1000.0, engine)
    assert run.status is ib.Status.OK
    turning, _ = problem.turning_points()
    assert run.stats["events"] == turning.size
    t_stick = problem.stick_time
    assert abs(_nearest_sample(run, t_stick) - t_stick) <= 1e-10 * t_stick
    q, v = problem.exact_solution(run.t)
    assert np.abs(run.q[:, 0] - q[:, 0]).max() <= 1e-9 * np.abs(q[:, 0]).max()
    stuck = run.t > t_stick + 1e-6
    assert np.abs(run.v[stuck, 0]).max() <= 1e-12
    assert np.ptp(run.q[stuck, 0]) <= 1e-12
    assert abs(run.q[-1, 0] - problem.stick_position) <= 1e-8
    assert np.abs(run.q[:, 1]).max() <= 1e-12 and np.abs(run.v[:, 1]).max() <= 1e-12


def test_the_engines_agree_on_the_block():
    """Compiled, plain Python and scipy: the same event, the same final state to the solver's
    tolerance (the compiled and plain engines run the same source: to round-off)."""
    block = SlidingBlock(angle=0.5, mu=0.2, u0=-2.0)
    runs = {engine: _run(block, 3.0, engine) for engine in ENGINES}
    compiled, plain, scipy_run = runs["compiled"], runs["plain"], runs["scipy"]
    np.testing.assert_allclose(compiled.q[-1], plain.q[-1], rtol=0, atol=1e-13)
    np.testing.assert_allclose(compiled.v[-1], plain.v[-1], rtol=0, atol=1e-13)
    assert compiled.t.size == plain.t.size
    np.testing.assert_allclose(scipy_run.q[-1], compiled.q[-1], rtol=0, atol=10 * RTOL)
    t_stop = 2.0 / block.accelerations[1]
    for run in runs.values():
        assert run.stats["events"] == 1
        assert abs(_nearest_sample(run, t_stop) - t_stop) <= 8 * np.finfo(float).eps * t_stop


class PulledBlock(Problem):
    """A unit mass at rest on the rough floor y >= 0, pulled along it by the force c t (plain
    Python): it sticks while c t <= mu g, slips from t* = mu g / c with
    x'' = c (t - t*), x = c (t - t*)^3 / 6."""

    def __init__(self, mu=0.5, rate=2.0):
        self.name = "PulledBlock"
        self.restitution = 0.0
        self.mu, self.rate = mu, rate
        self.n_dof = 2
        self.n_constraints = 1
        self.q0 = np.zeros(2)
        self.v0 = np.zeros(2)

    def mass_matrix(self, q):
        return np.eye(2)

    def forces(self, t, q, v):
        return np.array([self.rate * t, -9.81])

    def gap(self, q):
        return np.array([q[1]])

    def gap_gradient(self, q):
        return np.array([[0.0, 1.0]])

    def tangent_gradient(self, q):
        return np.array([[1.0, 0.0]])

    def friction(self, q):
        return np.array([self.mu]), np.array([0.0])

    def potential_energy(self, q):
        return 9.81 * float(q[1])


def test_a_block_pulled_by_a_growing_force_slips_when_the_cone_is_reached():
    """Stick -> slip: the friction event value mu lambda_N - |lambda_T| = mu g - c t falls to 0
    at t* = mu g / c, located to round-off; before it the block does not move, after it the
    acceleration-level problem makes it slip forwards (stick is no longer feasible) and x follows
    c (t - t*)^3 / 6 to the solver's tolerance."""
    block = PulledBlock()
    t_star = block.mu * 9.81 / block.rate
    run = _run(block, 4.0, "scipy")
    assert run.status is ib.Status.OK and run.stats["events"] == 1
    assert abs(_nearest_sample(run, t_star) - t_star) <= 8 * np.finfo(float).eps * t_star
    before = run.t <= t_star
    assert np.all(run.q[before] == 0.0) and np.all(run.v[before] == 0.0)
    after = run.t > t_star
    s = run.t[after] - t_star
    np.testing.assert_allclose(run.q[after, 0], block.rate * s**3 / 6, rtol=0, atol=1e-9)
    np.testing.assert_allclose(run.v[after, 0], block.rate * s**2 / 2, rtol=0, atol=1e-9)
    assert np.abs(run.q[:, 1]).max() <= 1e-14


# --------------------------------------------------------------------------------------------
# A particle bouncing on a rough floor: frictional impacts, slip, stick


def _dropped_block(mu=0.1, restitution=0.5, y0=0.5, u0=3.0):
    """A unit mass dropped from height y0 onto the rough floor y >= 0 (SlidingBlock with
    alpha = 0, lifted: its kernels, so that every engine runs it) with the horizontal velocity
    u0 (restitution e_N, e_T = 0)."""
    block = SlidingBlock(angle=0.0, mu=mu, u0=u0, restitution=restitution)
    block.q0 = np.array([0.0, y0])
    return block


def _bounces_closed_form(floor, count):
    """Impact times and the tangential velocity after each of the first ``count`` impacts: the
    normal speed before impact k is e^(k-1) sqrt(2 g y0), the normal impulse (1 + e) times it,
    and while the particle slides through the impact its tangential velocity drops by mu times
    the normal impulse (Newton-Coulomb law, e_T = 0), else it stops."""
    g, e, mu = floor.gravity, floor.restitution, floor.mu
    speed = math.sqrt(2 * g * floor.q0[1])
    t = speed / g
    u = float(floor.v0[0])
    times, tangential = [], []
    for _ in range(count):
        u = max(0.0, u - mu * (1 + e) * speed)
        times.append(t)
        tangential.append(u)
        speed *= e
        t += 2 * speed / g
    return np.array(times), np.array(tangential)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_particle_bouncing_on_a_rough_floor_follows_the_closed_form(engine):
    """Impacts with friction (each slows the sliding by mu (1 + e) times the normal speed),
    the accumulation cut into persistent contact, sliding with deceleration mu g and sticking
    at the exact time; the work of friction is non-positive at every impact (the tangential
    kinetic energy does not grow) and the energy never grows between samples."""
    floor = _dropped_block()
    g = floor.gravity
    run = _run(floor, 5.0, engine)
    assert run.status is ib.Status.ZENO_HANDLED
    impacts = run.impacts
    times, tangential = _bounces_closed_form(floor, 8)
    np.testing.assert_allclose(impacts.t[:8], times, rtol=0, atol=1e-9)
    after = [run.v[np.flatnonzero(run.t == t)[-1], 0] for t in impacts.t[:8]]
    np.testing.assert_allclose(after, tangential, rtol=0, atol=1e-9)
    # the work of the tangential impulse at an impact: P_T (u_T- + u_T+) / 2 with P_T the
    # jump of u_T (unit mass): (u_T+^2 - u_T-^2) / 2 <= 0
    for t in impacts.t:
        before, later = run.v[np.flatnonzero(run.t == t)[[0, -1]], 0]
        assert 0.0 <= later <= before
    energies = np.array([floor.energy(q, v) for q, v in zip(run.q, run.v, strict=True)])
    assert np.all(np.diff(energies) <= 1e-9 * energies[0])
    # after the accumulation: slides with deceleration mu g, then sticks for good
    zeno = run.stats["zeno_time"]
    u_rest = run.v[np.flatnonzero(run.t == zeno)[-1], 0]
    t_stop = zeno + u_rest / (floor.mu * g)
    assert zeno < t_stop < 5.0
    assert abs(_nearest_sample(run, t_stop) - t_stop) <= 1e-9
    assert np.all(run.v[run.t > t_stop + 1e-9] == 0.0)
    sliding = (run.t > zeno) & (run.t < t_stop)
    assert sliding.sum() >= 2
    np.testing.assert_allclose(
        run.v[sliding, 0], u_rest - floor.mu * g * (run.t[sliding] - zeno), rtol=0, atol=1e-9
    )


# --------------------------------------------------------------------------------------------
# Painleve situations: a rod sliding on a rough floor (Glocker's setting)


class RodOnRoughFloor(Problem):
    """A uniform rod (mass 1, half-length l = 1, J = m l^2 / 3) whose lower end A slides on the
    rough floor: q = (x, y, theta) of its centre, A = (x - l cos theta, y - l sin theta), the
    gap y - l sin theta, the tangent row that of A's horizontal velocity (plain Python).

    At the contact, W_N M^-1 W_N^T = 1 + 3 cos^2 theta and W_N M^-1 W_T^T = -3 sin theta
    cos theta, so that while A slides backwards (s = -1) the normal Delassus number under
    friction, 1 + 3 cos^2 theta - 3 mu sin theta cos theta, is negative for mu above
    (1 + 3 cos^2 theta) / (3 sin theta cos theta) (5/3 at 45 degrees; 4/3 at its minimum): the
    acceleration-level contact problem then has no solution when the free normal acceleration
    -g + l sin theta theta'^2 is negative, two (lift off, or slide pressed) when it is positive.
    """

    def __init__(self, mu, theta=math.pi / 4, x_dot=-1.0, theta_dot=0.0):
        self.name = "RodOnRoughFloor"
        self.restitution = 0.0
        self.mu = mu
        self.n_dof = 3
        self.n_constraints = 1
        s, c = math.sin(theta), math.cos(theta)
        self.q0 = np.array([0.0, s, theta])
        # A on the floor with no normal velocity: y' = l cos theta theta'
        self.v0 = np.array([x_dot, c * theta_dot, theta_dot])

    def mass_matrix(self, q):
        return np.diag([1.0, 1.0, 1.0 / 3.0])

    def forces(self, t, q, v):
        return np.array([0.0, -9.81, 0.0])

    def gap(self, q):
        return np.array([q[1] - math.sin(q[2])])

    def gap_gradient(self, q):
        return np.array([[0.0, 1.0, -math.cos(q[2])]])

    def tangent_gradient(self, q):
        return np.array([[1.0, 0.0, math.sin(q[2])]])

    def friction(self, q):
        return np.array([self.mu]), np.array([0.0])

    def potential_energy(self, q):
        return 9.81 * float(q[1])


@pytest.mark.parametrize(
    ("theta_dot", "status", "solutions"),
    [
        (0.0, STATUS_PAINLEVE_INCONSISTENT, 0),  # pressed down: no solution
        (4.0, STATUS_PAINLEVE_INDETERMINATE, 2),  # l sin theta theta'^2 > g: two solutions
    ],
    ids=["inconsistent", "indeterminate"],
)
def test_a_painleve_situation_is_reported_by_name_with_the_state(theta_dot, status, solutions):
    """mu = 2 > 5/3 at 45 degrees, A sliding backwards: the run stops at t0 with the named
    failure, the contact, its tangential velocity and the number of solutions, and t, q, v."""
    x_dot = -1.0 - math.sin(math.pi / 4) * theta_dot  # A slides backwards at unit speed
    rod = RodOnRoughFloor(mu=2.0, x_dot=x_dot, theta_dot=theta_dot)
    assert (rod.tangent_gradient(rod.q0) @ rod.v0)[0] == pytest.approx(-1.0, rel=1e-15)
    with pytest.raises(ib.SimulationError, match="Painleve situation") as error:
        ib.simulate(rod, EventDriven(compiled=False, rtol=RTOL, atol=ATOL), 1.0)
    failure = error.value
    kind = "inconsistent" if status == STATUS_PAINLEVE_INCONSISTENT else "indeterminate"
    assert f"({kind})" in str(failure) and "contacts [0]" in str(failure)
    assert f"{solutions} solutions" in str(failure)
    assert failure.trajectory.stats["status_code"] == status
    assert failure.t == 0.0
    np.testing.assert_array_equal(failure.q, rod.q0)
    np.testing.assert_array_equal(failure.v, rod.v0)


def test_below_the_critical_friction_the_rod_slides_without_painleve():
    """The same state with mu = 1 < 5/3: one solution, the run proceeds (A slides, pressed)."""
    rod = RodOnRoughFloor(mu=1.0)
    run = ib.simulate(rod, EventDriven(compiled=False, rtol=RTOL, atol=ATOL), 0.05)
    assert run.status is ib.Status.OK
    assert abs(run.q[-1, 1] - math.sin(run.q[-1, 2])) <= 1e-10  # A stays on the floor


def test_a_painleve_point_met_while_sliding_stops_the_run_by_name():
    """mu = 1.6, started consistent at theta = 0.5 (1 + 3 cos^2 - 3 mu sin cos > 0) with A
    sliding backwards: the rotation carries theta to the root theta* of 1 + 3 cos^2 theta =
    3 mu sin theta cos theta, where the normal force grows without bound (the contact problem
    turns singular); the run stops there with the named failure, A still sliding on the floor,
    instead of stepping through it."""
    mu = 1.6
    rod = RodOnRoughFloor(mu=mu, theta=0.5, x_dot=-10.0, theta_dot=3.0)

    def delassus(theta):
        return 1 + 3 * math.cos(theta) ** 2 - 3 * mu * math.sin(theta) * math.cos(theta)

    assert delassus(0.5) > 0.0
    with pytest.raises(ib.SimulationError, match=r"Painleve situation \(singular\)") as error:
        ib.simulate(rod, EventDriven(compiled=False, rtol=RTOL, atol=ATOL), 1.5)
    failure = error.value
    lo, hi = 0.5, 1.0  # bisection for the root theta* of the Delassus number
    assert delassus(hi) < 0.0
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if delassus(mid) > 0.0 else (lo, mid)
    assert abs(failure.q[2] - lo) <= 1e-3
    assert abs(rod.gap(failure.q)[0]) <= 1e-9
    assert (rod.tangent_gradient(failure.q) @ failure.v)[0] < 0.0
    assert 0.0 < failure.t < 1.5
