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


def _lower_triangular(rows: tuple[tuple[float, ...], ...]) -> np.ndarray:
    """A square array whose row ``s`` starts with ``rows[s]`` and is zero after it."""
    table = np.zeros((len(rows), len(rows)))
    for s, row in enumerate(rows):
        table[s, : len(row)] = row
    return table


# Dormand-Prince 5(4) (Dormand & Prince 1980) with Shampine's (1986) quartic dense output.
_RK45_C = np.array((0.0, 1 / 5, 3 / 10, 4 / 5, 8 / 9, 1.0))
_RK45_A = _lower_triangular(
    (
        (),
        (1 / 5,),
        (3 / 40, 9 / 40),
        (44 / 45, -56 / 15, 32 / 9),
        (19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729),
        (9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656),
    )
)
_RK45_B = np.array((35 / 384, 0.0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84))
_RK45_E = np.array((-71 / 57600, 0.0, 71 / 16695, -71 / 1920, 17253 / 339200, -22 / 525, 1 / 40))
_RK45_P = np.array(
    (
        (1.0, -8048581381 / 2820520608, 8663915743 / 2820520608, -12715105075 / 11282082432),
        (0.0, 0.0, 0.0, 0.0),
        (
            0.0,
            131558114200 / 32700410799,
            -68118460800 / 10900136933,
            87487479700 / 32700410799,
        ),
        (
            0.0,
            -1754552775 / 470086768,
            14199869525 / 1410260304,
            -10690763975 / 1880347072,
        ),
        (
            0.0,
            127303824393 / 49829197408,
            -318862633887 / 49829197408,
            701980252875 / 199316789632,
        ),
        (0.0, -282668133 / 205662961, 2019193451 / 616988883, -1453857185 / 822651844),
        (0.0, 40617522 / 29380423, -110615467 / 29380423, 69997945 / 29380423),
    )
)

# DOP853 (Hairer & Wanner's Fortran code, as tabulated in scipy): 12 stages, the first-same-as-last
# stage 13, three extra stages 14-16 for the dense output, error estimates E5 and E3, and the
# rows D of the 7th-order interpolant. Values are the doubles of the published coefficients.
_DOP853_C = np.array(
    (
        0.0,
        0.05260015195876773,
        0.0789002279381516,
        0.1183503419072274,
        0.2816496580927726,
        0.3333333333333333,
        0.25,
        0.3076923076923077,
        0.6512820512820513,
        0.6,
        0.8571428571428571,
        1.0,
        1.0,
        0.1,
        0.2,
        0.7777777777777778,
    )
)
_DOP853_A = _lower_triangular(
    (
        (),
        (0.05260015195876773,),
        (
            0.0197250569845379,
            0.0591751709536137,
        ),
        (
            0.02958758547680685,
            0.0,
            0.08876275643042054,
        ),
        (
            0.2413651341592667,
            0.0,
            -0.8845494793282861,
            0.924834003261792,
        ),
        (
            0.037037037037037035,
            0.0,
            0.0,
            0.17082860872947386,
            0.12546768756682242,
        ),
        (
            0.037109375,
            0.0,
            0.0,
            0.17025221101954405,
            0.06021653898045596,
            -0.017578125,
        ),
        (
            0.03709200011850479,
            0.0,
            0.0,
            0.17038392571223998,
            0.10726203044637328,
            -0.015319437748624402,
            0.008273789163814023,
        ),
        (
            0.6241109587160757,
            0.0,
            0.0,
            -3.3608926294469414,
            -0.868219346841726,
            27.59209969944671,
            20.154067550477894,
            -43.48988418106996,
        ),
        (
            0.47766253643826434,
            0.0,
            0.0,
            -2.4881146199716677,
            -0.590290826836843,
            21.230051448181193,
            15.279233632882423,
            -33.28821096898486,
            -0.020331201708508627,
        ),
        (
            -0.9371424300859873,
            0.0,
            0.0,
            5.186372428844064,
            1.0914373489967295,
            -8.149787010746927,
            -18.52006565999696,
            22.739487099350505,
            2.4936055526796523,
            -3.0467644718982196,
        ),
        (
            2.273310147516538,
            0.0,
            0.0,
            -10.53449546673725,
            -2.0008720582248625,
            -17.9589318631188,
            27.94888452941996,
            -2.8589982771350235,
            -8.87285693353063,
            12.360567175794303,
            0.6433927460157636,
        ),
        (
            0.054293734116568765,
            0.0,
            0.0,
            0.0,
            0.0,
            4.450312892752409,
            1.8915178993145003,
            -5.801203960010585,
            0.3111643669578199,
            -0.1521609496625161,
            0.20136540080403034,
            0.04471061572777259,
        ),
        (
            0.056167502283047954,
            0.0,
            0.0,
            0.0,
            0.0,
            0.0,
            0.25350021021662483,
            -0.2462390374708025,
            -0.12419142326381637,
            0.15329179827876568,
            0.00820105229563469,
            0.007567897660545699,
            -0.008298,
        ),
        (
            0.03183464816350214,
            0.0,
            0.0,
            0.0,
            0.0,
            0.028300909672366776,
            0.053541988307438566,
            -0.05492374857139099,
            0.0,
            0.0,
            -0.00010834732869724932,
            0.0003825710908356584,
            -0.00034046500868740456,
            0.1413124436746325,
        ),
        (
            -0.42889630158379194,
            0.0,
            0.0,
            0.0,
            0.0,
            -4.697621415361164,
            7.683421196062599,
            4.06898981839711,
            0.3567271874552811,
            0.0,
            0.0,
            0.0,
            -0.0013990241651590145,
            2.9475147891527724,
            -9.15095847217987,
        ),
    )
)
#: The weights of the 8th-order solution: the stage-13 row of A (the pair is FSAL-like).
_DOP853_B = _DOP853_A[12, :12].copy()
_DOP853_E3 = np.array(
    (
        -0.18980075407240762,
        0.0,
        0.0,
        0.0,
        0.0,
        4.450312892752409,
        1.8915178993145003,
        -5.801203960010585,
        -0.4226823213237919,
        -0.1521609496625161,
        0.20136540080403034,
        0.02265179219836082,
        0.0,
    )
)
_DOP853_E5 = np.array(
    (
        0.01312004499419488,
        0.0,
        0.0,
        0.0,
        0.0,
        -1.2251564463762044,
        -0.4957589496572502,
        1.6643771824549864,
        -0.35032884874997366,
        0.3341791187130175,
        0.08192320648511571,
        -0.022355307863886294,
        0.0,
    )
)
_DOP853_D = np.array(
    (
        (
            -8.428938276109013,
            0.0,
            0.0,
            0.0,
            0.0,
            0.5667149535193777,
            -3.0689499459498917,
            2.38466765651207,
            2.117034582445028,
            -0.871391583777973,
            2.2404374302607883,
            0.6315787787694688,
            -0.08899033645133331,
            18.148505520854727,
            -9.194632392478356,
            -4.436036387594894,
        ),
        (
            10.427508642579134,
            0.0,
            0.0,
            0.0,
            0.0,
            242.28349177525817,
            165.20045171727028,
            -374.5467547226902,
            -22.113666853125306,
            7.733432668472264,
            -30.674084731089398,
            -9.332130526430229,
            15.697238121770845,
            -31.139403219565178,
            -9.35292435884448,
            35.81684148639408,
        ),
        (
            19.985053242002433,
            0.0,
            0.0,
            0.0,
            0.0,
            -387.0373087493518,
            -189.17813819516758,
            527.8081592054236,
            -11.57390253995963,
            6.8812326946963,
            -1.0006050966910838,
            0.7777137798053443,
            -2.778205752353508,
            -60.19669523126412,
            84.32040550667716,
            11.99229113618279,
        ),
        (
            -25.69393346270375,
            0.0,
            0.0,
            0.0,
            0.0,
            -154.18974869023643,
            -231.5293791760455,
            357.6391179106141,
            93.40532418362432,
            -37.45832313645163,
            104.0996495089623,
            29.8402934266605,
            -43.53345659001114,
            96.32455395918828,
            -39.17726167561544,
            -149.72683625798564,
        ),
    )
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


def _step(t, y, f, h_abs, t_bound, max_step, rtol, atol, p, K, y_new, f_new, ws):
    """scipy's ``RungeKutta._step_impl``: attempts from ``(t, y)`` until one is accepted.

    Parameters: ``h_abs`` the proposed step size; inlined helper ``attempt``. Returns
    ``(status, t_new, h, h_abs_next, attempts)``: :data:`STEP_ACCEPTED` with the accepted step
    ``h`` (signed) ending at ``t_new`` (``y_new``, ``f_new`` and ``K`` filled) and the proposal
    for the next step, :data:`STEP_TOO_SMALL` or :data:`STEP_NOT_FINITE` (``t_new = t``);
    ``attempts`` counts the tried steps, each ``N_STAGES`` evaluations.
    """
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
            t, y, f, h_abs, t_bound, max_step, rtol, atol, p, K, y_new, f_new, ws
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
        ``(t, y, f, h_abs, t_bound, max_step, rtol, atol, p, K, y_new, f_new, ws)
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
        if not (math.isfinite(rtol) and rtol >= RTOL_FLOOR):
            raise ValueError(f"rtol must be finite and >= {RTOL_FLOOR:g}, got {rtol!r}")
        if not (math.isfinite(atol) and atol >= 0.0):
            raise ValueError(f"atol must be finite and >= 0, got {atol!r}")
        if not max_step > 0.0:
            raise ValueError(f"max_step must be > 0, got {max_step!r}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps!r}")
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
