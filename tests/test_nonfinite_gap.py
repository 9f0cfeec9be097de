"""A non-finite gap inside a compiled loop is a failure with t, q, v, never "no contact".

NaN compares false with everything, so a loop that tests ``g <= 0`` alone reads a NaN gap as an
open contact and integrates on through the obstacle with status ok (a NaN-gap ball ended at
q = -3.9 before this rule).
"""

from __future__ import annotations

import numpy as np
import pytest

from impactbench import SimulationError, simulate
from impactbench.core._jit import kernel
from impactbench.core.problem import CompiledProblem, ProblemKernels
from impactbench.methods import CatchingUp, MoreauJean, PaoliSchatzman


@kernel
def _mass(q, p, out):
    out[0, 0] = 1.0


@kernel
def _forces(t, q, v, p, out):
    out[0] = -9.81


@kernel
def _nan_gap(q, p, out):
    out[0] = q[0] if q[0] > 0.5 else np.nan  # undefined below 0.5, as a broken model would be


@kernel
def _gradient(q, p, out):
    out[0, 0] = 1.0


class _NaNGapBall(CompiledProblem):
    KERNELS = ProblemKernels(_mass, _forces, _nan_gap, _gradient, affine_gap=True)

    def __init__(self) -> None:
        self.name = "NaNGapBall"
        self.n_dof = 1
        self.n_constraints = 1
        self.restitution = 0.8
        self.t0 = 0.0
        self.q0 = np.array([1.0])
        self.v0 = np.array([0.0])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        return np.zeros(1)

    def potential_energy(self, q: np.ndarray) -> float:
        return 9.81 * q[0]


@pytest.mark.parametrize(
    "method", [MoreauJean(), CatchingUp(), PaoliSchatzman()], ids=lambda m: m.name
)
def test_nan_gap_stops_a_compiled_run_with_its_state(method):
    with pytest.raises(SimulationError, match="non-finite gap") as failure:
        simulate(_NaNGapBall(), method, 2.0, h=1e-3)
    error = failure.value
    assert error.trajectory.stats["compiled"]
    # it stopped where the ball crosses q = 0.5 (t = sqrt(2 0.5 / 9.81) = 0.319), not later
    assert 0.30 < error.t < 0.34
    assert error.q[0] == pytest.approx(0.5, abs=0.02)
