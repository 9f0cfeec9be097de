"""A rigid rectangular block rocking on a rigid floor: two frictional corners, Housner's law."""

from __future__ import annotations

import math

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import CompiledProblem, ProblemKernels

from .floor_contact import floor_friction, rigid_body_mass_matrix, weight

#: The parameters of the kernels, in the order of the vector p.
PARAMETERS = (
    "mass",
    "mu",
    "tangential_restitution",
    "inertia",
    "gravity",
    "half_width",
    "half_height",
)
MASS, MU, TANGENTIAL_RESTITUTION, INERTIA, GRAVITY, HALF_WIDTH, HALF_HEIGHT = parameter_indices(
    PARAMETERS
)

#: The side of each contact's corner: contact 0 the left corner (-b), contact 1 the right (+b).
SIDES = (-1.0, 1.0)


@kernel
def _rocking_gap(q, p, out):
    b, c = p[HALF_WIDTH], p[HALF_HEIGHT]
    s, co = math.sin(q[2]), math.cos(q[2])
    out[0] = q[1] - b * s - c * co
    out[1] = q[1] + b * s - c * co


@kernel
def _rocking_gap_gradient(q, p, out):
    b, c = p[HALF_WIDTH], p[HALF_HEIGHT]
    s, co = math.sin(q[2]), math.cos(q[2])
    for i in range(2):
        out[i, 0] = 0.0
        out[i, 1] = 1.0
    out[0, 2] = -b * co + c * s
    out[1, 2] = b * co + c * s


@kernel
def _rocking_tangent_gradient(q, p, out):
    b, c = p[HALF_WIDTH], p[HALF_HEIGHT]
    s, co = math.sin(q[2]), math.cos(q[2])
    for i in range(2):
        out[i, 0] = 1.0
        out[i, 1] = 0.0
    out[0, 2] = b * s + c * co
    out[1, 2] = -b * s + c * co


class RockingBlock(CompiledProblem):
    r"""A rigid rectangular block rocking on a rigid floor with Coulomb friction at its corners.

    Half-width b, half-height c (``half_height``), mass m, moment of inertia about the centre
    J = m (b^2 + c^2) / 3; q = (x, y, phi): the centre and the rotation (anticlockwise). The
    two bottom corners are the contacts (0: left, 1: right), with the gaps and rows

    .. math::

        g_s = y + s b \sin\phi - c \cos\phi, \quad
        W_{N,s} = (0, 1, s b \cos\phi + c \sin\phi), \quad
        W_{T,s} = (1, 0, -s b \sin\phi + c \cos\phi), \quad s = \mp 1,

    W_T,s v the corner's horizontal velocity; gravity F = (0, -m g, 0). Resting flat, both
    corners' tangent rows are (1, 0, c): dependent rows.

    Housner (1963): with R = sqrt(b^2 + c^2) and the slenderness alpha = atan(b / c), the
    block rocks about one corner (J_O phi'' = -m g R sin(alpha - abs(phi)) sign(phi),
    J_O = 4 m R^2 / 3), and at phi = 0 an impact with e_N = 0 and no sliding conserves the
    angular momentum about the new corner: omega+ = r omega-, r = 1 - (3/2) sin^2 alpha
    (:attr:`housner_ratio`).

    The velocity-level Newton-Coulomb law with e_N = 0 at the new corner alone gives exactly
    Housner's law: its impulse acts at that corner, so the angular momentum about it is kept,
    and sticking (xi_N = xi_T = 0) it stops the corner, so the block turns about it; the two
    conditions give omega+ = r omega-. The old corner then lifts off (its normal velocity
    -2 b omega+ has the sign that opens it), which is why the law on both corners, which
    MoreauJean solves at the impact step, has this solution; for a slender block (r > 0) the
    alternative, both corners sticking and the block stopped dead, would need a negative
    normal impulse at the old corner. Sticking needs abs(P_T) / P_N = 3 b c / (b^2 + 4 c^2) <= mu
    (:attr:`impact_friction`). Below, the corner slides outwards at the impact
    (P_T = -mu P_N) and omega+ / omega- = (R^2 / 3 - b (b - mu c)) / (R^2 / 3 + b (b - mu c))
    (:meth:`impact_ratio`): r at mu = :attr:`impact_friction`, (R^2 - 3 b^2) / (R^2 + 3 b^2)
    at mu = 0 (frictionless: no horizontal force, x' = 0).

    MoreauJean (theta = 1/2) reproduces these ratios to O(h) (tests/test_rocking_block.py:
    5e-5 off r at h = 1e-5 for mu = 1, with the default block r = 0.7931); with the default
    block and mu = 0.25 the pivot also slides while rocking, before the first impact.

    Parameters
    ----------
    angle : float, default 0.1
        Initial tilt phi0, abs(phi0) < alpha (it would topple); the block rests on the corner on
        the side of the tilt (the left corner for phi0 > 0), its gap 0.
    omega0 : float, default 0.0
        Initial angular velocity, the block turning about that corner.
    half_width, half_height : float, default 0.2 and 0.5
    mu : float, default 1.0
        Coulomb coefficient mu >= 0 of both corners.
    restitution : float, default 0.0
        e_N in [0, 1] (Housner's law is for 0).
    tangential_restitution : float, default 0.0
        e_T in [0, 1].
    mass, gravity : float, default 1.0 and 9.81
    x0, t0 : float, default 0.0

    Raises
    ------
    ValueError
        If a parameter is not finite or out of range; the message names it.
    """

    coordinates = (("x", "m"), ("y", "m"), ("phi", "rad"))
    parameter_units = dict(
        angle="rad",
        omega0="rad/s",
        half_width="m",
        half_height="m",
        mu="-",
        restitution="-",
        tangential_restitution="-",
        mass="kg",
        gravity="m/s^2",
        x0="m",
        t0="s",
    )

    KERNELS = ProblemKernels(
        rigid_body_mass_matrix,
        weight,
        _rocking_gap,
        _rocking_gap_gradient,
        constant_mass=True,
        tangent_gradient=_rocking_tangent_gradient,
        friction=floor_friction,
    )

    def __init__(
        self,
        angle: float = 0.1,
        omega0: float = 0.0,
        half_width: float = 0.2,
        half_height: float = 0.5,
        mu: float = 1.0,
        restitution: float = 0.0,
        tangential_restitution: float = 0.0,
        mass: float = 1.0,
        gravity: float = 9.81,
        x0: float = 0.0,
        t0: float = 0.0,
    ) -> None:
        self.half_width = checks.positive_scalar(half_width, "half_width")
        self.half_height = checks.positive_scalar(half_height, "half_height")
        self.angle = checks.finite_scalar(angle, "angle")
        if not abs(self.angle) < self.slenderness:
            raise ValueError(
                f"angle must lie in (-alpha, alpha), alpha = atan(b / c) = "
                f"{self.slenderness!r} (the block topples beyond), got {angle!r}"
            )
        self.omega0 = checks.finite_scalar(omega0, "omega0")
        self.mu = checks.finite_scalar(mu, "mu")
        if self.mu < 0.0:
            raise ValueError(f"mu must be >= 0, got {mu!r}")
        self.restitution = checks.restitution(restitution)
        self.tangential_restitution = checks.restitution(tangential_restitution)
        self.mass = checks.positive_scalar(mass, "mass")
        self.gravity = checks.positive_scalar(gravity, "gravity")
        self.t0 = checks.finite_scalar(t0, "t0")
        self.name = "RockingBlock"
        self.n_dof = 3
        self.n_constraints = 2
        b, c, phi = self.half_width, self.half_height, self.angle
        side = -1.0 if phi >= 0.0 else 1.0  # the pivot corner
        lever = side * b * math.cos(phi) + c * math.sin(phi)  # x_corner - x
        y0 = b * abs(math.sin(phi)) + c * math.cos(phi)
        x0 = checks.finite_scalar(x0, "x0")
        self.q0 = np.array([x0, y0, phi])
        self.v0 = self.omega0 * np.array([-y0, -lever, 1.0])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS` (J = m (b^2 + c^2) / 3)."""
        b, c = self.half_width, self.half_height
        return parameter_vector(
            PARAMETERS,
            mass=self.mass,
            inertia=self.mass * (b * b + c * c) / 3.0,
            half_width=self.half_width,
            half_height=self.half_height,
            gravity=self.gravity,
            mu=self.mu,
            tangential_restitution=self.tangential_restitution,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """m g y."""
        return self.mass * self.gravity * float(np.asarray(q, dtype=float)[1])

    @property
    def slenderness(self) -> float:
        """alpha = atan(b / c)."""
        return math.atan2(self.half_width, self.half_height)

    @property
    def housner_ratio(self) -> float:
        """Housner's r = 1 - (3/2) sin^2 alpha."""
        return 1.0 - 1.5 * math.sin(self.slenderness) ** 2

    @property
    def impact_friction(self) -> float:
        """The least mu for which the new corner sticks at the impact: 3 b c / (b^2 + 4 c^2)."""
        b, c = self.half_width, self.half_height
        return 3.0 * b * c / (b * b + 4.0 * c * c)

    def impact_ratio(self, mu: float | None = None) -> float:
        """omega+ / omega- of the Newton-Coulomb law (e_N = e_T = 0) at the new corner alone,
        at phi = 0, for the friction ``mu`` (default the block's): Housner's r where the corner
        sticks (mu >= :attr:`impact_friction`), else the sliding impact's ratio (class
        docstring)."""
        mu = self.mu if mu is None else checks.finite_scalar(mu, "mu")
        if mu >= self.impact_friction:
            return self.housner_ratio
        b, c = self.half_width, self.half_height
        inertia = (b * b + c * c) / 3.0
        lever = b * (b - mu * c)
        return (inertia - lever) / (inertia + lever)

    def impact_speed(self) -> float:
        """abs(omega) at the first impact, released from the tilt at rest with the pivot sticking:
        sqrt(3 g (cos(alpha - abs(phi0)) - cos alpha) / (2 R)) (energy about the pivot)."""
        if self.omega0 != 0.0:
            raise ValueError("impact_speed is for a release at rest (omega0 = 0)")
        alpha, radius = self.slenderness, math.hypot(self.half_width, self.half_height)
        drop = math.cos(alpha - abs(self.angle)) - math.cos(alpha)
        return math.sqrt(1.5 * self.gravity * drop / radius)
