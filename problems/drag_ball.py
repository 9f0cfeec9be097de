"""Bouncing ball with quadratic air drag: flights that Runge-Kutta does not integrate exactly."""

from __future__ import annotations

import math

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import CompiledProblem, ProblemKernels

#: Impacts after which the remaining flights are summed as a geometric tail (drag negligible).
_TAIL_SPEED_RATIO = 1e-9

#: The parameters of the kernels, in the order of the vector p.
PARAMETERS = ("gravity", "mass", "drag")
GRAVITY, MASS, DRAG = parameter_indices(PARAMETERS)


@kernel
def _drag_mass_matrix(q, p, out):
    out[0, 0] = p[MASS]


@kernel
def _drag_forces(t, q, v, p, out):
    out[0] = -p[MASS] * p[GRAVITY] - p[DRAG] * abs(v[0]) * v[0]


@kernel
def _drag_gap(q, p, out):
    out[0] = q[0]


@kernel
def _drag_gap_gradient(q, p, out):
    out[0, 0] = 1.0


class DragBall(CompiledProblem):
    r"""A ball of mass m falling onto the floor q = 0 under gravity and quadratic air drag.

    .. math::

        m q'' = -m g_0 - c |q'| q', \qquad g(q) = q \ge 0, \qquad v^+ = -e v^- \ \text{at}\ q = 0.

    With k = c / m and the terminal speed v_T = sqrt(g0 / k), every flight has a closed form
    (unlike the drag-free ball, whose parabolas a Runge-Kutta pair integrates exactly):

    * rising from the floor with speed U: v(t) = v_T tan(a - g0 t / v_T), a = atan(U / v_T),
      q(t) = ln(cos(a - g0 t / v_T) / cos a) / k, up to the apex at t_up = a v_T / g0, height
      H = ln(1 + U^2 / v_T^2) / (2k);
    * falling from rest at height H: v(s) = -v_T tanh(g0 s / v_T),
      q(s) = H - ln cosh(g0 s / v_T) / k, landing at s_down = (v_T / g0) acosh(exp(k H)) with
      speed V = v_T sqrt(1 - exp(-2 k H)), that is V = U / sqrt(1 + U^2 / v_T^2) for a flight
      that rose with U.

    The next flight rises with e V. For e < 1 the impacts accumulate: once the rebound speed is
    below ``1e-9`` times the first one, drag changes the remaining flights by a relative
    O(U^2 / v_T^2) below round-off and they are summed as the drag-free geometric tail
    2 e U / (g0 (1 - e)); the ball rests (q = v = 0) after that accumulation time. At an impact
    instant the post-impact velocity is returned.

    Parameters
    ----------
    q0 : float, default 1.0
        Initial height, >= 0.
    v0 : float, default 0.0
        Initial velocity, > -v_T (a faster fall is slowed towards -v_T, a case not covered by
        the closed form here).
    drag : float, default 0.5
        c >= 0, the drag coefficient (force c v^2); 0 gives the drag-free ball.
    gravity : float, default 9.81
        g0 > 0.
    restitution : float, default 0.8
        e in [0, 1].
    mass : float, default 1.0
        m > 0.
    t0 : float, default 0.0
        Initial time.

    Raises
    ------
    ValueError
        If a parameter is not finite, out of range, q0 < 0 or v0 <= -v_T; the message names it.
    """

    coordinates = (("q", "m"),)
    parameter_units = dict(
        q0="m", v0="m/s", drag="kg/m", gravity="m/s^2", restitution="-", mass="kg", t0="s"
    )

    KERNELS = ProblemKernels(
        _drag_mass_matrix,
        _drag_forces,
        _drag_gap,
        _drag_gap_gradient,
        affine_gap=True,
        constant_mass=True,
    )

    def __init__(
        self,
        q0: float = 1.0,
        v0: float = 0.0,
        drag: float = 0.5,
        gravity: float = 9.81,
        restitution: float = 0.8,
        mass: float = 1.0,
        t0: float = 0.0,
    ) -> None:
        q0 = checks.finite_scalar(q0, "q0")
        if q0 < 0.0:
            raise ValueError(f"q0 must be >= 0 (admissible: the floor is q = 0), got {q0!r}")
        v0 = checks.finite_scalar(v0, "v0")
        self.drag = checks.finite_scalar(drag, "drag")
        if self.drag < 0.0:
            raise ValueError(f"drag must be >= 0, got {drag!r}")
        self.gravity = checks.positive_scalar(gravity, "gravity")
        self.mass = checks.positive_scalar(mass, "mass")
        if self.drag > 0.0 and v0 <= -self.terminal_speed:
            raise ValueError(
                f"v0 must be > -v_T = {-self.terminal_speed!r} (the terminal speed), got {v0!r}"
            )
        self.restitution = checks.restitution(restitution)
        self.t0 = checks.finite_scalar(t0, "t0")
        self.name = "DragBall"
        self.n_dof = 1
        self.n_constraints = 1
        self.q0 = np.array([q0])
        self.v0 = np.array([v0])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(PARAMETERS, gravity=self.gravity, mass=self.mass, drag=self.drag)

    def potential_energy(self, q: np.ndarray) -> float:
        """m g0 q (the drag is dissipative, not potential)."""
        return self.mass * self.gravity * float(np.asarray(q, dtype=float).reshape(-1)[0])

    @property
    def terminal_speed(self) -> float:
        """v_T = sqrt(m g0 / c) (inf without drag)."""
        return math.inf if self.drag == 0.0 else math.sqrt(self.mass * self.gravity / self.drag)

    # ----------------------------------------------------------------------------------------
    # Closed form

    def _rise(self, u: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """q, v at times t after leaving the floor with speed u >= 0 (t <= the apex)."""
        g, vt = self.gravity, self.terminal_speed
        if math.isinf(vt):
            return u * t - 0.5 * g * t * t, u - g * t
        a = math.atan(u / vt)
        phase = a - g * t / vt
        k = self.drag / self.mass
        return np.log(np.cos(phase) / math.cos(a)) / k, vt * np.tan(phase)

    def _fall(self, height: float, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """q, v at times s after the apex at ``height`` (falling)."""
        g, vt = self.gravity, self.terminal_speed
        if math.isinf(vt):
            return height - 0.5 * g * s * s, -g * s
        k = self.drag / self.mass
        x = g * s / vt
        # ln cosh x without overflow
        log_cosh = np.abs(x) + np.log1p(np.exp(-2.0 * np.abs(x))) - math.log(2.0)
        return height - log_cosh / k, -vt * np.tanh(x)

    def _apex(self, u: float) -> tuple[float, float]:
        """(time to the apex, apex height above the floor) of a rise with speed u."""
        g, vt = self.gravity, self.terminal_speed
        if math.isinf(vt):
            return u / g, u * u / (2.0 * g)
        k = self.drag / self.mass
        return vt * math.atan(u / vt) / g, math.log1p((u / vt) ** 2) / (2.0 * k)

    def _descent(self, height: float) -> tuple[float, float]:
        """(duration, landing speed) of a fall from rest at ``height``."""
        g, vt = self.gravity, self.terminal_speed
        if math.isinf(vt):
            return math.sqrt(2.0 * height / g), math.sqrt(2.0 * g * height)
        k = self.drag / self.mass
        duration = vt * math.acosh(math.exp(k * height)) / g
        return duration, vt * math.sqrt(-math.expm1(-2.0 * k * height))

    def schedule(self) -> tuple[float, float, float, np.ndarray, np.ndarray]:
        """The motion as data: (first apex time, first apex height, accumulation time,
        impact times, rebound speeds after each impact).

        The first phase starts at t0 from (q0, v0): a rise if v0 > 0 (to its apex), else a fall
        from the apex the state lies on (v0 <= 0). The accumulation time is inf for e = 1
        (impacts listed up to 10^4) and the time of the first impact for e = 0.
        """
        q0, v0 = float(self.q0[0]), float(self.v0[0])
        g, vt = self.gravity, self.terminal_speed
        if v0 > 0.0:
            rise, up = self._apex(v0)
            apex_time, apex = self.t0 + rise, q0 + up
        else:  # on a fall: the apex it came from
            if math.isinf(vt):
                back, up = -v0 / g, v0 * v0 / (2.0 * g)
            else:
                k = self.drag / self.mass
                back = vt * math.atanh(-v0 / vt) / g
                up = math.log(math.cosh(g * back / vt)) / k
            apex_time, apex = self.t0 - back, q0 + up
        times, speeds = [], []
        t, height = apex_time, apex
        first = None
        while True:
            duration, landing = self._descent(height)
            t += duration
            u = self.restitution * landing
            times.append(t)
            speeds.append(u)
            first = first or landing
            if u == 0.0:
                return apex_time, apex, t, np.array(times), np.array(speeds)
            if self.restitution < 1.0 and u < _TAIL_SPEED_RATIO * first:
                e = self.restitution
                tail = 2.0 * u / (g * (1.0 - e))
                return apex_time, apex, t + tail, np.array(times), np.array(speeds)
            if len(times) >= 10_000:
                return apex_time, apex, math.inf, np.array(times), np.array(speeds)
            rise, height = self._apex(u)
            t += rise

    @property
    def accumulation_time(self) -> float:
        """The time after which the ball rests on the floor (inf for e = 1)."""
        return self.schedule()[2]

    def impact_times(self, t_end: float, max_count: int = 10_000) -> np.ndarray:
        """The impact times in [t0, t_end], at most the first ``max_count`` (those of the
        geometric tail, shorter than round-off, excluded)."""
        max_count = checks.positive_int(max_count, "max_count")
        t_end = checks.finite_scalar(t_end, "t_end")
        times = self.schedule()[3]
        return times[(times >= self.t0) & (times <= t_end)][:max_count]

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact (q, v) at times ``t`` >= t0, each of shape (len(t), 1); post-impact velocity
        at an impact instant, rest after the accumulation time."""
        t = checks.times(t, self.t0)
        apex_time, apex, t_inf, times, speeds = self.schedule()
        q = np.zeros_like(t)
        v = np.zeros_like(t)
        before = t < times[0]
        rising = before & (t < apex_time)  # a start with v0 > 0 rises to the first apex
        if rising.any():
            q_rise, v[rising] = self._rise(float(self.v0[0]), t[rising] - self.t0)
            q[rising] = float(self.q0[0]) + q_rise
        falling = before & ~rising
        q[falling], v[falling] = self._fall(apex, t[falling] - apex_time)
        index = np.searchsorted(times, t, side="right") - 1  # the last impact at or before t
        for i in np.unique(index[(index >= 0) & (t < t_inf)]):
            u = float(speeds[i])
            rise, _ = self._apex(u)
            mine = (index == i) & (t < t_inf)
            up = mine & (t - times[i] <= rise)
            down = mine & ~up
            q[up], v[up] = self._rise(u, t[up] - times[i])
            _, height = self._apex(u)
            q[down], v[down] = self._fall(height, t[down] - times[i] - rise)
        np.maximum(q, 0.0, out=q)  # round-off below the floor in the last flights
        return q[:, None], v[:, None]
