"""EventDriven with moving obstacles (rheonomic constraints g(t, q)), against closed forms.

Two floors under a ball of mass m and gravity g0 (q = (y,), g = y - s(t), G = [1]):

- :class:`MovingFloorBall` (tests/moving_floor.py), s(t) = s0 + c t + a t^2 / 2. In the floor's
  frame z = y - s(t) the ball is the bouncing ball with gravity g0 + a: from (z0, w0) its first
  impact is at t_1 = (w0 + V)/(g0 + a) with U_1- = -V, V = sqrt(w0^2 + 2 (g0 + a) z0), then
  t_{k+1} = t_1 + (2 e V/(g0 + a)) (1 - e^k)/(1 - e), U_{k+1}- = -e^k V, U+ = -e U-, the
  accumulation point t_inf = t_1 + 2 e V/((1 - e)(g0 + a)), and past it the ball rides the floor
  (z = 0, v = s'(t)) held by the force m (g0 + a); with a < -g0 a ball resting on the floor
  leaves it at once (z = -(g0 + a) t^2/2). With a = 0 (Galilean transformation) the relative
  motion is the fixed-floor run of the registered BouncingBall from (z0, w0).
- :class:`impactbench.problems.BallOnVibratingTable`, s(t) = A sin(w t): a ball at rest on it
  is held by lambda = m (g0 + s''(t)) = m (g0 - A w^2 sin(w t)), which vanishes first where
  sin(w t) = 1/Gamma, Gamma = A w^2/g0 (the table's acceleration reaches -g0): there it leaves
  the table; with Gamma < 1 the force stays positive and it never leaves.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from moving_floor import MovingFloorBall
from scipy import optimize
from test_rheonomic_contract import GRAVITY as LINE_GRAVITY
from test_rheonomic_contract import OMEGA, RotatingLine

import impactbench as ib
from impactbench.methods import EventDriven
from impactbench.problems import BallOnVibratingTable, BouncingBall

G0 = 9.81
E = 0.8


def resting_on_table(amplitude: float, frequency: float, t0: float = 0.0) -> BallOnVibratingTable:
    """The ball at rest on the table s(t) = A sin(w t) at t0 (g = y - s(t), r = -s'(t),
    c = -s''(t))."""
    table = amplitude * math.sin(frequency * t0)
    speed = amplitude * frequency * math.cos(frequency * t0)
    return BallOnVibratingTable(amplitude, frequency, E, G0, q0=table, v0=speed, t0=t0)


def run(problem, t_end, **kwargs):
    return ib.simulate(problem, EventDriven(**kwargs), t_end)


def floor_impacts(z0, w0, gravity, e, count):
    """The first ``count`` impact times and pre-impact relative velocities of the bouncing ball
    with gravity ``gravity`` from (z0, w0) (module notes)."""
    speed = math.sqrt(w0 * w0 + 2.0 * gravity * z0)
    t1 = (w0 + speed) / gravity
    k = np.arange(count)
    times = t1 + (2.0 * e * speed / gravity) * (1.0 - e**k) / (1.0 - e)
    return times, -speed * e**k, t1 + 2.0 * e * speed / ((1.0 - e) * gravity)


def test_galilean_invariance_floor_at_constant_speed():
    """A drop onto a floor moving at c: y - c t and v - c are the fixed-floor run's from
    (z0, w0) = (1, -c), impacts and relative velocities included."""
    c = 0.7
    moving = run(MovingFloorBall(q0=1.0, v0=0.0, floor_speed=c, floor_acceleration=0.0), 3.0)
    fixed = run(BouncingBall(q0=1.0, v0=-c, restitution=E), 3.0)
    assert moving.status is fixed.status is ib.Status.OK
    a, b = moving.impacts, fixed.impacts
    assert a.total == b.total >= 4
    np.testing.assert_allclose(a.t, b.t, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.normal_velocity_before, b.normal_velocity_before, atol=1e-8)
    np.testing.assert_allclose(a.normal_velocity_after, b.normal_velocity_after, atol=1e-8)
    assert moving.t[-1] == fixed.t[-1] == 3.0
    assert moving.q[-1, 0] - c * 3.0 == pytest.approx(fixed.q[-1, 0], abs=1e-8)
    assert moving.v[-1, 0] - c == pytest.approx(fixed.v[-1, 0], abs=1e-8)
    # the absolute velocity jumps by (1 + e) |U-|, not by (1 + e) |v-|: the law is relative
    before = a.normal_velocity_before
    assert np.all(before < -c)


def test_constant_acceleration_impacts_accumulation_and_rest():
    """Floor s = 0.5 t + t^2: the impacts of the ball with gravity g0 + 2, its accumulation
    and the resting contact held by m (g0 + a) afterwards, to t = 1000 (s = 1e6)."""
    c, a = 0.5, 2.0
    gravity = G0 + a
    problem = MovingFloorBall(q0=1.0, v0=0.0, floor_speed=c, floor_acceleration=a, restitution=E)
    times, before, t_inf = floor_impacts(1.0, -c, gravity, E, 400)
    t_end = 1000.0
    tr = run(problem, t_end)
    assert tr.status is ib.Status.ZENO_HANDLED
    log = tr.impacts
    count = log.total
    assert count >= 40
    assert np.abs(log.t - times[:count]).max() <= 1e-8
    assert np.abs(log.normal_velocity_before - before[:count]).max() <= 1e-8
    after = log.normal_velocity_after
    assert np.abs(after + E * log.normal_velocity_before).max() <= 1e-12 * abs(before[0])
    # the law's energy record is relative: no impact creates energy in the floor's frame,
    # although the rising floor leaves the ball faster than it came, |v+| > |v-| (v = U + s')
    assert tr.stats["energy_creating_impacts"] == 0
    floor_speed = c + a * log.t
    assert np.any(np.abs(floor_speed + after) > np.abs(floor_speed + log.normal_velocity_before))
    # the accumulation is cut at its last impact, before t_inf by less than the remaining
    # flights of rebound speed below the rest speed, 2 rest_speed / ((1 - e)(g0 + a))
    zeno = tr.stats["zeno_time"]
    assert zeno == pytest.approx(times[count - 1], abs=1e-8)
    assert 0.0 < t_inf - zeno <= 2.0 * tr.stats["rest_speed"] / ((1.0 - E) * gravity) + 1e-8
    # riding the floor past t_inf: z = 0, v = s'(t), to 10 x the drift tolerance atol + rtol L
    # and the projection's round-off 8 eps |s|; the velocity grows at the floor's a, so the
    # contact force is m (dv/dt + g0) = m (g0 + a)
    rest = tr.t > t_inf
    assert rest.sum() >= 3
    t, y, v = tr.t[rest], tr.q[rest, 0], tr.v[rest, 0]
    assert np.all(np.abs(y - problem.floor(t)) <= 1e-9 + 1e-14 * problem.floor(t))
    assert np.all(np.abs(v - (c + a * t)) <= 1e-9 + 1e-14 * (c + a * t))
    force = problem.mass * (np.diff(v) / np.diff(t) + G0)
    assert force == pytest.approx(problem.mass * gravity, rel=1e-8)
    assert tr.t[-1] == t_end


def test_long_horizon_rest_on_an_accelerating_floor():
    """At rest on the floor s = t^2 / 2 from t0 up to t = 1000 (s = 5e5): no impact, one
    contact phase closed at t0, the state on the floor."""
    problem = MovingFloorBall(q0=0.0, v0=0.0, floor_speed=0.0, floor_acceleration=1.0)
    tr = run(problem, 1000.0)
    assert tr.status is ib.Status.OK and tr.impacts.total == 0
    assert tr.stats["contact_phases"] == 1 and tr.stats["contact_time"] == 0.0
    assert tr.t[-1] == 1000.0
    s = problem.floor(tr.t)
    assert np.all(np.abs(tr.q[:, 0] - s) <= 1e-9 + 1e-14 * s)  # as in the test above
    assert np.all(np.abs(tr.v[:, 0] - tr.t) <= 1e-9 + 1e-14 * tr.t)


def test_floor_accelerating_down_faster_than_gravity_leaves_a_resting_ball_at_once():
    a = -12.0
    problem = MovingFloorBall(q0=0.0, v0=0.3, floor_speed=0.3, floor_acceleration=a)
    tr = run(problem, 1.0)
    assert tr.status is ib.Status.OK
    assert tr.impacts.total == 0 and tr.stats["contact_time"] is None
    z = tr.q[:, 0] - problem.floor(tr.t)
    assert np.abs(z - (-(G0 + a)) * tr.t**2 / 2.0).max() <= 1e-9


@pytest.mark.parametrize("gamma", [1.5, 4.0])
def test_ball_leaves_a_vibrating_table_where_its_acceleration_reaches_minus_g(gamma):
    w = 2.0 * math.pi * 5.0
    problem = resting_on_table(gamma * G0 / w**2, w)
    release = math.asin(1.0 / gamma) / w
    t_end = release + 0.2 * (2.0 * math.pi / w)  # before it lands again
    tr = run(problem, t_end)
    assert tr.status is ib.Status.OK and tr.impacts.total == 0
    assert tr.stats["contact_time"] == 0.0 and tr.stats["contact_phases"] == 1
    assert abs(tr.stats["contact_duration"] - release) <= 1e-9
    assert tr.q[-1, 0] > problem.table_position(t_end) + 1e-6  # in flight at t_end


def test_ball_stays_on_a_table_whose_acceleration_stays_above_minus_g():
    w = 2.0 * math.pi * 5.0
    problem = resting_on_table(0.9 * G0 / w**2, w)
    t_end = 50 * (2.0 * math.pi / w)
    tr = run(problem, t_end)
    assert tr.status is ib.Status.OK and tr.impacts.total == 0
    assert tr.stats["contact_phases"] == 1 and tr.stats["contact_duration"] == t_end
    assert np.abs(tr.q[:, 0] - problem.table_position(tr.t)).max() <= 1e-9
    assert np.abs(tr.v[:, 0] - problem.table_velocity(tr.t)).max() <= 1e-9


def test_plain_and_compiled_engines_agree_on_a_moving_floor():
    problem = MovingFloorBall(q0=1.0, v0=0.0, floor_speed=0.5, floor_acceleration=2.0)
    compiled = run(problem, 2.5, compiled=True)
    plain = run(problem, 2.5, compiled=False)
    assert compiled.stats["engine"] == "compiled" and plain.stats["engine"] == "scipy"
    assert compiled.impacts.total == plain.impacts.total >= 5
    np.testing.assert_allclose(compiled.impacts.t, plain.impacts.t, rtol=0, atol=1e-9)
    np.testing.assert_allclose(
        compiled.impacts.normal_velocity_after, plain.impacts.normal_velocity_after, atol=1e-8
    )
    np.testing.assert_allclose(compiled.q[-1], plain.q[-1], atol=1e-8)
    np.testing.assert_allclose(compiled.v[-1], plain.v[-1], atol=1e-8)


def test_first_impact_on_a_rotating_line_plain_path():
    """The user's plain-Python particle above a line rotating at omega (tests/
    test_rheonomic_contract.py: g = n(t) . q, G = n(t), r = n'(t) . q, so dG/dt != 0): the
    first impact where the free parabola meets the line, and the law on U = n . v + n' . q,
    v+ = v- - (1 + e) U- n (M = I, |n| = 1), against the closed-form flight and a root."""
    problem = RotatingLine()
    t0, q0, v0 = problem.t0, problem.q0, problem.v0

    def flight(t):
        s = t - t0
        fall = np.array([0.0, -LINE_GRAVITY * s])
        return q0 + v0 * s + 0.5 * s * fall, v0 + fall

    def gap(t):
        return problem.normal(t) @ flight(t)[0]

    grid = t0 + np.linspace(0.0, 2.0, 2001)
    first = int(np.argmax([gap(t) <= 0.0 for t in grid]))
    assert first > 0
    t_hit = optimize.brentq(gap, grid[first - 1], grid[first], xtol=1e-15, rtol=1e-15)
    q, v_before = flight(t_hit)
    n, n_dot = problem.normal(t_hit), -OMEGA * problem.tangent(t_hit)
    u_before = n @ v_before + n_dot @ q
    v_after = v_before - (1.0 + problem.restitution) * u_before * n
    tr = run(problem, t_hit + 0.05)
    assert tr.stats["engine"] == "scipy" and tr.impacts.total >= 1
    assert tr.impacts.t[0] == pytest.approx(t_hit, abs=1e-9)
    assert tr.impacts.normal_velocity_before[0] == pytest.approx(u_before, abs=1e-8)
    assert tr.impacts.normal_velocity_after[0] == pytest.approx(
        -problem.restitution * u_before, abs=1e-8
    )
    after = np.flatnonzero(tr.t == tr.impacts.t[0])[-1]  # the post-impact sample
    np.testing.assert_allclose(tr.v[after], v_after, atol=1e-8)


def test_friction_with_a_moving_obstacle_is_refused():
    with pytest.raises(ValueError, match="without friction only.*frictional and rheonomic"):
        run(RotatingLine(frictional=True), RotatingLine().t0 + 0.1)
