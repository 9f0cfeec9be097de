"""The event-driven method's compiled free-flight right-hand side."""

from __future__ import annotations

import math

import numpy as np
import pytest

from impactbench import SimulationError, simulate
from impactbench.core._jit import kernel
from impactbench.core.events import plain
from impactbench.core.events.free_flight import free_flight_rhs
from impactbench.core.problem import ProblemKernels
from impactbench.methods import EventDriven
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


def test_non_finite_compiled_forces_report_time_and_state(monkeypatch):
    problem = _NaNForceCompiledBall()
    assert isinstance(problem.kernels(), ProblemKernels)
    calls = []

    def counted(kernels, n_dof):  # the event-driven method must use the compiled rhs
        compiled = free_flight_rhs(kernels, n_dof)

        def rhs(*args):
            calls.append(args[0])
            return compiled(*args)

        return rhs

    monkeypatch.setattr(plain, "free_flight_rhs", counted)
    with pytest.raises(
        SimulationError, match=r"forces\(t, q, v\) must return finite values"
    ) as info:
        simulate(problem, EventDriven(compiled=False), 1.0)
    assert calls and max(calls) > 0.25
    error = info.value
    assert 0.25 <= error.t <= 0.5
    assert np.all(np.isfinite(error.q)) and np.all(np.isfinite(error.v))


@kernel
def _mass_negative_below_half(q, p, out):
    out[0, 0] = p[1] if q[0] > 0.5 else -p[1]


class _IndefiniteMassBall(BouncingBall):
    """A compiled ball whose mass turns negative below q = 0.5 (during the first fall)."""

    KERNELS = BouncingBall.KERNELS._replace(
        mass_matrix=_mass_negative_below_half, constant_mass=False
    )

    def __init__(self) -> None:
        super().__init__(q0=1.0)


def test_non_positive_compiled_mass_reports_time_and_state():
    with pytest.raises(
        SimulationError, match=r"mass_matrix\(q\) must be positive definite"
    ) as info:
        simulate(_IndefiniteMassBall(), EventDriven(compiled=False), 1.0)
    assert info.value.q[0] <= 0.5 and info.value.t > 0.0
