"""A rigid stick falling at 45 degrees onto a frictional floor (Siconos' ImpactingStick)."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import CompiledProblem, ProblemKernels

from .floor_contact import floor_friction, rigid_body_mass_matrix, weight

#: The parameters of the kernels, in the order of the vector p.
PARAMETERS = ("mass", "mu", "tangential_restitution", "inertia", "gravity", "length")
MASS, MU, TANGENTIAL_RESTITUTION, INERTIA, GRAVITY, LENGTH = parameter_indices(PARAMETERS)


@kernel
def _stick_gap(q, p, out):
    out[0] = q[1] - 0.5 * p[LENGTH] * math.cos(q[2])


@kernel
def _stick_gap_gradient(q, p, out):
    out[0, 0] = 0.0
    out[0, 1] = 1.0
    out[0, 2] = 0.5 * p[LENGTH] * math.sin(q[2])


@kernel
def _stick_tangent_gradient(q, p, out):
    out[0, 0] = 1.0
    out[0, 1] = 0.0
    out[0, 2] = 0.5 * p[LENGTH] * math.cos(q[2])


class ImpactingStick(CompiledProblem):
    r"""A rigid stick (mass m, length l, J = m l^2 / 12) falling onto a floor with friction.

    q = (x, y, theta): the centre and the angle from the vertical; the lower end, at
    (x + (l/2) sin theta, y - (l/2) cos theta), is the contact:

    .. math::

        g = y - \tfrac{l}{2}\cos\theta, \quad W_N = (0, 1, \tfrac{l}{2}\sin\theta), \quad
        W_T = (1, 0, \tfrac{l}{2}\cos\theta).

    Defaults: Siconos' ImpactingStick example (l = m = 1, g = 10, e_N = 1, mu = 0.01,
    theta0 = pi/4, the end 0.01 above the floor, v0 = (-0.5, 0.1, 0.1); Siconos runs
    MoreauJeanOSI theta = 1/2, h = 1e-4, to T = 0.2).

    Closed form up to the first impact: free flight, the impact at the root t* of the gap
    (:meth:`first_impact`), then the Newton-Coulomb law at that one contact
    (:meth:`impact`): sticking, (P_N, P_T) = -A^-1 ((1 + e_N) U_N, U_T) with the Delassus
    matrix A of (W_N, W_T), if P_N >= 0 and abs(P_T) <= mu P_N; otherwise sliding in the
    direction s of the end's post-impact tangential velocity, P_T = -s mu P_N,
    P_N = -(1 + e_N) U_N / (A_NN - s mu A_NT). MoreauJean and CatchingUp apply that law at
    their step's q_p (within O(h) of the contact configuration), so the post-impact velocity is
    the closed form's to O(h) (tests/test_impacting_stick.py); with Siconos' mu = 0.01 the end
    slides through the impact, with mu = 1 it sticks.

    Parameters
    ----------
    angle : float, default pi/4
        theta0 in (-pi/2, pi/2).
    height : float, default 0.01
        Initial height of the lower end (>= 0).
    v0 : sequence of 3 floats, default (-0.5, 0.1, 0.1)
    mu : float, default 0.01
    restitution : float, default 1.0
    tangential_restitution : float, default 0.0
    mass, length, gravity : float, default 1.0, 1.0, 10.0
    t0 : float, default 0.0

    Raises
    ------
    ValueError
        If a parameter is not finite or out of range; the message names it.
    """

    coordinates = (("x", "m"), ("y", "m"), ("theta", "rad"))
    parameter_units = dict(
        angle="rad",
        height="m",
        v0="m/s, m/s, rad/s",
        mu="-",
        restitution="-",
        tangential_restitution="-",
        mass="kg",
        length="m",
        gravity="m/s^2",
        t0="s",
    )

    KERNELS = ProblemKernels(
        rigid_body_mass_matrix,
        weight,
        _stick_gap,
        _stick_gap_gradient,
        constant_mass=True,
        tangent_gradient=_stick_tangent_gradient,
        friction=floor_friction,
    )

    def __init__(
        self,
        angle: float = math.pi / 4.0,
        height: float = 0.01,
        v0: tuple[float, float, float] = (-0.5, 0.1, 0.1),
        mu: float = 0.01,
        restitution: float = 1.0,
        tangential_restitution: float = 0.0,
        mass: float = 1.0,
        length: float = 1.0,
        gravity: float = 10.0,
        t0: float = 0.0,
    ) -> None:
        self.angle = checks.finite_scalar(angle, "angle")
        if not abs(self.angle) < 0.5 * math.pi:
            raise ValueError(f"angle must lie in (-pi/2, pi/2), got {angle!r}")
        self.height = checks.finite_scalar(height, "height")
        if self.height < 0.0:
            raise ValueError(f"height must be >= 0, got {height!r}")
        self.mu = checks.finite_scalar(mu, "mu")
        if self.mu < 0.0:
            raise ValueError(f"mu must be >= 0, got {mu!r}")
        self.restitution = checks.restitution(restitution)
        self.tangential_restitution = checks.restitution(tangential_restitution)
        self.mass = checks.positive_scalar(mass, "mass")
        self.length = checks.positive_scalar(length, "length")
        self.gravity = checks.positive_scalar(gravity, "gravity")
        self.t0 = checks.finite_scalar(t0, "t0")
        self.name = "ImpactingStick"
        self.n_dof = 3
        self.n_constraints = 1
        half = 0.5 * self.length
        self.q0 = np.array(
            [half * math.sin(self.angle), half * math.cos(self.angle) + self.height, self.angle]
        )
        self.v0 = checks.vector(v0, "v0", 3)
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(
            PARAMETERS,
            mass=self.mass,
            inertia=self.mass * self.length * self.length / 12.0,
            length=self.length,
            gravity=self.gravity,
            mu=self.mu,
            tangential_restitution=self.tangential_restitution,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """m g y."""
        return self.mass * self.gravity * float(np.asarray(q, dtype=float)[1])

    def free_flight(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(q, v) at time ``t`` of the free flight from (q0, v0)."""
        s = checks.finite_scalar(t, "t") - self.t0
        q = self.q0 + self.v0 * s
        q[1] -= 0.5 * self.gravity * s * s
        v = self.v0.copy()
        v[1] -= self.gravity * s
        return q, v

    def first_impact(self) -> tuple[float, np.ndarray, np.ndarray]:
        """(t*, q(t*), v(t*-)): the first zero of the gap in free flight (brentq to 1e-15)."""
        half = 0.5 * self.length

        def gap(t: float) -> float:
            q, _ = self.free_flight(t)
            return q[1] - half * math.cos(q[2])

        end = self.t0 + 1e-3
        while gap(end) > 0.0:
            end += 1e-3
            if end - self.t0 > 1e3:
                raise ValueError("the stick does not reach the floor")
        start = end - 1e-3 if end - 1e-3 > self.t0 else self.t0
        t_star = brentq(gap, start, end, xtol=1e-15, rtol=4 * np.finfo(float).eps)
        q, v = self.free_flight(t_star)
        return t_star, q, v

    def impact(self, q: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, str]:
        """The post-impact velocity of the Newton-Coulomb law at the end in contact at ``q``
        (e_N, e_T = 0, mu of the problem), and "stick" or "slip" (class docstring)."""
        q = checks.vector(q, "q", 3)
        v = checks.vector(v, "v", 3)
        if self.tangential_restitution != 0.0:
            raise ValueError("impact is the closed form for tangential_restitution = 0")
        half = 0.5 * self.length
        inverse_mass = np.array([1.0, 1.0, 12.0 / self.length**2]) / self.mass
        wn = np.array([0.0, 1.0, half * math.sin(q[2])])
        wt = np.array([1.0, 0.0, half * math.cos(q[2])])
        ann, ant, att = (wn * inverse_mass) @ wn, (wn * inverse_mass) @ wt, (wt * inverse_mass) @ wt
        bn, bt = (1.0 + self.restitution) * (wn @ v), wt @ v
        det = ann * att - ant * ant
        pn = -(att * bn - ant * bt) / det
        pt = -(ann * bt - ant * bn) / det
        state = "stick"
        if pn < 0.0 or abs(pt) > self.mu * pn:
            state = "slip"
            for s in (1.0, -1.0):
                pn = -bn / (ann - s * self.mu * ant)
                pt = -s * self.mu * pn
                if pn >= 0.0 and s * (bt + ant * pn + att * pt) >= 0.0:
                    break
        return v + inverse_mass * (wn * pn + wt * pt), state
