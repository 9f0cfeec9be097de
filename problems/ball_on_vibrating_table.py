r"""A ball bouncing on a sinusoidally vibrating table: a moving obstacle (rheonomic constraint).

The problem class of the closed forms in :mod:`impactbench.problems.vibrating_table` (the exact
impact map, the period-n orbits with their Jacobian and thresholds, sticking and release), to
which its closed-form methods delegate.
"""

from __future__ import annotations

import math

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import ProblemKernels, RheonomicCompiledProblem

from .bouncing_ball import MAX_IMPACT_COUNT, ball_forces, ball_mass_matrix
from .moving_stop import flight_index
from .vibrating_table import (
    TWO_PI,
    NextImpact,
    PeriodOrbit,
    VibratingTable,
    birth_acceleration,
    period_doubling_acceleration,
)

#: The parameters of the kernels, in the order of the vector p (starting with those of the
#: bouncing ball's mass and forces kernels, shared).
PARAMETERS = ("gravity", "mass", "amplitude", "angular_frequency")
GRAVITY, MASS, AMPLITUDE, ANGULAR_FREQUENCY = parameter_indices(PARAMETERS)


@kernel
def _table_gap(t, q, p, out):
    # g(t, x) = x - s(t), s(t) = A sin(omega t)
    out[0] = q[0] - p[AMPLITUDE] * math.sin(p[ANGULAR_FREQUENCY] * t)


@kernel
def _table_gap_gradient(t, q, p, out):
    out[0, 0] = 1.0


@kernel
def _table_gap_rate(t, q, p, out):
    # r = dg/dt = -s'(t) = -A omega cos(omega t)
    w = p[ANGULAR_FREQUENCY]
    out[0] = -p[AMPLITUDE] * w * math.cos(w * t)


@kernel
def _table_gap_drift(t, q, v, p, out):
    # c = d2g/dt2 + 2 (dG/dt) v = -s''(t) = A omega^2 sin(omega t) (G = 1 does not move)
    w = p[ANGULAR_FREQUENCY]
    out[0] = p[AMPLITUDE] * w * w * math.sin(w * t)


class BallOnVibratingTable(RheonomicCompiledProblem):
    r"""A ball of mass m under gravity on a table at s(t) = A sin(omega t) (1 DOF, 1 constraint).

    .. math::

        m x'' = -m g_0, \qquad g(t, x) = x - A\sin(\omega t) \ge 0, \qquad
        x'^+ - s'(t) = -e\,(x'^- - s'(t)) \ \text{at}\ x = s(t),

    with r = dg/dt = -A omega cos(omega t), c = -s''(t) = A omega^2 sin(omega t) and G = [1] (an
    affine gap whose gradient does not depend on t). The table is infinitely heavy; Newton's
    law acts on the relative velocity. A ball at rest on the table is pressed on it with the
    force m (g0 + s''(t)) and leaves it when the table's acceleration falls below -g0,
    at sin(omega t) = 1/Gamma, Gamma = A omega^2 / g0 (:meth:`release_phase`); for Gamma <= 1 it
    never leaves.

    **Closed forms** (:mod:`impactbench.problems.vibrating_table`): the exact impact map
    (:meth:`impact_map`), the period-n orbits (one impact every n table periods,
    cos(phi*) = pi n (1 - e) / (Gamma (1 + e)), absolute take-off velocity g0 pi n / omega;
    :meth:`period_orbit`, :meth:`period_orbit_state`), their Jacobian and multipliers, the
    birth (saddle-node) and period-doubling thresholds of Gamma
    (:meth:`birth_acceleration`, :meth:`period_doubling_acceleration`).

    **Exact solution**: without ``q0`` the ball starts on the period-n orbit of the phase
    phi* in (0, pi/2] (n = ``orbit_periods``), at its apex, half the flight after a take-off
    (t0 = (phi* + pi n)/omega, x0 = A sin(phi*) + V^2/(2 g0), v0 = 0, V = g0 pi n / omega);
    ``exact_solution`` is then the periodic motion and ``impact_times`` its impacts
    (phi* + 2 pi n j)/omega. That start requires the orbit to exist (Gamma >= Gamma_sn) and to
    be an orbit of the exact map (the ball's flight clears the table); it is a stable orbit
    for Gamma < Gamma_pd. With a given ``q0`` there is no exact solution.

    Parameters
    ----------
    amplitude : float, default 0.03
        A > 0 (m).
    angular_frequency : float, default 20.0
        omega > 0 (rad/s); with the defaults Gamma = 1.2232 (stable period-1 orbit for e = 0.5:
        Gamma_sn = 1.0472, Gamma_pd = 1.5268).
    restitution : float, default 0.5
        e in [0, 1) (the closed forms need e < 1).
    gravity : float, default 9.81
        g0 > 0 (m/s^2).
    q0 : float or None, default None
        Initial height (>= s(t0)); None: the apex of the period-n orbit.
    v0 : float or None, default None
        Initial velocity; None: 0 (given only with ``q0``).
    mass : float, default 1.0
        m > 0 (scales M, F and the contact force, not the motion).
    t0 : float or None, default None
        Initial time; None: 0 with a given ``q0``, the orbit's apex time without.
    orbit_periods : int, default 1
        n, the table periods between impacts of the orbit started on without ``q0``.

    Raises
    ------
    ValueError
        For a bad parameter, naming it; without ``q0``, when the period-n orbit does not exist
        or is not an orbit of the exact map.

    References
    ----------
    P. J. Holmes, "The dynamics of repeated impacts with a sinusoidally vibrating table",
    J. Sound Vib. 84 (1982) 173-189; J. M. Luck, A. Mehta, "Bouncing ball with a finite
    restitution: chattering, locking, and chaos", Phys. Rev. E 48 (1993) 3988-3997.
    """

    coordinates = (("x", "m"),)
    parameter_units = dict(
        amplitude="m",
        angular_frequency="rad/s",
        restitution="-",
        gravity="m/s^2",
        q0="m",
        v0="m/s",
        mass="kg",
        t0="s",
        orbit_periods="-",
    )

    KERNELS = ProblemKernels(
        ball_mass_matrix,
        ball_forces,
        _table_gap,
        _table_gap_gradient,
        affine_gap=True,
        constant_mass=True,
        rheonomic=True,
        gap_rate=_table_gap_rate,
        gap_drift=_table_gap_drift,
    )

    def __init__(
        self,
        amplitude: float = 0.03,
        angular_frequency: float = 20.0,
        restitution: float = 0.5,
        gravity: float = 9.81,
        q0: float | None = None,
        v0: float | None = None,
        mass: float = 1.0,
        t0: float | None = None,
        orbit_periods: int = 1,
    ) -> None:
        self.amplitude = checks.positive_scalar(amplitude, "amplitude")
        self.angular_frequency = checks.positive_scalar(angular_frequency, "angular_frequency")
        self.restitution = checks.restitution(restitution)
        if self.restitution == 1.0:
            raise ValueError(
                "restitution must be < 1 (the closed forms of the vibrating table), got 1.0"
            )
        self.gravity = checks.positive_scalar(gravity, "gravity")
        self.mass = checks.positive_scalar(mass, "mass")
        self.orbit_periods = checks.positive_int(orbit_periods, "orbit_periods")
        #: The closed forms (:class:`impactbench.problems.vibrating_table.VibratingTable`).
        self.table = VibratingTable(
            self.amplitude, self.angular_frequency, self.restitution, self.gravity
        )
        self.name = "BallOnVibratingTable"
        self.n_dof = 1
        self.n_constraints = 1
        self._orbit: PeriodOrbit | None = None
        if q0 is None:
            if v0 is not None or t0 is not None:
                given = "v0" if v0 is not None else "t0"
                raise ValueError(
                    f"{given} is given only with q0 (without q0 the ball starts at the apex of "
                    f"the period-n orbit), got {given}={v0 if v0 is not None else t0!r}"
                )
            n = self.orbit_periods
            try:
                clears = self.table.period_orbit_clears_table(n)
            except ValueError as error:
                raise ValueError(f"orbit_periods: {error}; give q0") from None
            if not clears:
                raise ValueError(
                    f"orbit_periods: the period-{n} orbit (phase "
                    f"{self.table.period_orbit(n).phase:.6g}) is not an orbit of the exact "
                    f"impact map at Gamma = {self.acceleration_ratio:.6g} (the ball's flight "
                    "meets the table, or for e = 0 the ball does not leave it at once); give q0"
                )
            self._orbit = self.table.period_orbit(n)
            start, x, v = self.period_orbit_state(n, elapsed=math.pi * n / self.angular_frequency)
            self.t0, self.q0, self.v0 = start, np.array([x]), np.array([v])
        else:
            self.t0 = 0.0 if t0 is None else checks.finite_scalar(t0, "t0")
            x = checks.finite_scalar(q0, "q0")
            table = float(self.table_position(self.t0))
            if x < table:
                raise ValueError(
                    f"q0 must be >= s(t0) = {table!r} (admissible: above the table), got {q0!r}"
                )
            self.q0 = np.array([x])
            self.v0 = np.array([0.0 if v0 is None else checks.finite_scalar(v0, "v0")])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(
            PARAMETERS,
            gravity=self.gravity,
            mass=self.mass,
            amplitude=self.amplitude,
            angular_frequency=self.angular_frequency,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """m g0 x (the table's work is not a potential)."""
        return self.mass * self.gravity * float(np.asarray(q, dtype=float).reshape(-1)[0])

    def potential_energies(self, q: np.ndarray) -> np.ndarray:
        """m g0 x at each sample, q (N, 1) -> (N,)."""
        return self.mass * self.gravity * np.atleast_2d(np.asarray(q, dtype=float))[:, 0]

    # ---------------------------------------------------------------- the table's motion
    @property
    def acceleration_ratio(self) -> float:
        r""":math:`\Gamma = A\omega^2/g_0`, the table's peak acceleration over gravity."""
        return self.table.acceleration_ratio

    def table_position(self, t: float | np.ndarray) -> float | np.ndarray:
        """s(t) = A sin(omega t) (m), the shape of ``t``."""
        return self.table.table_position(self.angular_frequency * np.asarray(t, dtype=float))

    def table_velocity(self, t: float | np.ndarray) -> float | np.ndarray:
        """s'(t) = A omega cos(omega t) (m/s), the shape of ``t``."""
        return self.table.table_velocity(self.angular_frequency * np.asarray(t, dtype=float))

    def table_acceleration(self, t: float | np.ndarray) -> float | np.ndarray:
        """s''(t) = -A omega^2 sin(omega t) (m/s^2), the shape of ``t``."""
        return self.table.table_acceleration(self.angular_frequency * np.asarray(t, dtype=float))

    # ---------------------------------------------------------------- closed forms
    def birth_acceleration(self, n: int) -> float:
        r"""Gamma_sn = pi n (1 - e)/(1 + e), where the period-n orbits are born
        (:func:`impactbench.problems.vibrating_table.birth_acceleration`)."""
        return birth_acceleration(n, self.restitution)

    def period_doubling_acceleration(self, n: int) -> float:
        r"""Gamma_pd of the period-n orbit of the exact map
        (:func:`impactbench.problems.vibrating_table.period_doubling_acceleration`)."""
        return period_doubling_acceleration(n, self.restitution)

    def period_orbit(self, n: int, stable_branch: bool = True) -> PeriodOrbit:
        """The period-n orbit (:meth:`VibratingTable.period_orbit`): impact phase, relative
        take-off and approach velocities, the ball's take-off velocity."""
        return self.table.period_orbit(n, stable_branch)

    def period_orbit_jacobian(self, n: int, stable_branch: bool = True) -> np.ndarray:
        """Jacobian of the exact impact map at the period-n orbit, in (phase, relative take-off
        velocity) (:meth:`VibratingTable.period_orbit_jacobian`)."""
        return self.table.period_orbit_jacobian(n, stable_branch)

    def period_orbit_multipliers(self, n: int, stable_branch: bool = True) -> np.ndarray:
        """The multipliers of the period-n orbit, the larger first
        (:meth:`VibratingTable.period_orbit_multipliers`)."""
        return self.table.period_orbit_multipliers(n, stable_branch)

    def period_orbit_state(
        self, n: int, stable_branch: bool = True, elapsed: float = 0.0
    ) -> tuple[float, float, float]:
        r"""The state (t, x, v) on the period-n orbit ``elapsed`` after its take-off at
        t_i = phi*/omega.

        The ball takes off from x_i = A sin(phi*) with V = g0 pi n / omega and flies
        x = x_i + V tau - g0 tau^2 / 2, v = V - g0 tau for tau in [0, 2 pi n / omega] (landing
        at x_i with -V).

        Parameters
        ----------
        n : int
            Table periods between impacts, >= 1.
        stable_branch : bool, default True
            Which root of the phase equation (:meth:`period_orbit`).
        elapsed : float, default 0.0
            tau in [0, 2 pi n / omega] (s); 0 is the take-off (v = V, just after the impact).

        Returns
        -------
        (float, float, float)
            t_i + tau, x and v.
        """
        orbit = self.period_orbit(n, stable_branch)
        flight = TWO_PI * n / self.angular_frequency
        tau = checks.finite_scalar(elapsed, "elapsed")
        if not 0.0 <= tau <= flight:
            raise ValueError(f"elapsed must lie in [0, {flight!r}] (the flight), got {elapsed!r}")
        x, v = self._orbit_flight(orbit, np.array([tau]))
        return orbit.phase / self.angular_frequency + tau, float(x[0]), float(v[0])

    def _orbit_flight(self, orbit: PeriodOrbit, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """x = A sin(phi*) + V tau - g0 tau^2 / 2 and v = V - g0 tau, tau after a take-off."""
        start = float(self.table_position(orbit.phase / self.angular_frequency))
        speed = orbit.ball_velocity
        return start + tau * (speed - 0.5 * self.gravity * tau), speed - self.gravity * tau

    def impact_map(self, phase: float, relative_velocity: float) -> NextImpact | None:
        """The exact impact map from a take-off (:meth:`VibratingTable.impact_map`)."""
        return self.table.impact_map(phase, relative_velocity)

    def release_phase(self) -> float:
        r"""phi_d = arcsin(1/Gamma) in (0, pi/2): a ball at rest on the table leaves it when
        omega t = phi_d mod 2 pi (the table's acceleration falls below -g0); ValueError
        naming ``amplitude`` when Gamma <= 1 (it never leaves)."""
        return self.table.take_off_phase_from_rest()

    def release_time(self, t: float) -> float:
        """The time at which a ball at rest on the table at time ``t`` leaves it (>= t; inf
        when Gamma <= 1) (:meth:`VibratingTable.departure_phase_from_rest`)."""
        t = checks.finite_scalar(t, "t")
        return self.table.departure_phase_from_rest(self.angular_frequency * t) / (
            self.angular_frequency
        )

    def contact_force(self, t: float | np.ndarray) -> float | np.ndarray:
        """m (g0 + s''(t)): the force pressing a ball at rest on the table (N)."""
        return self.mass * (self.gravity + self.table_acceleration(t))

    # ---------------------------------------------------------------- the exact solution
    @property
    def has_exact_solution(self) -> bool:
        """True when the ball starts on the period-n orbit (no ``q0`` given)."""
        return self._orbit is not None

    def _on_orbit(self) -> PeriodOrbit:
        if self._orbit is None:
            raise NotImplementedError(
                f"problem {self.name!r} has an exact solution only on its period-n orbit "
                "(constructed without q0)"
            )
        return self._orbit

    def _impact_time(self, j: np.ndarray) -> np.ndarray:
        """t_j = (phi* + 2 pi n j)/omega."""
        orbit = self._on_orbit()
        return (orbit.phase + TWO_PI * orbit.n * j) / self.angular_frequency

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact (x, v) on the period-n orbit at times ``t`` >= t0, each of shape (len(t), 1);
        post-impact velocity at an impact instant (NotImplementedError with a given q0)."""
        orbit = self._on_orbit()
        t = checks.times(t, self.t0)
        j = flight_index(t, self._impact_time, TWO_PI * orbit.n / self.angular_frequency)
        x, v = self._orbit_flight(orbit, t - self._impact_time(j))
        return x[:, None], v[:, None]

    def impact_times(self, t_end: float, max_count: int = MAX_IMPACT_COUNT) -> np.ndarray:
        """Exact impact times (phi* + 2 pi n j)/omega in [t0, t_end], at most ``max_count``
        (NotImplementedError with a given q0)."""
        self._on_orbit()
        max_count = checks.positive_int(max_count, "max_count")
        t_end = checks.finite_scalar(t_end, "t_end")
        if t_end < self.t0:
            return np.zeros(0)
        first = float(self._impact_time(np.ones(1))[0])
        flight = TWO_PI * self.orbit_periods / self.angular_frequency
        count = min(max_count, max(0, math.floor((t_end - first) / flight) + 2))
        times = self._impact_time(np.arange(1.0, count + 1.0))
        return times[(times >= self.t0) & (times <= t_end)]
