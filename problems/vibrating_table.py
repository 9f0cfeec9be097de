r"""Closed forms of a ball bouncing on a sinusoidally vibrating table (pure NumPy/SciPy).

The closed forms a ball-on-a-vibrating-table problem is checked against: the exact impact map,
the period-n orbits, their linear stability with the saddle-node and period-doubling thresholds,
and the sticking (locking) of the ball on the table. The problem class is
:class:`impactbench.problems.BallOnVibratingTable`, whose closed-form methods delegate here.

Model
-----
The table is at :math:`s(t) = A \sin(\omega t)`; the ball, at height :math:`x(t)`, flies under
gravity, :math:`x'' = -g`, while :math:`x > s`. At an impact (:math:`x = s`) Newton's law acts on
the relative velocity: :math:`x'^+ - s' = -e\,(x'^- - s')`, :math:`0 \le e < 1`. The table is
infinitely heavy (its motion is prescribed). The dimensionless acceleration is
:math:`\Gamma = A\omega^2/g`. An impact is described by the table's phase
:math:`\varphi = \omega t` (taken mod :math:`2\pi`) and the relative take-off velocity
:math:`u = x'^+ - s' \ge 0`. Below, lengths are scaled by :math:`g/\omega^2`, times by
:math:`1/\omega` and velocities by :math:`g/\omega` (a tilde marks a scaled velocity,
:math:`\tilde u = u\omega/g`); the table is then :math:`\Gamma\sin\varphi` and gravity is 1.

Exact impact map
----------------
After a take-off at phase :math:`\varphi` with relative velocity :math:`\tilde u`, the gap after
a scaled time :math:`y = \omega(t - t_k)` is

.. math::

    F(y) = \tilde u\,y - \tfrac12 y^2
           + \Gamma\,[\sin\varphi\,(1 - \cos y) + \cos\varphi\,(y - \sin y)],

the relative velocity is :math:`F'(y) = \tilde u - y + \Gamma[\sin\varphi\sin y + \cos\varphi
(1 - \cos y)]` and the relative acceleration :math:`F''(y) = -1 + \Gamma\sin(\varphi + y)`. The
next impact is at the first root :math:`y^* > 0` of :math:`F`, the phase advances to
:math:`\varphi + y^*` and :math:`\tilde u' = -e\,F'(y^*)`. The root is sought on
:math:`f(y) = F(y)/y` (which removes the take-off root :math:`y = 0`, :math:`f(0) = \tilde u`):
samples at a fraction of the period, halved geometrically towards the take-off, bracket the first
sign change, which :func:`scipy.optimize.brentq` refines. Between two positive samples a grazing
dip below zero is ruled out rigorously: :math:`f(y) = \int_0^1 F'(sy)\,ds` gives
:math:`|f''| \le \Gamma/3`, so a zero inside an interval of width :math:`w` needs a sample value
at most :math:`\Gamma w^2/24` (the interpolation error bound); only such intervals are minimised.
With :math:`\tilde u = 0` the ball rests on the table while :math:`\Gamma\sin\varphi < 1` (the
table's acceleration above :math:`-g`) and leaves at the next phase where
:math:`\sin\varphi = 1/\Gamma` with the table's acceleration falling.

Period-n orbits
---------------
One impact every n periods: the flight lasts :math:`2\pi n/\omega` and the ball lands where it
took off, so its absolute take-off velocity is :math:`V = g\pi n/\omega` and it lands with
:math:`-V`. The take-off relative velocity is :math:`u = V - A\omega\cos\varphi` and Newton's law
on the landing gives :math:`u = e(V + A\omega\cos\varphi)`; hence

.. math::

    \cos\varphi^* = \frac{\pi n (1 - e)}{\Gamma (1 + e)}, \qquad
    u^* = \frac{2 e}{1 + e}\,\frac{g \pi n}{\omega}, \qquad
    u^-  = -\frac{2}{1 + e}\,\frac{g \pi n}{\omega},

which exist for :math:`\Gamma \ge \Gamma_{sn} = \pi n (1 - e)/(1 + e)`. Of the two roots,
:math:`\varphi^* = \arccos(\cdot) \in (0, \pi/2]` (the table rising and decelerating) is the
candidate stable one; :math:`2\pi - \arccos(\cdot)` is a saddle. The orbit is a true orbit only
if the ball's parabola clears the table during the n periods, and for e = 0 (take-off velocity 0)
only if the ball leaves at once, :math:`\Gamma \ge (1 + \pi^2 n^2)^{1/2}` (both checked by the
exact map, :meth:`VibratingTable.period_orbit_clears_table`).

Linear stability
----------------
Implicit differentiation of :math:`F(y^*; \varphi, \tilde u) = 0` with :math:`\theta = \varphi +
y^*` and :math:`r = F'(y^*)` (the scaled approach velocity) gives the Jacobian of the exact map
:math:`(\varphi, \tilde u) \mapsto (\theta, \tilde u')` at any transversal impact:

.. math::

    \frac{\partial\theta}{\partial\varphi} = \frac{\Gamma y^*\sin\varphi + \tilde u - y^*}{r},
    \quad \frac{\partial\theta}{\partial\tilde u} = -\frac{y^*}{r},
    \quad \frac{\partial\tilde u'}{\partial\varphi} =
        -e\,[1 - \Gamma\sin\varphi + (\Gamma\sin\theta - 1)\,\partial_\varphi\theta],
    \quad \frac{\partial\tilde u'}{\partial\tilde u} =
        -e\,[1 + (\Gamma\sin\theta - 1)\,\partial_{\tilde u}\theta],

whose determinant is :math:`e^2\,\tilde u/\tilde u'` everywhere (the map contracts the area
element :math:`\tilde u\,d\tilde u\,d\varphi` by :math:`e^2`), hence :math:`e^2` on a period-n
orbit. There, with :math:`P = (1 + e)\Gamma\sin\varphi^*`,

.. math::

    J = \begin{pmatrix} 1 - P & 1 + e \\ e P (\Gamma\sin\varphi^* - 1) & e^2 - e P \end{pmatrix},
    \qquad \operatorname{tr} J = 1 + e^2 - (1 + e)^2\,\Gamma\sin\varphi^*,
    \qquad \det J = e^2,

in the scaled variables. A multiplier crosses +1 when :math:`\sin\varphi^* = 0`, at
:math:`\Gamma_{sn}` (the saddle-node where both roots are born), and -1 when
:math:`(1 + e)^2\Gamma\sin\varphi^* = 2(1 + e^2)`; with :math:`\Gamma\sin\varphi^* =
(\Gamma^2 - \Gamma_{sn}^2)^{1/2}` the period-doubling threshold of the exact map is

.. math::

    \Gamma_{pd}(n, e) = \Big[\Big(\frac{\pi n (1 - e)}{1 + e}\Big)^2
                             + \Big(\frac{2 (1 + e^2)}{(1 + e)^2}\Big)^2\Big]^{1/2}.

The root with :math:`\sin\varphi^* > 0` is stable for :math:`\Gamma_{sn} < \Gamma < \Gamma_{pd}`;
the other root always has a multiplier above 1. Holmes' high-bounce approximation (Holmes 1982,
J. Sound Vib. 84, 173: the table's displacement neglected, the flight time taken as
:math:`2V/g`) gives :math:`(\Gamma_{sn}^2 + 1)^{1/2}` instead; the two agree as :math:`e \to 1`.
The same exact map is studied by Luck & Mehta (1993, Phys. Rev. E 48, 3988) and Barroso,
Carneiro & Macau (2009, Phys. Rev. E 79, 026206); the threshold here is derived independently and
checked against the iterated map (tests/test_vibrating_table_closed_forms.py).

Sticking
--------
A ball at rest on the table feels the normal force :math:`m(g + s'')`, positive while
:math:`\Gamma\sin\varphi < 1`: for :math:`\Gamma > 1` it leaves at :math:`\sin\varphi_d =
1/\Gamma`, :math:`\varphi_d \in (0, \pi/2)`, and for :math:`\Gamma \le 1` it never leaves. From
an impact at :math:`\varphi_0` with a small take-off velocity :math:`u_0`, while the table's
acceleration is about constant, the relative motion is a bouncing ball under the effective
gravity :math:`g_0 = g(1 - \Gamma\sin\varphi_0) > 0`: flights :math:`2u_0 e^k/g_0`, which sum
to the accumulation time :math:`\tau_0 = 2u_0/(g_0(1 - e))` (complete chatter). To first order
in :math:`\omega\tau_0` the relative acceleration grows by :math:`j = A\omega^3\cos\varphi_0` per
unit time: a flight from :math:`(t_k, u_k)` lasts :math:`2u_k/\beta_k + 4ju_k^2/(3\beta_k^3)` with
:math:`\beta_k = g_0 - j(t_k - t_0)` and lands with :math:`-u_k + 2ju_k^2/(3\beta_k^2)`; summing
the series gives :math:`\tau_\infty = \tau_0\,[1 + j\tau_0/(3g_0)] + O(\tau_0^3)`. The ball then
rests on the table from :math:`\varphi_0 + \omega\tau_\infty` until the next take-off phase
:math:`\varphi_d + 2\pi k`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy.optimize import brentq, minimize_scalar

TWO_PI = 2.0 * math.pi

#: Samples of the gap per table period when the next impact is bracketed.
SAMPLES_PER_PERIOD = 64

#: Halvings of the first sampling step towards the take-off (samples down to 2**-50 of it).
FIRST_STEP_HALVINGS = 50

#: Below this scaled time the series of (1 - cos y)/y - y/2 and 1 - sin(y)/y are used.
_SERIES_BELOW = 0.1

_EPS = float(np.finfo(float).eps)


# --------------------------------------------------------------------------------------------
# Thresholds (functions of n and e only)
# --------------------------------------------------------------------------------------------


def _check_order(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be an integer >= 1 (impacts every n periods), got {n!r}")
    return int(n)


def _check_restitution(restitution: float) -> float:
    e = float(restitution)
    if not 0.0 <= e < 1.0:
        raise ValueError(f"restitution must be in [0, 1), got {restitution!r}")
    return e


def birth_acceleration(n: int, restitution: float) -> float:
    r"""Dimensionless acceleration at which the period-n orbits are born (saddle-node).

    :math:`\Gamma_{sn} = \pi n (1 - e)/(1 + e)`: the two impact phases
    :math:`\pm\arccos(\Gamma_{sn}/\Gamma)` merge at :math:`\varphi = 0`, where a multiplier is +1.

    Parameters
    ----------
    n : int
        Table periods between impacts, >= 1.
    restitution : float
        e in [0, 1).

    Returns
    -------
    float
        :math:`\Gamma_{sn}` (dimensionless).
    """
    n, e = _check_order(n), _check_restitution(restitution)
    return math.pi * n * (1.0 - e) / (1.0 + e)


def period_doubling_acceleration(n: int, restitution: float) -> float:
    r"""Dimensionless acceleration at which the period-n orbit of the exact map period-doubles.

    :math:`\Gamma_{pd} = [\Gamma_{sn}^2 + (2(1 + e^2)/(1 + e)^2)^2]^{1/2}`, where the trace of the
    orbit's Jacobian, :math:`1 + e^2 - (1 + e)^2\Gamma\sin\varphi^*`, reaches
    :math:`-(1 + e^2)` (a multiplier -1, the other :math:`-e^2`).

    Parameters
    ----------
    n : int
        Table periods between impacts, >= 1.
    restitution : float
        e in [0, 1).

    Returns
    -------
    float
        :math:`\Gamma_{pd}` (dimensionless).
    """
    e = _check_restitution(restitution)
    stability_term = 2.0 * (1.0 + e * e) / (1.0 + e) ** 2
    return math.hypot(birth_acceleration(n, e), stability_term)


def high_bounce_period_doubling_acceleration(n: int, restitution: float) -> float:
    r"""Period-doubling threshold of Holmes' high-bounce map (an approximation, for comparison).

    Holmes (1982) neglects the table's displacement: the flight lasts :math:`2V/g` for the
    absolute take-off velocity V. The period-n orbit of that map period-doubles at
    :math:`[\Gamma_{sn}^2 + 1]^{1/2}`, below the exact map's :func:`period_doubling_acceleration`
    for e < 1 (the two agree as e tends to 1).

    Parameters
    ----------
    n : int
        Table periods between impacts, >= 1.
    restitution : float
        e in [0, 1).

    Returns
    -------
    float
        The high-bounce threshold (dimensionless).
    """
    return math.hypot(birth_acceleration(n, restitution), 1.0)


# --------------------------------------------------------------------------------------------
# Scaled gap after a take-off
# --------------------------------------------------------------------------------------------


def _cos_defect(y: np.ndarray) -> np.ndarray:
    """(1 - cos y)/y - y/2 without cancellation (0 at y = 0), elementwise."""
    y = np.asarray(y, dtype=float)
    y2 = y * y
    series = -y * y2 * (1.0 / 24.0 - y2 * (1.0 / 720.0 - y2 * (1.0 / 40320.0 - y2 / 3628800.0)))
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = (2.0 * np.sin(0.5 * y) ** 2 - 0.5 * y2) / y
    return np.where(np.abs(y) < _SERIES_BELOW, series, direct)


def _sine_defect(y: np.ndarray) -> np.ndarray:
    """1 - sin(y)/y without cancellation (0 at y = 0), elementwise."""
    y = np.asarray(y, dtype=float)
    y2 = y * y
    inner = 1.0 / 5040.0 - y2 * (1.0 / 362880.0 - y2 / 39916800.0)
    series = y2 * (1.0 / 6.0 - y2 * (1.0 / 120.0 - y2 * inner))
    with np.errstate(divide="ignore", invalid="ignore"):
        direct = 1.0 - np.sin(y) / y
    return np.where(np.abs(y) < _SERIES_BELOW, series, direct)


def _cos_defect_at(y: float) -> float:
    """:func:`_cos_defect` of one float (the same formulas, math instead of numpy)."""
    y2 = y * y
    if abs(y) < _SERIES_BELOW:
        return -y * y2 * (1.0 / 24.0 - y2 * (1.0 / 720.0 - y2 * (1.0 / 40320.0 - y2 / 3628800.0)))
    return (2.0 * math.sin(0.5 * y) ** 2 - 0.5 * y2) / y


def _sine_defect_at(y: float) -> float:
    """:func:`_sine_defect` of one float (the same formulas, math instead of numpy)."""
    y2 = y * y
    if abs(y) < _SERIES_BELOW:
        inner = 1.0 / 5040.0 - y2 * (1.0 / 362880.0 - y2 / 39916800.0)
        return y2 * (1.0 / 6.0 - y2 * (1.0 / 120.0 - y2 * inner))
    return 1.0 - math.sin(y) / y


class _Flight(NamedTuple):
    """A flight from a take-off at (phase, scaled relative velocity) to its landing."""

    duration: float  # scaled flight time y* = omega (t_landing - t_take-off)
    approach_velocity: float  # F'(y*), scaled relative velocity before the impact (<= 0)


def _flight(
    sin_phase: float,
    cos_phase: float,
    velocity: float,
    relative_acceleration: float,
    gamma: float,
) -> _Flight:
    """The first landing after a take-off (scaled variables; see the module docstring).

    ``relative_acceleration`` is Gamma sin(phase) - 1, F''(0), passed separately so that a
    take-off from rest at sin(phase) = 1/Gamma uses its exact value 0.
    """

    # f(y) = F(y)/y = u + a y/2 + Gamma sin(phi) [(1 - cos y)/y - y/2]
    #        + Gamma cos(phi) (1 - sin(y)/y), with a = Gamma sin(phi) - 1
    slope = 0.5 * relative_acceleration
    sine_weight, cosine_weight = gamma * sin_phase, gamma * cos_phase

    def gap_over_time(y: np.ndarray) -> np.ndarray:
        return velocity + slope * y + sine_weight * _cos_defect(y) + cosine_weight * _sine_defect(y)

    def gap_over_time_at(y: float) -> float:
        return (
            velocity
            + slope * y
            + sine_weight * _cos_defect_at(y)
            + cosine_weight * _sine_defect_at(y)
        )

    step = TWO_PI / SAMPLES_PER_PERIOD
    # f(y) <= u - y/2 + Gamma (3/y + 1): negative beyond the larger root of y^2/2 - (u+G) y - 3G.
    reach = velocity + gamma
    last = reach + math.sqrt(reach * reach + 6.0 * gamma) + step
    uniform = step * np.arange(1, math.ceil(last / step) + 1)
    geometric = step * 2.0 ** -np.arange(FIRST_STEP_HALVINGS, 0, -1, dtype=float)
    start = [0.0] if velocity > 0.0 else []  # f(0) = u > 0; from rest f(0) = 0 is no landing
    times = np.concatenate((start, geometric, uniform))
    values = gap_over_time(times)
    first = int(np.flatnonzero(values <= 0.0)[0])

    def solve(low: float, high: float) -> float:
        return brentq(gap_over_time_at, low, high, xtol=1e-300, rtol=4 * _EPS)

    if first == 0:  # from rest, a landing before the smallest sample: the ball stays down
        return _Flight(float(times[0]), 0.0)
    # Between samples a and b = a + w, f >= (linear interpolant) - (max|f''|/2)(y - a)(b - y)
    # >= min(f(a), f(b)) - Gamma w^2/24 as |f''| <= Gamma/3: a zero between two positive samples
    # needs min(f(a), f(b)) <= Gamma w^2/24. Only those intervals are minimised; the first sign
    # change is then solved by Brent's method.
    widths = np.diff(times[:first])
    suspect = np.minimum(values[: first - 1], values[1:first]) <= gamma * widths**2 / 24.0
    landing = None
    for i in np.flatnonzero(suspect):
        dip = minimize_scalar(
            gap_over_time_at,
            bounds=(times[i], times[i + 1]),
            method="bounded",
            options={"xatol": 1e-14 * max(1.0, times[i + 1])},
        )
        if dip.fun <= 0.0:
            landing = solve(times[i], dip.x)
            break
    if landing is None:
        landing = solve(times[first - 1], times[first])
    approach = (
        velocity
        - landing
        + gamma * (sin_phase * math.sin(landing) + cos_phase * 2.0 * math.sin(0.5 * landing) ** 2)
    )
    return _Flight(float(landing), min(float(approach), 0.0))


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------


class NextImpact(NamedTuple):
    """The impact that follows a take-off (or a rest on the table), returned by
    :meth:`VibratingTable.impact_map`."""

    #: Table phase omega t of the impact, in [0, 2 pi) (rad).
    phase: float
    #: Relative take-off velocity after the impact, u+ = -e u- >= 0 (m/s).
    relative_velocity: float
    #: Relative velocity just before the impact, u- <= 0 (m/s).
    approach_velocity: float
    #: Phase elapsed since the previous impact (rest on the table plus flight) (rad).
    elapsed_phase: float
    #: Phase spent at rest on the table before the flight (rad), 0 if the ball flew at once.
    rest_phase: float


class PeriodOrbit(NamedTuple):
    """A period-n orbit (one impact every n table periods), from
    :meth:`VibratingTable.period_orbit`."""

    #: Table periods between impacts.
    n: int
    #: Table phase of the impacts, in [0, 2 pi) (rad).
    phase: float
    #: Relative take-off velocity u* = 2 e g pi n / ((1 + e) omega) (m/s).
    relative_velocity: float
    #: Relative approach velocity u- = -2 g pi n / ((1 + e) omega) (m/s).
    approach_velocity: float
    #: Absolute take-off velocity of the ball, g pi n / omega (m/s).
    ball_velocity: float


class ChatterEstimate(NamedTuple):
    """Complete chatter after an impact with a small take-off velocity, from
    :meth:`VibratingTable.chatter`."""

    #: Effective gravity g (1 - Gamma sin(phi0)) of the relative motion (m/s^2).
    effective_gravity: float
    #: Geometric series of the flight times, tau_0 = 2 u0 / (g0 (1 - e)) (s).
    geometric_accumulation_time: float
    #: Accumulation time to first order in omega tau_0, tau_0 (1 + j tau_0 / (3 g0)) (s).
    accumulation_time: float
    #: Phase at which the ball comes to rest on the table, phi0 + omega tau_inf (rad, unwrapped).
    rest_phase: float
    #: Phase at which it leaves the table, the first take-off phase from rest after that (rad,
    #: unwrapped; inf when Gamma <= 1).
    departure_phase: float
    #: Phase spent on the table, departure_phase - rest_phase (rad).
    phase_on_table: float


@dataclass(frozen=True)
class VibratingTable:
    r"""A ball on a table at :math:`s(t) = A\sin(\omega t)`, restitution e (closed forms).

    Parameters
    ----------
    amplitude : float
        A > 0 (m).
    angular_frequency : float
        omega > 0 (rad/s).
    restitution : float
        e in [0, 1).
    gravity : float, default 9.81
        g > 0 (m/s^2).
    """

    amplitude: float
    angular_frequency: float
    restitution: float
    gravity: float = 9.81

    def __post_init__(self) -> None:
        for name in ("amplitude", "angular_frequency", "gravity"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float, np.floating)) and math.isfinite(value)):
                raise ValueError(f"{name} must be a finite number, got {value!r}")
            if value <= 0.0:
                raise ValueError(f"{name} must be > 0, got {value!r}")
        _check_restitution(self.restitution)

    # ---------------------------------------------------------------- scales and the table
    @property
    def acceleration_ratio(self) -> float:
        r""":math:`\Gamma = A\omega^2/g`, the table's peak acceleration over gravity."""
        return self.amplitude * self.angular_frequency**2 / self.gravity

    @property
    def velocity_scale(self) -> float:
        """g / omega (m/s): the unit of the scaled velocities."""
        return self.gravity / self.angular_frequency

    def table_position(self, phase: float | np.ndarray) -> float | np.ndarray:
        """Table position, A sin(phase).

        Parameters
        ----------
        phase : float or numpy.ndarray, any shape
            Table phase omega t (rad).

        Returns
        -------
        float or numpy.ndarray, the shape of ``phase``
            The position (m).
        """
        return self.amplitude * np.sin(phase)

    def table_velocity(self, phase: float | np.ndarray) -> float | np.ndarray:
        """Table velocity, A omega cos(phase).

        Parameters
        ----------
        phase : float or numpy.ndarray, any shape
            Table phase omega t (rad).

        Returns
        -------
        float or numpy.ndarray, the shape of ``phase``
            The velocity (m/s).
        """
        return self.amplitude * self.angular_frequency * np.cos(phase)

    def table_acceleration(self, phase: float | np.ndarray) -> float | np.ndarray:
        """Table acceleration, -A omega^2 sin(phase).

        Parameters
        ----------
        phase : float or numpy.ndarray, any shape
            Table phase omega t (rad).

        Returns
        -------
        float or numpy.ndarray, the shape of ``phase``
            The acceleration (m/s^2).
        """
        return -self.amplitude * self.angular_frequency**2 * np.sin(phase)

    # ---------------------------------------------------------------- sticking
    def departure_phase_from_rest(self, phase: float) -> float:
        r"""The phase at which a ball at rest on the table at ``phase`` leaves it.

        The ball stays while the table's acceleration is at least -g
        (:math:`\Gamma\sin\varphi \le 1`). It leaves at once on
        :math:`[\varphi_d, \pi - \varphi_d)` mod :math:`2\pi`, with
        :math:`\varphi_d = \arcsin(1/\Gamma)` (the table's acceleration below -g, or reaching it
        while falling), otherwise at the next :math:`\varphi_d + 2\pi k`.

        Parameters
        ----------
        phase : float
            Table phase omega t (rad), unwrapped.

        Returns
        -------
        float
            The departure phase (rad, unwrapped, >= ``phase``); inf when Gamma <= 1.
        """
        gamma = self.acceleration_ratio
        if gamma <= 1.0:
            return math.inf
        take_off = math.asin(1.0 / gamma)
        wrapped = phase % TWO_PI
        if take_off <= wrapped < math.pi - take_off:
            return float(phase)
        return float(phase + (take_off - wrapped) % TWO_PI)

    def take_off_phase_from_rest(self) -> float:
        r""":math:`\varphi_d = \arcsin(1/\Gamma) \in (0, \pi/2)`, where a resting ball leaves.

        Returns
        -------
        float
            The phase (rad) at which the table's acceleration falls below -g.

        Raises
        ------
        ValueError
            When Gamma <= 1 (the ball never leaves the table).
        """
        gamma = self.acceleration_ratio
        if gamma <= 1.0:
            raise ValueError(f"amplitude: Gamma = {gamma!r} <= 1, a resting ball never leaves")
        return math.asin(1.0 / gamma)

    def chatter(self, phase: float, relative_velocity: float) -> ChatterEstimate:
        r"""Complete chatter after an impact with a small take-off velocity.

        The relative motion is a ball bouncing under the effective gravity
        :math:`g_0 = g(1 - \Gamma\sin\varphi_0)`: flights :math:`2u_0e^k/g_0` summing to
        :math:`\tau_0 = 2u_0/(g_0(1 - e))`; the table's jerk :math:`j = A\omega^3\cos\varphi_0`
        corrects it to :math:`\tau_\infty = \tau_0(1 + j\tau_0/(3g_0))`, with a relative error
        of order :math:`(\omega\tau_0)^2` (module docstring). The ball then rests on the table
        until :meth:`departure_phase_from_rest`. The estimate assumes the table's acceleration
        stays above -g over the chatter (a rest phase where it is below -g means no rest:
        ``phase_on_table`` is then 0).

        Parameters
        ----------
        phase : float
            Phase of the impact omega t (rad), unwrapped.
        relative_velocity : float
            Relative take-off velocity u0 > 0 after it (m/s).

        Returns
        -------
        ChatterEstimate
            Effective gravity, the accumulation time (geometric series and first-order), the
            phase where the ball comes to rest, the phase where it leaves and the phase spent on
            the table.

        Raises
        ------
        ValueError
            When u0 <= 0, or when the table's acceleration at ``phase`` is at or below -g (the
            ball is not pressed on the table: no chatter).
        """
        if not relative_velocity > 0.0:
            raise ValueError(f"relative_velocity must be > 0, got {relative_velocity!r}")
        effective_gravity = self.gravity * (1.0 - self.acceleration_ratio * math.sin(phase))
        if not effective_gravity > 0.0:
            raise ValueError(
                f"phase: the table's acceleration at phase {phase!r} is at or below -g, "
                "the ball is not pressed on the table"
            )
        geometric = 2.0 * relative_velocity / (effective_gravity * (1.0 - self.restitution))
        jerk = self.amplitude * self.angular_frequency**3 * math.cos(phase)
        accumulation = geometric * (1.0 + jerk * geometric / (3.0 * effective_gravity))
        rest = phase + self.angular_frequency * accumulation
        departure = self.departure_phase_from_rest(rest)
        return ChatterEstimate(
            effective_gravity, geometric, accumulation, rest, departure, float(departure - rest)
        )

    # ---------------------------------------------------------------- exact impact map
    def impact_map(self, phase: float, relative_velocity: float) -> NextImpact | None:
        r"""The exact impact map: from a take-off to the next impact.

        The next impact is the first root of :math:`x(t) - s(t)` after the take-off (see the
        module docstring: sampled bracket, grazing dips ruled out by a curvature bound, then
        Brent's method). With ``relative_velocity`` 0 the ball rests on the table until
        :meth:`departure_phase_from_rest`, then flies from there.

        Parameters
        ----------
        phase : float
            Phase omega t of the take-off (rad).
        relative_velocity : float
            Relative take-off velocity u >= 0 (m/s).

        Returns
        -------
        NextImpact or None
            The next impact; None when the ball rests on the table for ever (u = 0 and
            Gamma <= 1).
        """
        if not (math.isfinite(phase)):
            raise ValueError(f"phase must be finite, got {phase!r}")
        if not (relative_velocity >= 0.0 and math.isfinite(relative_velocity)):
            raise ValueError(
                f"relative_velocity must be finite and >= 0, got {relative_velocity!r}"
            )
        gamma = self.acceleration_ratio
        velocity = relative_velocity / self.velocity_scale
        start = phase
        relative_acceleration = gamma * math.sin(phase) - 1.0
        if velocity == 0.0:
            start = self.departure_phase_from_rest(phase)
            if math.isinf(start):
                return None
            if start != phase:  # the ball left at sin = 1/Gamma: relative acceleration 0
                relative_acceleration = 0.0
        flight = _flight(math.sin(start), math.cos(start), velocity, relative_acceleration, gamma)
        landing = start + flight.duration
        scale = self.velocity_scale
        return NextImpact(
            phase=float(landing % TWO_PI),
            relative_velocity=-self.restitution * flight.approach_velocity * scale,
            approach_velocity=flight.approach_velocity * scale,
            elapsed_phase=float(landing - phase),
            rest_phase=float(start - phase),
        )

    def impact_map_jacobian(self, phase: float, relative_velocity: float) -> np.ndarray:
        r"""Analytic Jacobian of the exact impact map at a take-off followed by a flight.

        By implicit differentiation of the landing condition (module docstring), in the
        variables (phase [rad], relative take-off velocity [m/s]). Its determinant is
        :math:`e^2 u/u'`.

        Parameters
        ----------
        phase : float
            Phase omega t of the take-off (rad).
        relative_velocity : float
            Relative take-off velocity u (m/s): > 0, or 0 where the table's acceleration is
            below -g (the ball leaves at once).

        Returns
        -------
        numpy.ndarray, shape (2, 2)
            [[d phase'/d phase, d phase'/d u (s/m)], [d u'/d phase (m/s), d u'/d u]].

        Raises
        ------
        ValueError
            When the ball does not fly at once (resting on the table) or lands grazing (u- = 0,
            where the map is not differentiable).
        """
        gamma = self.acceleration_ratio
        scale = self.velocity_scale
        velocity = relative_velocity / scale
        sin_phase, cos_phase = math.sin(phase), math.cos(phase)
        if not (velocity > 0.0 or (velocity == 0.0 and gamma * sin_phase > 1.0)):
            raise ValueError(
                f"relative_velocity: {relative_velocity!r} at phase {phase!r} is no flight at once"
            )
        flight = _flight(sin_phase, cos_phase, velocity, gamma * sin_phase - 1.0, gamma)
        y, r = flight.duration, flight.approach_velocity
        if r == 0.0:
            raise ValueError(f"phase: the landing after phase {phase!r} is grazing (u- = 0)")
        e = self.restitution
        landing_acceleration = gamma * math.sin(phase + y) - 1.0  # d r / d theta at fixed phi
        dtheta_dphase = (gamma * y * sin_phase + velocity - y) / r
        dtheta_dvelocity = -y / r
        dvelocity_dphase = -e * (1.0 - gamma * sin_phase + landing_acceleration * dtheta_dphase)
        dvelocity_dvelocity = -e * (1.0 + landing_acceleration * dtheta_dvelocity)
        return np.array(
            [
                [dtheta_dphase, dtheta_dvelocity / scale],
                [dvelocity_dphase * scale, dvelocity_dvelocity],
            ]
        )

    # ---------------------------------------------------------------- period-n orbits
    def period_orbit(self, n: int, stable_branch: bool = True) -> PeriodOrbit:
        r"""The period-n orbit: one impact every n table periods.

        :math:`\cos\varphi^* = g\pi n(1 - e)/(A\omega^2(1 + e))`; ``stable_branch`` selects
        :math:`\varphi^* \in [0, \pi/2]` (sin > 0, the candidate stable orbit), otherwise
        :math:`2\pi - \varphi^*` (a saddle).

        Parameters
        ----------
        n : int
            Table periods between impacts, >= 1.
        stable_branch : bool, default True
            Which root of the phase equation.

        Returns
        -------
        PeriodOrbit
            Impact phase, relative take-off and approach velocities, ball take-off velocity.

        Raises
        ------
        ValueError
            When Gamma is below :func:`birth_acceleration` (no such orbit).
        """
        n = _check_order(n)
        gamma, e = self.acceleration_ratio, self.restitution
        birth = birth_acceleration(n, e)
        if gamma < birth:
            raise ValueError(
                f"n: no period-{n} orbit, Gamma = {gamma!r} < pi n (1 - e)/(1 + e) = {birth!r}"
            )
        phase = math.acos(birth / gamma)
        if not stable_branch:
            phase = TWO_PI - phase
        ball_velocity = math.pi * n * self.velocity_scale
        return PeriodOrbit(
            n=n,
            phase=phase,
            relative_velocity=2.0 * e / (1.0 + e) * ball_velocity,
            approach_velocity=-2.0 / (1.0 + e) * ball_velocity,
            ball_velocity=ball_velocity,
        )

    def period_orbit_jacobian(self, n: int, stable_branch: bool = True) -> np.ndarray:
        r"""Closed-form Jacobian of the exact impact map at the period-n orbit.

        With :math:`P = (1 + e)\Gamma\sin\varphi^*` and :math:`c = g/\omega`:
        [[1 - P, (1 + e)/c], [c e P (Gamma sin(phi*) - 1), e^2 - e P]]; determinant
        :math:`e^2`, trace :math:`1 + e^2 - (1 + e)^2\Gamma\sin\varphi^*`.

        Parameters
        ----------
        n : int
            Table periods between impacts, >= 1.
        stable_branch : bool, default True
            Which root of the phase equation (:meth:`period_orbit`).

        Returns
        -------
        numpy.ndarray, shape (2, 2)
            In the variables (phase [rad], relative take-off velocity [m/s]).
        """
        orbit = self.period_orbit(n, stable_branch)
        e, scale = self.restitution, self.velocity_scale
        gamma_sin = self.acceleration_ratio * math.sin(orbit.phase)
        p = (1.0 + e) * gamma_sin
        return np.array(
            [
                [1.0 - p, (1.0 + e) / scale],
                [scale * e * p * (gamma_sin - 1.0), e * e - e * p],
            ]
        )

    def period_orbit_multipliers(self, n: int, stable_branch: bool = True) -> np.ndarray:
        r"""Eigenvalues of :meth:`period_orbit_jacobian`, from :math:`\lambda^2 - t\lambda +
        e^2 = 0`.

        Parameters
        ----------
        n : int
            Table periods between impacts, >= 1.
        stable_branch : bool, default True
            Which root of the phase equation (:meth:`period_orbit`).

        Returns
        -------
        numpy.ndarray, shape (2,), complex
            The multipliers, the one of larger modulus first (a complex pair has modulus e).
        """
        orbit = self.period_orbit(n, stable_branch)
        e = self.restitution
        trace = 1.0 + e * e - (1.0 + e) ** 2 * self.acceleration_ratio * math.sin(orbit.phase)
        root = np.sqrt(complex(0.25 * trace * trace - e * e))
        half = 0.5 * trace
        first, second = (half + root, half - root) if trace >= 0.0 else (half - root, half + root)
        return np.array([first, second])

    def period_orbit_clears_table(self, n: int, stable_branch: bool = True) -> bool:
        r"""Whether the period-n orbit is an orbit of the exact map.

        The closed form assumes that the ball flies at once and that its flight clears the table
        until the landing n periods on; the exact map (:meth:`impact_map`) decides: the next
        impact from the orbit's take-off is the orbit's landing (to 1e-9 of the n periods), not
        an earlier one. For e = 0 the take-off velocity is 0 and the ball also has to leave at
        once, :math:`\Gamma\sin\varphi^* \ge 1`, i.e. :math:`\Gamma \ge (1 + \pi^2 n^2)^{1/2}`;
        below it rests on the table (a sticking orbit, not this one).

        Parameters
        ----------
        n : int
            Table periods between impacts, >= 1.
        stable_branch : bool, default True
            Which root of the phase equation (:meth:`period_orbit`).

        Returns
        -------
        bool
            True when the orbit is an orbit of the exact map.
        """
        orbit = self.period_orbit(n, stable_branch)
        impact = self.impact_map(orbit.phase, orbit.relative_velocity)
        return impact is not None and abs(impact.elapsed_phase - TWO_PI * n) <= 1e-9 * n
