"""Tests of the event-driven method against exact solutions (plain-Python problems defined here;
the ball's and the slanted wall's properties also on the registered problems with kernels, on
both engines: ``EventDriven(compiled=False)``, scipy, and ``compiled=True``).

Exact references: the bouncing ball (impact times t_1 = (v0 + V1)/g, t_{k+1} = t_1 +
(2 e V1/g)(1 - e^k)/(1 - e), flight k: q = e^k V1 (t - t_k) - g (t - t_k)^2/2, rest after t_inf);
the slanted wall (its gap is a bouncing ball, the motion along M^-1 n is the only one impulses
change); a corner whose coordinates are two bouncing balls; a box without force; a harmonic
oscillator grazing a floor; a ball lifted off the floor by a harmonic force; a particle sliding
inside a circle (a pendulum) until its contact force vanishes.
"""

from __future__ import annotations

import math
import types

import numpy as np
import pytest
from scipy import integrate, optimize

import impactbench as ib
from impactbench.core._jit import specialize
from impactbench.core.events import engine, location
from impactbench.core.events.buffers import unpacked
from impactbench.methods import event_driven
from impactbench.methods.event_driven import EventDriven
from impactbench.problems import BouncingBall, SlantedWall

G0 = 9.81


# --------------------------------------------------------------------------------------------
# Test problems (plain Python: the contract only)


class Ball(ib.Problem):
    """m q'' = -m g, q >= 0."""

    def __init__(self, e=0.5, q0=1.0, v0=0.0, g=G0, mass=2.0, t0=0.0):
        self.name = "ball"
        self.n_dof, self.n_constraints = 1, 1
        self.restitution, self.t0 = e, t0
        self.q0, self.v0 = np.array([q0]), np.array([v0])
        self.g, self.mass = g, mass

    def mass_matrix(self, q):
        return np.array([[self.mass]])

    def forces(self, t, q, v):
        return np.array([-self.mass * self.g])

    def gap(self, q):
        return np.array([q[0]])

    def gap_gradient(self, q):
        return np.array([[1.0]])

    def potential_energy(self, q):
        return self.mass * self.g * q[0]


class Wall(ib.Problem):
    """2 DOF, constant non-diagonal M, constant F, wall n^T q >= c."""

    M = np.array([[2.0, 0.6], [0.6, 1.0]])
    F = np.array([1.5, -12.0])
    n = np.array([0.4, 1.0])
    c = -0.2

    def __init__(self, e=0.6, q0=(0.3, 1.0), v0=(0.8, 0.5)):
        self.name = "wall"
        self.n_dof, self.n_constraints = 2, 1
        self.restitution = e
        self.q0, self.v0 = np.array(q0, dtype=float), np.array(v0, dtype=float)

    def mass_matrix(self, q):
        return self.M

    def forces(self, t, q, v):
        return self.F

    def gap(self, q):
        return np.array([self.n @ q - self.c])

    def gap_gradient(self, q):
        return self.n[None, :]

    def potential_energy(self, q):
        return -self.F @ q


class Corner(ib.Problem):
    """2 DOF, q1 >= 0 and q2 >= 0, non-diagonal M, F = -g M (1, 1): both gaps fall together."""

    M = Wall.M

    def __init__(self, e=0.5, offset=0.0):
        self.name = "corner"
        self.n_dof, self.n_constraints = 2, 2
        self.restitution = e
        self.offset = offset
        self.q0, self.v0 = np.array([1.0, 1.0]), np.zeros(2)

    def mass_matrix(self, q):
        return self.M

    def forces(self, t, q, v):
        return -G0 * self.M @ np.ones(2)

    def gap(self, q):
        return np.array([q[0], q[1] + self.offset])

    def gap_gradient(self, q):
        return np.eye(2)

    def potential_energy(self, q):
        return G0 * np.ones(2) @ self.M @ q


class Box(ib.Problem):
    """1 DOF, no force, 0 <= x <= width (two constraints)."""

    def __init__(self, e=1.0, width=1e-3, v0=1.0):
        self.name = "box"
        self.n_dof, self.n_constraints = 1, 2
        self.restitution = e
        self.width = width
        self.q0, self.v0 = np.array([0.5 * width]), np.array([v0])

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        return np.zeros(1)

    def gap(self, q):
        return np.array([q[0], self.width - q[0]])

    def gap_gradient(self, q):
        return np.array([[1.0], [-1.0]])

    def potential_energy(self, q):
        return 0.0


class GrazingOscillator(ib.Problem):
    """x'' = -x from x = 1, floor x >= -1 + depth: the orbit dips `depth` below the floor level."""

    def __init__(self, depth, e=1.0):
        self.name = "grazing"
        self.n_dof, self.n_constraints = 1, 1
        self.restitution = e
        self.depth = depth
        self.q0, self.v0 = np.array([1.0]), np.array([0.0])

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        return -q

    def gap(self, q):
        return np.array([q[0] + 1.0 - self.depth])

    def gap_gradient(self, q):
        return np.array([[1.0]])

    def potential_energy(self, q):
        return 0.5 * q[0] ** 2


class ShakenBall(ib.Problem):
    """Ball resting on the floor, force -g + A sin(omega t): lifts off when A sin(omega t) = g."""

    A, omega = 2.0 * G0, 2.0 * np.pi

    def __init__(self):
        self.name = "shaken"
        self.n_dof, self.n_constraints = 1, 1
        self.restitution = 0.5
        self.q0, self.v0 = np.zeros(1), np.zeros(1)

    def mass_matrix(self, q):
        return np.eye(1)

    def forces(self, t, q, v):
        return np.array([-G0 + self.A * np.sin(self.omega * t)])

    def gap(self, q):
        return np.array([q[0]])

    def gap_gradient(self, q):
        return np.array([[1.0]])

    def potential_energy(self, q):
        return G0 * q[0]


class Bowl(ib.Problem):
    """Particle inside the disk |q| <= R under gravity: g = R^2 - |q|^2 (a curved constraint)."""

    R = 1.0

    def __init__(self, speed, e=0.5):
        self.name = "bowl"
        self.n_dof, self.n_constraints = 2, 1
        self.restitution = e
        self.q0, self.v0 = np.array([0.0, -self.R]), np.array([speed, 0.0])

    def mass_matrix(self, q):
        return np.eye(2)

    def forces(self, t, q, v):
        return np.array([0.0, -G0])

    def gap(self, q):
        return np.array([self.R**2 - q @ q])

    def gap_gradient(self, q):
        return -2.0 * np.asarray(q, dtype=float)[None, :]

    def potential_energy(self, q):
        return G0 * q[1]


def bowl_pendulum(speed, t_end, events=None):
    """The bowl particle sliding on its circle: theta'' = -(g/R) sin(theta) from the bottom with
    speed ``speed``, by solve_ivp at rtol 1e-13 (dense output)."""
    R = Bowl.R
    return integrate.solve_ivp(
        lambda t, y: [y[1], -G0 / R * math.sin(y[0])],
        (0.0, t_end),
        [0.0, speed / R],
        method="DOP853",
        rtol=1e-13,
        atol=1e-14,
        events=events,
        dense_output=True,
    )


def on_circle(angle):
    """Points R (sin, -cos) of the bowl's circle, shape (len(angle), 2)."""
    return Bowl.R * np.column_stack((np.sin(angle), -np.cos(angle)))


#: The event-driven drift tolerance (atol + rtol L) |grad g| on the bowl's circle (defaults).
BOWL_DRIFT = (EventDriven().atol + EventDriven().rtol * Bowl.R) * 2 * Bowl.R


class NanForce(Ball):
    def forces(self, t, q, v):
        return np.array([np.nan if t > 0.3 else -self.mass * self.g])


class WrongGradient(Ball):
    """A gap gradient of the wrong sign below half the height (right at q0, where
    Problem.check compares it with the gap's differences): the impact law cannot keep the ball
    out."""

    def gap_gradient(self, q):
        return np.array([[-1.0 if q[0] < 0.5 else 1.0]])


# --------------------------------------------------------------------------------------------
# Exact solutions


def ball_impacts(q0, v0, g, e, count=400):
    """Impact times t_k, k = 1..count (fewer for e = 0 or once the speed underflows), and V1."""
    v1 = math.sqrt(v0 * v0 + 2.0 * g * q0)
    t1 = (v0 + v1) / g
    if e == 0.0:
        return np.array([t1]), v1
    k = np.arange(count)
    k = k[e**k * v1 > 1e-200]
    if e == 1.0:
        return t1 + k * 2.0 * v1 / g, v1
    return t1 + (2.0 * e * v1 / g) * (1.0 - e**k) / (1.0 - e), v1


def ball_exact(t, q0, v0, g, e):
    """Exact (q, v) of the 1-D bouncing gap at times t (post-impact velocity at impacts)."""
    t = np.asarray(t, dtype=float)
    times, v1 = ball_impacts(q0, v0, g, e)
    q = q0 + v0 * t - 0.5 * g * t**2
    v = v0 - g * t
    k = np.searchsorted(times, t, side="right") - 1
    flying = k >= 0
    tau = t[flying] - times[k[flying]]
    speed = e ** (k[flying] + 1.0) * v1
    q[flying] = speed * tau - 0.5 * g * tau**2
    v[flying] = speed - g * tau
    if e < 1.0:
        rest = flying & (t >= times[-1] + 2.0 * e ** len(times) * v1 / g)
        q[rest], v[rest] = 0.0, 0.0
    return np.maximum(q, 0.0), v


def wall_exact(problem, t):
    """Slanted wall: q = T q_free + (c + s) d, v = T v_free + s' d, d = M^-1 n / n^T M^-1 n."""
    M, F, n, c = problem.M, problem.F, problem.n, problem.c
    d = np.linalg.solve(M, n)
    d /= n @ d
    a = np.linalg.solve(M, F)
    g_eff = -n @ a
    t = np.asarray(t, dtype=float)[:, None]
    q_free = problem.q0 + problem.v0 * t + 0.5 * a * t**2
    v_free = problem.v0 + a * t
    s, u = ball_exact(t[:, 0], n @ problem.q0 - c, n @ problem.v0, g_eff, problem.restitution)
    tangential = np.eye(2) - np.outer(d, n)
    q = q_free @ tangential.T + (c + s)[:, None] * d
    v = v_free @ tangential.T + u[:, None] * d
    return q, v, g_eff


def away_from(t, times, width):
    """Mask of the times farther than ``width`` from all of ``times``."""
    return np.min(np.abs(np.asarray(t)[:, None] - np.asarray(times)[None, :]), axis=1) > width


def impact_pairs(trajectory):
    """Indices (i, i + 1) of the sample pairs with the same time (before / after an event)."""
    same = np.flatnonzero(np.diff(trajectory.t) == 0.0)
    return same, same + 1


def run(problem, t_end, **kwargs):
    output_every = kwargs.pop("output_every", 1)
    return ib.simulate(problem, EventDriven(**kwargs), t_end, output_every=output_every)


def registered_ball(e=0.5, q0=1.0, v0=0.0, t0=0.0):
    """The registered BouncingBall (compiled kernels): Ball's motion, with Ball's arguments."""
    return BouncingBall(restitution=e, q0=q0, v0=v0, t0=t0)


#: The ball on each engine: the plain-Python Ball on the scipy path, the registered ball on the
#: scipy path and on the compiled engine (impactbench/core/events), against the same
#: closed forms.
BALLS = pytest.mark.parametrize(
    "make_ball, compiled",
    [(Ball, False), (registered_ball, False), (registered_ball, True)],
    ids=["python-scipy", "kernels-scipy", "kernels-compiled"],
)


# --------------------------------------------------------------------------------------------
# Construction


def test_defaults_and_name():
    method = EventDriven()
    assert method.family == "event-driven"
    assert method.requires_step is False
    assert method.name == (
        "EventDriven[integrator=DOP853,rtol=1e-10,atol=1e-12,rest_velocity=1e-06,"
        "min_impact_interval=1e-12,compiled=True]"
    )
    assert "max_step=0.01" in EventDriven(max_step=0.01).name


def test_name_round_trips_through_the_method_table():
    from impactbench import methods

    if "EventDriven" not in methods.METHODS:
        pytest.skip("EventDriven is not yet in impactbench.methods.METHODS")
    method = EventDriven(integrator="RK45", rtol=1e-8, max_step=0.5, rest_velocity=1e-5)
    again = methods.get_method(method.name)
    assert isinstance(again, EventDriven) and again.parameters() == method.parameters()


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"integrator": "Euler"}, "integrator"),
        ({"rtol": 0.0}, "rtol"),
        ({"rtol": 1e-16}, "rtol"),
        ({"rtol": float("nan")}, "rtol"),
        ({"atol": -1.0}, "atol"),
        ({"max_step": 0.0}, "max_step"),
        ({"max_step": float("nan")}, "max_step"),
        ({"max_step": "big"}, "max_step"),
        ({"rest_velocity": -1e-6}, "rest_velocity"),
        ({"rest_velocity": float("inf")}, "rest_velocity"),
        ({"min_impact_interval": 2.0}, "min_impact_interval"),
    ],
)
def test_bad_parameters_are_named(kwargs, name):
    with pytest.raises(ValueError, match=name):
        EventDriven(**kwargs)


def test_step_is_rejected():
    with pytest.raises(ValueError, match="h must be None"):
        ib.simulate(Ball(), EventDriven(), 1.0, h=0.01)


# --------------------------------------------------------------------------------------------
# Accuracy against exact solutions


@pytest.mark.parametrize("e, q0, v0", [(0.5, 1.0, 0.0), (0.8, 0.5, 2.0)])
def test_ball_exact_through_accumulation(e, q0, v0):
    problem = Ball(e=e, q0=q0, v0=v0)
    times, v1 = ball_impacts(q0, v0, G0, e)
    t_inf = times[0] + 2.0 * e * v1 / (G0 * (1.0 - e))
    tr = run(problem, t_inf + 1.0)
    assert tr.status is ib.Status.ZENO_HANDLED
    # impacts until the rebound speed e^k V1 falls below the rest speed, all at the exact times
    rest_speed = tr.stats["rest_speed"]
    assert rest_speed == pytest.approx(1e-6 * math.sqrt(2.0 * G0), rel=1e-12)
    count = math.ceil(math.log(rest_speed / v1) / math.log(e))
    assert len(tr.impacts) == tr.impacts.total == tr.stats["impacts"] == count >= 10
    assert np.abs(tr.impacts.t - times[:count]).max() <= 1e-8
    before, after = tr.impacts.normal_velocity_before, tr.impacts.normal_velocity_after
    assert np.abs(after + e * before).max() <= 1e-12 * np.abs(before).max()
    assert np.all(before < 0.0)
    # positions everywhere, velocities away from impacts and from the cut accumulation
    q, v = ball_exact(tr.t, q0, v0, G0, e)
    assert np.abs(tr.q[:, 0] - q).max() <= 1e-8
    smooth = away_from(tr.t, times, 1e-6) & ((tr.t < tr.stats["zeno_time"]) | (tr.t > t_inf))
    assert np.abs(tr.v[smooth, 0] - v[smooth]).max() <= 1e-8
    # at rest on the floor past t_inf
    assert tr.t[-1] == t_inf + 1.0
    assert abs(tr.q[-1, 0]) <= 1e-12 and abs(tr.v[-1, 0]) <= 1e-12
    assert tr.stats["zeno_time"] == pytest.approx(times[count - 1], abs=1e-8)
    assert "rest speed" in tr.message and "rest_velocity=1e-06" in tr.message


@BALLS
def test_initial_time_shifts_the_solution(make_ball, compiled):
    reference = run(make_ball(e=0.7), 3.0, compiled=compiled)
    shifted = run(make_ball(e=0.7, t0=100.0), 103.0, compiled=compiled)
    assert shifted.t[0] == 100.0 and shifted.t[-1] == 103.0
    assert len(shifted.impacts) == len(reference.impacts) >= 10
    assert np.abs(shifted.impacts.t - 100.0 - reference.impacts.t).max() <= 1e-12
    assert shifted.stats["zeno_time"] == pytest.approx(100.0 + reference.stats["zeno_time"])
    assert abs(shifted.q[-1, 0]) <= 1e-12 and abs(shifted.v[-1, 0]) <= 1e-12


@BALLS
def test_ball_elastic_conserves_energy(make_ball, compiled):
    problem = make_ball(e=1.0, q0=1.0, v0=0.0)
    tr = run(problem, 10.0, compiled=compiled)
    times, _ = ball_impacts(1.0, 0.0, G0, 1.0)
    times = times[times <= 10.0]
    assert tr.status is ib.Status.OK and tr.stats["zeno_time"] is None
    assert len(tr.impacts) == len(times) >= 10
    assert np.abs(tr.impacts.t - times).max() <= 1e-8
    q, v = ball_exact(tr.t, 1.0, 0.0, G0, 1.0)
    assert np.abs(tr.q[:, 0] - q).max() <= 1e-8
    smooth = away_from(tr.t, times, 1e-6)
    assert np.abs(tr.v[smooth, 0] - v[smooth]).max() <= 1e-8
    energy = ib.energy(problem, tr)
    assert np.abs(energy - energy[0]).max() <= 1e-10 * energy[0]


@BALLS
def test_ball_plastic_rests_after_first_impact(make_ball, compiled):
    tr = run(make_ball(e=0.0), 2.0, compiled=compiled)
    t1 = math.sqrt(2.0 / G0)
    assert tr.status is ib.Status.OK
    assert tr.impacts.total == 1 and tr.impacts.t[0] == pytest.approx(t1, abs=1e-12)
    assert tr.impacts.normal_velocity_after[0] == 0.0
    assert tr.stats["contact_time"] == pytest.approx(t1, abs=1e-12)
    after = tr.t > t1 + 1e-9
    assert np.abs(tr.q[after]).max() <= 1e-12 and np.abs(tr.v[after]).max() <= 1e-12


@pytest.mark.parametrize(
    "kernels, compiled", [(False, False), (True, False), (True, True)],
    ids=["python-scipy", "kernels-scipy", "kernels-compiled"],
)  # fmt: skip
@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
def test_energy_never_increases_across_impacts(e, kernels, compiled):
    cases = [(Ball(e=e), 3.0), (Wall(e=e), 2.0), (Corner(e=e), 2.0)]
    if kernels:  # the registered ball and slanted wall (non-diagonal M)
        cases = [(registered_ball(e=e), 3.0), (SlantedWall(restitution=e), 2.0)]
    for problem, t_end in cases:
        tr = run(problem, t_end, compiled=compiled)
        i, j = impact_pairs(tr)
        assert len(i) >= 1
        energy = ib.energy(problem, tr)
        assert np.all(energy[j] <= energy[i] + 1e-12 * np.abs(energy).max())
        if e == 1.0:
            assert np.abs(energy - energy[0]).max() <= 1e-9 * np.abs(energy).max()


def test_slanted_wall_slides_with_exact_acceleration():
    problem = Wall(e=0.6)
    n, M = problem.n, problem.M
    _, _, g_eff = wall_exact(problem, [0.0])
    s0, u0 = n @ problem.q0 - problem.c, n @ problem.v0
    times, v1 = ball_impacts(s0, u0, g_eff, problem.restitution)
    t_inf = times[0] + 2 * 0.6 * v1 / (g_eff * 0.4)
    tr = run(problem, t_inf + 1.5)
    assert tr.status is ib.Status.ZENO_HANDLED
    assert len(tr.impacts) >= 10
    assert np.abs(tr.impacts.t - times[: len(tr.impacts)]).max() <= 1e-8
    q, v = wall_exact(problem, tr.t)[:2]
    assert np.abs(tr.q - q).max() <= 1e-8
    smooth = away_from(tr.t, times, 1e-6) & ((tr.t < tr.stats["zeno_time"]) | (tr.t > t_inf))
    assert np.abs(tr.v[smooth] - v[smooth]).max() <= 1e-8
    # sliding: on the wall, no normal velocity, acceleration a + g_eff M^-1 n / (n^T M^-1 n)
    sliding = tr.t > t_inf
    assert np.abs(tr.q[sliding] @ n - problem.c).max() <= 1e-12
    assert np.abs(tr.v[sliding] @ n).max() <= 1e-12
    w = np.linalg.solve(M, n)
    expected = np.linalg.solve(M, problem.F) + g_eff * w / (n @ w)
    ts, vs = tr.t[sliding], tr.v[sliding]
    acceleration = (vs[-1] - vs[0]) / (ts[-1] - ts[0])
    assert np.abs(acceleration - expected).max() <= 1e-9


@pytest.mark.parametrize("offset", [0.0, 1e-11])
def test_two_simultaneous_contacts_share_one_lcp(offset):
    # offset: the second wall is reached 2e-12 later, within the contact tolerance
    problem = Corner(e=0.5, offset=offset)
    times, v1 = ball_impacts(1.0, 0.0, G0, 0.5)
    t_inf = times[0] + 2 * 0.5 * v1 / (G0 * 0.5)
    tr = run(problem, t_inf + 0.5)
    assert tr.status is ib.Status.ZENO_HANDLED
    log = tr.impacts
    # both constraints in every impact, at the same times, each with u+ = -e u-
    assert np.array_equal(log.constraint[0::2] + log.constraint[1::2], np.ones(len(log) // 2))
    assert np.array_equal(log.t[0::2], log.t[1::2])
    assert len(log) // 2 >= 10
    assert np.abs(log.t[0::2] - times[: len(log) // 2]).max() <= 1e-8
    assert np.abs(log.normal_velocity_after + 0.5 * log.normal_velocity_before).max() <= 1e-12
    q, _ = ball_exact(tr.t, 1.0, 0.0, G0, 0.5)
    assert np.abs(tr.q - q[:, None]).max() <= 1e-8
    assert np.abs(problem.gap(tr.q[-1])).max() <= 1e-12 and np.abs(tr.v[-1]).max() <= 1e-12


def test_two_walls_crossed_in_one_step():
    # without force DOP853 is exact for any step: steps span several wall-to-wall flights
    width, e = 1e-3, 0.9
    problem = Box(e=e, width=width)
    flights = width / e ** np.arange(1, 30)
    times = 0.5 * width + np.concatenate(([0.0], np.cumsum(flights)))
    t_end = times[20] + 1e-5
    tr = run(problem, t_end)
    # every accepted step held an impact (the steps are longer than the flights)
    assert tr.stats["steps"] == len(tr.impacts) + 1 and len(tr.t) == 2 * len(tr.impacts) + 2
    assert np.abs(tr.impacts.t - times[:21]).max() <= 1e-12
    assert np.array_equal(tr.impacts.constraint, np.arange(21) % 2 == 0)
    assert tr.q.min() >= -1e-15 and tr.q.max() <= width + 1e-15
    assert tr.v[-1, 0] == pytest.approx(-(e**21), rel=1e-12)


@pytest.mark.parametrize("depth", [1e-4, 1e-8])
def test_grazing_dip_inside_one_step_is_found(depth):
    # the orbit x = cos t dips `depth` below the floor level x = -1 + depth for a time
    # 2 sqrt(2 depth) << the solver step near t = pi; with e = 1 impacts at t1, 3 t1, 5 t1
    # a grazing impact time is ill-conditioned: its error is the solver's amplitude error over
    # the impact speed sqrt(2 depth); the amplitude error stays below 1e-9
    t1 = math.acos(depth - 1.0)
    tr = run(GrazingOscillator(depth), 6.0 * t1)
    errors = np.abs(tr.impacts.t - t1 * np.array([1.0, 3.0, 5.0]))
    assert errors.max() * math.sqrt(2 * depth) <= 1e-9
    assert np.diff(tr.t).max() > 10 * 2 * math.sqrt(2 * depth)
    assert tr.q.min() >= -1.0 + depth - 1e-12


@BALLS
def test_restart_on_the_floor_does_not_fire_again(make_ball, compiled):
    # starts on g = 0 moving up, and every restart sits on g = 0 (or a round-off below)
    problem = make_ball(e=0.9, q0=0.0, v0=2.0)
    tr = run(problem, 3.0, compiled=compiled)
    times, _ = ball_impacts(0.0, 2.0, G0, 0.9)
    times = times[times <= 3.0]
    assert tr.impacts.t[0] == pytest.approx(2 * 2.0 / G0, abs=1e-12)
    assert len(tr.impacts) == len(times) >= 10
    assert np.diff(tr.impacts.t).min() > 0.1
    assert np.abs(tr.impacts.t - times).max() <= 1e-8


def _gap_crossing(gap, rate, tau, armed, floor, start):
    """The shared crossing test (impactbench.core.events.location, as plain Python) of one
    constraint with gap and rate functions of t: (t_hit or None, armed after the step)."""

    def value(kind, i, level, s, t_old, h, run, w):
        return gap(s) - level if kind == location.GAP else rate(s)

    root = specialize(
        location.brent, {"event_value": value, "_brent_step": location._brent_step}, False
    )
    crossing = specialize(
        location.crossing, {"event_value": value, "root": root, "views": unpacked}, False
    )
    w = types.SimpleNamespace(
        tau=tau,
        gs=gap(tau)[:, None],
        rs=rate(tau)[:, None],
        armed=np.array([armed]),
        floor=np.array([floor]),
    )
    t_hit, armed = crossing(0, start, tau[0], tau[-1] - tau[0], None, w)
    return (None if math.isnan(t_hit) else t_hit), armed


@pytest.mark.parametrize("start", [-1e-17, 0.0, 1e-17])
def test_roundoff_below_zero_with_a_step_over_the_whole_flight(start):
    # a step that starts on the floor (a round-off below or above) and ends far inside it after
    # a full flight: the interior maximum re-arms the event
    u, a = 1.0, G0
    gap = lambda t: start + u * t - 0.5 * a * t * t  # noqa: E731
    rate = lambda t: u - a * t  # noqa: E731
    tau = np.linspace(0.0, 1.0, 5)  # the flight lasts 2 u / a ~ 0.2: inside the first interval
    t_hit, armed = _gap_crossing(gap, rate, tau, False, -1e-9, 0.0)
    assert armed
    assert t_hit == pytest.approx(2 * u / a, abs=1e-14)
    # and a disarmed gap that never opens is caught at the floor level (offset)
    gap = lambda t: -0.5 * a * t * t  # noqa: E731
    rate = lambda t: -a * t  # noqa: E731
    t_hit, armed = _gap_crossing(gap, rate, tau, False, -1e-9, 0.0)
    assert not armed
    assert t_hit == pytest.approx(math.sqrt(2e-9 / a), rel=1e-10)


def test_lift_off_when_the_contact_force_vanishes():
    problem = ShakenBall()
    A, omega = problem.A, problem.omega
    t_off = math.asin(G0 / A) / omega  # lambda = g - A sin(omega t) = 0

    def flight(t):
        s = t - t_off
        q = -0.5 * G0 * s**2 - A / omega * (
            (np.sin(omega * t) - math.sin(omega * t_off)) / omega - s * math.cos(omega * t_off)
        )
        v = -G0 * s - A / omega * (np.cos(omega * t) - math.cos(omega * t_off))
        return q, v

    grid = np.linspace(t_off + 1e-3, 1.0, 2000)
    first_negative = grid[np.argmax(flight(grid)[0] < 0)]
    t_land = optimize.brentq(lambda t: flight(t)[0], t_off + 1e-3, first_negative, xtol=1e-15)
    tr = run(problem, 1.0)
    assert tr.stats["contact_time"] == 0.0
    assert tr.impacts.t[0] == pytest.approx(t_land, abs=1e-8)
    resting = tr.t <= t_off - 1e-9
    assert np.abs(tr.q[resting]).max() <= 1e-15 and np.abs(tr.v[resting]).max() <= 1e-15
    flying = (tr.t > t_off) & (tr.t < t_land - 1e-6)
    assert flying.sum() >= 5
    q, v = flight(tr.t[flying])
    assert np.abs(tr.q[flying, 0] - q).max() <= 1e-8
    assert np.abs(tr.v[flying, 0] - v).max() <= 1e-8
    assert tr.q.min() >= 0.0


def test_sliding_on_a_curved_constraint_and_leaving_it():
    # inside the unit circle, from the bottom with v0^2 = 3.5 g R: a pendulum whose contact
    # force vanishes at cos(theta) = -1/2, then a free parabola back to the circle
    R, speed = Bowl.R, math.sqrt(3.5 * G0 * Bowl.R)
    leave = lambda t, y: y[0] - 2.0 * math.pi / 3.0  # noqa: E731
    leave.terminal = True
    pendulum = bowl_pendulum(speed, 2.0, events=leave)
    t_off = pendulum.t_events[0][0]
    theta, omega = pendulum.y_events[0][0]
    q_off = R * np.array([math.sin(theta), -math.cos(theta)])
    v_off = R * omega * np.array([math.cos(theta), math.sin(theta)])

    def flight(t):
        s = np.asarray(t)[:, None] - t_off
        return q_off + v_off * s + 0.5 * np.array([0.0, -G0]) * s**2, v_off + [0.0, -G0] * s

    grid = np.linspace(t_off + 1e-3, t_off + 2.0, 4000)
    first_outside = grid[np.argmax(np.sum(flight(grid)[0] ** 2, axis=1) > R**2)]
    gap_in_flight = lambda t: R**2 - np.sum(flight([t])[0] ** 2)  # noqa: E731
    t_land = optimize.brentq(gap_in_flight, t_off + 1e-3, first_outside, xtol=1e-15)
    tr = run(Bowl(speed), t_land + 0.05)
    assert tr.stats["contact_time"] == 0.0
    assert tr.impacts.t[0] == pytest.approx(t_land, abs=1e-8)
    sliding = tr.t < t_off - 1e-9
    exact = on_circle(pendulum.sol(tr.t[sliding])[0])
    assert np.abs(tr.q[sliding] - exact).max() <= 1e-8
    assert np.abs(R**2 - np.sum(tr.q[sliding] ** 2, axis=1)).max() <= 1e-9
    flying = (tr.t > t_off + 1e-9) & (tr.t <= tr.impacts.t[0])
    assert flying.sum() >= 3
    q, v = flight(tr.t[flying])
    assert np.abs(tr.q[flying] - q).max() <= 1e-8
    smooth = flying & (tr.t < t_land - 1e-6)
    assert np.abs(tr.v[smooth] - v[smooth[flying]]).max() <= 1e-8
    # in contact the drift is held below the solver's error scale (atol + rtol L) |grad g|
    assert np.min(R**2 - np.sum(tr.q**2, axis=1)) >= -BOWL_DRIFT


@pytest.fixture(scope="module")
def long_bowl_slide():
    """The bowl pendulum swinging to 60 degrees for 10 s (about 5 periods, never leaving the
    circle), with dense output, and its exact motion."""
    speed = math.sqrt(G0 * Bowl.R)
    return run(Bowl(speed), 10.0, dense_output=True), bowl_pendulum(speed, 10.0)


def test_long_sliding_on_a_curved_constraint_does_not_drift(long_bowl_slide):
    tr, pendulum = long_bowl_slide
    assert tr.status is ib.Status.OK and tr.impacts.total == 0
    assert tr.stats["projections"] >= 1
    assert np.abs(tr.q - on_circle(pendulum.sol(tr.t)[0])).max() <= 1e-8
    assert np.abs(Bowl.R**2 - np.sum(tr.q**2, axis=1)).max() <= BOWL_DRIFT
    drift_rate = np.abs(np.sum(-2 * tr.q * tr.v, axis=1)).max()
    assert drift_rate <= BOWL_DRIFT * (1 + np.abs(tr.v).max())


@pytest.mark.parametrize("t_end", np.linspace(0.3, 3.0, 60)[[30, 52]])
def test_drift_projection_just_before_the_end(t_end):
    # for these t_end a drift projection happens one step before t_end, after a step longer
    # than the time left: the restarted solver's first step must be shortened
    tr = run(Bowl(math.sqrt(G0 * Bowl.R)), float(t_end))
    assert tr.t[-1] == t_end and tr.status is ib.Status.OK


@BALLS
def test_spacing_threshold_alone_cuts_the_accumulation(make_ball, compiled):
    tr = run(make_ball(e=0.5), 2.0, compiled=compiled, rest_velocity=0.0, min_impact_interval=1e-7)
    assert tr.status is ib.Status.ZENO_HANDLED
    assert "impacts closer than 2e-07" in tr.message
    assert tr.stats["impact_interval"] == pytest.approx(2e-7)
    assert np.diff(tr.impacts.t)[-1] < 2e-7 <= np.diff(tr.impacts.t)[-2]
    assert abs(tr.q[-1, 0]) <= 1e-12 and abs(tr.v[-1, 0]) <= 1e-12


# --------------------------------------------------------------------------------------------
# Output, failures, integrators


def test_output_keeps_impacts_and_final_time():
    full = run(Ball(e=0.8), 3.0)
    thin = run(Ball(e=0.8), 3.0, output_every=1000)
    assert thin.t[0] == 0.0 and thin.t[-1] == 3.0
    assert np.all(np.diff(thin.t) >= 0.0)
    i, j = impact_pairs(thin)
    assert np.array_equal(thin.t[i], thin.impacts.t)
    assert np.all(thin.v[i, 0] < 0.0) and np.all(thin.v[j, 0] >= 0.0)
    assert len(thin.t) < len(full.t)
    assert thin.stats["steps"] == full.stats["steps"]
    for key in ("steps", "force_evaluations", "impacts", "segments", "wall_time"):
        assert full.stats[key] > 0
    assert full.h is None and full.method == EventDriven().name and full.problem == "ball"


def test_non_finite_forces_raise_with_the_state():
    with pytest.raises(
        ib.SimulationError, match=r"forces\(t, q, v\) must return finite values"
    ) as info:
        run(NanForce(), 1.0)
    err = info.value
    assert err.t > 0.3 and err.q.shape == (1,) and err.v.shape == (1,)
    assert err.trajectory is not None and err.trajectory.status is ib.Status.FAILED
    assert err.trajectory.t[-1] <= err.t


def test_never_succeeds_inside_the_obstacle():
    with pytest.raises(ib.SimulationError, match="gap"):
        run(WrongGradient(), 1.0)


def test_final_state_inside_the_obstacle_is_an_error(monkeypatch):
    # simulate a detector that misses every impact: the ball falls through the floor
    def blind(i, start, t_old, h, run, w):
        return math.nan, w.armed[i]

    templates = [
        (name, blind if name == "gap_crossing" else t, how) for name, t, how in engine._TEMPLATES
    ]
    monkeypatch.setattr(engine, "_TEMPLATES", tuple(templates))
    with pytest.raises(ib.SimulationError, match="ended inside the obstacle") as info:
        run(Ball(), 1.0)
    assert info.value.t == 1.0 and info.value.q[0] < -1.0


@pytest.mark.parametrize("integrator", ["RK23", "RK45", "Radau", "BDF", "LSODA"])
def test_other_integrators(integrator):
    tr = run(Ball(e=0.5), 2.0, integrator=integrator, rtol=1e-8, atol=1e-10)
    assert tr.status is ib.Status.ZENO_HANDLED
    times, _ = ball_impacts(1.0, 0.0, G0, 0.5)
    assert np.abs(tr.impacts.t[:10] - times[:10]).max() <= 1e-6
    q, _ = ball_exact(tr.t, 1.0, 0.0, G0, 0.5)
    assert np.abs(tr.q[:, 0] - q).max() <= 1e-6
    assert abs(tr.q[-1, 0]) <= 1e-12 and abs(tr.v[-1, 0]) <= 1e-12


# --------------------------------------------------------------------------------------------
# Built-in problems (compiled kernels, their own exact solutions)


def _builtin_problems():
    problems = pytest.importorskip("impactbench.problems")
    return [
        (problems.BouncingBall(restitution=0.7), 3.0),
        (problems.SlantedWall(), 3.0),
        (problems.ImpactingOscillator(restitution=0.8), 35.0),
        (forced := problems.ForcedImpactOscillator(), forced.t0 + 30.0),
    ]


def test_builtin_problems_match_their_exact_solutions():
    for problem, t_end in _builtin_problems():
        tr = run(problem, t_end)
        times = problem.impact_times(t_end)
        found = tr.impacts.t
        assert len(found) >= 10
        assert len(found) == len(times) or tr.status is ib.Status.ZENO_HANDLED, problem.name
        assert np.abs(found - times[: len(found)]).max() <= 1e-8, problem.name
        q, _ = problem.exact_solution(tr.t)
        assert np.abs(tr.q - q).max() <= 1e-8, problem.name


# --------------------------------------------------------------------------------------------
# Dense output


def test_dense_output_flag_and_name():
    assert EventDriven().dense_output is False
    assert EventDriven().parameters()["dense_output"] is False
    assert "dense_output" not in EventDriven().name
    method = EventDriven(dense_output=True)
    assert method.parameters()["dense_output"] is True
    assert method.name.endswith(",dense_output=True,compiled=True]")
    from impactbench import methods

    again = methods.get_method(method.name)
    assert again.dense_output is True and again.parameters() == method.parameters()
    with pytest.raises(ValueError, match="dense_output"):
        EventDriven(dense_output="yes")
    assert run(Ball(), 1.0).dense is None


def _gap_problem(kind):
    problems = pytest.importorskip("impactbench.problems")
    if kind == "ball":
        return problems.BouncingBall(restitution=0.7, q0=1.0, v0=0.5)
    return problems.SlantedWall()


@pytest.fixture(scope="module", params=["ball", "wall"])
def through_accumulation(request):
    """(problem, trajectory) of a dense run one time unit past the accumulation point."""
    problem = _gap_problem(request.param)
    t_end = problem.accumulation_time + 1.0
    return problem, run(problem, t_end, dense_output=True)


def test_dense_matches_exact_through_accumulation(through_accumulation):
    problem, tr = through_accumulation
    dense, t_end = tr.dense, tr.t[-1]
    assert tr.status is ib.Status.ZENO_HANDLED
    assert isinstance(dense, ib.DenseOutput)
    assert dense.t0 == problem.t0 and dense.t_end == t_end
    t = np.random.default_rng(7).uniform(problem.t0, t_end, 10_000)
    t = np.concatenate(([problem.t0, t_end], t))
    q, v = dense(t)
    assert q.shape == v.shape == (t.shape[0], problem.n_dof)
    q_exact, v_exact = problem.exact_solution(t)
    assert np.abs(q - q_exact).max() <= 1e-8
    # v away from the impacts and from the cut accumulation (zeno_time, t_inf), where the exact
    # ball still bounces with speeds below the rest speed (~1e-6)
    times = problem.impact_times(t_end)
    smooth = away_from(t, times, 1e-6)
    smooth &= (t < tr.stats["zeno_time"]) | (t > problem.accumulation_time)
    assert smooth.sum() >= 9_900
    assert np.abs(v - v_exact)[smooth].max() <= 1e-8
    # past the accumulation: at rest on the wall / sliding along it
    late = t > problem.accumulation_time
    assert late.sum() >= 1_000
    gap = np.array([problem.gap(x)[0] for x in q[late]])
    normal = np.array(
        [problem.gap_gradient(x)[0] @ w for x, w in zip(q[late], v[late], strict=True)]
    )
    assert np.abs(gap).max() <= 1e-10 and np.abs(normal).max() <= 1e-10
    # left limits differ only at breaks
    q_left, v_left = dense.left(t)
    assert np.array_equal(q_left, q) and np.array_equal(v_left, v)


def test_dense_is_right_continuous_at_impacts(through_accumulation):
    problem, tr = through_accumulation
    dense, e = tr.dense, problem.restitution
    found = dense.impacts
    assert np.array_equal(found, tr.impacts.t) and len(found) >= 20
    exact = problem.impact_times(tr.t[-1])[: len(found)]
    assert np.abs(found - exact).max() <= 1e-8
    q_plus, v_plus = dense(found)
    q_minus, v_minus = dense.left(found)
    # the trajectory's samples just before and just after each impact, exactly
    i, j = impact_pairs(tr)
    assert np.array_equal(tr.t[i], found)
    assert np.array_equal(q_minus, tr.q[i]) and np.array_equal(v_minus, tr.v[i])
    assert np.array_equal(q_plus, tr.q[j]) and np.array_equal(v_plus, tr.v[j])
    # positions are continuous; normal velocities u+ = -e u- (the last impact, where the
    # accumulation is cut, closes the contact: u+ = 0)
    assert np.abs(q_plus - q_minus).max() <= 1e-10
    normal = problem.gap_gradient(problem.q0)[0]
    u_minus, u_plus = v_minus @ normal, v_plus @ normal
    assert np.all(u_minus < 0.0)
    scale = np.abs(v_minus).max()
    assert np.abs(u_plus[:-1] + e * u_minus[:-1]).max() <= 1e-12 * scale
    fast = np.abs(u_minus[:-1]) > 1e-3 * scale
    assert fast.sum() >= 10
    assert np.abs(u_plus[:-1][fast] / u_minus[:-1][fast] + e).max() <= 1e-9
    assert found[-1] == tr.stats["zeno_time"] and abs(u_plus[-1]) <= 1e-12 * scale
    # against the exact solution: right limits post-impact (exact_solution's convention), left
    # limits by continuing the previous flight (constant acceleration) to the exact impact time
    q_exact, v_exact = problem.exact_solution(exact)
    assert np.abs(q_plus - q_exact).max() <= 1e-8
    assert np.abs(v_plus - v_exact)[:-1].max() <= 1e-8
    accel = np.linalg.solve(
        problem.mass_matrix(problem.q0), problem.forces(0.0, problem.q0, problem.v0)
    )
    delta = 0.25 * np.diff(np.concatenate(([problem.t0], exact)))[:, None]
    q_before, v_before = problem.exact_solution(exact - delta[:, 0])
    assert np.abs(q_minus - (q_before + v_before * delta + 0.5 * accel * delta**2)).max() <= 1e-8
    assert np.abs(v_minus - (v_before + accel * delta)).max() <= 1e-8


def test_dense_pickles_to_identical_values(through_accumulation):
    import pickle

    _, tr = through_accumulation
    again = pickle.loads(pickle.dumps(tr))
    assert isinstance(again.dense, ib.DenseOutput) and len(again.dense) == len(tr.dense)
    t = np.concatenate(
        (np.random.default_rng(3).uniform(tr.t[0], tr.t[-1], 1000), tr.dense.impacts)
    )
    for side in ("right", "left"):
        assert np.array_equal(again.dense.state(t, side), tr.dense.state(t, side))
    assert np.array_equal(again.dense.impacts, tr.dense.impacts)


def test_dense_memory_per_step(through_accumulation):
    import pickle

    problem, tr = through_accumulation
    dense, n = tr.dense, problem.n_dof
    assert dense.degree == event_driven.DENSE_DEGREE["DOP853"] == 7
    per_step = ib.DenseOutput.bytes_per_piece(n, dense.degree)
    assert per_step == 8 + 16 * n * 8 == {1: 136, 2: 264}[n]  # as documented
    # one piece per accepted step (events cut steps; zero-length pieces are dropped)
    assert tr.stats["steps"] - tr.stats["segments"] <= len(dense) <= tr.stats["steps"]
    assert dense.nbytes <= len(dense) * per_step + 8 * (len(dense.impacts) + 1)
    assert len(pickle.dumps(dense)) <= dense.nbytes + 2_000


def test_dense_does_not_depend_on_output_every():
    full = run(Ball(e=0.8), 3.0, dense_output=True)
    thin = run(Ball(e=0.8), 3.0, dense_output=True, output_every=50)
    plain = run(Ball(e=0.8), 3.0)  # the run itself is unchanged by dense_output
    assert np.array_equal(plain.t, full.t) and np.array_equal(plain.q, full.q)
    assert np.array_equal(plain.v, full.v) and np.array_equal(plain.impacts.t, full.impacts.t)
    assert len(thin.t) < len(full.t)
    assert np.array_equal(thin.dense.breaks, full.dense.breaks)
    assert np.array_equal(thin.dense.values, full.dense.values)
    # every sample of the thinned output is reproduced exactly (pre-impact ones by `left`)
    i, _ = impact_pairs(thin)
    before = np.zeros(len(thin.t), dtype=bool)
    before[i] = True
    q, v = thin.dense(thin.t)
    q_left, v_left = thin.dense.left(thin.t)
    assert np.array_equal(np.where(before[:, None], q_left, q), thin.q)
    assert np.array_equal(np.where(before[:, None], v_left, v), thin.v)


def test_dense_is_far_more_accurate_than_linear_interpolation():
    problems = pytest.importorskip("impactbench.problems")
    problem = problems.ImpactingOscillator(restitution=0.8)
    tr = run(problem, 20.0, dense_output=True)
    t = np.random.default_rng(5).uniform(0.0, 20.0, 10_000)
    q_exact, v_exact = problem.exact_solution(t)
    q, v = tr.dense(t)
    smooth = away_from(t, problem.impact_times(20.0), 1e-6)
    assert np.abs(q - q_exact).max() <= 1e-8
    assert np.abs(v - v_exact)[smooth].max() <= 1e-8
    linear = np.interp(t, tr.t, tr.q[:, 0])
    assert np.abs(linear - q_exact[:, 0]).max() >= 1e-4


@pytest.mark.parametrize("integrator", sorted(event_driven.INTEGRATORS))
def test_dense_reproduces_each_solvers_interpolant(integrator):
    # a pendulum (no polynomial solution): the stored pieces equal scipy's dense output
    from impactbench.core.dense import DenseOutputBuilder

    solver = event_driven.INTEGRATORS[integrator](
        lambda t, y: np.array([y[1], -np.sin(y[0])]), 0.0, np.array([2.0, 0.0]), 20.0, rtol=1e-8
    )
    builder = DenseOutputBuilder(1, event_driven.DENSE_DEGREE[integrator])
    steps = []
    while solver.status == "running":
        solver.step()
        sol = solver.dense_output()
        builder.add(solver.t_old, solver.t, sol)
        steps.append(sol)
    dense = builder.build()
    assert len(dense) == len(steps) >= 20
    rng = np.random.default_rng(11)
    worst = 0.0
    for sol in steps:
        t = rng.uniform(sol.t_old, sol.t, 20)
        worst = max(worst, np.abs(dense.state(t) - sol(t).T).max())
    assert worst <= 1e-13


@pytest.mark.parametrize("integrator", ["RK23", "RK45", "Radau", "BDF", "LSODA"])
def test_dense_output_of_other_integrators(integrator):
    tr = run(Ball(e=0.5), 2.0, integrator=integrator, rtol=1e-8, atol=1e-10, dense_output=True)
    assert tr.dense.degree == event_driven.DENSE_DEGREE[integrator]
    t = np.random.default_rng(2).uniform(0.0, 2.0, 2000)
    q, _ = tr.dense(t)
    assert np.abs(q[:, 0] - ball_exact(t, 1.0, 0.0, G0, 0.5)[0]).max() <= 1e-6


def test_dense_in_persistent_contact_stays_near_the_constraint(long_bowl_slide):
    # the bowl pendulum of the test above: sliding for 10 s with drift projections
    tr, pendulum = long_bowl_slide
    R = Bowl.R
    t = np.random.default_rng(4).uniform(0.0, 10.0, 10_000)
    q, v = tr.dense(t)
    angle, rate = pendulum.sol(t)
    assert np.abs(q - on_circle(angle)).max() <= 1e-8
    tangent = R * rate[:, None] * np.column_stack((np.cos(angle), np.sin(angle)))
    assert np.abs(v - tangent).max() <= 1e-8
    # the drift tolerance (atol + rtol L) |grad g| holds at the step ends; inside a step the
    # interpolant's own error (of the order of the solver tolerance) adds to it
    assert np.abs(R**2 - np.sum(q**2, axis=1)).max() <= 5.0 * BOWL_DRIFT
    # the final state is the projected one
    q_end, v_end = tr.dense(10.0)
    assert np.array_equal(q_end[0], tr.q[-1]) and np.array_equal(v_end[0], tr.v[-1])


def test_dense_rejects_times_outside_its_interval():
    tr = run(Ball(e=0.5, t0=1.0), 2.0, dense_output=True)
    dense = tr.dense
    q, v = dense(1.5)
    assert q.shape == v.shape == (1, 1)
    for bad in (0.5, 2.0 + 1e-9, np.nan, [[1.5]]):
        with pytest.raises(ValueError, match="t must"):
            dense(bad)
    # a round-off beyond the ends is clamped onto them
    q_end, _ = dense(np.nextafter(2.0, 3.0))
    assert np.array_equal(q_end, dense(2.0)[0])
    with pytest.raises(ValueError, match="side"):
        dense.state(1.5, side="middle")


def test_failed_run_keeps_the_dense_output_so_far():
    with pytest.raises(
        ib.SimulationError, match=r"forces\(t, q, v\) must return finite values"
    ) as info:
        run(NanForce(), 1.0, dense_output=True)
    dense = info.value.trajectory.dense
    assert dense is not None and dense.t0 == 0.0 and 0.3 >= dense.t_end > 0.0
    q, _ = dense(np.linspace(0.0, dense.t_end, 50))
    assert (
        np.abs(q[:, 0] - ball_exact(np.linspace(0.0, dense.t_end, 50), 1.0, 0.0, G0, 0.5)[0]).max()
        <= 1e-10
    )


class UncoupledCorner(Corner):
    """The corner with a diagonal M: each wall's impacts leave the other's normal velocity."""

    M = np.diag([1.0, 2.0])


def test_impact_spacing_is_measured_per_constraint():
    """Two walls reached ~2e-7 apart are impacts of different constraints, not an accumulation:
    with min_impact_interval above their spacing each must still rebound with u+ = -e u- (a
    single clock for all constraints glued the second one to its wall)."""
    problem = UncoupledCorner(e=0.5, offset=1e-6)
    times, _ = ball_impacts(1.0, 0.0, G0, 0.5)
    tr = ib.simulate(problem, EventDriven(min_impact_interval=1e-6), times[3] + 1e-3)
    assert tr.status is ib.Status.OK, tr.message
    log = tr.impacts
    assert len(log) == 8 and np.array_equal(log.constraint, [0, 1] * 4)
    assert np.abs(log.t[0::2] - times[:4]).max() <= 1e-8
    assert 0.0 < (log.t[1::2] - log.t[0::2]).min() < 1e-6
    assert np.abs(log.normal_velocity_after + 0.5 * log.normal_velocity_before).max() <= 1e-12


@pytest.mark.parametrize("n_beads", [3])
def test_stacked_beads_come_to_rest_on_each_other(n_beads):
    """Beads dropped in a column (e = 0.5) end as the resting stack q_i = (2 i - 1) r, v = 0,
    every contact closed. The bounces of a bead on a bead held by the floor accumulate with the
    relative normal acceleration -g (their free relative acceleration is 0): with the rest speed
    taken from the free acceleration the accumulation was never cut and the run crawled through
    endless bounces on the contact tolerance."""
    problem = ib.problems.ColumnOfBeads(n_beads=n_beads, restitution=0.5)
    run = ib.simulate(problem, EventDriven(), 3.0)
    r = problem.radius
    np.testing.assert_allclose(run.q[-1], (2 * np.arange(1, n_beads + 1) - 1) * r, atol=1e-12)
    np.testing.assert_allclose(run.v[-1], 0.0, atol=1e-12)
    assert run.stats["contact_phases"] >= n_beads
    assert run.status is ib.Status.ZENO_HANDLED


@pytest.mark.parametrize("compiled", [True, False], ids=["compiled", "scipy"])
def test_slanted_wall_impacts_reverse_the_normal_velocity_in_the_kinetic_metric(compiled):
    """Each impact of the slanted wall: u+ = -e u- for u = n . v, and the jump of v is along
    M^-1 n (the tangential part in the metric of M is kept)."""
    problem = SlantedWall(restitution=0.6)
    tr = run(problem, 1.5, compiled=compiled)
    i, j = impact_pairs(tr)
    assert len(i) >= 3
    n, M = problem.normal, problem.mass
    jumps = tr.v[j] - tr.v[i]
    direction = np.linalg.solve(M, n)
    cross = jumps[:, 0] * direction[1] - jumps[:, 1] * direction[0]
    assert np.abs(cross).max() <= 1e-12 * np.abs(jumps).max()
    np.testing.assert_allclose(tr.v[j] @ n, -0.6 * (tr.v[i] @ n), rtol=1e-12, atol=1e-14)
