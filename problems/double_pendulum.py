"""Double pendulum against a vertical wall: the model problem with a configuration-dependent M."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import ADMISSIBILITY_TOLERANCE, CompiledProblem, ProblemKernels

#: Obstacle configurations: which points touch the wall x = -d (rows: coefficients of
#: x1 = l1 sin q1 and of l2 sin q2 in g_i = d + a_i l1 sin q1 + b_i l2 sin q2).
CONTACTS = {
    "tip": ((1.0, 1.0),),
    "both": ((1.0, 0.0), (1.0, 1.0)),
}

#: The parameters of the kernels, in the order of the vector p; the last, ``wall_rows``, is the
#: block of the rows (a_i, b_i) of ``CONTACTS``: contact i has its a_i at p[WALL_ROWS + 2 i].
PARAMETERS = ("m1", "m2", "l1", "l2", "gravity", "wall_distance", "wall_rows")
M1, M2, L1, L2, GRAVITY, WALL_DISTANCE, WALL_ROWS = parameter_indices(PARAMETERS)


# The kernels write cos(q1 - q2) and sin(q1 - q2) through sin q_i and cos q_i: compiled into a
# time loop, every kernel evaluated at the same q then shares the same four values (numba and LLVM
# eliminate the repeated evaluations, and pair sin and cos of one angle into one sincos call), so
# a step costs two sincos calls instead of six separate sin and cos calls.


@kernel
def _pendulum_mass_matrix(q, p, out):
    m1, m2, l1, l2 = p[M1], p[M2], p[L1], p[L2]
    c = m2 * l1 * l2 * (np.cos(q[0]) * np.cos(q[1]) + np.sin(q[0]) * np.sin(q[1]))
    out[0, 0] = (m1 + m2) * l1 * l1
    out[0, 1] = c
    out[1, 0] = c
    out[1, 1] = m2 * l2 * l2


@kernel
def _pendulum_forces(t, q, v, p, out):
    m1, m2, l1, l2, g = p[M1], p[M2], p[L1], p[L2], p[GRAVITY]
    s1 = np.sin(q[0])
    s2 = np.sin(q[1])
    s = m2 * l1 * l2 * (s1 * np.cos(q[1]) - np.cos(q[0]) * s2)
    out[0] = -s * v[1] * v[1] - (m1 + m2) * g * l1 * s1
    out[1] = s * v[0] * v[0] - m2 * g * l2 * s2


@kernel
def _pendulum_gap(q, p, out):
    x1 = p[L1] * np.sin(q[0])
    x2 = p[L2] * np.sin(q[1])
    for i in range(out.shape[0]):
        out[i] = p[WALL_DISTANCE] + p[WALL_ROWS + 2 * i] * x1 + p[WALL_ROWS + 1 + 2 * i] * x2


@kernel
def _pendulum_gap_gradient(q, p, out):
    d1 = p[L1] * np.cos(q[0])
    d2 = p[L2] * np.cos(q[1])
    for i in range(out.shape[0]):
        out[i, 0] = p[WALL_ROWS + 2 * i] * d1
        out[i, 1] = p[WALL_ROWS + 1 + 2 * i] * d2


class DoublePendulum(CompiledProblem):
    r"""Planar double pendulum (point masses, massless rods) against a vertical wall.

    Absolute angles q = (q1, q2) from the downward vertical, pivot at the origin, horizontal
    positions x1 = l1 sin q1 (mass 1) and x2 = l1 sin q1 + l2 sin q2 (mass 2, the tip):

    .. math::

        M(q) = \begin{pmatrix} (m_1 + m_2) l_1^2 & m_2 l_1 l_2 \cos(q_1 - q_2) \\
                               m_2 l_1 l_2 \cos(q_1 - q_2) & m_2 l_2^2 \end{pmatrix},
        \qquad
        F(q, v) = \begin{pmatrix}
            -m_2 l_1 l_2 \sin(q_1 - q_2) v_2^2 - (m_1 + m_2) g l_1 \sin q_1 \\
            m_2 l_1 l_2 \sin(q_1 - q_2) v_1^2 - m_2 g l_2 \sin q_2 \end{pmatrix},

    the Euler-Lagrange equations M(q) q'' = F of L = T - V with T = v^T M(q) v / 2 and
    V = -(m1 + m2) g l1 cos q1 - m2 g l2 cos q2 (F holds the Coriolis/centrifugal terms and
    -grad V). M is symmetric positive definite for every q:
    det M = m2 l1^2 l2^2 (m1 + m2 sin^2(q1 - q2)) > 0. The kinetic metric is not constant, so
    the velocity jumps at impacts are along M(q)^-1 grad g and the energy of the time-stepping
    schemes is not exactly conserved between impacts.

    Obstacle: the vertical wall x = -d (d >= 0: the wall is on the side of negative x, at the
    horizontal distance d from the pivot).

    * ``contacts="tip"`` (default, the thesis configuration): one constraint, the tip stays to
      the right of the wall, g = d + l1 sin q1 + l2 sin q2 >= 0.
    * ``contacts="both"``: two constraints, g = (d + l1 sin q1, d + l1 sin q1 + l2 sin q2) >= 0.
      With d = 0 (the wall through the pivot) this is the configuration of Potra, Anitescu,
      Gavrea and Trinkle (2006): see :meth:`two_contact`.

    Defaults: m1 = m2 = l1 = l2 = 1, g = 9.81, d = 0.1, e = 0.8, released at rest from
    q0 = (pi/3, pi/2), on the side opposite the wall: the tip hits the wall once per swing, four
    times (near t - t0 = 0.73, 2.16, 3.47, 4.80) within the recommended horizon
    t_end = t0 + 5.5, which ends mid-swing (the next impact is near t - t0 = 6.12).

    No closed form: :attr:`has_exact_solution` is False; references are accurate event-driven
    runs.

    Parameters
    ----------
    m1, m2 : float, default 1.0
        Point masses, > 0.
    l1, l2 : float, default 1.0
        Rod lengths, > 0.
    gravity : float, default 9.81
        g >= 0.
    restitution : float, default 0.8
        e in [0, 1].
    q0 : array_like, shape (2,), default (pi/3, pi/2)
        Initial angles, admissible.
    v0 : array_like, shape (2,), default (0, 0)
        Initial angular velocities.
    wall_distance : float, default 0.1
        d >= 0.
    contacts : {"tip", "both"}, default "tip"
        Which points meet the wall.
    t_end : float, optional
        The recommended final time (not used by the problem itself; for studies), > t0;
        default t0 + 5.5 (:attr:`RECOMMENDED_HORIZON`).
    t0 : float, default 0.0
        Initial time.

    Attributes
    ----------
    t_end : float
        Recommended final time.

    Raises
    ------
    ValueError
        For a bad parameter (named in the message): not finite, out of range, wrong shape, an
        unknown ``contacts``, an inadmissible q0, or a mass matrix too badly conditioned at q0.

    References
    ----------
    F. A. Potra, M. Anitescu, B. Gavrea, J. Trinkle, "A linearly implicit trapezoidal method for
    integrating stiff multibody dynamics with contact, joints, and friction", Int. J. Numer.
    Meth. Engng 66 (2006) 1079-1124 (the two-contact configuration); R. Dzonou, M. D. P.
    Monteiro Marques, L. Paoli, "A convergence result for a vibro-impact problem with a general
    inertia operator", Nonlinear Dyn. 58 (2009) 361-384 (impacts with a configuration-dependent
    mass matrix).
    """

    #: Recommended horizon t_end - t0 of the default (single-contact) configuration.
    RECOMMENDED_HORIZON = 5.5
    #: Recommended horizon of :meth:`two_contact` (Potra et al.'s T = 2.5).
    TWO_CONTACT_HORIZON = 2.5

    coordinates = (("q_1", "rad"), ("q_2", "rad"))
    parameter_units = dict(
        m1="kg",
        m2="kg",
        l1="m",
        l2="m",
        gravity="m/s^2",
        restitution="-",
        q0="rad",
        v0="rad/s",
        wall_distance="m",
        contacts="-",
        t_end="s",
        t0="s",
    )

    KERNELS = ProblemKernels(
        _pendulum_mass_matrix,
        _pendulum_forces,
        _pendulum_gap,
        _pendulum_gap_gradient,
        affine_gap=False,
        constant_mass=False,
    )

    def __init__(
        self,
        m1: float = 1.0,
        m2: float = 1.0,
        l1: float = 1.0,
        l2: float = 1.0,
        gravity: float = 9.81,
        restitution: float = 0.8,
        q0: np.ndarray | tuple = (math.pi / 3.0, math.pi / 2.0),
        v0: np.ndarray | tuple = (0.0, 0.0),
        wall_distance: float = 0.1,
        contacts: str = "tip",
        t_end: float | None = None,
        t0: float = 0.0,
    ) -> None:
        self.m1 = checks.positive_scalar(m1, "m1")
        self.m2 = checks.positive_scalar(m2, "m2")
        self.l1 = checks.positive_scalar(l1, "l1")
        self.l2 = checks.positive_scalar(l2, "l2")
        self.gravity = checks.finite_scalar(gravity, "gravity")
        if self.gravity < 0.0:
            raise ValueError(f"gravity must be >= 0, got {gravity!r}")
        self.restitution = checks.restitution(restitution)
        q0 = checks.vector(q0, "q0", 2)
        v0 = checks.vector(v0, "v0", 2)
        self.wall_distance = checks.finite_scalar(wall_distance, "wall_distance")
        if self.wall_distance < 0.0:
            raise ValueError(f"wall_distance must be >= 0, got {wall_distance!r}")
        if not isinstance(contacts, str) or contacts not in CONTACTS:
            raise ValueError(f"contacts must be one of {sorted(CONTACTS)}, got {contacts!r}")
        self.contacts = contacts
        self.t0 = checks.finite_scalar(t0, "t0")
        if t_end is None:
            t_end = self.t0 + self.RECOMMENDED_HORIZON
        self.t_end = checks.finite_scalar(t_end, "t_end")
        if self.t_end <= self.t0:
            raise ValueError(f"t_end must be > t0 = {self.t0!r}, got {t_end!r}")
        self.name = "DoublePendulum"
        self.n_dof = 2
        self.n_constraints = len(CONTACTS[contacts])
        self.q0 = q0
        self.v0 = v0
        gaps = self.wall_distance + np.array(
            [
                a * self.l1 * math.sin(q0[0]) + b * self.l2 * math.sin(q0[1])
                for a, b in CONTACTS[contacts]
            ]
        )
        if np.any(gaps < -ADMISSIBILITY_TOLERANCE * max(1.0, float(np.abs(q0).max()))):
            raise ValueError(
                f"q0 must be admissible (on the side x >= -wall_distance of the wall), got "
                f"q0={q0.tolist()} with gap {gaps.tolist()}"
            )
        self._finish_init()

    @classmethod
    def two_contact(cls, **overrides: Any) -> DoublePendulum:
        """Both masses against the wall x >= 0 through the pivot (Potra et al., IJNME 66, 2006).

        m1 = m2 = l1 = l2 = 1, g = 9.81, q0 = (pi/3, pi/5), v0 = 0, e = 0.1, wall_distance = 0,
        contacts = "both", recommended final time t_end = t0 + 2.5; any of these can be
        overridden by keyword.
        """
        if "t_end" not in overrides:
            t0 = checks.finite_scalar(overrides.get("t0", 0.0), "t0")
            overrides = dict(overrides, t_end=t0 + cls.TWO_CONTACT_HORIZON)
        params: dict[str, Any] = dict(
            m1=1.0,
            m2=1.0,
            l1=1.0,
            l2=1.0,
            gravity=9.81,
            restitution=0.1,
            q0=(math.pi / 3.0, math.pi / 5.0),
            v0=(0.0, 0.0),
            wall_distance=0.0,
            contacts="both",
        )
        params.update(overrides)
        return cls(**params)

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(
            PARAMETERS,
            m1=self.m1,
            m2=self.m2,
            l1=self.l1,
            l2=self.l2,
            gravity=self.gravity,
            wall_distance=self.wall_distance,
            wall_rows=np.ravel(CONTACTS[self.contacts]),
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """-(m1 + m2) g l1 cos q1 - m2 g l2 cos q2."""
        q = np.asarray(q, dtype=float)
        return float(
            -(self.m1 + self.m2) * self.gravity * self.l1 * math.cos(q[0])
            - self.m2 * self.gravity * self.l2 * math.cos(q[1])
        )

    def potential_energies(self, q: np.ndarray) -> np.ndarray:
        """The potential energy at each sample, q (N, 2) -> (N,)."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        return -(self.m1 + self.m2) * self.gravity * self.l1 * np.cos(
            q[:, 0]
        ) - self.m2 * self.gravity * self.l2 * np.cos(q[:, 1])

    def positions(self, q: np.ndarray) -> np.ndarray:
        """Cartesian positions ((x1, y1), (x2, y2)) of the two masses, y upwards, shape (2, 2)."""
        q = np.asarray(q, dtype=float)
        p1 = self.l1 * np.array([math.sin(q[0]), -math.cos(q[0])])
        return np.array([p1, p1 + self.l2 * np.array([math.sin(q[1]), -math.cos(q[1])])])
