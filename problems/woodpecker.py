"""Glocker's woodpecker toy: a sleeve on a pole and a woodpecker body, three frictional contacts."""

from __future__ import annotations

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import CompiledProblem, ProblemKernels

#: The parameters of the kernels, in the order of the vector p.
PARAMETERS = (
    "r_O", "r_M", "h_M", "l_M", "l_G", "h_S", "l_S", "m_M", "m_S", "J_M", "J_S", "c_phi",
    "gravity", "mu", "restitution", "sleeve_restitution",
)  # fmt: skip
(R_O, R_M, H_M, L_M, L_G, H_S, L_S, M_M, M_S, J_M, J_S, C_PHI, GRAVITY, MU, RESTITUTION,
 SLEEVE_RESTITUTION) = parameter_indices(PARAMETERS)  # fmt: skip


@kernel
def _woodpecker_mass_matrix(q, p, out):
    m_s, l_m, l_g = p[M_S], p[L_M], p[L_G]
    out[0, 0] = m_s + p[M_M]
    out[0, 1] = m_s * l_m
    out[0, 2] = m_s * l_g
    out[1, 0] = m_s * l_m
    out[1, 1] = p[J_M] + m_s * l_m * l_m
    out[1, 2] = m_s * l_m * l_g
    out[2, 0] = m_s * l_g
    out[2, 1] = m_s * l_m * l_g
    out[2, 2] = p[J_S] + m_s * l_g * l_g


@kernel
def _woodpecker_forces(t, q, v, p, out):
    g, m_s = p[GRAVITY], p[M_S]
    spring = p[C_PHI] * (q[1] - q[2])
    out[0] = -(m_s + p[M_M]) * g
    out[1] = -m_s * p[L_M] * g - spring
    out[2] = -m_s * p[L_G] * g + spring


@kernel
def _woodpecker_stiffness(p, out):
    for i in range(3):
        for j in range(3):
            out[i, j] = 0.0
    out[1, 1] = p[C_PHI]
    out[1, 2] = -p[C_PHI]
    out[2, 1] = -p[C_PHI]
    out[2, 2] = p[C_PHI]


@kernel
def _woodpecker_gap(q, p, out):
    out[0] = -p[H_S] * q[2] + p[L_M] + p[L_G] - p[L_S] - p[R_O]
    out[1] = p[H_M] * q[1] + p[R_M] - p[R_O]
    out[2] = -p[H_M] * q[1] + p[R_M] - p[R_O]


@kernel
def _woodpecker_gap_gradient(q, p, out):
    for i in range(3):
        for j in range(3):
            out[i, j] = 0.0
    out[0, 2] = -p[H_S]
    out[1, 1] = p[H_M]
    out[2, 1] = -p[H_M]


@kernel
def _woodpecker_tangent_gradient(q, p, out):
    out[0, 0] = 1.0
    out[0, 1] = p[L_M]
    out[0, 2] = p[L_G] - p[L_S]
    for i in (1, 2):
        out[i, 0] = 1.0
        out[i, 1] = p[R_M]
        out[i, 2] = 0.0


@kernel
def _woodpecker_friction(q, p, mu, e_t):
    for i in range(3):
        mu[i] = p[MU]
        e_t[i] = 0.0


@kernel
def _woodpecker_normal_restitution(q, p, e_n):
    e_n[0] = p[RESTITUTION]
    e_n[1] = p[SLEEVE_RESTITUTION]
    e_n[2] = p[SLEEVE_RESTITUTION]


#: The published example's parameters (Siconos' WoodPeckerConsts.h, Glocker's toy).
PUBLISHED = dict(
    r_O=0.0025, r_M=0.0031, h_M=0.0058, l_M=0.010, l_G=0.015, h_S=0.02, l_S=0.0201,
    m_M=0.0003, m_S=0.0045, J_M=5.0e-9, J_S=7.0e-7, c_phi=0.0056, gravity=9.81,
)  # fmt: skip

#: The published initial state (y, phi_M, phi_S) and velocity.
PUBLISHED_Q0 = (0.0, -0.1036, -0.2788)
PUBLISHED_V0 = (-0.3411, 4.8572e-15, -7.4583)


class Woodpecker(CompiledProblem):
    r"""Glocker's woodpecker toy (Pfeiffer and Glocker; Siconos' and MBSim's examples).

    A sleeve (mass m_M, inertia J_M) slides on a vertical pole with play; a woodpecker body
    (m_S, J_S) is joined to it by a torsion spring c_phi. q = (y, phi_M, phi_S): the sleeve's
    height and the sleeve's and the body's angles. The linear model with constant contact
    Jacobians (small angles), as in Siconos' WoodPecker example:

    .. math::

        M = \begin{pmatrix} m_S + m_M & m_S l_M & m_S l_G \\
        m_S l_M & J_M + m_S l_M^2 & m_S l_M l_G \\
        m_S l_G & m_S l_M l_G & J_S + m_S l_G^2 \end{pmatrix},\quad
        F = -g (m_S + m_M, m_S l_M, m_S l_G) - c_\phi (0, \phi_M - \phi_S, \phi_S - \phi_M),

    and three contacts with constant rows (normal; tangent):

    * 0, the beak on the pole: g_0 = l_M + l_G - l_S - r_O - h_S phi_S,
      W_T = (1, l_M, l_G - l_S), e_N = ``restitution`` (0.5);
    * 1 and 2, the sleeve's two edges on the pole: g_{1,2} = r_M - r_O +- h_M phi_M,
      W_T = (1, r_M, 0), e_N = ``sleeve_restitution`` (0);

    all with Coulomb friction mu (0.3) and e_T = 0. The sleeve jams (both edges sticking:
    their tangent rows are equal, dependent rows), slips down, the beak strikes the pole.

    The spring is the linear part -K q of F, K = c_phi [[0, 0, 0], [0, 1, -1], [0, -1, 1]]
    (``stiffness_matrix()``), so ``MoreauJean(theta, implicit=True)`` takes it in its iteration
    matrix W = M + (h theta)^2 K: with theta = 1/2 that is Siconos' MoreauJeanOSI on the
    example's LagrangianLinearTIDS (tests/test_woodpecker.py compares the two step by step).

    The default start is the published state q0 = (0, -0.1036, -0.2788), whose edge 1 is
    8.8e-7 inside the pole (g_1 = -8.8e-7, the published phi_M0 rounded to 4 digits): the
    problem accepts an initial penetration up to :attr:`initial_penetration_tolerance` (1e-6,
    in the gaps' units, m), and refuses a deeper one.

    From it, the sleeve slips on edge 1, jams (sticks, at rest) for 40 ms, slips, flies free,
    the beak strikes the pole once, edge 2 slips, the sleeve flies and lands on edge 1, and the
    cycle repeats with a drop of the sleeve per cycle whose gravity work the friction and the
    beak's impact dissipate (tests/test_woodpecker.py).

    Parameters
    ----------
    restitution : float, default 0.5
        e_N of the beak contact.
    sleeve_restitution : float, default 0.0
        e_N of the sleeve's contacts.
    mu : float, default 0.3
    q0, v0 : sequence of 3 floats, default the published state (0, -0.1036, -0.2788) and
        velocity (-0.3411, 4.8572e-15, -7.4583); q0 at most
        :attr:`initial_penetration_tolerance` inside the pole.
    t0 : float, default 0.0
    **geometry
        The published parameters :data:`PUBLISHED` (r_O, r_M, h_M, l_M, l_G, h_S, l_S, m_M,
        m_S, J_M, J_S, c_phi, gravity) may be overridden by name.

    Raises
    ------
    ValueError
        If a parameter is not finite or out of range, or q0 deeper than
        :attr:`initial_penetration_tolerance` inside the pole; the message names it.
    """

    coordinates = (("y", "m"), ("phi_M", "rad"), ("phi_S", "rad"))
    parameter_units = dict(
        restitution="-",
        sleeve_restitution="-",
        mu="-",
        q0="m, rad, rad",
        v0="m/s, rad/s, rad/s",
        t0="s",
        r_O="m",
        r_M="m",
        h_M="m",
        l_M="m",
        l_G="m",
        h_S="m",
        l_S="m",
        m_M="kg",
        m_S="kg",
        J_M="kg m^2",
        J_S="kg m^2",
        c_phi="N m/rad",
        gravity="m/s^2",
    )
    keyword_parameters = PUBLISHED
    #: The published q0 has g_1 = -8.8e-7 (m); accepted, and nothing deeper.
    initial_penetration_tolerance = 1e-6

    KERNELS = ProblemKernels(
        _woodpecker_mass_matrix,
        _woodpecker_forces,
        _woodpecker_gap,
        _woodpecker_gap_gradient,
        affine_gap=True,
        constant_mass=True,
        tangent_gradient=_woodpecker_tangent_gradient,
        friction=_woodpecker_friction,
        normal_restitution=_woodpecker_normal_restitution,
        stiffness_matrix=_woodpecker_stiffness,
    )

    def __init__(
        self,
        restitution: float = 0.5,
        sleeve_restitution: float = 0.0,
        mu: float = 0.3,
        q0: tuple[float, float, float] | None = None,
        v0: tuple[float, float, float] = PUBLISHED_V0,
        t0: float = 0.0,
        **geometry: float,
    ) -> None:
        unknown = set(geometry) - set(PUBLISHED)
        if unknown:
            raise ValueError(f"unknown parameters {sorted(unknown)}; known: {sorted(PUBLISHED)}")
        values = {**PUBLISHED, **geometry}
        for name, value in values.items():
            setattr(self, name, checks.positive_scalar(value, name))
        self.restitution = checks.restitution(restitution)
        self.sleeve_restitution = checks.restitution(sleeve_restitution, "sleeve_restitution")
        self.mu = checks.finite_scalar(mu, "mu")
        if self.mu < 0.0:
            raise ValueError(f"mu must be >= 0, got {mu!r}")
        self.t0 = checks.finite_scalar(t0, "t0")
        self.name = "Woodpecker"
        self.n_dof = 3
        self.n_constraints = 3
        self.q0 = checks.vector(PUBLISHED_Q0 if q0 is None else q0, "q0", 3)
        self.v0 = checks.vector(v0, "v0", 3)
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        names = {name: getattr(self, name) for name in PUBLISHED}
        return parameter_vector(
            PARAMETERS,
            mu=self.mu,
            restitution=self.restitution,
            sleeve_restitution=self.sleeve_restitution,
            **names,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """Gravity and the spring: g (m_S + m_M) y + g m_S (l_M phi_M + l_G phi_S)
        + c_phi (phi_M - phi_S)^2 / 2."""
        y, phi_m, phi_s = (float(x) for x in np.asarray(q, dtype=float))
        gravity = self.gravity * (
            (self.m_S + self.m_M) * y + self.m_S * (self.l_M * phi_m + self.l_G * phi_s)
        )
        return gravity + 0.5 * self.c_phi * (phi_m - phi_s) ** 2
