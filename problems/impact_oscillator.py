"""Impact oscillators: a free harmonic oscillator against a wall, and the forced Shaw-Holmes type
oscillator with its exact one-impact-per-period orbit."""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import brentq

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import CompiledProblem, ProblemKernels

from .bouncing_ball import MAX_IMPACT_COUNT

#: An amplitude e^k A below this is replaced by the rest state (no underflow).
_AMPLITUDE_FLOOR = 1e-300


# --------------------------------------------------------------------------------------------
# Impacting (free) oscillator
# --------------------------------------------------------------------------------------------

#: The parameters of the free oscillator's kernels, in the order of the vector p.
OSCILLATOR_PARAMETERS = ("frequency_squared",)
(FREQUENCY_SQUARED,) = parameter_indices(OSCILLATOR_PARAMETERS)


@kernel
def unit_mass_matrix(q, p, out):
    out[0, 0] = 1.0


@kernel
def oscillator_forces(t, q, v, p, out):
    # F = -omega^2 x; shared with problems/moving_stop.py (p starts with frequency_squared)
    out[0] = -p[FREQUENCY_SQUARED] * q[0]


@kernel
def _oscillator_gap(q, p, out):
    out[0] = q[0]


@kernel
def _oscillator_gap_gradient(q, p, out):
    out[0, 0] = 1.0


class ImpactingOscillator(CompiledProblem):
    r"""Harmonic oscillator bouncing on a wall at its equilibrium (1 DOF, 1 constraint).

    .. math::

        x'' + \omega^2 x = 0, \qquad g(x) = x \ge 0, \qquad v^+ = -e v^- \ \text{at}\ x = 0,

    unit mass, :math:`\omega` = ``frequency``.

    **Exact solution** (all t >= t0). With A = sqrt(x0^2 + (v0/omega)^2) and the initial phase
    theta0 = atan2(omega x0, v0) in [0, pi], the first impact is at t_1 = t0 + (pi - theta0)/omega
    and impact k at t_k = t_1 + (k - 1) pi / omega (the flights are half periods, no
    accumulation). After impact k, x = e^k A sin(omega (t - t_k)) and
    v = e^k A omega cos(omega (t - t_k)): the amplitude is e^k A and the energy
    (v^2 + omega^2 x^2)/2 is e^{2k} E0. For x0 = 1, v0 = 0, omega = 1: impacts at pi/2 + k pi,
    energy e^{2k}/2. e = 0: rest at x = 0 after t_1 (the spring force vanishes there);
    x0 = v0 = 0: rest, no impact. Once e^k A < 1e-300 the rest state is returned. At an impact
    instant the post-impact velocity is returned.

    Parameters
    ----------
    restitution : float, default 0.8
        e in [0, 1].
    x0 : float, default 1.0
        Initial position, >= 0.
    v0 : float, default 0.0
        Initial velocity.
    frequency : float, default 1.0
        omega > 0.
    t0 : float, default 0.0
        Initial time.

    Raises
    ------
    ValueError
        If a parameter is not finite, out of range, or x0 < 0; the message names it.

    References
    ----------
    Classical benchmark of impact integrators, e.g. V. Acary, B. Brogliato, *Numerical Methods
    for Nonsmooth Dynamical Systems*, Springer (2008).
    """

    coordinates = (("x", "m"),)
    parameter_units = dict(restitution="-", x0="m", v0="m/s", frequency="rad/s", t0="s")

    KERNELS = ProblemKernels(
        unit_mass_matrix,
        oscillator_forces,
        _oscillator_gap,
        _oscillator_gap_gradient,
        affine_gap=True,
        constant_mass=True,
    )

    def __init__(
        self,
        restitution: float = 0.8,
        x0: float = 1.0,
        v0: float = 0.0,
        frequency: float = 1.0,
        t0: float = 0.0,
    ) -> None:
        self.restitution = checks.restitution(restitution)
        x0 = checks.finite_scalar(x0, "x0")
        if x0 < 0.0:
            raise ValueError(f"x0 must be >= 0 (admissible: the wall is x = 0), got {x0!r}")
        v0 = checks.finite_scalar(v0, "v0")
        self.frequency = checks.positive_scalar(frequency, "frequency")
        self.t0 = checks.finite_scalar(t0, "t0")
        self.name = "ImpactingOscillator"
        self.n_dof = 1
        self.n_constraints = 1
        self.q0 = np.array([x0])
        self.v0 = np.array([v0])
        w = self.frequency
        #: Amplitude A of the first flight.
        self.amplitude = math.hypot(x0, v0 / w)
        theta0 = math.atan2(w * x0, v0)
        #: Time t_1 of the first impact (inf if the oscillator rests at x = 0).
        self.first_impact_time = (
            self.t0 + (math.pi - theta0) / w if self.amplitude > 0.0 else math.inf
        )
        self._half_period = math.pi / w
        e = self.restitution
        if self.amplitude == 0.0:
            self._k_rest = math.inf
        elif e == 0.0:
            self._k_rest = 1.0
        elif e == 1.0:
            self._k_rest = math.inf
        else:  # first k with e^k A omega < floor
            ratio = math.log(_AMPLITUDE_FLOOR) - math.log(self.amplitude * w)
            self._k_rest = max(1.0, math.floor(ratio / math.log(e)) + 1.0)
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`OSCILLATOR_PARAMETERS`."""
        return parameter_vector(OSCILLATOR_PARAMETERS, frequency_squared=self.frequency**2)

    def potential_energy(self, q: np.ndarray) -> float:
        """omega^2 x^2 / 2."""
        x = float(np.asarray(q, dtype=float).reshape(-1)[0])
        return 0.5 * self.frequency**2 * x * x

    def _impact_time(self, k: np.ndarray) -> np.ndarray:
        return self.first_impact_time + (k - 1.0) * self._half_period

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact (x, v) at times ``t`` >= t0, each of shape (len(t), 1).

        See the class docstring; post-impact velocity at an impact instant.
        """
        t = checks.times(t, self.t0)
        w, e = self.frequency, self.restitution
        x0, v0 = float(self.q0[0]), float(self.v0[0])
        tau = t - self.t0
        c, s = np.cos(w * tau), np.sin(w * tau)
        x = np.maximum(x0 * c + (v0 / w) * s, 0.0)  # the clip only removes round-off near t_1
        v = v0 * c - w * x0 * s
        t1 = self.first_impact_time
        after = t >= t1
        if not after.any():
            return x[:, None], v[:, None]
        x[after] = 0.0
        v[after] = 0.0
        rest = t >= self._impact_time(np.array(self._k_rest))
        flying = after & ~rest
        if flying.any():
            tf = t[flying]
            k = np.floor((tf - t1) / self._half_period) + 1.0
            k = np.clip(k, 1.0, max(self._k_rest - 1.0, 1.0))
            for _ in range(8):  # make k exactly consistent with impact_times
                low = tf < self._impact_time(k)
                high = tf >= self._impact_time(k + 1.0)
                if not (low.any() or high.any()):
                    break
                k = k - low + high
            amp = self.amplitude * (e**k)
            ta = tf - self._impact_time(k)
            tb = self._impact_time(k + 1.0) - tf
            x[flying] = amp * np.sin(w * np.minimum(ta, tb))  # >= 0 in floating point
            v[flying] = amp * w * np.cos(w * ta)
        return x[:, None], v[:, None]

    def impact_times(self, t_end: float, max_count: int = MAX_IMPACT_COUNT) -> np.ndarray:
        """Exact impact times t_k = t_1 + (k - 1) pi / omega in [t0, t_end], at most ``max_count``.

        For e = 0 only t_1; for e < 1 also only the impacts before the amplitude e^k A drops
        below 1e-300 (after which the exact solution is the rest state).
        """
        max_count = checks.positive_int(max_count, "max_count")
        t_end = checks.finite_scalar(t_end, "t_end")
        t1 = self.first_impact_time
        if not t1 <= t_end:
            return np.zeros(0)
        count = min(
            float(max_count), self._k_rest, math.floor((t_end - t1) / self._half_period) + 2.0
        )
        times = self._impact_time(np.arange(1.0, count + 1.0))
        return times[times <= t_end]


# --------------------------------------------------------------------------------------------
# Forced impact oscillator
# --------------------------------------------------------------------------------------------

#: The parameters of the forced oscillator's kernels, in the order of the vector p.
FORCED_PARAMETERS = ("omega", "sigma", "zeta")
OMEGA, SIGMA, ZETA = parameter_indices(FORCED_PARAMETERS)


@kernel
def _forced_forces(t, q, v, p, out):
    out[0] = np.cos(p[OMEGA] * t) - q[0] - 2.0 * p[ZETA] * v[0]


@kernel
def _forced_gap(q, p, out):
    out[0] = p[SIGMA] - q[0]


@kernel
def _forced_gap_gradient(q, p, out):
    out[0, 0] = -1.0


#: Grid points per period for the admissibility check of the periodic orbit.
_ADMISSIBILITY_GRID = 4000


def _flight(tau: np.ndarray, omega: float, phi: float, p_amp: float, c1: float, c2: float):
    """x, v at time tau after an impact at phase phi.

    x = P cos(phi + omega tau) + c1 cos(tau) + c2 sin(tau) (free flight, zeta = 0).
    """
    x = p_amp * np.cos(phi + omega * tau) + c1 * np.cos(tau) + c2 * np.sin(tau)
    v = -p_amp * omega * np.sin(phi + omega * tau) - c1 * np.sin(tau) + c2 * np.cos(tau)
    return x, v


class ForcedImpactOscillator(CompiledProblem):
    r"""Harmonically forced oscillator with a stop (Shaw-Holmes type), 1 DOF, 1 constraint.

    .. math::

        x'' + 2 \zeta x' + x = \cos(\omega t), \qquad g(x) = \sigma - x \ge 0, \qquad
        v^+ = -r v^- \ \text{at}\ x = \sigma.

    **Exact solution** (zeta = 0): the one-impact-per-period orbit (period T = 2 pi/omega).
    With P = 1/(1 - omega^2), the free flight after an impact at phase phi = omega t_i is
    x = P cos(omega t) + c1 cos(t - t_i) + c2 sin(t - t_i), c1 = sigma - P cos phi,
    c2 = -r V + P omega sin phi. Periodicity (x = sigma, v = V at t_i + T) gives
    c2 = -(1 + r) V / 2, c1 = a = -(1 + r) V cot(pi/omega) / 2 and

    .. math::

        (1 - \omega^2)^2 \Big[ \frac{V^2 (1-r)^2}{4 \omega^2}
            + \big(\sigma + \tfrac{1}{2} V (1+r) \cot(\pi/\omega)\big)^2 \Big] = 1,
        \quad \sin\phi = -\frac{V (1-r)(1-\omega^2)}{2\omega}, \quad
        \cos\phi = \frac{\sigma - a}{P}.

    The quadratic in V is solved in closed form; a root is kept if V > 0 and the orbit is
    admissible: x <= sigma over the whole period, checked on a grid of 4000 points per period
    plus a root-found local maximum in every grid interval where v changes sign from + to -
    (tolerance 1e-10 max(1, |sigma|, |P|, |c1|, |c2|)), with a transversal arrival v = V > 0.
    If both roots qualify, the larger V is taken (in the cases we checked it is the stable orbit,
    the smaller one a saddle). For omega = 2.5, sigma = 0.05, r = 0.8: V = 0.477102,
    phi = 3.041233, stable (a 1e-8 perturbation shrinks over 12 periods); omega = 3, sigma = 0
    is unstable and is no long-horizon reference.

    The problem starts ON the orbit, mid-flight, half a period after an impact:
    t0 = (phi + pi)/omega, (q0, v0) the exact state there. ``exact_solution`` is T-periodic and
    exact up to round-off (the flight is evaluated from the phase since the last impact);
    impacts are at (phi + 2 pi j)/omega, post-impact velocity at an impact instant.

    With zeta != 0 (damping, zeta >= 0) the dynamics includes 2 zeta x' and starts from the same
    state as for zeta = 0; no exact solution then (:attr:`has_exact_solution` is False).

    Parameters
    ----------
    omega : float, default 2.5
        Forcing frequency (> 0, not 1 (resonance), and sin(pi/omega) != 0).
    sigma : float, default 0.05
        Position of the stop.
    restitution : float, default 0.8
        r in [0, 1].
    zeta : float, default 0.0
        Damping ratio, >= 0.

    Raises
    ------
    ValueError
        For a bad parameter (named in the message), or when no admissible one-impact-per-period
        orbit exists for (omega, sigma, restitution).

    References
    ----------
    S. W. Shaw, P. J. Holmes, "A periodically forced piecewise linear oscillator", J. Sound Vib.
    90 (1983) 129-155; A. B. Nordmark, "Non-periodic motion caused by grazing incidence in an
    impact oscillator", J. Sound Vib. 145 (1991) 279-297.
    """

    coordinates = (("x", "m"),)
    parameter_units = dict(omega="rad/s", sigma="m", restitution="-", zeta="-")

    KERNELS = ProblemKernels(
        unit_mass_matrix,
        _forced_forces,
        _forced_gap,
        _forced_gap_gradient,
        affine_gap=True,
        constant_mass=True,
    )

    def __init__(
        self,
        omega: float = 2.5,
        sigma: float = 0.05,
        restitution: float = 0.8,
        zeta: float = 0.0,
    ) -> None:
        self.omega = checks.positive_scalar(omega, "omega")
        self.sigma = checks.finite_scalar(sigma, "sigma")
        self.restitution = checks.restitution(restitution)
        self.zeta = checks.finite_scalar(zeta, "zeta")
        if self.zeta < 0.0:
            raise ValueError(f"zeta must be >= 0, got {zeta!r}")
        w = self.omega
        if abs(1.0 - w * w) < 1e-8:
            raise ValueError(f"omega must not be 1 (resonance: no periodic orbit), got {omega!r}")
        if abs(math.sin(math.pi / w)) < 1e-8:
            raise ValueError(
                f"omega must not be 1/k for an integer k (cot(pi/omega) is undefined), "
                f"got {omega!r}"
            )
        self.name = "ForcedImpactOscillator"
        self.n_dof = 1
        self.n_constraints = 1
        #: Period T = 2 pi / omega of the forcing and of the orbit.
        self.period = 2.0 * math.pi / w
        #: Amplitude P = 1/(1 - omega^2) of the forced response.
        self.forced_amplitude = 1.0 / (1.0 - w * w)
        v, phi = self._orbit()
        #: Impact speed V > 0 of the periodic orbit (pre-impact velocity; post-impact is -r V).
        self.impact_speed = v
        #: Impact phase phi = omega t_i in (-pi, pi].
        self.impact_phase = phi
        r, p_amp = self.restitution, self.forced_amplitude
        self._c1 = self.sigma - p_amp * math.cos(phi)
        self._c2 = -r * v + p_amp * w * math.sin(phi)
        self._t_impact = phi / w
        self.t0 = (phi + math.pi) / w
        x0, v0 = _flight(np.array([0.5 * self.period]), w, phi, p_amp, self._c1, self._c2)
        self.q0 = np.array([float(x0[0])])
        self.v0 = np.array([float(v0[0])])
        self._finish_init()

    def _orbit(self) -> tuple[float, float]:
        """(V, phi) of the admissible one-impact-per-period orbit, or ValueError."""
        w, s, r = self.omega, self.sigma, self.restitution
        p_amp = self.forced_amplitude
        alpha = (1.0 - r) / (2.0 * w)
        beta = 0.5 * (1.0 + r) / math.tan(math.pi / w)
        # (alpha^2 + beta^2) V^2 + 2 sigma beta V + sigma^2 - P^2 = 0
        qa, qb, qc = alpha * alpha + beta * beta, 2.0 * s * beta, s * s - p_amp * p_amp
        disc = qb * qb - 4.0 * qa * qc
        reasons = []
        candidates = []
        if disc < 0.0:
            reasons.append(f"the equation for V has no real root (discriminant {disc:.3g})")
        else:
            # numerically stable pair of roots
            big = -0.5 * (qb + math.copysign(math.sqrt(disc), qb))
            roots = {big / qa}
            if big != 0.0:
                roots.add(qc / big)
            for v in sorted(roots, reverse=True):
                if not (math.isfinite(v) and v > 0.0):
                    reasons.append(f"root V={v:.6g} is not > 0")
                    continue
                a = -v * beta
                phi = math.atan2(-v * (1.0 - r) / (2.0 * w * p_amp), (s - a) / p_amp)
                excess = self._max_excess(v, phi)
                if excess > 0.0:
                    reasons.append(f"root V={v:.6g} leaves x <= sigma by {excess:.3g}")
                    continue
                candidates.append((v, phi))
        if not candidates:
            raise ValueError(
                f"no admissible one-impact-per-period orbit for omega={w!r}, sigma={s!r}, "
                f"restitution={r!r}: " + "; ".join(reasons)
            )
        return candidates[0]

    def _max_excess(self, v: float, phi: float) -> float:
        """Largest x - sigma - tol over a flight of the candidate orbit (<= 0: admissible)."""
        w, s, r, p_amp = self.omega, self.sigma, self.restitution, self.forced_amplitude
        c1 = s - p_amp * math.cos(phi)
        c2 = -r * v + p_amp * w * math.sin(phi)
        tol = 1e-10 * max(1.0, abs(s), abs(p_amp), abs(c1), abs(c2))
        tau = np.linspace(0.0, self.period, _ADMISSIBILITY_GRID + 1)
        x, xd = _flight(tau, w, phi, p_amp, c1, c2)
        excess = float(np.max(x[1:-1] - s)) if tau.size > 2 else -math.inf
        for i in np.nonzero((xd[:-1] > 0.0) & (xd[1:] <= 0.0))[0]:

            def rate(t, c1=c1, c2=c2):
                return float(_flight(np.array([t]), w, phi, p_amp, c1, c2)[1][0])

            t_max = brentq(rate, tau[i], tau[i + 1], xtol=1e-14)
            excess = max(excess, float(_flight(np.array([t_max]), w, phi, p_amp, c1, c2)[0][0]) - s)
        # Transversal arrival: v = V > 0 at tau = T is required as well.
        end_rate = float(_flight(np.array([self.period]), w, phi, p_amp, c1, c2)[1][0])
        if not end_rate > 0.0:
            return math.inf
        return excess - tol

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`FORCED_PARAMETERS`."""
        return parameter_vector(
            FORCED_PARAMETERS, omega=self.omega, sigma=self.sigma, zeta=self.zeta
        )

    @property
    def has_exact_solution(self) -> bool:
        """True for zeta = 0 (the periodic orbit); False with damping."""
        return self.zeta == 0.0

    def potential_energy(self, q: np.ndarray) -> float:
        """x^2 / 2 (the forcing cos(omega t) is non-conservative and not included)."""
        x = float(np.asarray(q, dtype=float).reshape(-1)[0])
        return 0.5 * x * x

    def _impact_time(self, j: np.ndarray) -> np.ndarray:
        return self._t_impact + j * self.period

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact (x, v) on the periodic orbit at times ``t`` >= t0, each of shape (len(t), 1).

        Raises NotImplementedError for zeta != 0.
        """
        if not self.has_exact_solution:
            raise NotImplementedError(
                f"problem {self.name!r} has no exact solution with damping (zeta={self.zeta!r})"
            )
        t = checks.times(t, self.t0)
        j = np.floor((t - self._t_impact) / self.period)
        for _ in range(8):  # make j exactly consistent with impact_times
            low = t < self._impact_time(j)
            high = t >= self._impact_time(j + 1.0)
            if not (low.any() or high.any()):
                break
            j = j - low + high
        tau = t - self._impact_time(j)
        x, v = _flight(
            tau, self.omega, self.impact_phase, self.forced_amplitude, self._c1, self._c2
        )
        return x[:, None], v[:, None]

    def impact_times(self, t_end: float, max_count: int = MAX_IMPACT_COUNT) -> np.ndarray:
        """Exact impact times (phi + 2 pi j)/omega in [t0, t_end], at most ``max_count``.

        Raises NotImplementedError for zeta != 0.
        """
        if not self.has_exact_solution:
            raise NotImplementedError(
                f"problem {self.name!r} has no exact impact times with damping (zeta={self.zeta!r})"
            )
        max_count = checks.positive_int(max_count, "max_count")
        t_end = checks.finite_scalar(t_end, "t_end")
        if t_end < self.t0:
            return np.zeros(0)
        count = min(max_count, math.floor((t_end - self._t_impact) / self.period) + 1)
        times = self._impact_time(np.arange(1.0, count + 1.0))
        return times[(times >= self.t0) & (times <= t_end)]
