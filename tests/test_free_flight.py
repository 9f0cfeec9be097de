"""The event-driven method's compiled free-flight right-hand side."""

from __future__ import annotations

import math

import numpy as np
import pytest

from impactbench import SimulationError, simulate
from impactbench._jit import kernel
from impactbench.methods import EventDriven
from impactbench.methods.free_flight import free_flight_rhs
from impactbench.problem import ProblemKernels
from impactbench.problems import (
    BouncingBall,
    DoublePendulum,
    ForcedImpactOscillator,
    SlantedWall,
    TightJoint,
    TightJoint2D,
)

COMPILED_PROBLEMS = [
    BouncingBall(),
    ForcedImpactOscillator(),
    SlantedWall(),
    TightJoint(),
    TightJoint2D(),
    DoublePendulum(),
]


@pytest.mark.parametrize("problem", COMPILED_PROBLEMS, ids=lambda p: p.name)
def test_compiled_rhs_matches_the_problem_methods(problem):
    n = problem.n_dof
    rhs = free_flight_rhs(problem.kernels(), n)
    p = np.ascontiguousarray(problem.kernel_parameters(), dtype=float)
    M, L, a, out = np.empty((n, n)), np.empty((n, n)), np.empty(n), np.empty(2 * n)
    rng = np.random.default_rng(3)
    for _ in range(10):
        t = problem.t0 + rng.uniform(0.0, 3.0)
        q = problem.q0 + 0.3 * rng.normal(size=n)
        v = rng.normal(size=n)
        assert rhs(t, np.concatenate((q, v)), p, M, L, a, out)
        expected = np.linalg.solve(problem.mass_matrix(q), problem.forces(t, q, v))
        np.testing.assert_array_equal(out[:n], v)
        np.testing.assert_allclose(
            out[n:], expected, rtol=1e-13, atol=1e-13 * np.abs(expected).max()
        )


@kernel
def _nan_after_quarter_forces(t, q, v, p, out):
    out[0] = math.nan if t > 0.25 else -p[1] * p[0]


class _NaNForceCompiledBall(BouncingBall):
    """A compiled ball whose force turns into NaN after t = 0.25 (before the first impact)."""

    KERNELS = BouncingBall.KERNELS._replace(forces=_nan_after_quarter_forces)


def test_non_finite_compiled_forces_report_time_and_state():
    problem = _NaNForceCompiledBall()
    assert isinstance(problem.kernels(), ProblemKernels)
    with pytest.raises(SimulationError, match="non-finite forces") as info:
        simulate(problem, EventDriven(), 1.0)
    error = info.value
    assert 0.25 <= error.t <= 0.5
    assert np.all(np.isfinite(error.q)) and np.all(np.isfinite(error.v))
