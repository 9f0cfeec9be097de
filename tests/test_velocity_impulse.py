"""The shared velocity impulse (impactbench.core.scheme.velocity_impulse) with a restitution
coefficient per constraint: row i of Newton's law takes restitution[i] in place of e, by the
closed form (one constraint) and by the LCP (several); without it, e in every row.

Two walls q_i >= 0 with M = I and both contacts closed: the law decouples, v_out_i =
-e_i v_i for an approaching v, which gives the expected values by hand. Called from Python
(the plain function; the contact numerics it calls are the compiled ones). A gradient whose
Delassus number has no finite inverse is degenerate for one constraint and for several alike.

Moving walls (a rheonomic problem, g_i = q_i - s_i(t), rates r_i = -s_i'(t)): the law acts on
the relative normal velocities U = G v + r, the rates taken at the times passed, before and
after the impulse: U_after = -e U_before in every row, logged relative.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

from impactbench.core.contact import make_workspace
from impactbench.core.scheme import (
    IMPACT_STATE,
    RHEONOMIC_STATE,
    STATUS_DEGENERATE_GRADIENT,
    STATUS_OK,
    Kernels,
    velocity_impulse,
)

State = namedtuple("State", [*IMPACT_STATE, "L", "impulse", "normal_before", "normal_after",
                             "rows", "ws", "multipliers"])  # fmt: skip


def _walls(q, p, g):
    g[:] = q


def _normals(q, p, G):
    G[:] = np.eye(G.shape[0], G.shape[1])


def _vanishing_last_normal(q, p, G):
    G[:] = np.eye(G.shape[0], G.shape[1])
    G[-1, -1] = 1e-160  # G M^-1 G^T = 1e-320 > 0, whose inverse overflows


def _impulse(m, restitution, normals=_normals):
    n = m
    problem = Kernels(None, None, _walls, normals, True, True, True, m == 1, False)
    ws = make_workspace(n, m, 1, 1)
    s = State(
        np.zeros(m), np.zeros((m, n)), np.zeros((m, n)), np.zeros(1), np.zeros(1),
        np.ones((1, n)), np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(m, dtype=np.int64),
        ws, ws[4],
    )  # fmt: skip
    v = -np.arange(1.0, m + 1.0)
    v_out = np.full(n, np.nan)
    arguments = (s, problem, n, m, np.zeros(n), v, v, 0.9, v_out, None, False, None)
    if restitution is None:
        status, active, _ = velocity_impulse(*arguments)
    else:
        status, active, _ = velocity_impulse(*arguments, np.array(restitution))
    if normals is _vanishing_last_normal:
        return status
    assert status == STATUS_OK and active == m
    np.testing.assert_array_equal(s.normal_before, v)
    np.testing.assert_array_equal(s.normal_after, v_out)
    return v_out, s.impulse


@pytest.mark.parametrize("m", [1, 2, 3])
def test_each_constraint_takes_its_own_restitution(m):
    restitution = [0.5, 0.0, 1.0][:m]
    v_out, impulse = _impulse(m, restitution)
    v = -np.arange(1.0, m + 1.0)
    np.testing.assert_allclose(v_out, -np.array(restitution) * v, rtol=0, atol=1e-15)
    np.testing.assert_allclose(impulse, v_out - v, rtol=0, atol=1e-15)


@pytest.mark.parametrize("m", [1, 2])
def test_without_restitution_every_constraint_takes_e(m):
    v_out, _ = _impulse(m, None)
    np.testing.assert_allclose(v_out, 0.9 * np.arange(1.0, m + 1.0), rtol=0, atol=1e-15)


@pytest.mark.parametrize("m", [1, 2])
def test_a_gradient_with_an_overflowing_inverse_delassus_number_is_degenerate(m):
    assert _impulse(m, None, _vanishing_last_normal) == STATUS_DEGENERATE_GRADIENT


#: The problem tuple of a moving obstacle as the loops build it: the further fields after
#: :class:`Kernels`' own.
MovingKernels = namedtuple("MovingKernels", [*Kernels._fields, "gap_rate", "gap_drift"])
MovingState = namedtuple("MovingState", [*State._fields, *RHEONOMIC_STATE])

#: The walls' velocities s_i'(t) = a_i + b_i t.
WALL_SPEED, WALL_ACCELERATION = np.array([0.7, -1.1, 0.3]), np.array([2.0, 0.5, -3.0])


def _moving_walls(t, q, p, g):
    g[:] = q - (WALL_SPEED[: q.size] * t + 0.5 * WALL_ACCELERATION[: q.size] * t * t)


def _moving_normals(t, q, p, G):
    G[:] = np.eye(G.shape[0], G.shape[1])


def _wall_rates(t, q, p, r):
    r[:] = -(WALL_SPEED[: r.size] + WALL_ACCELERATION[: r.size] * t)


@pytest.mark.parametrize("m", [1, 2, 3])
@pytest.mark.parametrize("approaching", [False, True])
def test_moving_walls_reverse_the_relative_normal_velocity(m, approaching):
    """Each wall closed at t_q = 0.4, the velocity before at t_before = 0.3 and after at
    t_after = 0.5: U_after,i = -e U_before,i with U = v_i + r_i(t), the rates r(t_before) and
    r(t_after) in the state, the impulses v_out - vfree, the log relative (closed form for one
    wall, the LCP for several)."""
    n = m
    problem = MovingKernels(None, None, _moving_walls, _moving_normals, True, True, True,
                            m == 1, True, _wall_rates, None)  # fmt: skip
    ws = make_workspace(n, m, 1, 1)
    s = MovingState(
        np.zeros(m), np.zeros((m, n)), np.zeros((m, n)), np.zeros(1), np.zeros(1),
        np.ones((1, n)), np.zeros(m), np.zeros(m), np.zeros(m), np.zeros(m, dtype=np.int64),
        ws, ws[4], np.zeros(m), np.zeros(m), np.zeros(m),
    )  # fmt: skip
    times = (0.4, 0.3, 0.5)
    q = WALL_SPEED[:m] * 0.4 + 0.5 * WALL_ACCELERATION[:m] * 0.16 - 1e-3  # each wall closed
    v = WALL_SPEED[:m] + WALL_ACCELERATION[:m] * 0.3 - np.arange(1.0, m + 1.0)  # U_before < 0
    vfree = v + 0.05
    v_out = np.full(n, np.nan)
    e = 0.6
    status, active, _ = velocity_impulse(
        s, problem, n, m, q, v, vfree, e, v_out, None, approaching, None, None, None, times
    )
    assert status == STATUS_OK and active == m
    before = v + s.rate_before
    after = v_out + s.rate_after
    np.testing.assert_array_equal(s.rate_before, -(WALL_SPEED[:m] + WALL_ACCELERATION[:m] * 0.3))
    np.testing.assert_array_equal(s.rate_after, -(WALL_SPEED[:m] + WALL_ACCELERATION[:m] * 0.5))
    np.testing.assert_allclose(before, -np.arange(1.0, m + 1.0), rtol=0, atol=1e-15)
    np.testing.assert_allclose(after, -e * before, rtol=0, atol=1e-14)
    np.testing.assert_allclose(s.impulse, v_out - vfree, rtol=0, atol=1e-14)
    np.testing.assert_allclose(s.normal_before, before, rtol=0, atol=1e-15)
    np.testing.assert_allclose(s.normal_after, after, rtol=0, atol=1e-15)


def test_a_wall_receding_faster_than_the_velocity_is_not_approaching():
    """The approaching rule tests U_before = G v + r(t_before) <= 0, not G v: a ball falling at
    v = -1 onto a wall falling at -2 (r = +2) is receding and takes no impulse."""
    problem = MovingKernels(None, None, lambda t, q, p, g: g.__setitem__(0, q[0] + 2.0 * t),
                            _moving_normals, True, True, True, True, True,
                            lambda t, q, p, r: r.__setitem__(0, 2.0), None)  # fmt: skip
    ws = make_workspace(1, 1, 1, 1)
    s = MovingState(
        np.zeros(1), np.zeros((1, 1)), np.zeros((1, 1)), np.zeros(1), np.zeros(1),
        np.ones((1, 1)), np.zeros(1), np.zeros(1), np.zeros(1), np.zeros(1, dtype=np.int64),
        ws, ws[4], np.zeros(1), np.zeros(1), np.zeros(1),
    )  # fmt: skip
    v = np.array([-1.0])
    q = np.array([-2.0 * 0.4 - 1e-3])
    v_out = np.full(1, np.nan)
    arguments = (s, problem, 1, 1, q, v, v, 0.5, v_out, None)
    times = (0.4, 0.3, 0.5)
    status, active, _ = velocity_impulse(*arguments, True, None, None, None, times)
    assert status == STATUS_OK and active == 0
    status, active, _ = velocity_impulse(*arguments, False, None, None, None, times)
    # position activation: active, but U+ + e U- = 1 + 0.5 > 0 without impulse, so P = 0
    assert status == STATUS_OK and active == 1
    assert s.impulse[0] == 0.0 and v_out[0] == v[0]
