"""Newton's cradle: a row of touching equal balls on a line, k of them launched at the row."""

from __future__ import annotations

import numpy as np

from impactbench.core import checks
from impactbench.core.compilation import run_time_parameters
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import CompiledProblem, ProblemKernels

#: The parameters of the kernels, in the order of the vector p.
PARAMETERS = ("mass", "radius")
MASS, RADIUS = parameter_indices(PARAMETERS)


@kernel
def _cradle_mass_matrix(q, p, out):
    n = q.shape[0]
    for i in range(n):
        for j in range(n):
            out[i, j] = 0.0
        out[i, i] = p[MASS]


@kernel
def _cradle_forces(t, q, v, p, out):
    for i in range(q.shape[0]):
        out[i] = 0.0


@kernel
def _cradle_gap(q, p, out):
    for i in range(q.shape[0] - 1):
        out[i] = q[i + 1] - q[i] - 2.0 * p[RADIUS]


@kernel
def _cradle_gap_gradient(q, p, out):
    n = q.shape[0]
    for i in range(n - 1):
        for j in range(n):
            out[i, j] = 0.0
        out[i, i] = -1.0
        out[i, i + 1] = 1.0


# The launched count k is in the initial state only: one compiled code for every k.
@run_time_parameters("n_launched")
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

    **Outcomes of the impact models** (post-impact velocities; every ball of mass m):

    * *Physics* (steel balls, e = 1; waves through the balls separate the contacts): the k
      rightmost balls leave with v0, the others rest, v = (0, ..., 0, v0, ..., v0).
      :meth:`physical_outcome` returns it.
    * *Sequential pairwise impacts* (each approaching contact resolved alone, in turn, with the
      Newton law): for equal masses and e = 1 each binary impact exchanges the velocities of
      its two balls, and the sequence ends at the physical outcome. This is what ``EventDriven``
      does, although it resolves by the LCP below every contact with g_i <= tol that
      *approaches* (G_i v < 0) at an event: at the first event only the closing contact k
      approaches (the touching contacts of each block have G_i v = 0), so the impact is binary;
      it makes the next contact approach at g = 0, which is the next event, and so on. Two
      contacts approach together only where they share no ball (k >= 2: contacts k - 1 and
      k + 1 after the first exchange), so the LCP decouples into binary impacts: k (N - k) of
      them for e = 1, the inversions of a bubble sort of the velocities
      (tests/test_newtons_cradle.py). For e < 1 the same rule gives a cascade of binary impacts in
      rounds along the row (10 impacts for N = 5, k = 1, e = 1/2), computed by
      :meth:`sequential_outcome`.
    * *Velocity-level LCP with Newton's law on every contact at once* (the impact law of the
      Moreau-type time-steppers when all N - 1 constraints are active in the impact step):
      0 <= P _|_ G v^+ + e G v^- >= 0, v^+ = v^- + M^-1 G^T P. Before the impact U^- = G v^-
      has one non-zero entry, U_k^- = -v0. If every P_i > 0 the law reads U^+ = -e U^-, i.e.
      W P = (1 + e) v0 e_k with W = G M^-1 G^T = tridiag(-1, 2, -1) / m of size N - 1, whose
      inverse is (W^-1)_ij = m min(i, j) (N - max(i, j)) / N > 0; so
      P_i = (1 + e) m v0 min(i, k) (N - max(i, k)) / N > 0 for every i, this is the unique
      solution (W is SPD), and v_j^+ = v_j^- + (P_{j-1} - P_j) / m (P_0 = P_N = 0):

      .. math::

          v_j^+ = v_0 \left(1 - (1 + e) \frac{N - k}{N}\right) \ (j \le k), \qquad
          v_j^+ = (1 + e) \frac{k}{N} v_0 \ (j > k),

      the collision of two rigid blocks of masses k m and (N - k) m with restitution e: all
      contacts inside each block stay closed (U_i^+ = 0). N = 3, k = 1, e = 1: (-1/3, 2/3, 2/3)
      v0; N = 5, k = 1: (-3/5, 2/5, 2/5, 2/5, 2/5) v0; N = 5, k = 2: (-1/5, -1/5, 4/5, 4/5,
      4/5) v0. Momentum is kept and, for e = 1, the energy too (each P_i > 0 contact has
      e = 1), yet the launched balls bounce back and N - k balls leave. :meth:`lcp_outcome`
      returns it. Every time-stepper of ``METHODS`` produces it when the touching contacts
      have gaps exactly 0 in floating point (radius, gap, speed and step dyadic, e.g. r = gap
      = 1/8, h = 2^-10: asserted to round-off in tests/test_newtons_cradle.py).
    * *Round-off in the touching gaps* (the position activation of the Moreau-type schemes,
      g_i(q_p) <= 0): with r = 0.1 (not a binary fraction) the "touching" gaps evaluate to
      +-5.6e-17; a contact whose gap is +5.6e-17 is not active in the impact step, which
      splits the row and turns the impact into a sequence of LCPs on the blocks, one step
      apart. N = 5, k = 1, r = gap = 0.1: g(q0) = (0.1, -5.6e-17, +5.6e-17, -5.6e-17).
      Step 1: contacts 1, 2 (and 4, idle) active; the 3-ball LCP above gives (-1/3, 2/3, 2/3,
      0, 0) v0. Step 2: contact 3 closes (g_3(q_p) = 5.6e-17 - theta h (2/3) v0 < 0) with 2
      and 4 active: balls 2-5 at (2/3, 2/3, 0, 0) v0 collide as two blocks of two (N = 4,
      k = 2, e = 1 above): balls 2, 3 stop, balls 4, 5 take 2 v0 / 3. Result (-1/3, 0, 0, 2/3,
      2/3) v0, momentum and energy kept. MoreauJean takes exactly these two steps (at
      h = 1e-3), and CatchingUp and D1MinusLinear end in the same state; MoreauJeanProjection and
      NonsmoothGeneralizedAlpha, which activate a contact that their impulses push out of K
      and solve the step again, give the all-contact LCP outcome (tests/test_newtons_cradle.py,
      h = 1e-3 and 3e-3). The split follows the round-off of the positions, which depends on
      h; with k = 2 the launched balls' positions q + n h v0 carry round-off too (the
      ``cradle`` study's tables show the outcome of each method and step).
      ``PaoliSchatzman`` is immune: its impact step projects the position predictor onto K
      with all constraints at once, and a gap of 5.6e-17 is overrun by the neighbour's push,
      so it gives the all-contact LCP outcome for r = 0.1 too. None of the time-stepping
      answers is the cradle's: the LCP outcome is discontinuous in the gaps at 0, and the
      floating-point sign of a zero gap picks the branch.

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

    coordinates = (("q_{i}", "m"),)
    parameter_units = dict(
        n_balls="-",
        n_launched="-",
        mass="kg",
        radius="m",
        speed="m/s",
        gap="m",
        restitution="-",
        t0="s",
    )

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
        n = checks.positive_int(n_balls, "n_balls")
        if n < 2:
            raise ValueError(f"n_balls must be >= 2, got {n_balls!r}")
        k = checks.positive_int(n_launched, "n_launched")
        if k >= n:
            raise ValueError(f"n_launched must lie in 1..n_balls - 1 = {n - 1}, got {n_launched!r}")
        self.n_balls = n
        self.n_launched = k
        self.mass = checks.positive_scalar(mass, "mass")
        self.radius = checks.positive_scalar(radius, "radius")
        self.speed = checks.positive_scalar(speed, "speed")
        self.initial_gap = checks.positive_scalar(gap, "gap")
        self.restitution = checks.restitution(restitution)
        self.t0 = checks.finite_scalar(t0, "t0")
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
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(PARAMETERS, mass=self.mass, radius=self.radius)

    def potential_energy(self, q: np.ndarray) -> float:
        """Zero: no force acts along the line."""
        return 0.0

    def lcp_outcome(self) -> np.ndarray:
        """Velocities after the one-shot LCP on all N - 1 contacts with Newton's law, shape (N,).

        v0 (1 - (1 + e) (N - k) / N) for the k launched balls, (1 + e) k v0 / N for the others
        (the class docstring derives it): the collision of two rigid blocks.
        """
        n, k, e = self.n_balls, self.n_launched, self.restitution
        launched = self.speed * (1.0 - (1.0 + e) * (n - k) / n)
        return np.where(np.arange(n) < k, launched, (1.0 + e) * k * self.speed / n)

    def sequential_outcome(self) -> np.ndarray:
        """Velocities after sequential pairwise impacts with Newton's law, shape (N,).

        In rounds: every contact i that approaches (v_i - v_{i+1} > 4 eps v0; for e = 0 the
        cascade never ends exactly, it converges geometrically to the common velocity and is
        cut at round-off) receives the binary impact of two equal balls, v_i, v_{i+1} <-
        ((1 - e) v_i + (1 + e) v_{i+1}) / 2, ((1 + e) v_i + (1 - e) v_{i+1}) / 2, until none
        approaches. Contacts that approach
        in the same round and share no ball commute, so the order inside a round is irrelevant
        for them; two adjacent ones (not met in the tests' configurations) are taken left to
        right. For e = 1 this is :meth:`physical_outcome`; for e < 1 a cascade along the row
        (the rule of ``EventDriven``, see the class docstring) whose result depends on the
        order of the impacts: taking only the leftmost approaching pair at a time gives (0.3188,
        0.3496, 0.3767, 0.4702, 0.4846) v0 for N = 5, k = 2, e = 1/2, rounds give (0.3210,
        0.3518, 0.3779, 0.4482, 0.5010) v0.

        Raises
        ------
        RuntimeError
            If the cascade has not ended after ``100 N^2`` rounds.
        """
        v = self.v0.copy()
        e = self.restitution
        threshold = 4.0 * np.finfo(float).eps * self.speed
        for _ in range(100 * self.n_balls**2):
            approaching = np.flatnonzero(v[:-1] - v[1:] > threshold)
            if approaching.size == 0:
                return v
            for i in approaching:
                if v[i] - v[i + 1] > threshold:  # an earlier impact may have settled it
                    left, right = v[i], v[i + 1]
                    v[i] = 0.5 * ((1.0 - e) * left + (1.0 + e) * right)
                    v[i + 1] = 0.5 * ((1.0 + e) * left + (1.0 - e) * right)
        raise RuntimeError(f"sequential impacts did not end for {self.n_balls} balls, e = {e}")

    def physical_outcome(self) -> np.ndarray:
        """Velocities after the impact of a real cradle with e = 1, shape (N,).

        The k rightmost balls leave with v0, the others rest (also the outcome of sequential
        pairwise impacts with e = 1).
        """
        return np.where(np.arange(self.n_balls) >= self.n_balls - self.n_launched, self.speed, 0.0)
