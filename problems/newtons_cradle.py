"""Newton's cradle: a row of touching equal balls on a line, k of them launched at the row."""

from __future__ import annotations

import numpy as np

from impactbench.core import _checks
from impactbench.core._jit import kernel
from impactbench.core.problem import CompiledProblem, ProblemKernels


@kernel
def _cradle_mass_matrix(q, p, out):
    n = q.shape[0]
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.0
        out[i, i] = p[0]


@kernel
def _cradle_forces(t, q, v, p, out):
    for i in range(q.shape[0]):
        out[i] = 0.0


@kernel
def _cradle_gap(q, p, out):
    for i in range(q.shape[0] - 1):
        out[i] = q[i + 1] - q[i] - 2.0 * p[1]


@kernel
def _cradle_gap_gradient(q, p, out):
    n = q.shape[0]
    for i in range(n - 1):
        for j in range(n):
            out[i, j] = 0.0
        out[i, i] = -1.0
        out[i, i + 1] = 1.0


class NewtonsCradle(CompiledProblem):
    r"""N equal balls on a line, the first k launched at the other N - k (N - 1 gaps).

    q_i is the abscissa of the centre of ball i (i = 1 on the left), each of mass m and radius r;
    no force acts along the line:

    .. math::

        m q_i'' = 0, \qquad g_i(q) = q_{i+1} - q_i - 2 r \ge 0 \quad (i = 1, \dots, N - 1).

    The gap gradient G ((N - 1) x N, row i = -e_i + e_{i+1}) has full rank, so the Delassus
    matrix W = G G^T / m (tridiagonal, 2/m on the diagonal, -1/m beside it) is SPD and the
    velocity-level LCP of an impact has a unique solution. Momentum m sum v_i and, between
    impacts, the kinetic energy are conserved; there is no potential energy.

    **Start**: balls 1..k touch each other and move at v0 > 0; balls k+1..N touch each other
    and rest; ball k is ``gap`` away from ball k+1. At t* = t0 + gap / v0 the gap g_k closes
    while g_1..g_{k-1} and g_{k+1}..g_{N-1} are already zero: every constraint is active at
    the impact (the case that splits the impact models).

    **Outcomes of the impact models** (post-impact velocities, e = 1, m = 1):

    * *Physics* (steel balls, e = 1; waves through the balls separate the contacts): the k
      rightmost balls leave with v0, the others rest, v = (0, ..., 0, v0, ..., v0).
      :meth:`physical_outcome` returns it.
    * *Sequential pairwise impacts* (each approaching contact resolved alone, in turn, with the
      Newton law): for equal masses and e = 1 each binary impact exchanges the velocities, and
      the sequence ends at the physical outcome above. This is what ``EventDriven`` does: at the
      event only the closing contact approaches (the closed contacts of the row have zero
      normal velocity), its impact is resolved alone, the next contact then approaches at once
      and is the next event (measured: v = (0, 0, 0, 0, v0) for N = 5, k = 1).
    * *Velocity-level LCP with Newton's law on every active contact at once*:
      0 <= P _|_ G v^+ + e G v^- >= 0, v^+ = v^- + M^-1 G^T P. For N = 3, k = 1, v^- =
      (v0, 0, 0): U_1^- = -v0, U_2^- = 0, v^+ = (v0 - P_1, P_1 - P_2, P_2), and with both
      P_i > 0 the Newton law reads 2 P_1 - P_2 = (1 + e) v0, 2 P_2 - P_1 = 0, so
      P = (1 + e) v0 (2/3, 1/3) > 0 and, for e = 1, v^+ = (-v0/3, 2 v0/3, 2 v0/3): momentum
      and energy are kept (e = 1 on every contact with P > 0 keeps energy), yet the first ball
      bounces back and two balls leave. For k = 1 and any N the all-positive solution is the
      elastic impact of ball 1 on the row moving as one rigid body of mass (N - 1) m:
      v^+ = ((2 - N) v0 / N, 2 v0 / N, ..., 2 v0 / N). ``PaoliSchatzman`` (position-level
      Newton law on the step's active set, every contact closed in the impact step) produces
      exactly this. ``MoreauJean`` (theta = 1/2, position activation) produces it for N = 3;
      for N >= 4 its first-step active set and later LCPs give a different split (mechanism not
      analysed; measured: v = (-v0/3, 0, 0, 2 v0/3, 2 v0/3) for N = 5, k = 1, at h = 1e-3
      and 3e-3). None of the time-stepping answers is the cradle's.

    Parameters
    ----------
    n_balls : int, default 3
        N >= 2.
    n_launched : int, default 1
        k in 1..N-1, the number of balls launched.
    mass : float, default 1.0
        m > 0, the mass of each ball.
    radius : float, default 0.1
        r > 0.
    speed : float, default 1.0
        v0 > 0, the launch speed.
    gap : float, default 0.1
        > 0, the initial distance between the launched balls and the row.
    restitution : float, default 1.0
        e in [0, 1].
    t0 : float, default 0.0
        Initial time.

    Raises
    ------
    ValueError
        For a parameter that is not finite, of the wrong type, or out of range (named in the
        message).

    References
    ----------
    B. Brogliato, *Nonsmooth Mechanics*, 3rd ed., Springer (2016), section 6.2 (multiple
    impacts, Newton's cradle); V. Acary, B. Brogliato, *Numerical Methods for Nonsmooth
    Dynamical Systems*, Springer (2008), section 10.1; C. Liu, Z. Zhao, B. Brogliato, "Frictionless
    multiple impacts in multibody systems I", Proc. R. Soc. A 464 (2008) 3193-3211.
    """

    KERNELS = ProblemKernels(
        _cradle_mass_matrix,
        _cradle_forces,
        _cradle_gap,
        _cradle_gap_gradient,
        affine_gap=True,
        constant_mass=True,
    )

    def __init__(
        self,
        n_balls: int = 3,
        n_launched: int = 1,
        mass: float = 1.0,
        radius: float = 0.1,
        speed: float = 1.0,
        gap: float = 0.1,
        restitution: float = 1.0,
        t0: float = 0.0,
    ) -> None:
        n = _checks.positive_int(n_balls, "n_balls")
        if n < 2:
            raise ValueError(f"n_balls must be >= 2, got {n_balls!r}")
        k = _checks.positive_int(n_launched, "n_launched")
        if k >= n:
            raise ValueError(f"n_launched must lie in 1..n_balls - 1 = {n - 1}, got {n_launched!r}")
        self.n_balls = n
        self.n_launched = k
        self.mass = _checks.positive_scalar(mass, "mass")
        self.radius = _checks.positive_scalar(radius, "radius")
        self.speed = _checks.positive_scalar(speed, "speed")
        self.initial_gap = _checks.positive_scalar(gap, "gap")
        self.restitution = _checks.restitution(restitution)
        self.t0 = _checks.finite_scalar(t0, "t0")
        q0 = 2.0 * self.radius * np.arange(n, dtype=float)
        q0[k:] += self.initial_gap
        self.q0 = q0
        self.v0 = np.where(np.arange(n) < k, self.speed, 0.0)
        self.name = "NewtonsCradle"
        self.n_dof = n
        self.n_constraints = n - 1
        self._finish_init()

    @property
    def impact_time(self) -> float:
        """t* = t0 + gap / v0, when the launched balls reach the row."""
        return self.t0 + self.initial_gap / self.speed

    def kernel_parameters(self) -> np.ndarray:
        """``[mass, radius]``."""
        return np.array([self.mass, self.radius])

    def potential_energy(self, q: np.ndarray) -> float:
        """Zero: no force acts along the line."""
        return 0.0

    def physical_outcome(self) -> np.ndarray:
        """Velocities after the impact of a real cradle with e = 1, shape (N,).

        The k rightmost balls leave with v0, the others rest (also the outcome of sequential
        pairwise impacts with e = 1).
        """
        return np.where(np.arange(self.n_balls) >= self.n_balls - self.n_launched, self.speed, 0.0)
