"""Explicit Runge-Kutta pairs compiled with numba: scipy's ``RK45`` and ``DOP853``, step for step.

The core of a compiled event-driven engine: Dormand-Prince 5(4) (scipy's ``RK45``) and Hairer's
DOP853 with scipy's error norm (the RMS norm of the error scaled by
``atol + max(|y|, |y_new|) rtol``; DOP853's blend of its 5th- and 3rd-order estimates), initial
step selection, step-size controller (safety 0.9, factors in [0.2, 10], exponent
``-1 / (error_estimator_order + 1)``, no growth after a rejection, ``max_step``, clip at
``t_bound``, failure below ten ulps of ``t``) and dense output (RK45's quartic, DOP853's 7th-order
interpolant with three extra stages). The formulas follow scipy's ``scipy.integrate._ivp.rk``
and Hairer, Norsett & Wanner, *Solving Ordinary Differential Equations I*, Sec. II.4-II.6.

Each function is a template (see :mod:`impactbench.core._jit`) whose free globals are the right-hand
side ``rhs(t, y, p, out, ws)`` (writes ``y' = f(t, y)`` into ``out``; ``p`` parameters, ``ws`` its
scratch) and the method's tableau, bound per problem by :func:`make_rk_integrator`. Nothing
allocates per step: the stages live in a preallocated array ``K`` (:meth:`RungeKuttaIntegrator.
stage_buffer`) whose last row is scratch for the stage state.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.integrate import RK45
from scipy.integrate._ivp import dop853_coefficients

from ._jit import specialize

#: Step status returned by :func:`_step`.
STEP_ACCEPTED = 0
#: The step size fell below ten ulps of ``t`` (scipy's "Required step size is less than spacing
#: between numbers.").
STEP_TOO_SMALL = 1
#: The error estimate of an attempt is NaN or infinite (a non-finite right-hand side): no step
#: size would be accepted (scipy would shrink the step until ``STEP_TOO_SMALL``).
STEP_NOT_FINITE = 2

#: Status returned by :func:`_integrate`.
REACHED_T_BOUND = 0
STORAGE_FULL = 2

SAFETY = 0.9
MIN_FACTOR = 0.2
MAX_FACTOR = 10.0
#: scipy's floor on ``rtol`` (100 machine epsilons), below which it warns and clips; here an error.
RTOL_FLOOR = 100.0 * np.finfo(float).eps

METHODS = ("RK45", "DOP853")


# The tableaux are scipy's own (``scipy.integrate.RK45``'s class attributes and the module of
# DOP853's coefficients), so that the pairs are scipy's to the last bit: Dormand-Prince 5(4) with
# Shampine's quartic dense output; DOP853 (Hairer & Wanner's Fortran code) with its 12 stages,
# the first-same-as-last stage 13, three extra stages 14-16 for the dense output, error estimates
# E5 and E3 and the rows D of the 7th-order interpolant.
_RK45_A, _RK45_C, _RK45_B, _RK45_E, _RK45_P = RK45.A, RK45.C, RK45.B, RK45.E, RK45.P
_DOP853_A, _DOP853_C, _DOP853_B = (
    dop853_coefficients.A,
    dop853_coefficients.C,
    dop853_coefficients.B,
)
_DOP853_E3, _DOP853_E5, _DOP853_D = (
    dop853_coefficients.E3,
    dop853_coefficients.E5,
    dop853_coefficients.D,
)


# Names bound per problem and method by make_rk_integrator: the right-hand side, the tableau
# (ERROR_WEIGHTS is RK45's E or DOP853's E5, ERROR_WEIGHTS_3 DOP853's E3; DENSE_WEIGHTS RK45's P or
# DOP853's D), and the inlined helpers a template calls.
rhs = attempt = initial_step = step = None
STAGE_A = STAGE_C = WEIGHTS = ERROR_WEIGHTS = ERROR_WEIGHTS_3 = DENSE_WEIGHTS = None
DOP853 = False
N_STAGES = 0
ERROR_EXPONENT = 0.0


def _initial_step(t0, y0, f0, t_bound, max_step, rtol, atol, p, K, ws):
    """scipy's ``select_initial_step``: the first step size (Hairer I, Sec. II.4).

    ``K`` (stage buffer) is scratch: ``K[-1]`` holds ``y0 + h0 f0``, ``K[1]`` its slope. One
    evaluation of ``rhs``.
    """
    n = y0.shape[0]
    if n == 0:
        return math.inf
    interval_length = abs(t_bound - t0)
    if interval_length == 0.0:
        return 0.0
    direction = 1.0 if t_bound >= t0 else -1.0
    d0 = 0.0
    d1 = 0.0
    for i in range(n):
        scale = atol + abs(y0[i]) * rtol
        d0 += (y0[i] / scale) ** 2
        d1 += (f0[i] / scale) ** 2
    d0 = math.sqrt(d0) / math.sqrt(n)
    d1 = math.sqrt(d1) / math.sqrt(n)
    if d0 < 1e-5 or d1 < 1e-5:
        h0 = 1e-6
    else:
        h0 = 0.01 * d0 / d1
    h0 = min(h0, interval_length)
    y1 = K[K.shape[0] - 1]
    f1 = K[1]
    for i in range(n):
        y1[i] = y0[i] + h0 * direction * f0[i]
    rhs(t0 + h0 * direction, y1, p, f1, ws)
    d2 = 0.0
    for i in range(n):
        scale = atol + abs(y0[i]) * rtol
        d2 += ((f1[i] - f0[i]) / scale) ** 2
    d2 = math.sqrt(d2) / math.sqrt(n) / h0
    if d1 <= 1e-15 and d2 <= 1e-15:
        h1 = max(1e-6, h0 * 1e-3)
    else:
        h1 = (0.01 / max(d1, d2)) ** (-ERROR_EXPONENT)
    return min(100.0 * h0, h1, interval_length, max_step)


def _attempt(t, y, f, h, rtol, atol, p, K, y_new, f_new, ws):
    """One Runge-Kutta step of size ``h`` from ``(t, y)`` with ``f = rhs(t, y)``; its error norm.

    Fills ``K[0 .. N_STAGES]`` with the stages (the last is ``f_new``), ``y_new`` with the
    higher-order solution and ``f_new`` with ``rhs(t + h, y_new)``: ``N_STAGES`` evaluations.
    Returns scipy's scaled RMS error norm (accept when < 1).
    """
    n = y.shape[0]
    stage = K[K.shape[0] - 1]
    for i in range(n):
        K[0, i] = f[i]
    # Stages 1 .. N_STAGES - 1 at y + h sum_j A[s, j] K[j], then f_new at y_new = y + h sum_j
    # B[j] K[j]: one call of rhs for all of them (a compiled rhs is inlined once per call site).
    for s in range(1, N_STAGES + 1):
        t_stage = t + h
        weights = WEIGHTS
        state = y_new
        if s < N_STAGES:
            t_stage = t + STAGE_C[s] * h
            weights = STAGE_A[s]
            state = stage
        for i in range(n):
            increment = 0.0
            for j in range(s):
                increment += K[j, i] * weights[j]
            state[i] = y[i] + increment * h
        rhs(t_stage, state, p, K[s], ws)
    for i in range(n):
        f_new[i] = K[N_STAGES, i]
    if DOP853:
        sum5 = 0.0
        sum3 = 0.0
        for i in range(n):
            scale = atol + max(abs(y[i]), abs(y_new[i])) * rtol
            error5 = 0.0
            error3 = 0.0
            for j in range(N_STAGES + 1):
                error5 += K[j, i] * ERROR_WEIGHTS[j]
                error3 += K[j, i] * ERROR_WEIGHTS_3[j]
            sum5 += (error5 / scale) ** 2
            sum3 += (error3 / scale) ** 2
        if sum5 == 0.0 and sum3 == 0.0:
            return 0.0
        return abs(h) * sum5 / math.sqrt((sum5 + 0.01 * sum3) * n)
    total = 0.0
    for i in range(n):
        scale = atol + max(abs(y[i]), abs(y_new[i])) * rtol
        error = 0.0
        for j in range(N_STAGES + 1):
            error += K[j, i] * ERROR_WEIGHTS[j]
        total += (error * h / scale) ** 2
    return math.sqrt(total) / math.sqrt(n)


def _step(t, y, f, h_abs, t_bound, max_step, tolerances, p, K, y_new, f_new, ws):
    """scipy's ``RungeKutta._step_impl``: attempts from ``(t, y)`` until one is accepted.

    Parameters: ``h_abs`` the proposed step size, ``tolerances`` the pair (rtol, atol); inlined
    helper ``attempt``. Returns
    ``(status, t_new, h, h_abs_next, attempts)``: :data:`STEP_ACCEPTED` with the accepted step
    ``h`` (signed) ending at ``t_new`` (``y_new``, ``f_new`` and ``K`` filled) and the proposal
    for the next step, :data:`STEP_TOO_SMALL` or :data:`STEP_NOT_FINITE` (``t_new = t``);
    ``attempts`` counts the tried steps, each ``N_STAGES`` evaluations.
    """
    rtol, atol = tolerances
    direction = 1.0 if t_bound >= t else -1.0
    min_step = 10.0 * abs(np.nextafter(t, direction * math.inf) - t)
    if h_abs > max_step:
        h_abs = max_step
    elif h_abs < min_step:
        h_abs = min_step
    step_rejected = False
    attempts = 0
    while True:
        if h_abs < min_step:
            return STEP_TOO_SMALL, t, 0.0, h_abs, attempts
        h = h_abs * direction
        t_new = t + h
        if direction * (t_new - t_bound) > 0.0:
            t_new = t_bound
        h = t_new - t
        h_abs = abs(h)
        error_norm = attempt(t, y, f, h, rtol, atol, p, K, y_new, f_new, ws)
        attempts += 1
        if not np.isfinite(error_norm):
            return STEP_NOT_FINITE, t, 0.0, h_abs, attempts
        if error_norm < 1.0:
            if error_norm == 0.0:
                factor = MAX_FACTOR
            else:
                factor = min(MAX_FACTOR, SAFETY * error_norm**ERROR_EXPONENT)
            if step_rejected:
                factor = min(1.0, factor)
            return STEP_ACCEPTED, t_new, h, h_abs * factor, attempts
        h_abs *= max(MIN_FACTOR, SAFETY * error_norm**ERROR_EXPONENT)
        step_rejected = True


def _dense_prepare(t_old, h, y_old, y_new, f_new, p, K, dense, ws):
    """Coefficients of the dense output on the accepted step ``[t_old, t_old + h]``.

    Call right after the step (``K`` holds its stages). RK45: ``dense[k] = sum_j P[j, k] K[j]``
    (rows 0-3 of ``dense``, shape (7, n)). DOP853: three extra stages into ``K[13:16]`` (three
    evaluations of ``rhs``), then the seven rows ``F`` of scipy's ``Dop853DenseOutput``.
    Returns the number of ``rhs`` evaluations.
    """
    n = y_old.shape[0]
    if DOP853:
        stage = K[K.shape[0] - 1]
        for s in range(N_STAGES + 1, N_STAGES + 4):
            for i in range(n):
                increment = 0.0
                for j in range(s):
                    increment += K[j, i] * STAGE_A[s, j]
                stage[i] = y_old[i] + increment * h
            rhs(t_old + STAGE_C[s] * h, stage, p, K[s], ws)
        for i in range(n):
            delta_y = y_new[i] - y_old[i]
            dense[0, i] = delta_y
            dense[1, i] = h * K[0, i] - delta_y
            dense[2, i] = 2.0 * delta_y - h * (f_new[i] + K[0, i])
            for r in range(4):
                combination = 0.0
                for j in range(N_STAGES + 4):
                    combination += DENSE_WEIGHTS[r, j] * K[j, i]
                dense[3 + r, i] = h * combination
        return 3
    for i in range(n):
        for k in range(4):
            combination = 0.0
            for j in range(N_STAGES + 1):
                combination += K[j, i] * DENSE_WEIGHTS[j, k]
            dense[k, i] = combination
    return 0


def _dense_evaluate(t, t_old, h, y_old, dense, out):
    """The dense output at time ``t`` of the step ``[t_old, t_old + h]`` into ``out`` (n,)."""
    n = y_old.shape[0]
    x = (t - t_old) / h
    if DOP853:
        for i in range(n):
            value = 0.0
            for r in range(7):
                value += dense[6 - r, i]
                if r % 2 == 0:
                    value *= x
                else:
                    value *= 1.0 - x
            out[i] = value + y_old[i]
        return
    x2 = x * x
    x3 = x2 * x
    x4 = x3 * x
    for i in range(n):
        out[i] = (
            h * (dense[0, i] * x + dense[1, i] * x2 + dense[2, i] * x3 + dense[3, i] * x4)
            + y_old[i]
        )


#: Degree in x = (t - t_old) / h of each pair's interpolant (:func:`_dense_evaluate`).
DENSE_DEGREE = {"RK45": 4, "DOP853": 7}


def dense_values(
    method: str, x: np.ndarray, h: np.ndarray, y_old: np.ndarray, dense: np.ndarray
) -> np.ndarray:
    """:func:`_dense_evaluate` for many steps at once (numpy, the same operations).

    Parameters
    ----------
    method : {"RK45", "DOP853"}
    x : ndarray, shape (k, s)
        Normalised times (t - t_old) / h in the k steps.
    h : ndarray, shape (k,)
        The steps' sizes.
    y_old : ndarray, shape (k, n)
        The states at the steps' starts.
    dense : ndarray, shape (k, 7, n)
        The steps' coefficients from :func:`_dense_prepare`.

    Returns
    -------
    ndarray, shape (k, s, n)
        The interpolants at the times.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    x = x[:, :, None]
    value = np.zeros((x.shape[0], x.shape[1], y_old.shape[1]))
    if method == "DOP853":
        for r in range(7):
            value += dense[:, None, 6 - r, :]
            value *= x if r % 2 == 0 else 1.0 - x
        return value + y_old[:, None, :]
    x2 = x * x
    x3 = x2 * x
    x4 = x3 * x
    c = dense[:, None, :, :]
    polynomial = c[:, :, 0] * x + c[:, :, 1] * x2 + c[:, :, 2] * x3 + c[:, :, 3] * x4
    return h[:, None, None] * polynomial + y_old[:, None, :]


def _integrate(t0, y0, t_bound, max_step, rtol, atol, p, times, states, K, state, ws):
    """Steps from ``(t0, y0)`` to ``t_bound``, recording every accepted step.

    ``times`` (m,) and ``states`` (m, n) receive ``t0, y0`` and each accepted step; ``state``
    (4, n) is scratch (y, f, y_new, f_new). Inlined helpers ``initial_step`` and ``step``.
    Returns ``(status, count, nfev, rejected)``: :data:`REACHED_T_BOUND`, :data:`STEP_TOO_SMALL`
    or :data:`STORAGE_FULL`; the number of recorded rows; ``rhs`` evaluations (as scipy's
    ``nfev``); rejected attempts.
    """
    n = y0.shape[0]
    y = state[0]
    f = state[1]
    y_new = state[2]
    f_new = state[3]
    for i in range(n):
        y[i] = y0[i]
        states[0, i] = y0[i]
    times[0] = t0
    rhs(t0, y, p, f, ws)
    nfev = 1
    h_abs = initial_step(t0, y, f, t_bound, max_step, rtol, atol, p, K, ws)
    if n > 0 and t_bound != t0:
        nfev += 1
    direction = 1.0 if t_bound >= t0 else -1.0
    t = t0
    count = 1
    rejected = 0
    while direction * (t - t_bound) < 0.0:
        if count == times.shape[0]:
            return STORAGE_FULL, count, nfev, rejected
        status, t_new, h, h_abs, attempts = step(
            t, y, f, h_abs, t_bound, max_step, (rtol, atol), p, K, y_new, f_new, ws
        )
        nfev += N_STAGES * attempts
        if status != STEP_ACCEPTED:
            return STEP_TOO_SMALL, count, nfev, rejected + attempts
        rejected += attempts - 1
        t = t_new
        for i in range(n):
            y[i] = y_new[i]
            f[i] = f_new[i]
            states[count, i] = y_new[i]
        times[count] = t
        count += 1
    return REACHED_T_BOUND, count, nfev, rejected


@dataclass(frozen=True)
class RungeKuttaIntegrator:
    """A Runge-Kutta pair bound to one right-hand side (see :func:`make_rk_integrator`).

    The callables are the templates above, compiled (or plain Python) with ``rhs`` and the
    tableau bound; their arguments: ``t`` floats, ``y, f, y_new, f_new`` (n,), ``p`` and ``ws``
    as ``rhs`` takes them, ``K`` from :meth:`stage_buffer`, ``dense`` from :meth:`dense_buffer`.

    Attributes
    ----------
    method : str
        ``"RK45"`` or ``"DOP853"``.
    n_stages : int
        Stages per attempted step (= ``rhs`` evaluations per attempt).
    error_estimator_order : int
        Order of the embedded error estimate (4 for RK45, 7 for DOP853).
    initial_step : callable
        ``(t0, y0, f0, t_bound, max_step, rtol, atol, p, K, ws) -> h_abs``: scipy's
        ``select_initial_step`` (one ``rhs`` evaluation).
    attempt : callable
        ``(t, y, f, h, rtol, atol, p, K, y_new, f_new, ws) -> error_norm``.
    step : callable
        ``(t, y, f, h_abs, t_bound, max_step, (rtol, atol), p, K, y_new, f_new, ws)
        -> (status, t_new, h, h_abs_next, attempts)``: scipy's step-size controller.
    dense_prepare : callable
        ``(t_old, h, y_old, y_new, f_new, p, K, dense, ws) -> extra_evaluations``.
    dense_evaluate : callable
        ``(t, t_old, h, y_old, dense, out) -> None``.
    integrate_into : callable
        ``(t0, y0, t_bound, max_step, rtol, atol, p, times, states, K, state, ws)
        -> (status, count, nfev, rejected)``: the whole run in one compiled loop.
    """

    method: str
    n_stages: int
    error_estimator_order: int
    initial_step: Callable
    attempt: Callable
    step: Callable
    dense_prepare: Callable
    dense_evaluate: Callable
    integrate_into: Callable

    def stage_buffer(self, n: int) -> np.ndarray:
        """Stage array ``K``, shape (stages incl. extra dense-output stages + 1 scratch, n)."""
        rows = self.n_stages + 1 + (3 if self.method == "DOP853" else 0) + 1
        return np.zeros((rows, n))

    @staticmethod
    def dense_buffer(n: int) -> np.ndarray:
        """Dense-output coefficients of one step, shape (7, n)."""
        return np.zeros((7, n))

    def integrate(
        self,
        t0: float,
        y0: np.ndarray,
        t_bound: float,
        rtol: float,
        atol: float,
        max_step: float = math.inf,
        p: np.ndarray | None = None,
        ws: np.ndarray | None = None,
        max_steps: int = 100_000,
    ) -> tuple[np.ndarray, np.ndarray, int, int]:
        """Integrate ``y' = rhs(t, y)`` from ``(t0, y0)`` to ``t_bound`` as scipy would.

        Parameters
        ----------
        t0, t_bound : float
            Initial time and end of the interval (either direction).
        y0 : ndarray, shape (n,)
            Initial state.
        rtol, atol : float
            Tolerances: ``rtol >= 100 eps`` (scipy's floor), ``atol >= 0``.
        max_step : float
            Largest step size, > 0.
        p, ws : ndarray or None
            Parameters and scratch passed to ``rhs`` (empty arrays if None).
        max_steps : int
            Capacity of the preallocated output: at most ``max_steps`` accepted steps.

        Returns
        -------
        times : ndarray, shape (m,)
            ``t0`` and the end of every accepted step.
        states : ndarray, shape (m, n)
            The state there.
        nfev : int
            Evaluations of ``rhs`` (scipy's ``nfev``).
        rejected : int
            Rejected attempts.

        Raises
        ------
        ValueError
            Bad tolerances, ``max_step`` or ``max_steps``.
        RuntimeError
            The step size fell below the spacing of floats near ``t`` (as scipy), or more than
            ``max_steps`` steps were needed.
        """
        _check_settings(rtol, atol, max_step, max_steps)
        y0 = np.asarray(y0, dtype=float)
        n = y0.shape[0]
        p = np.zeros(0) if p is None else p
        ws = np.zeros(0) if ws is None else ws
        times = np.empty(max_steps + 1)
        states = np.empty((max_steps + 1, n))
        status, count, nfev, rejected = self.integrate_into(
            float(t0),
            y0,
            float(t_bound),
            float(max_step),
            float(rtol),
            float(atol),
            p,
            times,
            states,
            self.stage_buffer(n),
            np.empty((4, n)),
            ws,
        )
        if status == STEP_TOO_SMALL:
            raise RuntimeError(
                "Required step size is less than spacing between numbers "
                f"(t = {float(times[count - 1])!r})."
            )
        if status == STORAGE_FULL:
            raise RuntimeError(f"more than max_steps = {max_steps} steps needed")
        return times[:count].copy(), states[:count].copy(), int(nfev), int(rejected)


def _check_settings(rtol: float, atol: float, max_step: float, max_steps: int) -> None:
    """Raise ValueError naming the first bad argument of :meth:`RungeKuttaIntegrator.integrate`."""
    if not (math.isfinite(rtol) and rtol >= RTOL_FLOOR):
        raise ValueError(f"rtol must be finite and >= {RTOL_FLOOR:g}, got {rtol!r}")
    if not (math.isfinite(atol) and atol >= 0.0):
        raise ValueError(f"atol must be finite and >= 0, got {atol!r}")
    if not max_step > 0.0:
        raise ValueError(f"max_step must be > 0, got {max_step!r}")
    if max_steps < 1:
        raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")


def pair_bindings(method: str) -> tuple[int, int, dict[str, Any]]:
    """The tableau of the pair ``method`` as the templates' globals (all but ``rhs``).

    Returns
    -------
    n_stages : int
        Stages per attempted step.
    order : int
        Order of the embedded error estimate.
    bindings : dict
        ``DOP853``, ``N_STAGES``, ``ERROR_EXPONENT``, ``STAGE_A``, ``STAGE_C``, ``WEIGHTS``,
        ``ERROR_WEIGHTS``, ``ERROR_WEIGHTS_3``, ``DENSE_WEIGHTS``: bind them with ``rhs`` to
        :func:`_attempt`, :func:`_step`, :func:`_initial_step`, :func:`_dense_prepare` and
        :func:`_dense_evaluate` (``_step`` also takes ``attempt``).
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if method == "RK45":
        n_stages, order = 6, 4
        tables = {
            "STAGE_A": _RK45_A,
            "STAGE_C": _RK45_C,
            "WEIGHTS": _RK45_B,
            "ERROR_WEIGHTS": _RK45_E,
            "ERROR_WEIGHTS_3": _RK45_E,
            "DENSE_WEIGHTS": _RK45_P,
        }
    else:
        n_stages, order = 12, 7
        tables = {
            "STAGE_A": _DOP853_A,
            "STAGE_C": _DOP853_C,
            "WEIGHTS": _DOP853_B,
            "ERROR_WEIGHTS": _DOP853_E5,
            "ERROR_WEIGHTS_3": _DOP853_E3,
            "DENSE_WEIGHTS": _DOP853_D,
        }
    bindings = {
        "DOP853": method == "DOP853",
        "N_STAGES": n_stages,
        "ERROR_EXPONENT": -1.0 / (order + 1),
        **tables,
    }
    return n_stages, order, bindings


def make_rk_integrator(rhs: Callable, method: str = "RK45", compile: bool = True):
    """Bind an explicit Runge-Kutta pair to the right-hand side ``rhs``.

    Parameters
    ----------
    rhs : callable
        ``rhs(t, y, p, out, ws)`` writes ``y'`` (n,) into ``out``; a numba function when
        ``compile`` (a plain Python function works with ``compile=False``).
    method : {"RK45", "DOP853"}
        scipy's name of the pair.
    compile : bool
        Compile with numba (cached on disk) or run the same source as plain Python.

    Returns
    -------
    RungeKuttaIntegrator
    """
    n_stages, order, tables = pair_bindings(method)
    bindings = {"rhs": rhs, **tables}

    def bind(template: Callable, inline: bool, nrt: bool = True, **helpers: Callable):
        return specialize(template, {**bindings, **helpers}, compile, inline=inline, nrt=nrt)

    attempt = bind(_attempt, inline=True)
    initial_step = bind(_initial_step, inline=True)
    step = bind(_step, inline=True, attempt=attempt)
    return RungeKuttaIntegrator(
        method=method,
        n_stages=n_stages,
        error_estimator_order=order,
        initial_step=bind(_initial_step, inline=False),
        attempt=bind(_attempt, inline=False),
        step=bind(_step, inline=False, attempt=attempt),
        dense_prepare=bind(_dense_prepare, inline=False),
        dense_evaluate=bind(_dense_evaluate, inline=False),
        integrate_into=bind(
            _integrate, inline=False, nrt=False, initial_step=initial_step, step=step
        ),
    )
