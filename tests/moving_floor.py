"""A ball above a floor in uniformly accelerated motion: the smallest problem with a moving
obstacle (a rheonomic constraint), for the tests of the contract (tests/test_rheonomic_contract.py).

The floor's height is s(t) = s0 + c t + a t^2 / 2 and the ball's q = (y,), so

    m y'' = -m g0,    g(t, y) = y - s(t) >= 0,    G = [1],
    r = dg/dt = -(c + a t),    c_drift = d2g/dt2 + 2 (dG/dt) v = -a   (G does not depend on t).

In the floor's frame (z = y - s(t)) this is the bouncing ball with gravity g0 + a.
"""

from __future__ import annotations

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import ProblemKernels, RheonomicCompiledProblem

#: The parameters of the kernels, in the order of the vector p.
PARAMETERS = ("gravity", "mass", "floor_height", "floor_speed", "floor_acceleration")
GRAVITY, MASS, FLOOR_HEIGHT, FLOOR_SPEED, FLOOR_ACCELERATION = parameter_indices(PARAMETERS)


@kernel
def _mass_matrix(q, p, out):
    out[0, 0] = p[MASS]


@kernel
def _forces(t, q, v, p, out):
    out[0] = -p[MASS] * p[GRAVITY]


@kernel
def _gap(t, q, p, out):
    out[0] = q[0] - (p[FLOOR_HEIGHT] + t * (p[FLOOR_SPEED] + 0.5 * p[FLOOR_ACCELERATION] * t))


@kernel
def _gap_gradient(t, q, p, out):
    out[0, 0] = 1.0


@kernel
def _gap_rate(t, q, p, out):
    out[0] = -(p[FLOOR_SPEED] + p[FLOOR_ACCELERATION] * t)


@kernel
def _gap_drift(t, q, v, p, out):
    out[0] = -p[FLOOR_ACCELERATION]


class MovingFloorBall(RheonomicCompiledProblem):
    """A ball of mass m under gravity g0 above the floor s(t) = s0 + c t + a t^2 / 2 (module
    docstring); 1 DOF, 1 constraint.

    Parameters
    ----------
    q0, v0 : float
        Initial height (>= s(t0)) and velocity of the ball.
    floor_height, floor_speed, floor_acceleration : float
        s0, c and a.
    gravity, mass, restitution, t0 : float
        g0 > 0, m > 0, e in [0, 1] and the initial time.
    """

    KERNELS = ProblemKernels(
        _mass_matrix,
        _forces,
        _gap,
        _gap_gradient,
        affine_gap=True,
        constant_mass=True,
        rheonomic=True,
        gap_rate=_gap_rate,
        gap_drift=_gap_drift,
    )

    def __init__(
        self,
        q0: float = 1.0,
        v0: float = 0.0,
        floor_height: float = 0.0,
        floor_speed: float = 0.5,
        floor_acceleration: float = 2.0,
        gravity: float = 9.81,
        mass: float = 1.0,
        restitution: float = 0.8,
        t0: float = 0.0,
    ) -> None:
        self.floor_height = checks.finite_scalar(floor_height, "floor_height")
        self.floor_speed = checks.finite_scalar(floor_speed, "floor_speed")
        self.floor_acceleration = checks.finite_scalar(floor_acceleration, "floor_acceleration")
        self.gravity = checks.positive_scalar(gravity, "gravity")
        self.mass = checks.positive_scalar(mass, "mass")
        self.restitution = checks.restitution(restitution)
        self.t0 = checks.finite_scalar(t0, "t0")
        self.name = "MovingFloorBall"
        self.n_dof = 1
        self.n_constraints = 1
        self.q0 = np.array([checks.finite_scalar(q0, "q0")])
        self.v0 = np.array([checks.finite_scalar(v0, "v0")])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(
            PARAMETERS,
            gravity=self.gravity,
            mass=self.mass,
            floor_height=self.floor_height,
            floor_speed=self.floor_speed,
            floor_acceleration=self.floor_acceleration,
        )

    def floor(self, t: float) -> float:
        """s(t)."""
        return self.floor_height + t * (self.floor_speed + 0.5 * self.floor_acceleration * t)

    def potential_energy(self, q: np.ndarray) -> float:
        """m g0 y."""
        return self.mass * self.gravity * float(np.asarray(q, dtype=float).reshape(-1)[0])
