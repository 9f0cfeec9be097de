"""The event-driven engines' position projection converges far from q0.

The event loop projects q onto the closed contacts' manifold g_rows(q) = 0 (Gauss-Newton in the
metric of M) until |g_i| <= 8 eps S |grad g_i|. The gap of a q of size |q| is known to round-off
eps |q| |grad g| only, so with S the length scale of q0 alone (max(1, |q0|_inf)) a wall met far
from q0 made the projection fail; S is max(L, |q|_inf) at the current iterate.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from impactbench.core._jit import specialize
from impactbench.core.contact import make_workspace
from impactbench.core.events import resolution
from impactbench.core.events.buffers import unpacked
from impactbench.core.events.engine import timed_kernels
from impactbench.core.events.plain import checked_kernels
from impactbench.core.problem import CheckedCalls
from impactbench.core.status_codes import STATUS_OK
from impactbench.problems import SlantedWall

EPS = np.finfo(float).eps


def _walls(distance: float, count: int = 40) -> list[tuple[SlantedWall, np.ndarray]]:
    """Random walls n.q >= c (components of n spread over 6 decades) with q0 = 0 (length scale
    1), each with a point 1e-3 outside it at ``distance`` from the foot of the origin."""
    rng = np.random.default_rng(20)
    cases = []
    for _ in range(count):
        normal = rng.normal(size=2) * 10.0 ** rng.uniform(-3, 3, size=2)
        offset = -abs(rng.normal() * 10)
        wall = SlantedWall(normal=normal, offset=offset, q0=(0.0, 0.0), v0=(0.0, 0.0))
        unit = normal / np.linalg.norm(normal)
        along = np.array([unit[1], -unit[0]])
        q = offset * normal / (normal @ normal) + rng.uniform(-1, 1) * distance * along
        cases.append((wall, q + 1e-3 * unit))
    return cases


def _on_the_wall(wall: SlantedWall, q: np.ndarray) -> bool:
    gap = wall.gap(q)[0]
    return abs(gap) <= 8.0 * EPS * np.abs(q).max() * np.linalg.norm(wall.gap_gradient(q)[0])


def _projection(kernels):
    """The event loop's position projection (impactbench.core.events.resolution), as plain
    Python on the given kernels of a wall (n = 2, m = 1)."""
    bindings = {
        "mass_matrix": kernels.mass_matrix,
        "gap": kernels.gap,
        "gap_gradient": kernels.gap_gradient,
        "N_DOF": 2,
        "N_CONSTRAINTS": 1,
        "views": unpacked,
    }
    bindings["_subtract_reactions"] = specialize(resolution._subtract_reactions, bindings, False)
    return specialize(resolution._project_position, bindings, False)


@pytest.mark.parametrize("distance", [1e3, 1e6])
@pytest.mark.parametrize("source", ["kernels", "checked methods"])
def test_the_projection_converges_far_from_q0(distance, source):
    """Both engines' projection: the compiled kernels (the compiled engine's template, run as
    plain Python: the same arithmetic) and the problem's checked methods (the scipy path)."""
    n, m = 2, 1
    for wall, q in _walls(distance):
        if source == "kernels":
            kernels = timed_kernels(wall.kernels())  # gap(t, q, p, out), as the engine's
        else:
            kernels = checked_kernels(CheckedCalls(wall), [0.0, np.zeros(n)])
        project = _projection(kernels)
        y = np.concatenate([q, np.zeros(n)])
        run = types.SimpleNamespace(
            p=np.ascontiguousarray(wall.kernel_parameters(), dtype=float), length=1.0
        )
        w = types.SimpleNamespace(
            g=np.zeros(m), G=np.zeros((m, n)), M=np.zeros((n, n)), F=np.zeros((n, n)),
            W=np.zeros((m, m)), WF=np.zeros((m, m)), x=np.zeros(m), cws=make_workspace(n, m),
        )  # fmt: skip
        status = project(0.0, y, np.array([0]), 1, run, w)
        assert status == STATUS_OK
        assert _on_the_wall(wall, y[:n])
        assert np.abs(y[:n] - q).max() < 1.0  # moved onto the wall, not along it
