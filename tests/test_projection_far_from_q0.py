"""The event-driven engines' position projection converges far from q0.

Both engines project q onto the closed contacts' manifold g_rows(q) = 0 (Gauss-Newton in the
metric of M) until |g_i| <= 8 eps S |grad g_i|. The gap of a q of size |q| is known to round-off
eps |q| |grad g| only, so with S the length scale of q0 alone (max(1, |q0|_inf)) a wall met far
from q0 made the projection fail; S is max(L, |q|_inf) at the current iterate.
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench.core._jit import specialize
from impactbench.core.contact import make_workspace
from impactbench.core.status_codes import STATUS_OK
from impactbench.methods import compiled_event_driven
from impactbench.methods.event_driven import _Model
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


@pytest.mark.parametrize("distance", [1e3, 1e6])
def test_the_python_path_projects_far_from_q0(distance):
    for wall, q in _walls(distance):
        model = _Model(wall, 1.0)
        projected = model.project_position(0.0, q.copy(), np.zeros(2), np.array([0]))
        assert _on_the_wall(wall, projected)
        assert np.abs(projected - q).max() < 1.0  # moved onto the wall, not along it


@pytest.mark.parametrize("distance", [1e3, 1e6])
def test_the_compiled_engines_projection_projects_far_from_q0(distance):
    """The compiled engine's template, run as plain Python (the same arithmetic)."""
    n, m = 2, 1
    for wall, q in _walls(distance):
        kernels = wall.kernels()
        project = specialize(
            compiled_event_driven._project_position,
            {
                "mass_matrix": kernels.mass_matrix,
                "gap": kernels.gap,
                "gap_gradient": kernels.gap_gradient,
                "N_DOF": n,
                "N_CONSTRAINTS": m,
            },
            False,
            helper=True,
        )
        y = np.concatenate([q, np.zeros(n)])
        buffers = (np.zeros(m), np.zeros((m, n)), np.zeros((n, n)), np.zeros((n, n)))
        contact = (np.zeros((m, n)), np.zeros((m, m)), np.zeros((m, m)), np.zeros(m))
        parameters = np.ascontiguousarray(wall.kernel_parameters(), dtype=float)
        rows = np.array([0])
        status = project(y, parameters, rows, 1, 1.0, *buffers, *contact, make_workspace(n, m))
        assert status == STATUS_OK
        assert _on_the_wall(wall, y[:n])
