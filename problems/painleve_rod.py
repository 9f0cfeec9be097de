"""Painleve's rod: a rod sliding on a rough floor with mu above the critical 4/3."""

from __future__ import annotations

import math

import numpy as np
from scipy.integrate import solve_ivp

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import CompiledProblem, ProblemKernels

from .floor_contact import floor_friction, rigid_body_mass_matrix, weight

#: The parameters of the kernels, in the order of the vector p.
PARAMETERS = ("mass", "mu", "tangential_restitution", "inertia", "gravity", "half_length")
MASS, MU, TANGENTIAL_RESTITUTION, INERTIA, GRAVITY, HALF_LENGTH = parameter_indices(PARAMETERS)


@kernel
def _rod_gap(q, p, out):
    out[0] = q[1] - p[HALF_LENGTH] * math.sin(q[2])


@kernel
def _rod_gap_gradient(q, p, out):
    out[0, 0] = 0.0
    out[0, 1] = 1.0
    out[0, 2] = -p[HALF_LENGTH] * math.cos(q[2])


@kernel
def _rod_tangent_gradient(q, p, out):
    out[0, 0] = 1.0
    out[0, 1] = 0.0
    out[0, 2] = p[HALF_LENGTH] * math.sin(q[2])


class PainleveRod(CompiledProblem):
    r"""A uniform rod (mass m, half-length l, J = m l^2 / 3) sliding on a rough floor.

    q = (x, y, theta): the centre and the angle from the floor; the lower end A, at
    (x - l cos theta, y - l sin theta), slides on the floor with Coulomb friction mu (e_N = 0):

    .. math::

        g = y - l\sin\theta, \quad W_N = (0, 1, -l\cos\theta), \quad
        W_T = (1, 0, l\sin\theta).

    Sliding with A moving away from the centre (U_T < 0, friction +mu lambda_N), the contact
    force is lambda_N = m (g - l sin(theta) theta'^2) / D(theta),
    D = 1 + 3 cos(theta) (cos(theta) - mu sin(theta)), and theta'' = 3 lambda_N
    (mu sin(theta) - cos(theta)) / (m l). For mu > 4/3 (:attr:`critical_mu`), D < 0 for
    tan(theta) between the roots of t^2 - 3 mu t + 4 (:meth:`painleve_angles`): there the
    sliding problem at acceleration level has no solution (N = g - l sin theta theta'^2 > 0)
    or two (N < 0): Painleve's paradox.

    * From the consistent side (the default: theta0 = 40 degrees, U_T = -10, mu = 1.5), the
      sliding phase (:meth:`sliding_phase`, integrated to 1e-12) reaches the singular point
      where N and D vanish together, at t_s = 0.10826 s, with lambda_N bounded (Genot and
      Brogliato 1999): no blow-up of the force, no impact without collision. MoreauJean and
      CatchingUp follow the sliding phase, show near t_s a jump of U_T that vanishes with h
      (0.29 at h = 1e-4, 0.064 at 1e-5), and the rod then leaves the floor, at a time not
      converged in h (tests/test_painleve_rod.py).
    * Started inside the inconsistent region (D < 0, N > 0: theta0 = 55 degrees, U_T = -1),
      the first step of either scheme is a tangential impact without collision: an impulse
      independent of h (the velocity-level law with U_N = 0 and U_T != 0,
      :meth:`impact_without_collision`: the end sticks, U_T+ = U_N+ = 0).

    Parameters
    ----------
    angle : float, default 40 degrees (radians)
        theta0 in (0, pi/2).
    slip : float, default -10.0
        The end's initial tangential velocity U_T (< 0: away from the centre; the rod does
        not rotate at t0).
    mu : float, default 1.5
    restitution : float, default 0.0
    mass, half_length, gravity : float, default 1.0, 0.5, 9.81
    t0 : float, default 0.0

    Raises
    ------
    ValueError
        If a parameter is not finite or out of range; the message names it.
    """

    coordinates = (("x", "m"), ("y", "m"), ("theta", "rad"))
    parameter_units = dict(
        angle="rad",
        slip="m/s",
        mu="-",
        restitution="-",
        mass="kg",
        half_length="m",
        gravity="m/s^2",
        t0="s",
    )

    KERNELS = ProblemKernels(
        rigid_body_mass_matrix,
        weight,
        _rod_gap,
        _rod_gap_gradient,
        constant_mass=True,
        tangent_gradient=_rod_tangent_gradient,
        friction=floor_friction,
    )

    def __init__(
        self,
        angle: float = math.radians(40.0),
        slip: float = -10.0,
        mu: float = 1.5,
        restitution: float = 0.0,
        mass: float = 1.0,
        half_length: float = 0.5,
        gravity: float = 9.81,
        t0: float = 0.0,
    ) -> None:
        self.angle = checks.finite_scalar(angle, "angle")
        if not 0.0 < self.angle < 0.5 * math.pi:
            raise ValueError(f"angle must lie in (0, pi/2), got {angle!r}")
        self.slip = checks.finite_scalar(slip, "slip")
        self.mu = checks.finite_scalar(mu, "mu")
        if self.mu < 0.0:
            raise ValueError(f"mu must be >= 0, got {mu!r}")
        self.restitution = checks.restitution(restitution)
        self.mass = checks.positive_scalar(mass, "mass")
        self.half_length = checks.positive_scalar(half_length, "half_length")
        self.gravity = checks.positive_scalar(gravity, "gravity")
        self.t0 = checks.finite_scalar(t0, "t0")
        self.name = "PainleveRod"
        self.n_dof = 3
        self.n_constraints = 1
        self.q0 = np.array([0.0, self.half_length * math.sin(self.angle), self.angle])
        self.v0 = np.array([self.slip, 0.0, 0.0])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(
            PARAMETERS,
            mass=self.mass,
            inertia=self.mass * self.half_length * self.half_length / 3.0,
            half_length=self.half_length,
            gravity=self.gravity,
            mu=self.mu,
            tangential_restitution=0.0,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """m g y."""
        return self.mass * self.gravity * float(np.asarray(q, dtype=float)[1])

    #: The least mu with a Painleve region (the roots of t^2 - 3 mu t + 4 are real).
    critical_mu = 4.0 / 3.0

    def painleve_angles(self) -> tuple[float, float] | None:
        """The angles between which D(theta) < 0 (None for mu <= 4/3)."""
        discriminant = 9.0 * self.mu * self.mu - 16.0
        if discriminant <= 0.0:
            return None
        root = math.sqrt(discriminant)
        return math.atan(0.5 * (3.0 * self.mu - root)), math.atan(0.5 * (3.0 * self.mu + root))

    def denominator(self, theta: float) -> float:
        """D(theta) = 1 + 3 cos(theta) (cos(theta) - mu sin(theta))."""
        return 1.0 + 3.0 * math.cos(theta) * (math.cos(theta) - self.mu * math.sin(theta))

    def sliding_phase(self, t_end: float) -> tuple[float, np.ndarray, str]:
        """Integrate the sliding phase (end on the floor, U_T < 0) from (q0, v0) by solve_ivp
        (rtol = atol = 1e-12) until ``t_end`` or the first of: the singular point (the
        numerator N = g - l sin(theta) theta'^2 vanishes; D vanishes with it), the end
        stopping (U_T = 0), D = 0. Returns (time, state (x, theta, x', theta'), which)."""
        m, l, g, mu = self.mass, self.half_length, self.gravity, self.mu

        def rhs(t, s):
            force = m * (g - l * math.sin(s[1]) * s[3] ** 2) / self.denominator(s[1])
            return [
                s[2],
                s[3],
                mu * force / m,
                3.0 * force * (mu * math.sin(s[1]) - math.cos(s[1])) / (m * l),
            ]

        def numerator(t, s):
            return g - l * math.sin(s[1]) * s[3] ** 2

        def stop(t, s):
            return s[2] + l * math.sin(s[1]) * s[3]

        def singular(t, s):
            return self.denominator(s[1])

        events = [numerator, stop, singular]
        for event in events:
            event.terminal = True
        start = [float(self.q0[0]), self.angle, float(self.v0[0]), 0.0]
        solution = solve_ivp(rhs, (self.t0, t_end), start, events=events, rtol=1e-12, atol=1e-12)
        names = ("singular point", "stop", "D = 0")
        which = "t_end"
        for name, times in zip(names, solution.t_events, strict=True):
            if len(times):
                which = name
        return float(solution.t[-1]), solution.y[:, -1], which

    def impact_without_collision(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """The velocity after the Newton-Coulomb law (e_N = 0) at the end in contact at ``q``
        when it slides with U_N = 0: sticking, v+ = v - M^-1 W^T A^-1 W v, if the impulse lies
        in the friction cone (it does for the default inconsistent start); else ValueError."""
        q = checks.vector(q, "q", 3)
        v = checks.vector(v, "v", 3)
        l = self.half_length
        inverse_mass = np.array([1.0, 1.0, 3.0 / (l * l)]) / self.mass
        rows = np.array([[0.0, 1.0, -l * math.cos(q[2])], [1.0, 0.0, l * math.sin(q[2])]])
        delassus = (rows * inverse_mass) @ rows.T
        impulse = -np.linalg.solve(delassus, rows @ v)
        if impulse[0] < 0.0 or abs(impulse[1]) > self.mu * impulse[0]:
            raise ValueError(f"the sticking impulse {impulse.tolist()} leaves the friction cone")
        return v + inverse_mass * (rows.T @ impulse)
