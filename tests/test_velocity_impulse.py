"""The shared velocity impulse (impactbench.core.scheme.velocity_impulse) with a restitution
coefficient per constraint: row i of Newton's law takes restitution[i] in place of e, by the
closed form (one constraint) and by the LCP (several); without it, e in every row.

Two walls q_i >= 0 with M = I and both contacts closed: the law decouples, v_out_i =
-e_i v_i for an approaching v, which gives the expected values by hand. Called from Python
(the plain function; the contact numerics it calls are the compiled ones). A gradient whose
Delassus number has no finite inverse is degenerate for one constraint and for several alike.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import pytest

from impactbench.core.contact import make_workspace
from impactbench.core.scheme import (
    IMPACT_STATE,
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
    problem = Kernels(None, None, _walls, normals, True, True, True, m == 1)
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
