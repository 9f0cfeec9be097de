"""Column of beads: N equal beads stacked on a vertical line above the floor (N contacts)."""

from __future__ import annotations

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import (
    ADMISSIBILITY_TOLERANCE,
    CompiledProblem,
    ProblemKernels,
    valid_mass_structure,
)

#: Default start, in radii: the bottom centre at 10 r, the centres 2.5 r apart (gaps r / 2).
#: For r = 0.1 these are the heights of Siconos' ColumnOfBeads example (1.0, 1.25, 1.5, ...).
DEFAULT_BOTTOM_HEIGHT = 10.0
DEFAULT_SPACING = 2.5

#: The parameters of the kernels, in the order of the vector p.
PARAMETERS = ("mass", "radius", "gravity")
MASS, RADIUS, GRAVITY = parameter_indices(PARAMETERS)


@kernel
def _beads_mass_matrix(q, p, out):
    n = q.shape[0]
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.0
        out[i, i] = p[MASS]


@kernel
def _beads_mass_diagonal(q, p, out):
    for i in range(q.shape[0]):
        out[i] = p[MASS]


@kernel
def _beads_forces(t, q, v, p, out):
    weight = -p[MASS] * p[GRAVITY]
    for i in range(q.shape[0]):
        out[i] = weight


@kernel
def _beads_gap(q, p, out):
    out[0] = q[0] - p[RADIUS]
    for i in range(1, q.shape[0]):
        out[i] = q[i] - q[i - 1] - 2.0 * p[RADIUS]


@kernel
def _beads_gap_gradient(q, p, out):
    n = q.shape[0]
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.0
    out[0, 0] = 1.0
    for i in range(1, n):
        out[i, i - 1] = -1.0
        out[i, i] = 1.0


class ColumnOfBeads(CompiledProblem):
    r"""N equal beads on a vertical line falling onto the floor (N DOF, N constraints).

    q_i is the height of the centre of bead i (i = 1 at the bottom), each of mass m and radius r:

    .. math::

        m q_i'' = -m g_0, \qquad
        g_1(q) = q_1 - r \ge 0, \qquad g_{i+1}(q) = q_{i+1} - q_i - 2 r \ge 0 \ (i < N),

    a diagonal constant mass matrix m I, a constant force (the weights) and affine gaps whose
    gradient G (rows grad g_i) is lower bidiagonal with 1 on the diagonal and -1 below it, of
    full rank: the Delassus matrix W = G G^T / m is symmetric positive definite (tridiagonal,
    2/m on the diagonal except W_11 = 1/m, -1/m beside it), so the velocity-level LCP of an
    impact with any set of simultaneous contacts has a unique solution. The Newton law with one
    coefficient e applies to every contact; frictionless, no rotation.

    **Default start**: the beads at rest (v0 = 0) with the bottom centre at 10 r and the centres
    2.5 r apart (gaps r / 2 between neighbours), as in Siconos' ColumnOfBeads example
    (r = 0.1: heights 1.0, 1.25, 1.5, ...). The column falls as a whole until the bottom bead hits
    the floor; its rebound then meets the beads still falling, and several contacts close within
    the same step of a time-stepping method (the case of Moreau's LCP with simultaneous
    contacts). No closed form (:attr:`has_exact_solution` is False).

    **Resting stack** (an exact equilibrium): q_i = (2 i - 1) r, v = 0, every gap zero; the
    contact below bead i carries the weight of the beads i..N, lambda_i = (N - i + 1) m g0
    (0 <= lambda _|_ g = 0, and M q'' = F + G^T lambda = 0).

    Potential energy m g0 sum_i q_i.

    Parameters
    ----------
    n_beads : int, default 10
        N >= 1.
    mass : float, default 1.0
        m > 0, the mass of each bead.
    radius : float, default 0.1
        r > 0.
    gravity : float, default 9.81
        g0 > 0.
    restitution : float, default 0.9
        e in [0, 1].
    q0 : array_like, shape (N,), optional
        Initial heights of the centres, admissible (every gap >= -1e-10 max(1, |q0|)); default
        above.
    v0 : array_like, shape (N,), optional
        Initial velocities; default zeros.
    t0 : float, default 0.0
        Initial time.
    mass_structure : {"diagonal", "dense"}, default "diagonal"
        How the loops store and solve with m I: its diagonal (O(n) per solve) or the dense
        (N, N) array (the same trajectory to round-off, kept to measure the difference).

    Raises
    ------
    ValueError
        For a parameter that is not finite, of the wrong type or shape, out of range, or an
        inadmissible q0 (named in the message).

    References
    ----------
    V. Acary, F. Perignon, ColumnOfBeads example of the Siconos software (siconos-tutorials,
    examples/mechanics/ColumnOfBeads, Apache-2.0); V. Acary, B. Brogliato, *Numerical Methods
    for Nonsmooth Dynamical Systems*, Springer (2008) (Moreau-Jean time-stepping with
    simultaneous contacts); J. J. Moreau, "Unilateral contact and dry friction in finite freedom
    dynamics" (1988).
    """

    coordinates = (("q_{i}", "m"),)
    parameter_units = dict(
        n_beads="-",
        mass="kg",
        radius="m",
        gravity="m/s^2",
        restitution="-",
        q0="m",
        v0="m/s",
        t0="s",
        mass_structure="-",
    )

    KERNELS = ProblemKernels(
        _beads_mass_matrix,
        _beads_forces,
        _beads_gap,
        _beads_gap_gradient,
        affine_gap=True,
        constant_mass=True,
        mass_diagonal=_beads_mass_diagonal,
        sizes_at_run_time=True,  # the scaling study's columns share one compiled loop per scheme
    )

    def __init__(
        self,
        n_beads: int = 10,
        mass: float = 1.0,
        radius: float = 0.1,
        gravity: float = 9.81,
        restitution: float = 0.9,
        q0: np.ndarray | tuple | None = None,
        v0: np.ndarray | tuple | None = None,
        t0: float = 0.0,
        mass_structure: str = "diagonal",
    ) -> None:
        n = checks.positive_int(n_beads, "n_beads")
        self.n_beads = n
        self.mass = checks.positive_scalar(mass, "mass")
        self.radius = checks.positive_scalar(radius, "radius")
        self.gravity = checks.positive_scalar(gravity, "gravity")
        self.restitution = checks.restitution(restitution)
        self.t0 = checks.finite_scalar(t0, "t0")
        self.mass_structure = valid_mass_structure(mass_structure)
        if q0 is None:
            q0 = self.radius * (DEFAULT_BOTTOM_HEIGHT + DEFAULT_SPACING * np.arange(n))
        q0 = checks.vector(q0, "q0", n)
        gaps = np.concatenate([[q0[0] - self.radius], np.diff(q0) - 2.0 * self.radius])
        worst = int(np.argmin(gaps))
        if gaps[worst] < -ADMISSIBILITY_TOLERANCE * max(1.0, float(np.abs(q0).max())):
            raise ValueError(
                f"q0 must be admissible (q0[0] >= radius and q0[i+1] - q0[i] >= 2 radius), got "
                f"q0={q0.tolist()} with gap {worst} = {gaps[worst]!r}"
            )
        self.v0 = np.zeros(n) if v0 is None else checks.vector(v0, "v0", n)
        self.q0 = q0
        self.name = "ColumnOfBeads"
        self.n_dof = n
        self.n_constraints = n
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(
            PARAMETERS, mass=self.mass, radius=self.radius, gravity=self.gravity
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """m g0 sum_i q_i."""
        return self.mass * self.gravity * float(np.sum(np.asarray(q, dtype=float)))
