"""Bouncing ball: a point mass under gravity above the floor q >= 0, exact through accumulation.

This module also holds the closed form of a one-dimensional gap under constant acceleration with
Newton impacts (:func:`bouncing_gap`, :func:`bouncing_impact_times`), shared with
:mod:`impactbench.problems.slanted_wall`, whose gap obeys the same law.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from impactbench.core import checks
from impactbench.core.kernels import kernel, parameter_indices, parameter_vector
from impactbench.core.problem import CompiledProblem, ProblemKernels

#: Default cap on the number of impacts returned by ``impact_times``.
MAX_IMPACT_COUNT = 10_000

#: A flight whose speed e^k V1 is below this is replaced by the rest state (no underflow).
_SPEED_FLOOR = 1e-300

#: A flight shorter than this many ulps of the accumulation time is replaced by the rest state.
_FLIGHT_ULPS = 64.0


# --------------------------------------------------------------------------------------------
# Closed form of a 1-D gap s(t) with s'' = -g between impacts and the Newton law u+ = -e u-.
# --------------------------------------------------------------------------------------------


class _Schedule(NamedTuple):
    """Impact schedule of the 1-D bouncing gap (see :func:`bouncing_gap`)."""

    t0: float
    s0: float
    u0: float
    g: float
    e: float
    t1: float  # first impact time (inf if there is none)
    v1: float  # impact speed |u-| at t1 (0 if no impact)
    period: float  # e = 1, g > 0: time between impacts; otherwise nan
    scale: float  # D = 2 e V1 / (g (1 - e)) for 0 < e < 1, g > 0 (t_inf = t1 + D); else nan
    log_e: float  # log(e) for 0 < e < 1; else nan
    k_rest: float  # impact index after which the rest state is used (inf if never)
    t_rest: float  # time of that impact (inf if never)


def _schedule(t0: float, s0: float, u0: float, g: float, e: float) -> _Schedule:
    nan, inf = math.nan, math.inf
    s0 = max(s0, 0.0)
    if g > 0.0:
        v1 = math.sqrt(u0 * u0 + 2.0 * g * s0)
        # t1 - t0 = (u0 + V1) / g, written without cancellation when u0 < 0.
        t1 = t0 + ((u0 + v1) / g if u0 >= 0.0 else 2.0 * s0 / (v1 - u0))
        if v1 == 0.0 or e == 0.0:
            return _Schedule(t0, s0, u0, g, e, t1, v1, nan, nan, nan, 1.0, t1)
        if e == 1.0:
            return _Schedule(t0, s0, u0, g, e, t1, v1, 2.0 * v1 / g, nan, nan, inf, inf)
        log_e = math.log(e)
        scale = 2.0 * e * v1 / (g * (1.0 - e))
        t_inf = t1 + scale
        # First impact index k >= 1 whose next flight (speed e^k V1, duration 2 e^k V1 / g) is
        # below round-off: shorter than _FLIGHT_ULPS ulps of the time, or speed < _SPEED_FLOOR.
        tol_t = _FLIGHT_ULPS * np.finfo(float).eps * max(abs(t1), abs(t_inf))
        log_rho = max(math.log(tol_t * g / 2.0) if tol_t > 0.0 else -inf, math.log(_SPEED_FLOOR))
        log_rho -= math.log(v1)
        if log_rho >= 0.0:
            k_rest = 1.0
        else:
            k_rest = max(1.0, math.floor(log_rho / log_e) + 1.0)
            while k_rest > 1.0 and (k_rest - 1.0) * log_e < log_rho:
                k_rest -= 1.0
            while k_rest * log_e >= log_rho:
                k_rest += 1.0
        sched = _Schedule(t0, s0, u0, g, e, t1, v1, nan, scale, log_e, k_rest, nan)
        return sched._replace(t_rest=float(_impact_time(sched, np.array(k_rest))))
    # g <= 0: the gap accelerates away from the wall (or moves uniformly): at most one impact.
    if u0 >= 0.0:
        return _Schedule(t0, s0, u0, g, e, inf, 0.0, nan, nan, nan, inf, inf)
    if g == 0.0:
        return _Schedule(t0, s0, u0, g, e, t0 + s0 / -u0, -u0, nan, nan, nan, inf, inf)
    disc = u0 * u0 + 2.0 * g * s0  # = u0^2 - 2 |g| s0
    if disc <= 0.0:  # the gap turns back before (or while grazing) the wall: no impact
        return _Schedule(t0, s0, u0, g, e, inf, 0.0, nan, nan, nan, inf, inf)
    w = math.sqrt(disc)
    t1 = t0 + 2.0 * s0 / (w - u0)  # smaller root of s0 + u0 tau + |g| tau^2 / 2 = 0
    return _Schedule(t0, s0, u0, g, e, t1, w, nan, nan, nan, inf, inf)


def _impact_time(sched: _Schedule, k: np.ndarray) -> np.ndarray:
    """Time of impact number k (k = 1, 2, ...; float array), for g > 0 and 0 < e <= 1."""
    if sched.e == 1.0:
        return sched.t1 + (k - 1.0) * sched.period
    # t_k = t1 + D (1 - e^(k-1)), with expm1 so that it stays accurate for e close to 1.
    return sched.t1 - sched.scale * np.expm1((k - 1.0) * sched.log_e)


def _flight_index(sched: _Schedule, t: np.ndarray) -> np.ndarray:
    """Number k >= 1 of impacts at or before t, for t in [t1, t_rest) (g > 0, 0 < e <= 1)."""
    if sched.e == 1.0:
        k = np.floor((t - sched.t1) / sched.period) + 1.0
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            k = np.floor(np.log1p(-(t - sched.t1) / sched.scale) / sched.log_e) + 1.0
        k = np.where(np.isfinite(k), k, sched.k_rest - 1.0)
    k = np.clip(k, 1.0, max(sched.k_rest - 1.0, 1.0))
    # The estimate is off by at most one near an impact; make it exactly consistent with the
    # impact times that _impact_time (and so impact_times) returns.
    for _ in range(8):
        low = t < _impact_time(sched, k)
        high = t >= _impact_time(sched, k + 1.0)
        if not (low.any() or high.any()):
            break
        k = k - low + high
    return k


def bouncing_gap(
    t: np.ndarray | float,
    *,
    t0: float,
    s0: float,
    u0: float,
    gravity: float,
    restitution: float,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Exact gap s(t) >= 0 and gap rate u(t) = s'(t) of a 1-D bouncing gap.

    Between impacts s'' = -gravity; at s = 0 with u- < 0 the Newton law u+ = -e u- applies
    (e = ``restitution``). With g = gravity > 0, V1 = sqrt(u0^2 + 2 g s0) and

    .. math::

        t_1 = t_0 + (u_0 + V_1)/g, \qquad
        t_{k+1} = t_1 + \frac{2 e V_1}{g} \frac{1 - e^k}{1 - e}, \qquad
        s(t) = e^k V_1 (t - t_k) - \tfrac{g}{2} (t - t_k)^2 \ \text{on}\ [t_k, t_{k+1}),

    and, for e < 1, s = u = 0 after the accumulation time t_inf = t_1 + 2 e V_1 / (g (1 - e)).
    e = 1 is periodic (period 2 V1 / g), e = 0 is at rest after t_1. With gravity <= 0 there is
    at most one impact (the gap then accelerates away from the wall, or moves uniformly).

    Round-off: flight k is evaluated as s = (g/2)(t - t_k)(t_{k+1} - t), which is >= 0 exactly
    in floating point; t_k uses ``expm1`` so that it stays accurate for e close to 1. The
    flights after impact index ``k_rest`` -- the first k whose speed e^k V1 is below 1e-300 or
    whose duration 2 e^k V1 / g is below 64 ulps of t_inf -- are replaced by the rest state
    (their heights are below (64 eps t_inf)^2 g / 8, far below round-off of any position).

    Parameters
    ----------
    t : array_like, shape (N,)
        Times, finite and >= t0.
    t0, s0, u0 : float
        Initial time, gap (>= 0; a negative round-off value is treated as 0) and gap rate.
    gravity : float
        g in s'' = -g; any finite value.
    restitution : float
        e in [0, 1].

    Returns
    -------
    s, u : ndarray, shape (N,)
        Gap and gap rate; at an impact instant u is the post-impact value (right limit).
    """
    sched = _schedule(float(t0), float(s0), float(u0), float(gravity), float(restitution))
    t = checks.times(t, sched.t0)
    g, e = sched.g, sched.e
    tau = t - sched.t0
    s = sched.s0 + tau * (sched.u0 - 0.5 * g * tau)
    u = sched.u0 - g * tau
    after = t >= sched.t1
    if g <= 0.0:
        # one impact with speed V1 = w, then s = e w (t - t1) + |g| (t - t1)^2 / 2
        tt = t[after] - sched.t1
        s[after] = tt * (e * sched.v1 - 0.5 * g * tt)
        u[after] = e * sched.v1 - g * tt
        s[~after] = np.maximum(s[~after], 0.0)
        return s, u
    s[~after] = np.maximum(s[~after], 0.0)  # only round-off of the first flight near t1
    rest = t >= sched.t_rest
    s[rest] = 0.0
    u[rest] = 0.0
    flying = after & ~rest
    if flying.any():
        tf = t[flying]
        k = _flight_index(sched, tf)
        tk = _impact_time(sched, k)
        tk1 = _impact_time(sched, k + 1.0)
        speed = sched.v1 * (1.0 if e == 1.0 else np.exp(k * sched.log_e))
        s[flying] = 0.5 * g * (tf - tk) * (tk1 - tf)
        u[flying] = speed - g * (tf - tk)
    return s, u


def bouncing_key_times(
    *, t0: float, s0: float, u0: float, gravity: float, restitution: float
) -> tuple[float, float]:
    """(t_1, t_inf) of the 1-D bouncing gap (see :func:`bouncing_gap`).

    t_1 is the first impact time (inf if there is none). t_inf is the exact time from which
    s = u = 0 for good: t_1 + 2 e V1 / (g (1 - e)) for g > 0 and 0 < e < 1, t_1 for g > 0 and
    e = 0 (or V1 = 0); inf when the gap never comes to rest (e = 1, or g < 0, or g = 0 unless
    e = 0 and there is an impact, or s0 = u0 = 0).
    """
    sched = _schedule(float(t0), float(s0), float(u0), float(gravity), float(restitution))
    if sched.g > 0.0:
        if sched.v1 == 0.0 or sched.e == 0.0:
            return sched.t1, sched.t1
        if sched.e == 1.0:
            return sched.t1, math.inf
        return sched.t1, sched.t1 + sched.scale
    if sched.g == 0.0 and sched.s0 == 0.0 and sched.u0 == 0.0:
        return math.inf, sched.t0
    if sched.g == 0.0 and sched.e == 0.0 and math.isfinite(sched.t1):
        return sched.t1, sched.t1
    return sched.t1, math.inf


def bouncing_impact_times(
    t_end: float,
    *,
    t0: float,
    s0: float,
    u0: float,
    gravity: float,
    restitution: float,
    max_count: int = MAX_IMPACT_COUNT,
) -> np.ndarray:
    """Exact impact times in [t0, t_end] of the 1-D bouncing gap (see :func:`bouncing_gap`).

    For e < 1 there are infinitely many impacts before t_inf; returned are those with index
    k <= min(``max_count``, k_rest) (k = 1 is the first impact; k_rest is the round-off cut-off
    of :func:`bouncing_gap`, after which the exact solution is the rest state). The times are
    the very values at which :func:`bouncing_gap` switches flights.
    """
    max_count = checks.positive_int(max_count, "max_count")
    t_end = checks.finite_scalar(t_end, "t_end")
    sched = _schedule(float(t0), float(s0), float(u0), float(gravity), float(restitution))
    if not sched.t1 <= t_end or sched.v1 == 0.0:  # a zero-speed touch is no impact
        return np.zeros(0)
    if sched.g <= 0.0 or sched.k_rest == 1.0:
        return np.array([sched.t1])
    count = float(max_count)
    if sched.e == 1.0:
        count = min(count, math.floor((t_end - sched.t1) / sched.period) + 2.0)
    count = min(count, sched.k_rest)
    times = _impact_time(sched, np.arange(1.0, count + 1.0))
    return times[times <= t_end]


# --------------------------------------------------------------------------------------------
# The problem
# --------------------------------------------------------------------------------------------


#: The parameters of the kernels, in the order of the vector p.
PARAMETERS = ("gravity", "mass")
GRAVITY, MASS = parameter_indices(PARAMETERS)


@kernel
def ball_mass_matrix(q, p, out):
    # M = m; shared with problems/ball_on_vibrating_table.py (p starts with gravity, mass)
    out[0, 0] = p[MASS]


@kernel
def ball_forces(t, q, v, p, out):
    out[0] = -p[MASS] * p[GRAVITY]


@kernel
def _ball_gap(q, p, out):
    out[0] = q[0]


@kernel
def _ball_gap_gradient(q, p, out):
    out[0, 0] = 1.0


class BouncingBall(CompiledProblem):
    r"""A ball of mass m falling under gravity onto the floor q = 0 (1 DOF, 1 constraint).

    .. math::

        m q'' = -m g_0, \qquad g(q) = q \ge 0, \qquad v^+ = -e v^- \ \text{at}\ q = 0.

    **Exact solution** (valid for all t >= t0, through the accumulation point): with
    V1 = sqrt(v0^2 + 2 g0 q0), the first impact is at t_1 = t0 + (v0 + V1)/g0 and impact k + 1
    at t_1 + (2 e V1/g0)(1 - e^k)/(1 - e); after impact k the ball flies with
    q = e^k V1 (t - t_k) - g0 (t - t_k)^2 / 2. For e < 1 the impacts accumulate at
    t_inf = t_1 + 2 e V1 / (g0 (1 - e)) and the ball rests (q = v = 0) afterwards; e = 1 is
    periodic, e = 0 rests after t_1. Flights shorter than round-off (see
    :func:`bouncing_gap`) are replaced by the rest state. At an impact instant the post-impact
    velocity is returned.

    Parameters
    ----------
    q0 : float, default 1.0
        Initial height, >= 0.
    v0 : float, default 0.0
        Initial velocity.
    gravity : float, default 9.81
        g0 > 0.
    restitution : float, default 0.8
        e in [0, 1].
    mass : float, default 1.0
        m > 0 (scales M, F and the energy, not the motion).
    t0 : float, default 0.0
        Initial time.

    Raises
    ------
    ValueError
        If a parameter is not finite, out of range, or q0 < 0; the message names it.

    References
    ----------
    Textbook example of an impact accumulation (Zeno) point; e.g. B. Brogliato, *Nonsmooth
    Mechanics*, 3rd ed., Springer (2016), and V. Acary, B. Brogliato, *Numerical Methods for
    Nonsmooth Dynamical Systems*, Springer (2008).
    """

    coordinates = (("q", "m"),)
    parameter_units = dict(q0="m", v0="m/s", gravity="m/s^2", restitution="-", mass="kg", t0="s")
    #: Gravity is -grad V and Newton's law with e in [0, 1] dissipates: the energy gate
    #: applies (:attr:`impactbench.core.problem.Problem.conservative`).
    conservative = True

    KERNELS = ProblemKernels(
        ball_mass_matrix,
        ball_forces,
        _ball_gap,
        _ball_gap_gradient,
        affine_gap=True,
        constant_mass=True,
    )

    def __init__(
        self,
        q0: float = 1.0,
        v0: float = 0.0,
        gravity: float = 9.81,
        restitution: float = 0.8,
        mass: float = 1.0,
        t0: float = 0.0,
    ) -> None:
        q0 = checks.finite_scalar(q0, "q0")
        if q0 < 0.0:
            raise ValueError(f"q0 must be >= 0 (admissible: the floor is q = 0), got {q0!r}")
        v0 = checks.finite_scalar(v0, "v0")
        self.gravity = checks.positive_scalar(gravity, "gravity")
        self.mass = checks.positive_scalar(mass, "mass")
        self.restitution = checks.restitution(restitution)
        self.t0 = checks.finite_scalar(t0, "t0")
        self.name = "BouncingBall"
        self.n_dof = 1
        self.n_constraints = 1
        self.q0 = np.array([q0])
        self.v0 = np.array([v0])
        self._finish_init()

    def kernel_parameters(self) -> np.ndarray:
        """The vector of :data:`PARAMETERS`."""
        return parameter_vector(PARAMETERS, gravity=self.gravity, mass=self.mass)

    def potential_energy(self, q: np.ndarray) -> float:
        """m g0 q."""
        return self.mass * self.gravity * float(np.asarray(q, dtype=float).reshape(-1)[0])

    def potential_energies(self, q: np.ndarray) -> np.ndarray:
        """m g0 q at each sample, q (N, 1) -> (N,)."""
        return self.mass * self.gravity * np.atleast_2d(np.asarray(q, dtype=float))[:, 0]

    def _gap_args(self) -> dict[str, float]:
        return dict(
            t0=self.t0,
            s0=float(self.q0[0]),
            u0=float(self.v0[0]),
            gravity=self.gravity,
            restitution=self.restitution,
        )

    @property
    def first_impact_time(self) -> float:
        """t_1 = t0 + (v0 + V1)/g0 (t0 when the ball starts at rest on the floor)."""
        return bouncing_key_times(**self._gap_args())[0]

    @property
    def accumulation_time(self) -> float:
        """t_inf = t_1 + 2 e V1 / (g0 (1 - e)); t_1 for e = 0 or V1 = 0; inf for e = 1."""
        return bouncing_key_times(**self._gap_args())[1]

    def exact_solution(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Exact (q, v) at times ``t`` >= t0, each of shape (len(t), 1).

        See the class docstring; post-impact velocity at an impact instant.
        """
        s, u = bouncing_gap(t, **self._gap_args())
        return s[:, None], u[:, None]

    def impact_times(self, t_end: float, max_count: int = MAX_IMPACT_COUNT) -> np.ndarray:
        """Exact impact times in [t0, t_end], at most the first ``max_count`` of them.

        For e < 1 only the impacts before the round-off cut-off of :func:`bouncing_gap` are
        returned (the infinitely many later ones are shorter than round-off; about
        log(1e-14)/log(e) impacts, e.g. ~140 for e = 0.8).
        """
        return bouncing_impact_times(t_end, max_count=max_count, **self._gap_args())
