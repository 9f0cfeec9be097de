r"""A mass on a spring dragged by Coulomb friction: stick-slip with a closed form.

Siconos' FrictionOscillator example (m = k = 1, friction level alpha = 1, x0 = 12, u0 = 6):

.. math::

    m x'' = -k x + \lambda_T, \quad \lambda_T \in -\alpha \,\mathrm{Sign}(x'),

Sign the set-valued sign ([-1, 1] at 0). While the block slides forwards (x' > 0) it moves on an
arc of an ellipse around the shifted centre x = -delta, delta = alpha / k, backwards around
x = +delta; it comes to rest at a turning point x_n (x' = 0) and sticks there for ever when
|x_n| <= delta (the spring's pull k |x_n| is within the friction level), else it slides back.
So the turning points follow

    x_{n+1} = -sign(x_n) (|x_n| - 2 delta)       while |x_n| > delta,

each half-cycle lasting pi / omega (omega = sqrt(k / m)) and reducing |x_n| by 2 delta, and the
motion ends in the stick position x_N, the first turning point with |x_N| <= delta
(:meth:`FrictionOscillator.turning_points`, :meth:`FrictionOscillator.exact_solution`). The
default data: turning points 13.318, -11.318, 9.318, ..., 1.318, 0.682, at rest from
t = 0.432 + 7 pi = 22.42 on.

**How the friction is expressed.** The project's friction law acts at a contact: a unilateral
normal constraint whose normal impulse bounds the tangential one (docs/friction.md). The
oscillator is therefore written as what it physically is, a block on a rough floor:
q = (x, y), y the height above the floor, the gap g = y >= 0 (tangent row (1, 0)), a normal
load N (default 1) pressing the block onto the floor, F = (-k x, -N), and mu = alpha / N. The
block starts on the floor at rest in y, so the contact stays closed with normal force N for all
time and the friction force is bounded by mu N = alpha: the planar Coulomb law of the contact
is exactly the relay law of the model above, and y = 0 throughout (the normal and tangential
directions are uncoupled, M diagonal). In a Moreau-Jean step the normal impulse is h N and the
tangential one is bounded by mu h N = alpha h: the impulse of a relay multiplier lambda held
over the step, as in Siconos' discretisation (tests/reference_euler_moreau.py). No bilateral
constraint and no special case of the contract is needed; the price is the extra coordinate y.

The linear part of the forces is declared (``stiffness_matrix()``: K = diag(k, 0); no
damping), for the implicit ``MoreauJean(theta, implicit=True)``.
"""

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
PARAMETERS = ("mass", "mu", "tangential_restitution", "stiffness", "normal_load")
MASS, MU, TANGENTIAL_RESTITUTION, STIFFNESS, NORMAL_LOAD = parameter_indices(PARAMETERS)


@kernel
def _oscillator_forces(t, q, v, p, out):
    out[0] = -p[STIFFNESS] * q[0]
    out[1] = -p[NORMAL_LOAD]


@kernel
def _oscillator_stiffness(p, out):
    out[0, 0] = p[STIFFNESS]
    out[0, 1] = 0.0
    out[1, 0] = 0.0
    out[1, 1] = 0.0


class FrictionOscillator(CompiledProblem):
    """A mass on a spring dragged by Coulomb friction of level alpha (see the module).

    2 DOF, q = (x, y): the position along the floor and the height above it; 1 frictional
    contact, g = y >= 0, with mu = alpha / N.

    Parameters
    ----------
    friction_level : float, default 1.0
        alpha >= 0, the largest friction force.
    x0 : float, default 12.0
        Initial position.
    u0 : float, default 6.0
        Initial velocity.
    mass : float, default 1.0
        m > 0.
    stiffness : float, default 1.0
        k > 0, the spring's stiffness (its rest position is x = 0).
    normal_load : float, default 1.0
        N > 0, the force pressing the block onto the floor (it enters the motion only through
        mu N = alpha).
    restitution : float, default 0.0
        e_N in [0, 1] (the block stays on the floor: no normal impact occurs).
    tangential_restitution : float, default 0.0
        e_T in [0, 1].
    t0 : float, default 0.0

    Raises
    ------
    ValueError
        If a parameter is not finite or out of range; the message names it.
    """

    coordinates = (("x", "m"), ("y", "m"))
    parameter_units = dict(
        friction_level="N",
        x0="m",
        u0="m/s",
        mass="kg",
        stiffness="N/m",
        normal_load="N",
        restitution="-",
        tangential_restitution="-",
        t0="s",
    )

    KERNELS = ProblemKernels(
        point_mass_matrix,
        _oscillator_forces,
        floor_gap,
        floor_gap_gradient,
        affine_gap=True,
        constant_mass=True,
        tangent_gradient=floor_tangent_gradient,
        friction=floor_friction,
        stiffness_matrix=_oscillator_stiffness,
    )

    def __init__(
        self,
        friction_level: float = 1.0,
        x0: float = 12.0,
        u0: float = 6.0,
        mass: float = 1.0,
        stiffness: float = 1.0,
        normal_load: float = 1.0,
        restitution: float = 0.0,
        tangential_restitution: float = 0.0,
        t0: float = 0.0,
    ) -> None:
        self.friction_level = checks.finite_scalar(friction_level, "friction_level")
        if self.friction_level < 0.0:
            raise ValueError(f"friction_level must be >= 0, got {friction_level!r}")
        self.mass = checks.positive_scalar(mass, "mass")
        self.stiffness = checks.positive_scalar(stiffness, "stiffness")
        self.normal_load = checks.positive_scalar(normal_load, "normal_load")
        self.restitution = checks.restitution(restitution)
        self.tangential_restitution = checks.restitution(tangential_restitution)
        self.t0 = checks.finite_scalar(t0, "t0")
        self.name = "FrictionOscillator"
        self.n_dof = 2
        self.n_constraints = 1
        self.q0 = np.array([checks.finite_scalar(x0, "x0"), 0.0])
        self.v0 = np.array([checks.finite_scalar(u0, "u0"), 0.0])
        self._finish_init()

    @property
    def mu(self) -> float:
        """The contact's Coulomb coefficient alpha / N."""
        return self.friction_level / self.normal_load

    @property
    def frequency(self) -> float:
        """omega = sqrt(k / m)."""
        return math.sqrt(self.stiffness / self.mass)

    @property
    def stick_band(self) -> float:
        """delta = alpha / k: the block at rest sticks where |x| <= delta."""
        return self.friction_level / self.stiffness

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(
            PARAMETERS,
            mass=self.mass,
            stiffness=self.stiffness,
            normal_load=self.normal_load,
            mu=self.mu,
            tangential_restitution=self.tangential_restitution,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """k x^2 / 2 + N y."""
        q = np.asarray(q, dtype=float)
        x, y = float(q[0]), float(q[1])
        return 0.5 * self.stiffness * x * x + self.normal_load * y

    def phases(self) -> list[tuple[float, float, float, int]]:
        """The motion as phases (start time, x, x', s): slip forwards (s = 1) or backwards
        (s = -1) on an arc of an ellipse around x = -s delta, until x' = 0; the last phase is
        the stick (s = 0), which lasts for ever."""
        delta, omega = self.stick_band, self.frequency
        t, x, u = float(self.t0), float(self.q0[0]), float(self.v0[0])
        phases: list[tuple[float, float, float, int]] = []
        while True:
            if u == 0.0 and abs(x) <= delta:
                phases.append((t, x, 0.0, 0))
                return phases
            s = (1 if u > 0.0 else -1) if u != 0.0 else (-1 if x > 0.0 else 1)
            phases.append((t, x, u, s))
            centre = -s * delta
            beta = math.atan2(u / omega, x - centre)  # in (-pi, pi]; u = 0 reads +0.0
            angle = beta if s > 0 else math.pi + beta
            radius = math.hypot(x - centre, u / omega)
            t, x, u = t + angle / omega, centre + s * radius, 0.0

    def turning_points(self) -> tuple[np.ndarray, np.ndarray]:
        """The times and positions where x' = 0 (the ends of the slip phases); the last is the
        stick position, reached at :attr:`stick_time`."""
        ends = self.phases()[1:]
        return np.array([end[0] for end in ends]), np.array([end[1] for end in ends])

    @property
    def stick_time(self) -> float:
        """When the block comes to rest for good."""
        return self.phases()[-1][0]

    @property
    def stick_position(self) -> float:
        """Where the block comes to rest for good (|x| <= delta)."""
        return self.phases()[-1][1]

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact (q, v) at times ``t`` >= t0, each of shape (len(t), 2) (y = y' = 0)."""
        t = checks.times(t, self.t0)
        delta, omega = self.stick_band, self.frequency
        q = np.zeros((t.size, 2))
        v = np.zeros((t.size, 2))
        for start, x, u, s in self.phases():
            now = t >= start
            tau = omega * (t[now] - start)
            centre = -s * delta
            if s == 0:
                q[now, 0] = x
                v[now, 0] = 0.0
                continue
            q[now, 0] = centre + (x - centre) * np.cos(tau) + (u / omega) * np.sin(tau)
            v[now, 0] = -(x - centre) * omega * np.sin(tau) + u * np.cos(tau)
        return q, v

    def impact_times(self, t_end: float, max_count: int = 10_000) -> np.ndarray:
        """The impact times in [t0, t_end]: none (the block stays on the floor)."""
        checks.positive_int(max_count, "max_count")
        checks.finite_scalar(t_end, "t_end")
        return np.zeros(0)
