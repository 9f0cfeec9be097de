"""A block sliding on a rigid incline with Coulomb friction: stick, slip and their closed form."""

from __future__ import annotations

import math

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import CompiledProblem, ProblemKernels

from .floor_contact import (
    floor_friction,
    floor_gap,
    floor_gap_gradient,
    floor_tangent_gradient,
    point_mass_matrix,
)

#: The parameters of the kernels, in the order of the vector p.
PARAMETERS = ("mass", "mu", "tangential_restitution", "gravity", "angle")
MASS, MU, TANGENTIAL_RESTITUTION, GRAVITY, ANGLE = parameter_indices(PARAMETERS)


@kernel
def _block_forces(t, q, v, p, out):
    weight = p[MASS] * p[GRAVITY]
    out[0] = weight * math.sin(p[ANGLE])
    out[1] = -weight * math.cos(p[ANGLE])


class SlidingBlock(CompiledProblem):
    r"""A block on a rigid incline with Coulomb friction mu: stick, slip, closed form.

    A point mass m on a plane inclined at the angle alpha: the frictional problem with a closed
    form for every initial velocity. Coordinates along the incline: x downhill, y normal to it;
    the gap is y >= 0, the contact's tangent row is (1, 0), and gravity gives
    F = m g (sin alpha, -cos alpha).

    .. math::

        m x'' = m g \sin\alpha + \lambda_T, \quad m y'' = -m g \cos\alpha + \lambda_N, \quad
        y \ge 0, \quad |\lambda_T| \le \mu \lambda_N.

    The block starts on the plane, y = 0, with the velocity u0 along it (positive downhill).
    On the plane lambda_N = m g cos alpha, and (closed form):

    * sliding downhill (x' > 0), x'' = g (sin alpha - mu cos alpha);
    * sliding uphill (x' < 0), x'' = g (sin alpha + mu cos alpha) > 0: it stops;
    * at rest, it sticks for ever when tan alpha <= mu, and otherwise slides downhill.

    So a block launched downhill with tan alpha < mu stops at t* = u0 / (g (mu cos alpha -
    sin alpha)) after u0^2 / (2 g (mu cos alpha - sin alpha)) (alpha = 0: u0 / (mu g) and
    u0^2 / (2 mu g)); one launched uphill with tan alpha > mu stops, then slides back down.

    Parameters
    ----------
    angle : float, default 0.3
        alpha in [0, pi/2) (radians); 0 is a horizontal floor.
    mu : float, default 0.5
        Coulomb coefficient mu >= 0.
    u0 : float, default 1.0
        Initial velocity along the incline (positive downhill).
    x0 : float, default 0.0
        Initial position along the incline.
    restitution : float, default 0.0
        e_N in [0, 1] (the block stays on the plane: it only enters a closing contact).
    tangential_restitution : float, default 0.0
        e_T in [0, 1].
    mass : float, default 1.0
    gravity : float, default 9.81
    t0 : float, default 0.0

    Raises
    ------
    ValueError
        If a parameter is not finite or out of range; the message names it.
    """

    coordinates = (("x", "m"), ("y", "m"))
    parameter_units = dict(
        angle="rad",
        mu="-",
        u0="m/s",
        x0="m",
        restitution="-",
        tangential_restitution="-",
        mass="kg",
        gravity="m/s^2",
        t0="s",
    )

    KERNELS = ProblemKernels(
        point_mass_matrix,
        _block_forces,
        floor_gap,
        floor_gap_gradient,
        affine_gap=True,
        constant_mass=True,
        tangent_gradient=floor_tangent_gradient,
        friction=floor_friction,
    )

    def __init__(
        self,
        angle: float = 0.3,
        mu: float = 0.5,
        u0: float = 1.0,
        x0: float = 0.0,
        restitution: float = 0.0,
        tangential_restitution: float = 0.0,
        mass: float = 1.0,
        gravity: float = 9.81,
        t0: float = 0.0,
    ) -> None:
        self.angle = checks.finite_scalar(angle, "angle")
        if not 0.0 <= self.angle < 0.5 * math.pi:
            raise ValueError(f"angle must lie in [0, pi/2), got {angle!r}")
        self.mu = checks.finite_scalar(mu, "mu")
        if self.mu < 0.0:
            raise ValueError(f"mu must be >= 0, got {mu!r}")
        self.tangential_restitution = checks.restitution(tangential_restitution)
        self.restitution = checks.restitution(restitution)
        self.mass = checks.positive_scalar(mass, "mass")
        self.gravity = checks.positive_scalar(gravity, "gravity")
        self.t0 = checks.finite_scalar(t0, "t0")
        self.name = "SlidingBlock"
        self.n_dof = 2
        self.n_constraints = 1
        self.q0 = np.array([checks.finite_scalar(x0, "x0"), 0.0])
        self.v0 = np.array([checks.finite_scalar(u0, "u0"), 0.0])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(
            PARAMETERS,
            mass=self.mass,
            gravity=self.gravity,
            angle=self.angle,
            mu=self.mu,
            tangential_restitution=self.tangential_restitution,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """m g (y cos alpha - x sin alpha)."""
        q = np.asarray(q, dtype=float)
        weight = self.mass * self.gravity
        return weight * (float(q[1]) * math.cos(self.angle) - float(q[0]) * math.sin(self.angle))

    @property
    def sticks(self) -> bool:
        """Whether the block at rest sticks (tan alpha <= mu)."""
        return math.tan(self.angle) <= self.mu

    @property
    def accelerations(self) -> tuple[float, float]:
        """(a_down, a_up): x'' while sliding downhill, g (sin alpha - mu cos alpha), and
        uphill, g (sin alpha + mu cos alpha)."""
        s, c = math.sin(self.angle), math.cos(self.angle)
        g, mu = self.gravity, self.mu
        return g * (s - mu * c), g * (s + mu * c)

    def phases(self) -> list[tuple[float, float, float, float]]:
        """The motion as phases of constant acceleration: (start time, x, x', x'') at the start
        of each; the last lasts for ever."""
        a_down, a_up = self.accelerations
        t, x, u = self.t0, float(self.q0[0]), float(self.v0[0])
        phases = []
        if u < 0.0 and a_up > 0.0:  # uphill: decelerates to rest
            phases.append((t, x, u, a_up))
            duration = -u / a_up
            t, x, u = t + duration, x + 0.5 * u * duration, 0.0
        if u > 0.0 and a_down < 0.0:  # downhill on a steep friction: decelerates to rest
            phases.append((t, x, u, a_down))
            duration = -u / a_down
            t, x, u = t + duration, x + 0.5 * u * duration, 0.0
        if u == 0.0 and self.sticks:
            phases.append((t, x, 0.0, 0.0))
        else:
            phases.append((t, x, u, a_down if u >= 0.0 else a_up))
        return phases

    @property
    def stopping_time(self) -> float:
        """The time at which the block comes to rest for good (inf when it never sticks)."""
        last = self.phases()[-1]
        return last[0] if last[3] == 0.0 and last[2] == 0.0 else math.inf

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact (q, v) at times ``t`` >= t0, each of shape (len(t), 2) (y = y' = 0)."""
        t = checks.times(t, self.t0)
        q = np.zeros((t.size, 2))
        v = np.zeros((t.size, 2))
        for start, x, u, a in self.phases():
            now = t >= start
            s = t[now] - start
            q[now, 0] = x + u * s + 0.5 * a * s * s
            v[now, 0] = u + a * s
        return q, v

    def impact_times(self, t_end: float, max_count: int = 10_000) -> np.ndarray:
        """The impact times in [t0, t_end]: none (the block stays on the plane)."""
        checks.positive_int(max_count, "max_count")
        checks.finite_scalar(t_end, "t_end")
        return np.zeros(0)
