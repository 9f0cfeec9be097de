"""Slanted wall with a non-diagonal mass matrix: the test of the kinetic metric."""

from __future__ import annotations

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import ADMISSIBILITY_TOLERANCE, CompiledProblem, ProblemKernels

from .bouncing_ball import (
    MAX_IMPACT_COUNT,
    bouncing_gap,
    bouncing_impact_times,
    bouncing_key_times,
)

#: The parameters of the kernels, in the order of the vector p: the entries of the mass matrix
#: M, of the force F and of the wall's normal n, and the offset c (the wall is n . q = c).
PARAMETERS = (
    "mass_00",
    "mass_01",
    "mass_10",
    "mass_11",
    "force_0",
    "force_1",
    "normal_0",
    "normal_1",
    "offset",
)
MASS_00, MASS_01, MASS_10, MASS_11, FORCE_0, FORCE_1, NORMAL_0, NORMAL_1, OFFSET = (
    parameter_indices(PARAMETERS)
)


@kernel
def _wall_mass_matrix(q, p, out):
    out[0, 0] = p[MASS_00]
    out[0, 1] = p[MASS_01]
    out[1, 0] = p[MASS_10]
    out[1, 1] = p[MASS_11]


@kernel
def _wall_forces(t, q, v, p, out):
    out[0] = p[FORCE_0]
    out[1] = p[FORCE_1]


@kernel
def _wall_gap(q, p, out):
    out[0] = p[NORMAL_0] * q[0] + p[NORMAL_1] * q[1] - p[OFFSET]


@kernel
def _wall_gap_gradient(q, p, out):
    out[0, 0] = p[NORMAL_0]
    out[0, 1] = p[NORMAL_1]


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)
    a.flags.writeable = False
    return a


class SlantedWall(CompiledProblem):
    r"""A particle with a constant non-diagonal mass matrix under a constant force above a wall.

    2 DOF, 1 constraint:

    .. math::

        M q'' = F, \qquad g(q) = n^T q - c \ge 0, \qquad
        v^+ = v^- - (1 + e)\, u^- \frac{M^{-1} n}{n^T M^{-1} n} \ \text{at}\ g = 0,
        \ u^- = n^T v^- < 0,

    with M constant symmetric positive definite and not diagonal, F constant, n nonzero (not
    normalised). The velocity jump is along M^-1 n (the kinetic metric), not along n: a method
    that uses the Euclidean normal changes the tangential motion and is caught here.

    **Exact solution** (all t >= t0, through the accumulation point). Let a = M^-1 F,
    w = M^-1 n / (n^T M^-1 n) (so n^T w = 1) and Pi = I - w n^T (Pi w = 0, n^T Pi = 0). The gap
    s = n^T q - c obeys s'' = n^T a between impacts and u+ = -e u- at impacts: it is exactly the
    bouncing ball (:func:`~impactbench.problems.bouncing_ball.bouncing_gap`) with gravity
    g_eff = -n^T M^-1 F, s0 = n^T q0 - c, u0 = n^T v0. The impulses act along w only, so the
    "tangential" part Pi q moves freely:

    .. math::

        q(t) = \Pi q_{free}(t) + w\,(s(t) + c), \qquad v(t) = \Pi v_{free}(t) + w\, s'(t),
        \qquad q_{free} = q_0 + v_0 (t - t_0) + a (t - t_0)^2 / 2,

    equivalently q = q_free + w (s - s_free). For g_eff > 0 and e < 1 the impacts accumulate at
    t_inf = t_1 + 2 e V1 / (g_eff (1 - e)); afterwards s = 0 and the particle slides along the
    wall with q'' = Pi a = a + g_eff w and n^T v = 0. For g_eff <= 0 there is at most one impact.
    Flights shorter than round-off are replaced by sliding (see ``bouncing_gap``). At an impact
    instant the post-impact velocity is returned.

    Parameters
    ----------
    mass_matrix : array_like, shape (2, 2), default [[2.0, 0.6], [0.6, 1.0]]
        Constant SPD mass matrix (symmetric, positive definite, condition number <= 1e12).
    force : array_like, shape (2,), default (0.5, -9.81)
        Constant force F (default: gravity plus a sideways push; g_eff = 10.98 > 0).
    normal : array_like, shape (2,), default (0.3, 1.0)
        Wall normal n (nonzero, not necessarily of unit length).
    offset : float, default 0.0
        c in n^T q >= c.
    restitution : float, default 0.7
        e in [0, 1].
    q0 : array_like, shape (2,), default (0.0, 1.0)
        Initial position, admissible (n^T q0 - c >= -1e-10 max(1, |q0|); a round-off negative gap
        is treated as 0 by the exact solution).
    v0 : array_like, shape (2,), default (1.0, 0.0)
        Initial velocity.
    t0 : float, default 0.0
        Initial time.

    Attributes
    ----------
    mass, force, normal : ndarray (read-only)
        M, F, n.
    acceleration : ndarray
        a = M^-1 F, the free acceleration.
    impulse_direction : ndarray
        M^-1 n (unnormalised): the direction of every velocity jump.
    impulse_weight : ndarray
        w = M^-1 n / (n^T M^-1 n).
    effective_gravity : float
        g_eff = -n^T M^-1 F.
    sliding_acceleration : ndarray
        a + g_eff w, the acceleration after t_inf.

    Raises
    ------
    ValueError
        For a bad parameter (named in the message): wrong shape, non-finite, mass matrix not
        symmetric / not positive definite / badly conditioned, zero normal, q0 inadmissible,
        restitution outside [0, 1].

    References
    ----------
    The impact law in the kinetic metric: J. J. Moreau, "Unilateral contact and dry friction in
    finite freedom dynamics" (1988); B. Brogliato, *Nonsmooth Mechanics*, Springer (2016), ch. 6.
    """

    coordinates = (("q_1", "m"), ("q_2", "m"))
    parameter_units = dict(
        mass_matrix="kg",
        force="N",
        normal="-",
        offset="m",
        restitution="-",
        q0="m",
        v0="m/s",
        t0="s",
    )
    #: The constant force is -grad V and Newton's law with e in [0, 1] dissipates: the energy
    #: gate applies (:attr:`impactbench.core.problem.Problem.conservative`).
    conservative = True

    KERNELS = ProblemKernels(
        _wall_mass_matrix,
        _wall_forces,
        _wall_gap,
        _wall_gap_gradient,
        affine_gap=True,
        constant_mass=True,
    )

    def __init__(
        self,
        mass_matrix: np.ndarray | tuple = ((2.0, 0.6), (0.6, 1.0)),
        force: np.ndarray | tuple = (0.5, -9.81),
        normal: np.ndarray | tuple = (0.3, 1.0),
        offset: float = 0.0,
        restitution: float = 0.7,
        q0: np.ndarray | tuple = (0.0, 1.0),
        v0: np.ndarray | tuple = (1.0, 0.0),
        t0: float = 0.0,
    ) -> None:
        mass = checks.spd_matrix(mass_matrix, "mass_matrix", 2)
        mass = 0.5 * (mass + mass.T)  # exactly symmetric (asymmetry <= 1e-12 was accepted)
        force = checks.vector(force, "force", 2)
        normal = checks.vector(normal, "normal", 2)
        if not np.any(normal != 0.0):
            raise ValueError(f"normal must be nonzero, got {normal.tolist()}")
        self.offset = checks.finite_scalar(offset, "offset")
        self.restitution = checks.restitution(restitution)
        q0 = checks.vector(q0, "q0", 2)
        v0 = checks.vector(v0, "v0", 2)
        self.t0 = checks.finite_scalar(t0, "t0")
        s0 = float(normal @ q0) - self.offset
        if s0 < -ADMISSIBILITY_TOLERANCE * max(1.0, float(np.abs(q0).max())):
            raise ValueError(
                f"q0 must be admissible (normal . q0 >= offset), got q0={q0.tolist()} with "
                f"gap {s0!r}"
            )
        self.name = "SlantedWall"
        self.n_dof = 2
        self.n_constraints = 1
        self.q0 = q0
        self.v0 = v0
        self.mass = _readonly(mass)
        self.force = _readonly(force)
        self.normal = _readonly(normal)
        m_inv = np.linalg.inv(mass)
        self.acceleration = _readonly(m_inv @ force)
        self.impulse_direction = _readonly(m_inv @ normal)
        self.impulse_weight = _readonly(self.impulse_direction / (normal @ self.impulse_direction))
        self.effective_gravity = -float(normal @ self.acceleration)
        self.sliding_acceleration = _readonly(
            self.acceleration + self.effective_gravity * self.impulse_weight
        )
        # tangential projector Pi = I - w n^T and the free motion's tangential parts
        proj = np.eye(2) - np.outer(self.impulse_weight, normal)
        self._tq0 = proj @ q0
        self._tv0 = proj @ v0
        self._ta = proj @ self.acceleration
        self._finish_init()

    def _gap_args(self) -> dict[str, float]:
        """The arguments of :func:`bouncing_gap` for the gap s = n^T q - offset: its initial
        value and rate, the effective gravity and the restitution."""
        s0 = float(self.normal @ self.q0) - self.offset
        return dict(
            t0=self.t0,
            s0=max(s0, 0.0),
            u0=float(self.normal @ self.v0),
            gravity=self.effective_gravity,
            restitution=self.restitution,
        )

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        (m00, m01), (m10, m11) = self.mass
        return parameter_vector(
            PARAMETERS,
            mass_00=m00,
            mass_01=m01,
            mass_10=m10,
            mass_11=m11,
            force_0=self.force[0],
            force_1=self.force[1],
            normal_0=self.normal[0],
            normal_1=self.normal[1],
            offset=self.offset,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """-F^T q."""
        return -float(self.force @ np.asarray(q, dtype=float))

    def potential_energies(self, q: np.ndarray) -> np.ndarray:
        """-F^T q at each sample, q (N, 2) -> (N,)."""
        return -(np.atleast_2d(np.asarray(q, dtype=float)) @ self.force)

    @property
    def first_impact_time(self) -> float:
        """Time t_1 of the first impact (inf if there is none)."""
        return bouncing_key_times(**self._gap_args())[0]

    @property
    def accumulation_time(self) -> float:
        """t_inf, from which the particle slides on the wall (inf if it never does)."""
        return bouncing_key_times(**self._gap_args())[1]

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact (q, v) at times ``t`` >= t0, each of shape (len(t), 2).

        See the class docstring; post-impact velocity at an impact instant.
        """
        t = checks.times(t, self.t0)
        s, u = bouncing_gap(t, **self._gap_args())
        tau = (t - self.t0)[:, None]
        w = self.impulse_weight
        q = self._tq0 + tau * (self._tv0 + 0.5 * tau * self._ta) + (s + self.offset)[:, None] * w
        v = self._tv0 + tau * self._ta + u[:, None] * w
        return q, v

    def impact_times(self, t_end: float, max_count: int = MAX_IMPACT_COUNT) -> np.ndarray:
        """Exact impact times in [t0, t_end]: those of the gap's bouncing ball.

        For e < 1 and g_eff > 0, only the first ``max_count`` impacts before the round-off
        cut-off of ``bouncing_gap`` (infinitely many accumulate at t_inf).
        """
        return bouncing_impact_times(t_end, max_count=max_count, **self._gap_args())
