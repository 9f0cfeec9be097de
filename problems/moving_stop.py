r"""An oscillator impacting a harmonically moving stop: a moving obstacle (rheonomic constraint).

In the stop's frame the problem is the forced impact oscillator
(:class:`impactbench.problems.ForcedImpactOscillator`), whose exact one-impact-per-period orbit
it inherits (derivation in :class:`ImpactOscillatorMovingStop`). This module also holds the
exact free flight of an undamped harmonic oscillator (:func:`harmonic_flight`), shared with the
cam-follower (:mod:`impactbench.problems.cam_follower`).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import ProblemKernels, RheonomicCompiledProblem

from .bouncing_ball import MAX_IMPACT_COUNT
from .impact_oscillator import ForcedImpactOscillator, oscillator_forces, unit_mass_matrix


def harmonic_flight(
    t: np.ndarray | float, t_start: float, x_start: float, v_start: float, frequency: float
) -> tuple[np.ndarray, np.ndarray]:
    r"""Exact free flight of x'' + Omega^2 x = 0 from (x_start, v_start) at t_start.

    .. math::

        x = x_s \cos\Omega\tau + \frac{v_s}{\Omega}\sin\Omega\tau, \qquad
        v = v_s \cos\Omega\tau - \Omega x_s \sin\Omega\tau, \qquad \tau = t - t_s.

    Parameters
    ----------
    t : float or array_like, shape (N,)
        Times (any finite value: the flight is valid until the next impact, which this function
        does not locate).
    t_start, x_start, v_start : float
        The start of the flight.
    frequency : float
        Omega > 0 (rad/s).

    Returns
    -------
    x, v : ndarray, shape (N,)
    """
    t = np.atleast_1d(np.asarray(t, dtype=float))
    if not np.all(np.isfinite(t)):
        raise ValueError(f"t must be finite, got {t!r:.200}")
    omega = checks.positive_scalar(frequency, "frequency")
    x_s = checks.finite_scalar(x_start, "x_start")
    v_s = checks.finite_scalar(v_start, "v_start")
    tau = t - checks.finite_scalar(t_start, "t_start")
    c, s = np.cos(omega * tau), np.sin(omega * tau)
    return x_s * c + (v_s / omega) * s, v_s * c - omega * x_s * s


def flight_index(
    t: np.ndarray, impact_time: Callable[[np.ndarray], np.ndarray], period: float
) -> np.ndarray:
    """The index j of the flight holding each time: impact_time(j) <= t < impact_time(j + 1).

    For periodic impacts impact_time(j) ~ impact_time(0) + j ``period`` (j a float array); the
    estimate floor((t - impact_time(0)) / period), off by one at most near an impact, is made
    exactly consistent with the rounding of ``impact_time`` (so that at an impact time of
    ``impact_times`` the flight after it is chosen).

    Parameters
    ----------
    t : ndarray, shape (N,)
    impact_time : callable
        j (float array) -> the impact times, increasing in j.
    period : float
        The time between impacts, > 0.

    Returns
    -------
    ndarray, shape (N,)
        j as floats.
    """
    j = np.floor((t - impact_time(np.zeros(1))) / period)
    for _ in range(8):
        low = t < impact_time(j)
        high = t >= impact_time(j + 1.0)
        if not (low.any() or high.any()):
            break
        j = j - low + high
    return j


#: The parameters of the kernels, in the order of the vector p (starting with that of the free
#: oscillator's forces kernel, shared).
PARAMETERS = ("frequency_squared", "stop_offset", "stop_amplitude", "stop_frequency")
FREQUENCY_SQUARED, STOP_OFFSET, STOP_AMPLITUDE, STOP_FREQUENCY = parameter_indices(PARAMETERS)


@kernel
def _stop_gap(t, q, p, out):
    # g(t, x) = s(t) - x, s(t) = d + B sin(W t)
    out[0] = p[STOP_OFFSET] + p[STOP_AMPLITUDE] * math.sin(p[STOP_FREQUENCY] * t) - q[0]


@kernel
def _stop_gap_gradient(t, q, p, out):
    out[0, 0] = -1.0


@kernel
def _stop_gap_rate(t, q, p, out):
    # r = dg/dt = s'(t) = B W cos(W t)
    w = p[STOP_FREQUENCY]
    out[0] = p[STOP_AMPLITUDE] * w * math.cos(w * t)


@kernel
def _stop_gap_drift(t, q, v, p, out):
    # c = d2g/dt2 + 2 (dG/dt) v = s''(t) = -B W^2 sin(W t) (G = -1 does not move)
    w = p[STOP_FREQUENCY]
    out[0] = -p[STOP_AMPLITUDE] * w * w * math.sin(w * t)


class ImpactOscillatorMovingStop(RheonomicCompiledProblem):
    r"""Undamped oscillator below a stop moving as s(t) = d + B sin(W t) (1 DOF, 1 constraint).

    .. math::

        x'' + \Omega^2 x = 0, \qquad g(t, x) = d + B\sin(W t) - x \ge 0, \qquad
        U^+ = -r\,U^- \ \text{at}\ g = 0,

    unit mass, Omega = ``frequency``, U = s'(t) - x' the relative velocity (r = dg/dt =
    B W cos(W t), c = s''(t) = -B W^2 sin(W t), G = [-1]).

    **In the stop's frame** y = x - s(t) obeys y'' + Omega^2 y = -(s'' + Omega^2 s)
    = B (W^2 - Omega^2) sin(W t) - Omega^2 d below the fixed stop y = 0. With z = y + d,
    K = B (w^2 - 1), w = W / Omega, the time tau = Omega t and z = |K| xi,

    .. math::

        \xi'' + \xi = \operatorname{sgn}(K) \sin(w \tau)
                    = \cos\big(w (\tau - \delta)\big), \quad
        \delta = \operatorname{sgn}(K) \frac{\pi}{2 w}, \qquad
        \xi \le \sigma = d / |K|,

    with Newton's law on xi' (U = -|K| Omega xi'): the forced impact oscillator
    :class:`impactbench.problems.ForcedImpactOscillator` (omega = w, sigma, restitution r,
    zeta = 0) in its time tau - delta. Its exact one-impact-per-period orbit gives ours:

    .. math::

        x(t) = B \sin(W t) + |K|\,\xi(\Omega t - \delta), \qquad
        x'(t) = B W \cos(W t) + |K|\,\Omega\,\xi'(\Omega t - \delta),

    impacts at (tau_j + delta)/Omega for the forced oscillator's impact times tau_j, relative
    impact speed |K| Omega V. The problem starts on that orbit, half a period after an impact
    (as the forced oscillator does). Between impacts the flight is the free oscillation
    :func:`harmonic_flight` (:meth:`free_flight`).

    Parameters
    ----------
    restitution : float, default 0.8
        r in [0, 1].
    stop_offset : float, default 0.0525
        d (m).
    stop_amplitude : float, default 0.2
        B > 0 (m).
    stop_frequency : float, default 2.5
        W > 0 (rad/s), W != Omega (resonance: no periodic orbit) and sin(pi Omega / W) != 0.
    frequency : float, default 1.0
        Omega > 0 (rad/s). The defaults map onto the forced oscillator's defaults
        (omega = 2.5, sigma = 0.0525 / 1.05 = 0.05, r = 0.8), a stable orbit.

    Raises
    ------
    ValueError
        For a bad parameter (named in the message), or when no admissible
        one-impact-per-period orbit exists (the forced oscillator's message, in its variables).

    References
    ----------
    S. W. Shaw, P. J. Holmes, "A periodically forced piecewise linear oscillator", J. Sound Vib.
    90 (1983) 129-155 (the forced oscillator the moving stop maps onto).
    """

    coordinates = (("x", "m"),)
    parameter_units = dict(
        restitution="-",
        stop_offset="m",
        stop_amplitude="m",
        stop_frequency="rad/s",
        frequency="rad/s",
    )

    KERNELS = ProblemKernels(
        unit_mass_matrix,
        oscillator_forces,
        _stop_gap,
        _stop_gap_gradient,
        affine_gap=True,
        constant_mass=True,
        rheonomic=True,
        gap_rate=_stop_gap_rate,
        gap_drift=_stop_gap_drift,
    )

    def __init__(
        self,
        restitution: float = 0.8,
        stop_offset: float = 0.0525,
        stop_amplitude: float = 0.2,
        stop_frequency: float = 2.5,
        frequency: float = 1.0,
    ) -> None:
        self.restitution = checks.restitution(restitution)
        self.stop_offset = checks.finite_scalar(stop_offset, "stop_offset")
        self.stop_amplitude = checks.positive_scalar(stop_amplitude, "stop_amplitude")
        self.stop_frequency = checks.positive_scalar(stop_frequency, "stop_frequency")
        self.frequency = checks.positive_scalar(frequency, "frequency")
        ratio = self.stop_frequency / self.frequency
        scale = self.stop_amplitude * (ratio * ratio - 1.0)
        if abs(ratio - 1.0) < 1e-8:
            raise ValueError(
                f"stop_frequency must differ from frequency (resonance: no periodic orbit), "
                f"got stop_frequency={stop_frequency!r}, frequency={frequency!r}"
            )
        #: abs(K) = B abs(w^2 - 1), the scale of the stop-frame coordinate xi.
        self.frame_scale = abs(scale)
        #: delta = sgn(K) pi / (2 w), the shift of the forced oscillator's time tau - delta.
        self.time_shift = math.copysign(0.5 * math.pi / ratio, scale)
        try:
            # the forced oscillator of the stop's frame, derived from the parameters (a cache:
            # its name ends with _memo)
            self._forced_memo = ForcedImpactOscillator(
                omega=ratio, sigma=self.stop_offset / self.frame_scale, restitution=self.restitution
            )
        except ValueError as error:
            raise ValueError(
                f"stop_frequency, stop_offset, stop_amplitude: in the stop's frame ({error})"
            ) from None
        self.name = "ImpactOscillatorMovingStop"
        self.n_dof = 1
        self.n_constraints = 1
        #: Relative impact speed abs(K) Omega V of the periodic orbit (before the impact).
        self.impact_speed = self.frame_scale * self.frequency * self._forced_memo.impact_speed
        self.t0 = (self._forced_memo.t0 + self.time_shift) / self.frequency
        x, v = self.exact_solution(np.array([self.t0]))
        self.q0, self.v0 = x[0], v[0]
        self._finish_init()

    @property
    def forced(self) -> ForcedImpactOscillator:
        """The forced impact oscillator of the stop's frame (class docstring)."""
        return self._forced_memo

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(
            PARAMETERS,
            frequency_squared=self.frequency**2,
            stop_offset=self.stop_offset,
            stop_amplitude=self.stop_amplitude,
            stop_frequency=self.stop_frequency,
        )

    def potential_energy(self, q: np.ndarray) -> float:
        """Omega^2 x^2 / 2 (the stop's work is not a potential)."""
        x = float(np.asarray(q, dtype=float).reshape(-1)[0])
        return 0.5 * self.frequency**2 * x * x

    def stop_position(self, t: float | np.ndarray) -> float | np.ndarray:
        """s(t) = d + B sin(W t) (m), the shape of ``t``."""
        return self.stop_offset + self.stop_amplitude * np.sin(self.stop_frequency * np.asarray(t))

    def stop_velocity(self, t: float | np.ndarray) -> float | np.ndarray:
        """s'(t) = B W cos(W t) (m/s), the shape of ``t``."""
        w = self.stop_frequency
        return self.stop_amplitude * w * np.cos(w * np.asarray(t))

    def stop_acceleration(self, t: float | np.ndarray) -> float | np.ndarray:
        """s''(t) = -B W^2 sin(W t) (m/s^2), the shape of ``t``."""
        w = self.stop_frequency
        return -self.stop_amplitude * w * w * np.sin(w * np.asarray(t))

    def free_flight(
        self, t: np.ndarray | float, t_start: float, x_start: float, v_start: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """The exact free oscillation from (x_start, v_start) at t_start (:func:`harmonic_flight`),
        valid until the next impact."""
        return harmonic_flight(t, t_start, x_start, v_start, self.frequency)

    def _forced_impact_time(self, j: np.ndarray) -> np.ndarray:
        """tau_j = phi / w + j 2 pi / w, the forced oscillator's impact times (its formula)."""
        forced = self._forced_memo
        return forced.impact_phase / forced.omega + j * forced.period

    def _forced_time(self, t: np.ndarray) -> np.ndarray:
        """Omega t - delta, kept in the forced oscillator's flight [tau_j, tau_{j+1}) of the
        impact j = max{j : (tau_j + delta)/Omega <= t} and at or after its t0 (removes the
        round-off of the map t -> Omega t - delta, so that an impact time of
        :meth:`impact_times` gives the post-impact state)."""

        def ours(j: np.ndarray) -> np.ndarray:
            return (self._forced_impact_time(j) + self.time_shift) / self.frequency

        j = flight_index(t, ours, self._forced_memo.period / self.frequency)
        shifted = np.clip(
            self.frequency * t - self.time_shift,
            self._forced_impact_time(j),
            np.nextafter(self._forced_impact_time(j + 1.0), -np.inf),
        )
        return np.maximum(shifted, self._forced_memo.t0)

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact (x, v) on the periodic orbit at times ``t`` >= t0, each of shape (len(t), 1)
        (class docstring); post-impact velocity at an impact instant."""
        t = checks.times(t, self.t0)
        xi, dxi = self._forced_memo.exact_solution(self._forced_time(t))
        w = self.stop_frequency
        x = self.stop_amplitude * np.sin(w * t) + self.frame_scale * xi[:, 0]
        v = self.stop_amplitude * w * np.cos(w * t) + self.frame_scale * self.frequency * dxi[:, 0]
        return x[:, None], v[:, None]

    def impact_times(self, t_end: float, max_count: int = MAX_IMPACT_COUNT) -> np.ndarray:
        """Exact impact times (tau_j + delta)/Omega in [t0, t_end], at most ``max_count``."""
        t_end = checks.finite_scalar(t_end, "t_end")
        forced = self._forced_memo.impact_times(self.frequency * t_end - self.time_shift, max_count)
        times = (forced + self.time_shift) / self.frequency  # the formula of _forced_time
        return times[(times >= self.t0) & (times <= t_end)]
