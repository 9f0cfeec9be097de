r"""A follower pressed by a spring on a rotating cam: a moving obstacle (rheonomic constraint).

After Siconos' CamFollower example (siconos-tutorials, examples/mechanics/CamFollower: Mario di
Bernardo, Gustavo Osorio and Stefania Santini, University of Naples Federico II, 2006). The cam
lift h_c and its derivatives are those of ``CamState`` (CamState.h, the same formulas as
``FextFunction`` in FollowerPlugin/FollowerPlugin.cpp): four arcs of the cam angle beta (mirrored
about beta = pi), a base circle, two flanks and a dwell,

.. math::

    h(\beta) = \begin{cases}
        R_b & \beta \le \pi/2, \\
        -k_1\sin\beta + \rho_1 (1 - (k_1/\rho_1)^2\cos^2\beta)^{1/2}
            & \pi/2 < \beta \le \pi/2 + \beta_2, \\
        -k_2\cos(\beta + \pi/9) + \rho_3 (1 - (k_2/\rho_3)^2\sin^2(\beta + \pi/9))^{1/2}
            & \pi/2 + \beta_2 < \beta \le \pi/2 + \beta_3, \\
        \rho_2 & \text{otherwise},
    \end{cases}

for beta in [0, pi] (beta in (pi, 2 pi) is read as 2 pi - beta), with R_b = 0.40, k1 = 0.45,
rho1 = 0.85, k2 = 0.40393320723821, rho3 = 0.15, rho2 = 0.55393320723821 = k2 + rho3,
beta2 = 1.050328174371336, beta3 = 7 pi / 18; and h_c = h - 0.3. h is C^1 (its second derivative
jumps at the ends of the arcs). With beta = w t + beta_0 (w = 2 pi rpm / 60),
h_c' = h'(beta) w and h_c'' = h''(beta) w^2 (the sign of h_c' flips on the mirrored half).
Siconos truncates pi to 3.14159265 there; we use pi.

Siconos' rheonomic variant (CamFollower-Rheonomous.cpp) is degenerate as shipped: its plugin
overwrites the relation y = q - h_c by y = q and its time derivative -h_c' by 0, so that its
reference output is that of a spring on a fixed stop. The model here is the one its
documentation describes (CamFollower.dox): the follower x, of mass m, on a spring of stiffness k
whose free length puts it at x = 0, is kept above the cam, x >= h_c(t) >= 0.1 > 0 (the spring
preloads it on the cam by at least k (R_b - 0.3)), with Newton's law on the relative velocity.
"""

from __future__ import annotations

import math

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import ProblemKernels, RheonomicCompiledProblem

from .moving_stop import harmonic_flight

#: Cam geometry of Siconos' CamState (m and rad): base radius, flank and nose constants.
BASE_RADIUS = 0.40
K1, RHO1 = 0.45, 0.85
K2, RHO3 = 0.40393320723821, 0.15
RHO2 = 0.55393320723821
BETA2 = 1.050328174371336
BETA3 = 1.22173047639603

#: The parameters of the kernels, in the order of the vector p.
PARAMETERS = ("mass", "stiffness", "angular_speed", "cam_phase", "spring_offset")
MASS, STIFFNESS, ANGULAR_SPEED, CAM_PHASE, SPRING_OFFSET = parameter_indices(PARAMETERS)


@kernel
def _profile(beta):
    """(h, dh/dbeta, d2h/dbeta2) of the cam profile at beta in [0, pi] (module docstring)."""
    half_pi = 0.5 * math.pi
    if beta <= half_pi:
        return BASE_RADIUS, 0.0, 0.0
    if beta <= half_pi + BETA2:
        # h = -k1 sin b + rho1 S, S = (1 - a^2 cos^2 b)^(1/2), a = k1 / rho1
        s, c = math.sin(beta), math.cos(beta)
        root = math.sqrt(1.0 - (c * K1 / RHO1) ** 2)
        slope = -K1 * c + K1 * K1 * s * c / (RHO1 * root)
        bend = c * c - s * s - (K1 * s * c) ** 2 / (RHO1 * RHO1 * root * root)
        return -K1 * s + RHO1 * root, slope, K1 * s + K1 * K1 / (RHO1 * root) * bend
    if beta <= half_pi + BETA3:
        # h = -k2 cos u + rho3 S, u = b + pi/9, S = (1 - a^2 sin^2 u)^(1/2), a = k2 / rho3
        u = beta + math.pi / 9.0
        s, c = math.sin(u), math.cos(u)
        root = math.sqrt(1.0 - (s * K2 / RHO3) ** 2)
        slope = K2 * s - K2 * K2 * s * c / (RHO3 * root)
        bend = c * c - s * s + (K2 * s * c) ** 2 / (RHO3 * RHO3 * root * root)
        return -K2 * c + RHO3 * root, slope, K2 * c - K2 * K2 / (RHO3 * root) * bend
    return RHO2, 0.0, 0.0


@kernel
def _cam(t, p):
    """(h_c, h_c', h_c'') at time t: the profile at beta = w t + phase reduced to [0, pi]."""
    w = p[ANGULAR_SPEED]
    beta = w * t + p[CAM_PHASE]
    beta -= 2.0 * math.pi * math.floor(beta / (2.0 * math.pi))
    sign = 1.0
    if beta > math.pi:  # the mirrored half: h(2 pi - beta), d/dt flips sign
        beta = 2.0 * math.pi - beta
        sign = -1.0
    h, slope, bend = _profile(beta)
    return h - p[SPRING_OFFSET], sign * slope * w, bend * w * w


@kernel
def _follower_mass_matrix(q, p, out):
    out[0, 0] = p[MASS]


@kernel
def _follower_forces(t, q, v, p, out):
    out[0] = -p[STIFFNESS] * q[0]


@kernel
def _follower_gap(t, q, p, out):
    # g(t, x) = x - h_c(t)
    out[0] = q[0] - _cam(t, p)[0]


@kernel
def _follower_gap_gradient(t, q, p, out):
    out[0, 0] = 1.0


@kernel
def _follower_gap_rate(t, q, p, out):
    # r = dg/dt = -h_c'(t)
    out[0] = -_cam(t, p)[1]


@kernel
def _follower_gap_drift(t, q, v, p, out):
    # c = d2g/dt2 + 2 (dG/dt) v = -h_c''(t) (G = 1 does not move)
    out[0] = -_cam(t, p)[2]


class CamFollower(RheonomicCompiledProblem):
    r"""A spring-loaded follower on a rotating cam (1 DOF, 1 constraint; module docstring).

    .. math::

        m x'' = -k x, \qquad g(t, x) = x - h_c(t) \ge 0, \qquad
        x'^+ - h_c' = -e\,(x'^- - h_c') \ \text{at}\ x = h_c(t),

    r = -h_c'(t), c = -h_c''(t), G = [1] (an affine gap). Defaults from Siconos' example: m =
    1.221 kg, k = 1430.8 N/m, 358 rpm, e = 0.8, x0 = 0.4 m, v0 = 0.4 m/s at t0 = 0.

    **Closed forms**: the cam's motion (:meth:`cam_position`, :meth:`cam_velocity`,
    :meth:`cam_acceleration`); the free flight, x = x_s cos(Omega tau) + (v_s/Omega)
    sin(Omega tau), Omega = (k/m)^(1/2) (:meth:`free_flight`); and the force with which the cam
    holds a follower that stays on it, lambda(t) = m h_c''(t) + k h_c(t)
    (:meth:`contact_force`): the follower can follow the cam only while lambda >= 0.

    Parameters
    ----------
    rpm : float, default 358.0
        The cam's speed in revolutions per minute, > 0.
    restitution : float, default 0.8
        e in [0, 1].
    mass : float, default 1.221
        m > 0 (kg).
    stiffness : float, default 1430.8
        k > 0 (N/m).
    spring_offset : float, default 0.3
        The lift at the spring's free length: h_c = h - ``spring_offset`` (m), so that the
        spring presses the follower on the cam while h_c > 0 (h >= 0.4 on the whole cam).
    q0, v0 : float, default 0.4, 0.4
        Initial position (>= h_c(t0)) and velocity.
    cam_angle : float, default pi/4
        beta_0, the cam angle at t0 (rad): pi/2 is the end of the base circle and Siconos'
        angle at t = 0, where h_c'' jumps: there the central differences in t of
        :meth:`Problem.check` straddle the jump and it refuses the declared rate and drift (as
        at the other ends of the arcs); the default starts in the middle of the base circle, a
        quarter turn earlier.
    t0 : float, default 0.0
        Initial time.

    Raises
    ------
    ValueError
        For a bad parameter, naming it.

    References
    ----------
    Siconos tutorials, examples/mechanics/CamFollower (CamState.h, CamFollower.dox),
    https://github.com/siconos/siconos-tutorials.
    """

    coordinates = (("x", "m"),)
    parameter_units = dict(
        rpm="1/min",
        restitution="-",
        mass="kg",
        stiffness="N/m",
        spring_offset="m",
        q0="m",
        v0="m/s",
        cam_angle="rad",
        t0="s",
    )

    KERNELS = ProblemKernels(
        _follower_mass_matrix,
        _follower_forces,
        _follower_gap,
        _follower_gap_gradient,
        affine_gap=True,
        constant_mass=True,
        rheonomic=True,
        gap_rate=_follower_gap_rate,
        gap_drift=_follower_gap_drift,
    )

    def __init__(
        self,
        rpm: float = 358.0,
        restitution: float = 0.8,
        mass: float = 1.221,
        stiffness: float = 1430.8,
        spring_offset: float = 0.3,
        q0: float = 0.4,
        v0: float = 0.4,
        cam_angle: float = 0.25 * math.pi,
        t0: float = 0.0,
    ) -> None:
        self.rpm = checks.positive_scalar(rpm, "rpm")
        self.restitution = checks.restitution(restitution)
        self.mass = checks.positive_scalar(mass, "mass")
        self.stiffness = checks.positive_scalar(stiffness, "stiffness")
        self.spring_offset = checks.finite_scalar(spring_offset, "spring_offset")
        self.cam_angle = checks.finite_scalar(cam_angle, "cam_angle")
        self.t0 = checks.finite_scalar(t0, "t0")
        #: w = 2 pi rpm / 60, the cam's angular speed (rad/s).
        self.angular_speed = 2.0 * math.pi * self.rpm / 60.0
        #: Omega = (k / m)^(1/2), the follower's free angular frequency (rad/s).
        self.frequency = math.sqrt(self.stiffness / self.mass)
        self.name = "CamFollower"
        self.n_dof = 1
        self.n_constraints = 1
        x = checks.finite_scalar(q0, "q0")
        cam = float(self.cam_position(self.t0)[0])
        if x < cam:
            raise ValueError(
                f"q0 must be >= h_c(t0) = {cam!r} (admissible: on the cam), got {q0!r}"
            )
        self.q0 = np.array([x])
        self.v0 = np.array([checks.finite_scalar(v0, "v0")])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS` (cam_phase = beta_0 - w t0)."""
        return parameter_vector(
            PARAMETERS,
            mass=self.mass,
            stiffness=self.stiffness,
            angular_speed=self.angular_speed,
            cam_phase=self.cam_angle - self.angular_speed * self.t0,
            spring_offset=self.spring_offset,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """k x^2 / 2 (the cam's work is not a potential)."""
        x = float(np.asarray(q, dtype=float).reshape(-1)[0])
        return 0.5 * self.stiffness * x * x

    def _cam_states(self, t: float | np.ndarray) -> np.ndarray:
        """(h_c, h_c', h_c'') at each time, shape (N, 3) (the kernels' arithmetic)."""
        times = np.atleast_1d(np.asarray(t, dtype=float))
        if times.ndim != 1 or not np.all(np.isfinite(times)):
            raise ValueError(f"t must be finite times, got {t!r:.200}")
        p = self.kernel_parameters()
        return np.array([_cam(float(tk), p) for tk in times], dtype=float).reshape(-1, 3)

    def cam_position(self, t: float | np.ndarray) -> np.ndarray:
        """h_c(t) (m), shape (N,)."""
        return self._cam_states(t)[:, 0]

    def cam_velocity(self, t: float | np.ndarray) -> np.ndarray:
        """h_c'(t) (m/s), shape (N,)."""
        return self._cam_states(t)[:, 1]

    def cam_acceleration(self, t: float | np.ndarray) -> np.ndarray:
        """h_c''(t) (m/s^2), shape (N,) (the right-hand value where it jumps)."""
        return self._cam_states(t)[:, 2]

    def contact_force(self, t: float | np.ndarray) -> np.ndarray:
        """lambda(t) = m h_c''(t) + k h_c(t) (N), shape (N,): the force of the cam on a follower
        that stays on it (m x'' = -k x + lambda with x = h_c); the follower leaves the cam where
        it would be negative."""
        states = self._cam_states(t)
        return self.mass * states[:, 2] + self.stiffness * states[:, 0]

    def free_flight(
        self, t: np.ndarray | float, t_start: float, x_start: float, v_start: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """The exact free oscillation from (x_start, v_start) at t_start
        (:func:`impactbench.problems.moving_stop.harmonic_flight`, Omega = (k/m)^(1/2)), valid
        until the follower meets the cam."""
        return harmonic_flight(t, t_start, x_start, v_start, self.frequency)
